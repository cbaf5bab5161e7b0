import { readFileSync } from "node:fs";
import { AuthorizationError, connect, type Authenticator, type NatsConnection } from "@nats-io/transport-node";
import { AgentmeshError, redactUrls } from "@agentmesh/contracts";
import type { Log } from "./log.js";
import { userKeyOfSeed } from "./nats-config.js";
import { replyPrefix } from "./permissions.js";

/** How to reach NATS. */
export interface ConnectNatsOptions {
  /** One URL or a comma-separated list; `user:pass@` in a URL is honoured. */
  readonly url: string;
  /** Shows in the server's /connz and traces (e.g. `agent-planner-<pod>`). */
  readonly name: string;
  /** Keep retrying until the server is up (pods may start before NATS); default false = fail fast. */
  readonly waitOnFirstConnect?: boolean;
  /** First-connect timeout per attempt; default 2500 ms. */
  readonly timeoutMs?: number;
  /** When given, connection status changes (disconnect, reconnect, errors) are logged. */
  readonly log?: Log;
  /**
   * A file holding this service's NKey user seed (`pnpm nats:keys` writes them; mount it as a
   * secret). Replies to our requests then arrive under `_INBOX.<public key>`, the only reply
   * subjects the generated server config lets this user read.
   */
  readonly nkeySeedFile?: string;
  /** TLS: the CA to trust, and a client certificate and key when the server verifies clients. */
  readonly tls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
}

/**
 * Reads an NKey seed file: its authenticator and the reply prefix its user may read. The
 * authenticator signs the server's nonce with node:crypto (the client's `nkeyAuthenticator`
 * derives the key with the pure-JS tweetnacl on every connect: ≈ 40 ms of a start-up's CPU).
 */
function nkeyAuth(file: string): { authenticator: Authenticator; inboxPrefix: string } {
  let seed: string;
  try {
    seed = readFileSync(file, "utf8").trim();
  } catch (err) {
    throw new AgentmeshError(
      "invalid_config",
      `cannot read the NATS NKey seed file ${file} (${err instanceof Error ? err.message : String(err)})`,
      { component: "nats" },
    );
  }
  const key = userKeyOfSeed(seed);
  const encoder = new TextEncoder();
  const authenticator: Authenticator = (nonce) => ({
    nkey: key.publicKey,
    sig: nonce ? Buffer.from(key.sign(encoder.encode(nonce))).toString("base64") : "",
  });
  return { authenticator, inboxPrefix: replyPrefix(key.publicKey) };
}

/** Server addresses and credentials parsed out of a NATS URL (the v3 client ignores URL credentials). */
export interface ParsedNatsUrl {
  readonly servers: string[];
  readonly user?: string;
  readonly pass?: string;
}

/** Splits a NATS URL (or list) into host:port servers and the first credentials found. */
export function parseNatsUrl(url: string): ParsedNatsUrl {
  const parts = url
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (parts.length === 0)
    throw new AgentmeshError("unavailable", "no NATS URL given", { retryable: false, component: "nats" });
  let user: string | undefined;
  let pass: string | undefined;
  const servers = parts.map((p) => {
    let u: URL;
    try {
      u = new URL(p.includes("://") ? p : `nats://${p}`);
    } catch {
      throw new AgentmeshError("unavailable", `malformed NATS URL ${redactUrls(p)}`, {
        retryable: false,
        component: "nats",
      });
    }
    if (user === undefined && u.username) {
      user = decodeURIComponent(u.username);
      pass = u.password ? decodeURIComponent(u.password) : undefined;
    }
    const scheme = u.protocol === "tls:" ? "tls://" : "";
    return `${scheme}${u.hostname.includes(":") && !u.hostname.startsWith("[") ? `[${u.hostname}]` : u.hostname}:${u.port || "4222"}`;
  });
  return { servers, ...(user === undefined ? {} : { user }), ...(pass === undefined ? {} : { pass }) };
}

/**
 * Connects to NATS with settings suited to long-running services: unlimited reconnects, 1 s
 * between attempts, a 20 s ping. Fails fast with `unavailable` naming the URL when the server
 * cannot be reached (unless waitOnFirstConnect).
 */
export async function connectNats(opts: ConnectNatsOptions): Promise<NatsConnection> {
  const { servers, user, pass } = parseNatsUrl(opts.url);
  const nkey = opts.nkeySeedFile ? nkeyAuth(opts.nkeySeedFile) : null;
  const tls = opts.tls && (opts.tls.caFile || opts.tls.certFile || opts.tls.keyFile) ? opts.tls : null;
  if (tls && Boolean(tls.certFile) !== Boolean(tls.keyFile)) {
    throw new AgentmeshError("invalid_config", "NATS TLS needs both a client certificate and its key, or neither", {
      component: "nats",
    });
  }
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers,
      ...(user === undefined ? {} : { user }),
      ...(pass === undefined ? {} : { pass }),
      ...(nkey ?? {}),
      ...(tls
        ? {
            tls: {
              ...(tls.caFile ? { caFile: tls.caFile } : {}),
              ...(tls.certFile ? { certFile: tls.certFile } : {}),
              ...(tls.keyFile ? { keyFile: tls.keyFile } : {}),
            },
          }
        : {}),
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
      // A server that stops answering (stopped, or cut off without the socket closing) is left
      // after two unanswered pings: 10-15 s, within a task's deadline, instead of the 40-60 s
      // that 20 s pings took, during which every request on this connection waited on it.
      pingInterval: 5000,
      maxPingOut: 2,
      timeout: opts.timeoutMs ?? 2500,
      waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
      // Every JetStream publish is a request; capturing a stack trace for each costs
      // ~10% of a busy coordinator's CPU (measured by `pnpm bench --cpu-prof`).
      noAsyncTraces: true,
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (err instanceof AuthorizationError) {
      throw new AgentmeshError("unavailable", `NATS at ${redactUrls(opts.url)} refused our credentials (${why})`, {
        retryable: false,
        component: "nats",
        cause: err,
      });
    }
    throw new AgentmeshError(
      "unavailable",
      `cannot reach NATS at ${redactUrls(opts.url)} (${why}); is nats-server running with -js?`,
      {
        component: "nats",
        cause: err,
      },
    );
  }
  if (opts.log) watchStatus(nc, opts.log);
  return nc;
}

function watchStatus(nc: NatsConnection, log: Log): void {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "ping" || s.type === "update") continue;
      const level = s.type === "error" || s.type === "disconnect" || s.type === "staleConnection" ? "warn" : "info";
      log[level]({ nats_status: s.type }, `nats ${s.type}`);
    }
  })().catch(() => undefined);
  void nc.closed().then((err) => {
    if (err) log.error({ err }, "nats connection closed with an error");
  });
}
