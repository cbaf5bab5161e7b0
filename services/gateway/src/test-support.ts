// Shared by this package's integration tests only (not exported from index.ts).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SCHEMA_VERSION, type Naming, type SessionEvent } from "@agentmesh/contracts";
import { createLocalSessionStore, testSessionState } from "@agentmesh/session-store/testing";
import { createLogger } from "@agentmesh/service-kit";
import { apiKeyEntry, generateApiKey, parseApiKeys } from "./api-keys.js";
import { createGatewayApp, type GatewayApp, type GatewayDeps } from "./app.js";
import { createEventHub, type EventHub } from "./fanout.js";
import { createLocalLimits } from "./testing.js";

/** A gateway app listening on a free port over real NATS, its sessions in a local store, one API key. */
export interface TestGateway {
  readonly url: string;
  readonly key: string;
  readonly gw: GatewayApp;
  readonly hub: EventHub;
  /** Makes `sid` a session of the key's owner, so its routes answer. */
  own(sid: string, status?: "running" | "completed"): Promise<void>;
  close(): Promise<void>;
}

export async function startTestGateway(
  nc: NatsConnection,
  naming: Naming,
  over: Partial<GatewayDeps> = {},
): Promise<TestGateway> {
  const key = generateApiKey();
  const store = createLocalSessionStore({
    keyPrefix: "gwt",
    activeTtlMs: 600_000,
    finishedTtlMs: 600_000,
    idempotencyTtlMs: 600_000,
  });
  const limits = createLocalLimits({
    keyPrefix: "gwt",
    rateLimit: 100_000,
    rateWindowMs: 60_000,
    maxConcurrentSessions: 100_000,
    sessionTtlMs: 600_000,
    // these tests open streams by the thousand for one key (leaks, resumes), far past a person's bounds
    maxStreamsPerKey: 100_000,
    streamOpenRate: 1_000_000,
  });
  const log = createLogger({ service: "test", level: "silent" });
  const hub = over.hub ?? createEventHub(nc, naming, log);
  await hub.ready();
  const gw = createGatewayApp({
    nc,
    naming,
    store,
    limits,
    log,
    submitTimeoutMs: 5000,
    publisher: { publishInbox: async () => {} },
    keys: parseApiKeys({ inline: apiKeyEntry("alice", key) }),
    anonymous: false,
    defaultWorkflow: "supervisor",
    maxBodyBytes: 64 * 1024,
    ready: async () => true,
    hub,
    ...over,
  });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: gw.app.fetch, hostname: "127.0.0.1", port: 0, createServer }, () => resolve(s as Server));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    key,
    gw,
    hub,
    async own(sid, status = "running") {
      const s = testSessionState(sid);
      await store.create({ ...s, meta: { ...s.meta, owner: "alice", status } });
    },
    async close() {
      gw.drain();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await gw.close();
    },
  };
}

/** The consumers on the events stream now, counted on the server. */
export async function consumersOnEvents(nc: NatsConnection, naming: Naming): Promise<number> {
  return (await (await jetstreamManager(nc)).consumers.list(naming.streams.events).next()).length;
}

/** One SSE message as a client parses it. */
export interface SseMessage {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

/** Reads SSE messages off a response body, one at a time (comments skipped); null at its end. */
export function sseReader(res: Response): { next(): Promise<SseMessage | null>; cancel(): Promise<void> } {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  return {
    async next() {
      for (;;) {
        const cut = buf.indexOf("\n\n");
        if (cut >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const fields = block.split("\n").filter((l) => !l.startsWith(":"));
          if (fields.length === 0) continue;
          const get = (k: string) => fields.filter((l) => l.startsWith(`${k}: `)).map((l) => l.slice(k.length + 2));
          return { event: get("event")[0] ?? "message", id: get("id")[0] ?? null, data: get("data").join("\n") };
        }
        const { done, value } = await reader.read();
        if (done) return null;
        buf += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

/** A stage event of `sid` (its description padded to `pad` characters). */
export const stageEvent = (sid: string, version: number, pad = 0): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index: 0,
  timestamp: 1_700_000_000_000 + version,
  type: "stage",
  name: "planner",
  status: "running",
  description: `step ${version}`.padEnd(pad, "."),
});

/** The `complete` event of `sid`. */
export const completeEvent = (sid: string, version: number, answer = "4", trace = "2 + 2"): SessionEvent => ({
  v: SCHEMA_VERSION,
  session_id: sid,
  version,
  index: 0,
  timestamp: 1_700_000_000_000 + version,
  type: "complete",
  status: "completed",
  final_answer: answer,
  final_reasoning_trace: trace,
});

/** A token delta of `sid`'s task `task` (the writer's answer by default), at `offset` in its text. */
export const tokenEvent = (
  sid: string,
  f: { task?: string; offset: number; delta: string; seq?: number; role?: string; op?: string },
) => ({
  v: SCHEMA_VERSION,
  type: "token" as const,
  session_id: sid,
  version: 1,
  index: 0,
  timestamp: 1_700_000_000_000,
  task_id: `${sid}.${f.task ?? "1.0.0"}`,
  role: f.role ?? "writer",
  op: f.op ?? "finalize",
  attempt: 0,
  ...(f.seq === undefined ? {} : { seq: f.seq }),
  offset: f.offset,
  delta: f.delta,
});

/**
 * One hop of a client that hangs up every few messages: reads up to `k` messages into `got`;
 * true once `complete` came. A stream that ends before `complete` is an error.
 */
export async function readHop(reader: ReturnType<typeof sseReader>, k: number, got: SseMessage[]): Promise<boolean> {
  for (; k > 0; k--) {
    const m = await reader.next();
    if (m === null) throw new Error(`the stream ended before complete, after ${got.length} messages`);
    got.push(m);
    if (m.event === "complete") return true;
  }
  return false;
}
