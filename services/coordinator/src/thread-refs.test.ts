import { describe, expect, test } from "vitest";
import { SCHEMA_VERSION, inputIds, type InboxInput } from "@agentmesh/contracts";
import { createLocalSessionStore } from "@agentmesh/session-store/testing";
import { createLogger } from "@agentmesh/service-kit";
import { createSession } from "@agentmesh/workflows";
import { DEFAULTS } from "@agentmesh/workflows/testing";
import { createCoordinatorCore } from "./core.js";

// The coordinator keeps a thread's long-term references: it writes a finished session's into the
// thread's store and hands them to the thread's next session (docs/workflows/blackboard.md).

const log = createLogger({ service: "test", level: "silent" });
const THREAD = "thread-refs-core-1";
const T0 = 1_700_000_000_000;

function setup() {
  const store = createLocalSessionStore({
    keyPrefix: "t",
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
    now: () => T0,
  });
  const inbox: InboxInput[] = [];
  const core = createCoordinatorCore({
    store,
    publisher: {
      publishInbox: async (i) => void inbox.push(i),
      publishOutbox: async () => {},
    },
    log,
    defaults: DEFAULTS,
    now: () => T0,
  });
  return { store, core, inbox };
}

const cancel = (sid: string, id: string): InboxInput => ({
  v: SCHEMA_VERSION,
  kind: "cancel",
  session_id: sid,
  input_id: inputIds.cancel(id),
  reason: "done",
});

/** A running blackboard session of the thread whose memory holds `refs`, stored as the coordinator would. */
async function sessionWithRefs(store: ReturnType<typeof setup>["store"], sid: string, refs: string[]) {
  const state = createSession({
    sessionId: sid,
    workflow: "blackboard",
    query: "How does Redis persist data?",
    options: {},
    now: T0,
    defaults: DEFAULTS,
    owner: "alice",
    threadId: THREAD,
    carry: { clarification_count: null, long_term_refs: refs },
  });
  expect(await store.create(state)).toBe(true);
  expect((await store.attachToThread(THREAD, "alice", sid, T0)).ok).toBe(true);
}

describe("a thread's long-term references", () => {
  test("a session that ends keeps its references for the thread; one still running keeps nothing yet", async () => {
    const { store, core } = setup();
    await sessionWithRefs(store, "bbrefs0000000001", ["Redis logs every write (corpus_search)"]);
    expect(await store.loadThreadRefs(THREAD)).toEqual([]);
    await core.handleInput(cancel("bbrefs0000000001", "c1"));
    expect((await store.load("bbrefs0000000001"))?.state.meta.status).toBe("cancelled");
    expect(await store.loadThreadRefs(THREAD)).toEqual(["Redis logs every write (corpus_search)"]);
    // a redelivered input of the ended session writes the same again, and changes nothing
    await core.handleInput(cancel("bbrefs0000000001", "c1"));
    expect(await store.loadThreadRefs(THREAD)).toEqual(["Redis logs every write (corpus_search)"]);
  });

  test("the thread's next session starts with them: in its start input and in its memory", async () => {
    const { store, core, inbox } = setup();
    await sessionWithRefs(store, "bbrefs0000000002", ["kept from the first session"]);
    await core.handleInput(cancel("bbrefs0000000002", "c2"));
    const next = await core.submit({
      v: SCHEMA_VERSION,
      query: "And what does fsync change?",
      workflow: "blackboard",
      thread_id: THREAD,
      owner: "alice",
      session_id: "bbrefs0000000003",
    });
    expect(next).toMatchObject({ ok: true, created: true });
    expect(inbox.at(-1)).toMatchObject({ kind: "start", carry: { long_term_refs: ["kept from the first session"] } });
    const state = (await store.load("bbrefs0000000003"))?.state;
    expect(state?.data.workflow === "blackboard" && state.data.memory.long_term_refs).toEqual([
      "kept from the first session",
    ]);
  });

  test("a session of no thread, or of a thread that kept none, hands nothing on", async () => {
    const { core, inbox } = setup();
    await core.submit({ v: SCHEMA_VERSION, query: "What is Redis?", workflow: "blackboard" });
    expect(inbox.at(-1)).not.toHaveProperty("carry");
    await core.submit({ v: SCHEMA_VERSION, query: "What is Redis?", workflow: "blackboard", thread_id: THREAD });
    expect(inbox.at(-1)).not.toHaveProperty("carry");
  });
});
