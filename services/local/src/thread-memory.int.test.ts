import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { startLocal } from "./local.js";

// Long-term memory across a thread, over real NATS and Redis with the offline engine (no model):
// the first session's accepted results become the thread's long-term references, which the
// coordinator keeps and hands to the thread's next session, whose retriever finds them through
// its memory source. A session outside the thread asking the same finds none.

type SessionState = NonNullable<Awaited<ReturnType<SessionStore["load"]>>>["state"];
type BlackboardData = Extract<SessionState["data"], { workflow: "blackboard" }>;

const log = createLogger({ service: "test", level: "silent" });
const ROLES = ["perception", "memory", "retriever", "decision", "executor", "critic"];
const THREAD = "thread-memory-int-1";
const prefix = uniquePrefix("thm");
let nc: NatsConnection;
let redis: Awaited<ReturnType<typeof connectRedis>>;
let store: SessionStore;
let local: Awaited<ReturnType<typeof startLocal>>;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "thread-memory" });
  redis = await connectRedis(inject("redisUrl"), { name: "thread-memory" });
  store = createRedisSessionStore(redis, {
    keyPrefix: prefix,
    activeTtlMs: 600_000,
    finishedTtlMs: 600_000,
    idempotencyTtlMs: 600_000,
  });
  local = await startLocal(
    {
      NATS_URL: inject("natsUrl"),
      REDIS_URL: inject("redisUrl"),
      AGENTMESH_PREFIX: prefix,
      AGENTMESH_ROLES: ROLES.join(","),
      AGENTMESH_CORPUS_DIR: join(import.meta.dirname, "../../../corpus"),
    },
    log,
    ROLES,
  );
}, 60_000);

afterAll(async () => {
  await local?.stop(500);
  const jsm = await jetstreamManager(nc);
  for await (const s of jsm.streams.names())
    if (s.includes(prefix.toUpperCase())) await jsm.streams.delete(s).catch(() => false);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
  await nc.drain();
});

/** Submits a blackboard question (in the thread unless `thread` is false) and waits for its session to end. */
async function ask(query: string, thread = true): Promise<{ state: SessionState; data: BlackboardData }> {
  const reply = await local.coordinator.core.submit({
    v: 1,
    query,
    workflow: "blackboard",
    ...(thread ? { thread_id: THREAD } : {}),
  });
  if (!reply.ok) throw new Error(`submit refused: ${reply.error.message}`);
  for (const end = Date.now() + 45_000; ;) {
    const state = (await store.load(reply.session_id))?.state;
    if (state && state.meta.status !== "running") {
      if (state.data.workflow !== "blackboard") throw new Error("not a blackboard session");
      return { state, data: state.data };
    }
    if (Date.now() > end) throw new Error(`session ${reply.session_id} did not end: ${state?.meta.status ?? "absent"}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The memory items the session's retriever returned. */
const memoryItems = (d: BlackboardData) =>
  d.retrieval_bundles.flatMap((r) => r.bundle.items.filter((i) => i.source === "memory").map((i) => i.content));

describe("long-term references across a thread's sessions", () => {
  it("a second session of the thread retrieves the first session's references from memory", async () => {
    const first = await ask("How does Redis persist data with the append-only file?");
    expect(first.state.meta.status).toBe("completed");
    const refs = first.data.memory.long_term_refs;
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.some((r) => r.includes("redis-persistence.md"))).toBe(true);
    expect(memoryItems(first.data)).toEqual([]); // nothing to remember yet
    expect(await store.loadThreadRefs(THREAD)).toEqual(refs);

    const second = await ask("What does the Redis append-only file record?");
    expect(second.state.meta.status).toBe("completed");
    expect(second.data.memory.long_term_refs.slice(0, refs.length)).toEqual(refs);
    const recalled = memoryItems(second.data);
    expect(recalled.length).toBeGreaterThan(0);
    for (const item of recalled) expect(refs).toContain(item);

    const outside = await ask("What does the Redis append-only file record?", false);
    expect(outside.state.meta.status).toBe("completed");
    expect(memoryItems(outside.data)).toEqual([]);
  }, 150_000);
});
