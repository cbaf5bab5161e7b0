// Shared by this package's integration tests only (not exported from index.ts).
import { naming as makeNaming, SCHEMA_VERSION, taskId, type Naming, type TaskEnvelope } from "@agentmesh/contracts";
import { jetstreamManager, type StoredMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { inject } from "vitest";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { connectNats } from "./connect.js";
import type { Log } from "./log.js";
import { provision } from "./provision.js";
import type { ProvisionOptions } from "./types.js";

export interface LogLine {
  readonly level: "info" | "warn" | "error" | "debug";
  readonly o: object;
  readonly msg: string | undefined;
}

/** A Log that remembers every line, so tests can assert on what was logged. */
export function recordingLog(): Log & { lines: LogLine[]; messages(level?: LogLine["level"]): string[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine["level"]) => (o: object, msg?: string) => void lines.push({ level, o, msg });
  return {
    lines,
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    debug: at("debug"),
    messages: (level) => lines.filter((l) => !level || l.level === level).map((l) => l.msg ?? ""),
  };
}

export function connectTest(name: string): Promise<NatsConnection> {
  return connectNats({ url: inject("natsUrl"), name });
}

/** A fresh prefix with its streams and consumers provisioned. */
export async function freshNaming(
  nc: NatsConnection,
  over: Partial<ProvisionOptions> = {},
): Promise<{ naming: Naming; opts: ProvisionOptions }> {
  const naming = makeNaming(uniquePrefix("msg"));
  const opts: ProvisionOptions = {
    naming,
    roles: ["planner", "critic"],
    taskAckWaitMs: 1000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 5,
    eventsMaxAgeMs: 60_000,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 16,
    ...over,
  };
  await provision(nc, opts);
  return { naming, opts };
}

/** Deletes a test prefix's streams (and with them its consumers) and its KV bucket. */
export async function dropStreams(nc: NatsConnection, naming: Naming): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
    await jsm.streams.delete(s).catch(() => false);
}

let sessionCounter = 0;
/** A valid, unique session id. */
export function sessionId(): string {
  sessionCounter++;
  return `sess${process.pid}x${sessionCounter}${Math.random().toString(36).slice(2, 8)}`;
}

/** A valid task for `role`. */
export function makeTask(sid: string, over: Partial<TaskEnvelope> = {}): TaskEnvelope {
  return {
    v: SCHEMA_VERSION,
    task_id: taskId(sid, 1, 0, 0),
    session_id: sid,
    role: "planner",
    op: "plan",
    attempt: 0,
    deadline_at: null,
    input: { question: "what is 2+2?" },
    ...over,
  };
}

/** Every message stored in a stream (work-queue streams allow no second consumer, so read by sequence). */
export async function streamMessages(nc: NatsConnection, stream: string): Promise<StoredMsg[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const out: StoredMsg[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m) out.push(m);
  }
  return out;
}

/** Polls `cond` until it holds; `what` (or what it returns, read at the time-out) names it in the error. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  ms = 10_000,
  what: string | (() => string) = "condition",
): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await cond()) return;
    await sleep(25);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${typeof what === "string" ? what : what()}`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Provisioning options for a cluster test of the planner role: short ack waits, a 60 s de-dup window, `replicas` copies. */
export function plannerProvision(prefix: string, replicas: number): ProvisionOptions {
  return {
    naming: makeNaming(prefix),
    roles: ["planner"],
    taskAckWaitMs: 5000,
    taskMaxDeliver: 5,
    inboxAckWaitMs: 5000,
    inboxMaxDeliver: 5,
    eventsMaxAgeMs: 3_600_000,
    duplicateWindowMs: 60_000,
    maxAckPendingPerRole: 32,
    replicas,
  };
}

/**
 * `fn`, again while it throws (a leader election under way), for up to `ms` (30 s). Every call the test
 * makes to a cluster itself goes through it: under a loaded machine a node that has just
 * rejoined can leave one request unanswered, and the code under test retries the same way.
 */
export async function retried<T>(fn: () => Promise<T>, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  // taken here: a NATS timeout is made in a timer, so its own stack names no caller
  const caller = new Error().stack?.split("\n")[2]?.trim() ?? "";
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) {
        if (err instanceof Error) err.message += ` (still failing after ${ms / 1000} s of tries, ${caller})`;
        throw err;
      }
      await sleep(250);
    }
  }
}
