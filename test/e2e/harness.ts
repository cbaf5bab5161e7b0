import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  SCHEMA_VERSION,
  SubmitReply,
  naming as makeNaming,
  type Naming,
  type SessionEvent,
  type SessionState,
  type TransitionLogLine,
  type RoleName,
} from "@agentmesh/contracts";
import { createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { connectNats, followEvents, request } from "@agentmesh/messaging";
import { SecretScan } from "./secret-scan.js";
import { startAuthNats, type AuthNats } from "../setup/nats-auth.js";
import { serviceNodeOptions } from "../../scripts/layout.js";

const root = join(import.meta.dirname, "../..");

/**
 * The NODE_OPTIONS every service process starts with (V8 heap settings): deploy/node-options, the
 * file the image's entrypoint reads, without its comment lines. `Cluster.env` puts them before
 * any NODE_OPTIONS of its own, which therefore win for the same flag (as a deployment's do).
 */
export const SERVICE_NODE_OPTIONS = serviceNodeOptions(root);

/**
 * How a service process runs: `tsx` (its TypeScript source through tsx's loader) or `compiled`
 * (the JavaScript `pnpm build` wrote into the dist/ folders, as production runs it).
 */
export type ServiceRuntime = "tsx" | "compiled";

/**
 * The runtime of processes the tests spawn: AGENTMESH_SERVICE_RUNTIME, which the e2e project's
 * global setup sets to `compiled` once it has built (`tsx` when unset: a bench or a script that
 * spawns services without building first runs the sources).
 */
export function serviceRuntime(): ServiceRuntime {
  const v = process.env.AGENTMESH_SERVICE_RUNTIME;
  if (v === undefined || v === "" || v === "tsx") return "tsx";
  if (v === "compiled") return "compiled";
  throw new Error(`AGENTMESH_SERVICE_RUNTIME=${v}: expected tsx or compiled`);
}

/**
 * The node arguments that start a service's main module (`coordinator`, `gateway`, `cli`,
 * `local`, or `agent` with its roles as `args`).
 */
export function serviceArgv(
  service: "coordinator" | "gateway" | "cli" | "local" | "agent",
  args: readonly string[] = [],
  runtime: ServiceRuntime = serviceRuntime(),
): string[] {
  if (runtime === "compiled") return [join(root, "services", service, "dist/main.js"), ...args];
  return ["--import", "tsx", join(root, "services", service, "src/main.ts"), ...args];
}

export type ServiceName = "coordinator" | "gateway" | RoleName;
export const AGENT_ROLES = ["planner", "critic", "researcher", "expert", "finalizer", "executor"] as const;

/**
 * The command that runs one service as its own process, from the repository root: node over
 * `services/<name>`'s main, or for a role the agent's main with the role, compiled or through tsx
 * (`serviceArgv`). Every service process the tests and the bench start comes from here.
 */
export function serviceCommand(
  name: ServiceName,
  runtime: ServiceRuntime = serviceRuntime(),
): { readonly command: string; readonly args: readonly string[] } {
  const args =
    name === "coordinator" || name === "gateway"
      ? serviceArgv(name, [], runtime)
      : serviceArgv("agent", [name], runtime);
  return { command: process.execPath, args };
}

/** One service as a real OS process. */
export interface Proc {
  readonly name: ServiceName;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

export interface ClusterOptions {
  readonly natsUrl: string;
  readonly redisUrl: string;
  readonly prefix: string;
  /** OpenAI-compatible base URL (the scripted server); unset = offline engine. */
  readonly llmBaseUrl?: string;
  readonly extraEnv?: Record<string, string>;
  /**
   * NATS access control (default on): the cluster runs its own nats-server (the binary, on a
   * free loopback port) with the config `natsServerConfig` generates for its prefix, and gives
   * every service process its own NKey seed; `natsUrl` is then not used. Off only for a test
   * that stops and restarts the NATS server itself.
   */
  readonly accessControl?: boolean;
  /**
   * NATS servers with the generated access-control config that someone else runs (a cluster of
   * them: test/setup/nats-cluster.ts): the services reach them at `url` (every node), each with
   * its own user's seed. Overrides `natsUrl` and `accessControl`; `close()` leaves them running.
   */
  readonly externalNats?: Pick<AuthNats, "url" | "seedFile">;
  /** How the service processes run (default: `serviceRuntime()`). */
  readonly runtime?: ServiceRuntime;
  /**
   * The services' LOG_LEVEL, kept as given (the bench's `warn`). Unset, the secret scan raises the
   * default `warn` to `info` so that more output is scanned.
   */
  readonly logLevel?: string;
  /**
   * Redis behind Sentinel: `REDIS_SENTINELS` (host:port list) of the services and the harness's
   * own client, which then follow a failover; `redisUrl` gives only the login.
   */
  readonly redisSentinels?: string;
}

/** A set of service processes sharing one prefix, plus clients to watch them. */
export class Cluster {
  readonly procs: Proc[] = [];
  readonly naming: Naming;
  private nc!: NatsConnection;
  private redis!: Redis;
  private authNats: AuthNats | null = null;
  /** The access-controlled NATS the services use: our own server, or the external one. */
  private access: Pick<AuthNats, "url" | "seedFile"> | null = null;
  store!: SessionStore;
  /** Secrets planted in every service's env; `close()` fails when any output or event shows one. */
  readonly secrets = new SecretScan();

  constructor(readonly opts: ClusterOptions) {
    this.naming = makeNaming(opts.prefix);
  }

  async open(): Promise<void> {
    if (this.opts.externalNats) this.access = this.opts.externalNats;
    else if (this.opts.accessControl !== false) this.access = this.authNats = await startAuthNats(this.opts.prefix);
    // the harness itself watches and injects faults as the unrestricted test user
    this.nc = await connectNats({
      url: this.natsUrl,
      name: "e2e-harness",
      ...(this.access ? { nkeySeedFile: this.access.seedFile("admin") } : {}),
    });
    this.redis = this.opts.redisSentinels
      ? new Redis(this.opts.redisUrl, {
          maxRetriesPerRequest: 3,
          name: "agentmesh",
          sentinels: this.opts.redisSentinels.split(",").map((hp) => {
            const [host, port] = hp.split(":");
            return { host: host ?? "127.0.0.1", port: Number(port) };
          }),
        })
      : new Redis(this.opts.redisUrl, { maxRetriesPerRequest: 3 });
    // through a failover its commands fail and are retried by the callers; the events are noise
    if (this.opts.redisSentinels) this.redis.on("error", () => {});
    this.store = createRedisSessionStore(this.redis, {
      keyPrefix: this.opts.prefix,
      activeTtlMs: 3_600_000,
      finishedTtlMs: 3_600_000,
      idempotencyTtlMs: 3_600_000,
    });
  }

  /** The cluster's own nats-server with the generated config (null with access control off). */
  get authServer(): AuthNats | null {
    return this.authNats;
  }

  /** The URL services reach NATS at: the cluster's own server under access control, or the external servers. */
  get natsUrl(): string {
    return this.access?.url ?? this.opts.natsUrl;
  }

  /** A process environment as NATS user `user` (a role, `coordinator`, `client` for the CLI, `inspect`). */
  env(extra: Record<string, string> = {}, user = "client"): NodeJS.ProcessEnv {
    const own = extra.NODE_OPTIONS ?? this.opts.extraEnv?.NODE_OPTIONS;
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NATS_URL: this.natsUrl,
      ...(this.access ? { NATS_NKEY_SEED_FILE: this.access.seedFile(user) } : {}),
      REDIS_URL: this.opts.redisUrl,
      ...(this.opts.redisSentinels ? { REDIS_SENTINELS: this.opts.redisSentinels } : {}),
      AGENTMESH_PREFIX: this.opts.prefix,
      LOG_LEVEL: this.opts.logLevel ?? process.env.E2E_LOG_LEVEL ?? "warn",
      AGENTMESH_TASK_ACK_WAIT_MS: "2000",
      AGENTMESH_INBOX_ACK_WAIT_MS: "2000",
      AGENTMESH_AGENT_CONCURRENCY: "4",
      ...(this.opts.llmBaseUrl
        ? {
            AGENTMESH_LLM_BASE_URL: this.opts.llmBaseUrl,
            AGENTMESH_LLM_MODEL: "scripted",
            AGENTMESH_LLM_MAX_ATTEMPTS: "2",
          }
        : {}),
      ...this.opts.extraEnv,
      ...extra,
      NODE_OPTIONS: own ? `${SERVICE_NODE_OPTIONS} ${own}` : SERVICE_NODE_OPTIONS,
    };
  }

  /** Spawns one service process with `serviceCommand(name)`, in this cluster's runtime. */
  start(name: ServiceName, extra: Record<string, string> = {}): Proc {
    const { command, args } = serviceCommand(name, this.opts.runtime ?? serviceRuntime());
    const child = spawn(command, args, {
      cwd: root,
      env: this.secrets.plant(name, this.env(extra, name), { raiseLogLevel: this.opts.logLevel === undefined }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.stderr?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const p: Proc = { name, child, exited, output: () => out };
    this.procs.push(p);
    return p;
  }

  /** Starts `coordinators` coordinator replicas and every agent role. */
  startAll(coordinators = 2, extra: Partial<Record<ServiceName, Record<string, string>>> = {}): void {
    for (let i = 0; i < coordinators; i++) this.start("coordinator", extra.coordinator);
    for (const r of AGENT_ROLES) this.start(r, extra[r]);
  }

  /**
   * Starts a gateway process (NATS user `gateway`) on a free loopback port and waits until it
   * answers `/readyz`; returns its base URL. `extra` sets its env (API keys, limits, …). Its
   * default workflow is critic-chain, the one these tests script (the gateway's own is the
   * supervisor); a test of another default sets `AGENTMESH_DEFAULT_WORKFLOW`.
   */
  async startGateway(extra: Record<string, string> = {}, ms = 60_000): Promise<{ proc: Proc; url: string }> {
    const proc = this.start("gateway", {
      AGENTMESH_GATEWAY_HOST: "127.0.0.1",
      AGENTMESH_GATEWAY_PORT: "0",
      AGENTMESH_DEFAULT_WORKFLOW: "critic-chain",
      LOG_LEVEL: "info",
      ...extra,
    });
    const end = Date.now() + ms;
    for (;;) {
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"gateway listening"/.exec(proc.output());
      if (m?.[1]) {
        const ready = await fetch(`${m[1]}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ready) return { proc, url: m[1] };
      }
      if (proc.child.exitCode !== null || Date.now() > end)
        throw new Error(`the gateway did not come up:\n${proc.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Waits until `$SRV.PING.<name>` is answered by `count` replicas of each named service. */
  async waitReady(want: Partial<Record<ServiceName, number>>, ms = 90_000): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      const seen = await this.ping();
      const missing = Object.entries(want).filter(([n, c]) => (seen.get(n) ?? 0) < (c ?? 1));
      if (missing.length === 0) return;
      if (Date.now() > end) {
        throw new Error(
          `services not ready: ${missing.map(([n]) => n).join(", ")}\n${this.procs.map((p) => `--- ${p.name}\n${p.output().slice(-2000)}`).join("\n")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Counts live replicas per service name of this prefix via `$SRV.PING`. */
  async ping(): Promise<Map<string, number>> {
    const inbox = this.nc.subscribe(`_INBOX.e2e.${Math.random().toString(36).slice(2)}`, { timeout: 400 });
    this.nc.publish("$SRV.PING", "", { reply: inbox.getSubject() });
    const counts = new Map<string, number>();
    const stop = setTimeout(() => inbox.unsubscribe(), 400);
    try {
      for await (const m of inbox) {
        const r = m.json<{ name: string; metadata?: Record<string, string> }>();
        if (r.metadata?.prefix === this.opts.prefix) counts.set(r.name, (counts.get(r.name) ?? 0) + 1);
      }
    } catch {
      /* the subscription timed out: that's the end of replies */
    }
    clearTimeout(stop);
    return counts;
  }

  /** Submits a question; returns the session id. */
  async submit(query: string, sessionId: string, extra: Record<string, unknown> = {}): Promise<string> {
    const reply = SubmitReply.parse(
      await request(
        this.nc,
        this.naming.submit,
        { v: SCHEMA_VERSION, query, session_id: sessionId, idempotency_key: sessionId, ...extra },
        10_000,
      ),
    );
    this.secrets.record(`submit reply ${sessionId}`, JSON.stringify(reply));
    if (!reply.ok) throw new Error(`submit rejected: ${reply.error.code} ${reply.error.message}`);
    return reply.session_id;
  }

  /** Raw submit reply (for bad-input tests). */
  async submitRaw(body: unknown): Promise<SubmitReply> {
    const reply = SubmitReply.parse(await request(this.nc, this.naming.submit, body, 10_000));
    this.secrets.record("submit reply", JSON.stringify(reply));
    return reply;
  }

  /** Waits for a session to reach a terminal status; returns its state, log and events. */
  async waitDone(
    sessionId: string,
    ms = 60_000,
  ): Promise<{ state: SessionState; log: TransitionLogLine[]; events: SessionEvent[] }> {
    const ac = new AbortController();
    const events: SessionEvent[] = [];
    const timer = setTimeout(() => ac.abort(), ms);
    try {
      for await (const e of followEvents(this.nc, this.naming, sessionId, { signal: ac.signal })) {
        events.push(e);
        if (e.type === "complete") break;
      }
    } finally {
      clearTimeout(timer);
      ac.abort();
    }
    const loaded = await this.store.load(sessionId);
    this.secrets.record(`events of ${sessionId}`, JSON.stringify(events));
    if (!loaded || !events.some((e) => e.type === "complete")) {
      throw new Error(
        `session ${sessionId} did not finish within ${ms} ms (status ${loaded?.state.meta.status ?? "missing"})\n${this.recentOutput()}`,
      );
    }
    const log = await this.store.transitionLog(sessionId);
    this.secrets.record(`state and log of ${sessionId}`, JSON.stringify({ state: loaded.state, log }));
    return { state: loaded.state, log, events };
  }

  /** The last lines each process printed (for a failing test's message). */
  recentOutput(chars = 1500): string {
    return this.procs.map((p) => `--- ${p.name} ${p.child.exitCode ?? ""}\n${p.output().slice(-chars)}`).join("\n");
  }

  get natsConnection(): NatsConnection {
    return this.nc;
  }

  get redisClient(): Redis {
    return this.redis;
  }

  /** SIGTERMs every process and closes the clients; then fails when anything showed a planted secret. */
  async close(): Promise<void> {
    for (const p of this.procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGTERM");
    await Promise.race([Promise.all(this.procs.map((p) => p.exited)), new Promise((r) => setTimeout(r, 8000))]);
    for (const p of this.procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await this.nc?.close();
    this.redis?.disconnect();
    await this.authNats?.stop();
    for (const p of this.procs) this.secrets.record(`output of ${p.name} ${p.child.pid ?? ""}`, p.output());
    this.secrets.check();
  }
}

/** The session's result with run-specific values (ids, times) taken out, for comparing runs. */
export function comparable(state: SessionState): unknown {
  const { meta, data } = state;
  return {
    data,
    meta: {
      status: meta.status,
      version: meta.version,
      workflow: meta.workflow,
      usage: meta.usage,
      error: meta.error,
      awaiting: meta.awaiting.length,
    },
  };
}

/** The transition log reduced to what must be identical between runs (input kinds and commands). */
export function logShape(log: readonly TransitionLogLine[], sessionId: string): string[] {
  return log.map(
    (l) =>
      `${l.version} ${l.input_id.replaceAll(sessionId, "<sid>")} -> ${l.status} [${l.commands.map((c) => c.replaceAll(sessionId, "<sid>")).join("; ")}]`,
  );
}

/** Asserts every transition was applied exactly once: versions 1..n contiguous, input ids unique. */
export function assertAppliedOnce(log: readonly TransitionLogLine[], finalVersion: number): void {
  const versions = log.map((l) => l.version);
  const expected = Array.from({ length: finalVersion }, (_, i) => i + 1);
  if (JSON.stringify(versions) !== JSON.stringify(expected))
    throw new Error(`transition versions not 1..${finalVersion} once each: ${versions.join(",")}`);
  const ids = log.map((l) => l.input_id);
  if (new Set(ids).size !== ids.length) throw new Error(`an input was applied twice: ${ids.join(",")}`);
}
