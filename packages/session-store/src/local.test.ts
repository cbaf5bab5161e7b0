import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentmeshError, LIMITS, STATE_SCHEMA_VERSION, SessionState } from "@agentmesh/contracts";
import { decodeOutbox, decodeState, encodeState } from "./codec.js";
import { createLocalSessionStore } from "./local.js";
import { durabilityWarnings, isConfigUnavailable } from "./connect.js";
import { keyLayout } from "./keys.js";
import { runSessionStoreConformance, testCommit, testSessionState } from "./testing.js";

runSessionStoreConformance("local twin", async (opts) => {
  let clock = 1_000_000;
  const store = createLocalSessionStore({ ...opts, keyPrefix: "unit", now: () => clock });
  return {
    store,
    advance: (ms) => {
      clock += ms;
    },
    cleanup: () => store.close(),
  };
});

describe("local session store twin specifics", () => {
  it("keeps LIMITS.transitionLogCap lines by default: the first and the newest", async () => {
    const store = createLocalSessionStore({
      keyPrefix: "unit",
      activeTtlMs: 1000,
      finishedTtlMs: 1000,
      idempotencyTtlMs: 1000,
    });
    let s: SessionState = testSessionState("sess-capdefault");
    await store.create(s);
    for (let i = 0; i < LIMITS.transitionLogCap + 3; i++) {
      const c = testCommit(s, `in:${i}`);
      await store.commit(c);
      s = c.state;
    }
    const log = await store.transitionLog(s.meta.session_id);
    expect(log).toHaveLength(LIMITS.transitionLogCap);
    expect(log[0]?.version).toBe(1);
    expect(log[1]?.version).toBe(5);
  });

  it("stores copies, so a caller mutating its state cannot change the stored one", async () => {
    const store = createLocalSessionStore({
      keyPrefix: "unit",
      activeTtlMs: 1000,
      finishedTtlMs: 1000,
      idempotencyTtlMs: 1000,
    });
    const s = testSessionState("sess-copy-001");
    await store.create(s);
    s.data.question = "mutated after create";
    expect((await store.load("sess-copy-001"))?.state.data).not.toMatchObject({ question: "mutated after create" });
  });

  it("rejects invalid options and session ids", () => {
    expect(() =>
      createLocalSessionStore({ keyPrefix: "unit", activeTtlMs: 0, finishedTtlMs: 1, idempotencyTtlMs: 1 }),
    ).toThrow(/activeTtlMs/);
    const base = { keyPrefix: "unit", activeTtlMs: 1, finishedTtlMs: 1, idempotencyTtlMs: 1 };
    expect(() => createLocalSessionStore({ ...base, longTermRefsMax: 21 })).toThrow(
      /longTermRefsMax must be at most 20/,
    );
    expect(() => createLocalSessionStore({ ...base, longTermRefsTtlMs: 0 })).toThrow(/longTermRefsTtlMs/);
    expect(() => keyLayout("bad{prefix}")).toThrow(/prefix/);
    expect(() => keyLayout("kp").session("no}tag", "state")).toThrow(/session id/);
  });
});

describe("stored layout versions", () => {
  const s = testSessionState("sess-layout-v");
  const raw = JSON.stringify(s);
  it("loads the current layout and refuses a newer one with a typed error", () => {
    expect(decodeState("sess-layout-v", raw, "0", String(STATE_SCHEMA_VERSION))).toEqual(s);
    for (const newer of [String(STATE_SCHEMA_VERSION + 1), "99"]) {
      const err = (() => {
        try {
          decodeState("sess-layout-v", raw, "0", newer);
          return null;
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(AgentmeshError);
      expect((err as AgentmeshError).code).toBe("unsupported_version");
    }
    expect(() => decodeState("sess-layout-v", raw, "0", "zero")).toThrow(
      /corrupt state of session sess-layout-v: schema version/,
    );
  });

  it("reads a current-layout state as written, which is what the schema makes of it", () => {
    // Validated on write only: reading must not differ from a validating read for what a writer stores.
    const done = {
      ...s,
      meta: { ...s.meta, version: 3, status: "completed" as const, owner: "alice", thread_id: "thread-0001" },
    };
    for (const state of [s, done]) {
      const json = encodeState(state);
      expect(decodeState(state.meta.session_id, json, String(state.meta.version))).toEqual(
        SessionState.parse(JSON.parse(json)),
      );
    }
    // ...and the write refuses what the schema refuses, so no such state is ever stored
    expect(() => encodeState({ ...s, meta: { ...s.meta, status: "sleeping" } } as unknown as SessionState)).toThrow(
      /refusing to store invalid state/,
    );
  });

  it("the schema of a layout never changes: a change needs STATE_SCHEMA_VERSION + 1 and a migration", () => {
    // A current-layout state is read without the schema, so a default added to SessionState would
    // never reach a state stored before it. Record the new layout's fingerprint here when bumping.
    const LAYOUT_FINGERPRINTS: Readonly<Record<number, string>> = {
      4: "392f170d56bb3f78",
      5: "a0e0198387c3301f",
      6: "dde70296e62cc979",
      7: "d1ea54eb4470e137",
    };
    const now = createHash("sha256")
      .update(JSON.stringify(z.toJSONSchema(SessionState, { unrepresentable: "any" })))
      .digest("hex")
      .slice(0, 16);
    expect(
      now,
      `SessionState changed under layout ${STATE_SCHEMA_VERSION}: bump STATE_SCHEMA_VERSION, add a migration in codec.ts, and record ${now} here`,
    ).toBe(LAYOUT_FINGERPRINTS[STATE_SCHEMA_VERSION]);
  });

  it("stores what the schema makes of a state, so defaults reach a state read without the schema", () => {
    const { paused_ms: _p, ...meta } = s.meta;
    const json = encodeState({ ...s, meta } as unknown as SessionState);
    expect(JSON.parse(json).meta.paused_ms).toBe(0);
    expect(decodeState(s.meta.session_id, json, String(s.meta.version)).meta.paused_ms).toBe(0);
  });

  it("refuses a stored value that is not a state or an outbox at all", () => {
    expect(() => decodeState("sess-layout-v", JSON.stringify({ meta: { version: 0 } }), "0")).toThrow(
      /corrupt state of session sess-layout-v/,
    );
    expect(() => decodeState("sess-layout-v", "[]", "0")).toThrow(/corrupt state/);
    expect(() => decodeState("sess-layout-v", raw, "1")).toThrow(/stored version 1, state says version 0/);
    expect(() => decodeOutbox("sess-layout-v", '{"entries":"no"}')).toThrow(/corrupt outbox of session sess-layout-v/);
    expect(() => decodeOutbox("sess-layout-v", "{")).toThrow(/corrupt outbox of session sess-layout-v: not JSON/);
  });

  it("migrates layout 1 (no stored version): a pause gains expires_at null", () => {
    const paused = JSON.stringify({
      ...s,
      meta: { ...s.meta, status: "awaiting_user", pause: { since: 10, deadline_left_ms: null } },
    });
    expect(decodeState("sess-layout-v", paused, "0", null).meta.pause).toEqual({
      since: 10,
      deadline_left_ms: null,
      expires_at: null,
    });
    expect(decodeState("sess-layout-v", raw, "0", null)).toEqual(s);
  });

  it("migrates layout 2: a session gains owner and thread_id, both null", () => {
    const { owner: _o, thread_id: _t, ...meta2 } = s.meta;
    const v2 = JSON.stringify({ ...s, meta: meta2 });
    expect(decodeState("sess-layout-v", v2, "0", "2").meta).toMatchObject({ owner: null, thread_id: null });
    const owned = JSON.stringify({ ...s, meta: { ...s.meta, owner: "alice", thread_id: "thread-0001" } });
    expect(decodeState("sess-layout-v", owned, "0", "3").meta).toMatchObject({
      owner: "alice",
      thread_id: "thread-0001",
    });
  });

  it("migrates layout 3: a session gains its trace context, null; layout 4 keeps the stored one", () => {
    const { trace: _t, ...meta3 } = s.meta;
    expect(decodeState("sess-layout-v", JSON.stringify({ ...s, meta: meta3 }), "0", "3").meta.trace).toBeNull();
    const trace = {
      trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
      root_span_id: "00f067aa0ba902b7",
      parent_span_id: null,
      sampled: true,
    };
    expect(
      decodeState("sess-layout-v", JSON.stringify({ ...s, meta: { ...s.meta, trace } }), "0", "4").meta.trace,
    ).toEqual(trace);
  });
});

describe("layout 6: task ids with the digest of the input that made their version", () => {
  it("a layout-5 state with four-part task ids loads as it is, validated; a layout-6 state holds five-part ones", () => {
    const base = testSessionState("sess-layout-ids", 3);
    const awaited = (task_id: string) => ({
      task_id,
      role: "researcher",
      op: "research",
      attempt: 0,
      dispatched_at: 1_700_000_000_003,
      deadline_at: null,
    });
    const v5 = { ...base, meta: { ...base.meta, awaiting: [awaited("sess-layout-ids.3.0.0")] } };
    expect(decodeState("sess-layout-ids", JSON.stringify(v5), "3", "5").meta.awaiting).toEqual(v5.meta.awaiting);
    const v6 = { ...base, meta: { ...base.meta, awaiting: [awaited("sess-layout-ids.3.0.0.1x9zk2")] } };
    expect(decodeState("sess-layout-ids", encodeState(v6), "3", "6").meta.awaiting).toEqual(v6.meta.awaiting);
    // a migration still validates: a malformed id in a layout-5 state is refused, not carried on
    const bad = { ...base, meta: { ...base.meta, awaiting: [awaited("sess-layout-ids.3.0")] } };
    expect(() => decodeState("sess-layout-ids", JSON.stringify(bad), "3", "5")).toThrow(/malformed task id/);
  });
});

describe("layout 7: the blackboard memory's behavioural patterns", () => {
  /** A blackboard session as layout 6 stored it: its memory without patterns. */
  const v6 = () => {
    const base = testSessionState("sess-layout-bb", 2);
    const memory = { short_term: [], banned_tools: [], successful_tools: [], long_term_refs: ["kept from the thread"] };
    return {
      meta: { ...base.meta, workflow: "blackboard" },
      data: {
        ...{ workflow: "blackboard", question: "What is Redis?", strategy_profile: "CONSERVATIVE", phase: "intake" },
        limits: { max_steps: 5, max_retries: 2, max_rewrites: 1, execution: "tool_only", tool_attempts: 3 },
        ...{ tools: null, perception_snapshots: [], retrieval_bundles: [], plan_versions: [], memory },
        ...{ tool_performance_log: [], step_results: [], critic_reports: [], round: null, step_outcome: null },
        ...{ step_perception: null, step_retries: 0, rewrite_count: 0, rewrite_request: null, next_action: null },
        ...{ accepted_results: [], questions_asked: 0, question_for_human: null, user_replies: [], trace: [] },
        ...{ citations: [], final_answer: null, final_reasoning_trace: null, error: null, error_component: null },
      },
    };
  };

  it("migrates layout 6: the memory gains no patterns and keeps the rest; without the migration the schema refuses it", () => {
    const state = decodeState("sess-layout-bb", JSON.stringify(v6()), "2", "6");
    expect(state.data.workflow === "blackboard" && state.data.memory).toEqual({
      short_term: [],
      banned_tools: [],
      successful_tools: [],
      patterns: [],
      long_term_refs: ["kept from the thread"],
    });
    expect(SessionState.safeParse(v6()).success).toBe(false);
  });
});

describe("layout 5: the supervisor's visited agents, handoff summary and request metadata", () => {
  const handoffs = [
    { source_agent: "chat", target_agent: "research", task_description: "Find sources", context: null },
    { source_agent: "research", target_agent: "code", task_description: "Compute it", context: "the numbers" },
  ];
  /** A supervisor session as layout 4 stored it: routed to chat, two handoffs, owned by alice. */
  const v4 = () => ({
    meta: { ...testSessionState("sess-layout-sup", 6).meta, workflow: "supervisor", owner: "alice" },
    data: {
      ...{ workflow: "supervisor", query: "Compare the regions", mode: null, depth: "standard", scenario: "academic" },
      ...{ messages: [], tools_available: ["run_python"], node: "generate", selected_agent: "chat" },
      ...{ routing_reason: "chat first", routing_confidence: 0.9, is_low_confidence: false, active_agent: "code" },
      ...{ delegated_task: "Compute it", handoff_context: "the numbers", handoff_count: 2, pending_handoff: null },
      ...{ handoff_history: handoffs, shared_memory: {}, tool_iterations: 0, refusals: 0, observations: [] },
      ...{ pending_call: null, sources: [], search_summary: null, analysis: null, synthesis: null, code: null },
      ...{ code_attempts: [], writing: null, outline: null, draft: null, data_input: null, analysis_plan: null },
      ...{ chart_planned: false, charted: false, notes: [], tool_calls: 0, response: null, error: null },
      error_component: null,
    },
  });

  it("migrates layout 4: the visited agents and the summary from the routing and handoffs, user_id from the owner", () => {
    const state = decodeState("sess-layout-sup", JSON.stringify(v4()), "6", "4");
    expect(state.data).toMatchObject({
      visited_agents: ["chat", "research", "code"],
      handoff_summary: "Handoffs: 2 of 3.\n1. chat → research: Find sources\n2. research → code: Compute it",
      user_id: "alice",
      provider: null,
      model: null,
      tier: null,
      image_attachments: [],
    });
  });

  it("an unrouted supervisor session visited no agent; a session without an owner has no user_id", () => {
    const old = v4();
    const unrouted = {
      meta: { ...old.meta, owner: null },
      data: { ...old.data, selected_agent: null, active_agent: null, handoff_history: [], handoff_count: 0 },
    };
    const state = decodeState("sess-layout-sup", JSON.stringify(unrouted), "6", "4");
    expect(state.data).toMatchObject({ visited_agents: [], handoff_summary: "No handoffs.", user_id: null });
  });

  it("leaves other workflows' data as it was; a layout-4 supervisor state without the migration is refused by the schema", () => {
    const chain = testSessionState("sess-layout-cc");
    expect(decodeState("sess-layout-cc", JSON.stringify(chain), "0", "4")).toEqual(chain);
    expect(SessionState.safeParse(v4()).success).toBe(false);
  });
});

describe("key layout", () => {
  it("puts a session's keys under one hash tag and round-trips the id from a state key", () => {
    const k = keyLayout("am");
    expect(k.session("sess-0001", "state")).toBe("am:s:{sess-0001}:state");
    expect(k.session("sess-0001", "applied")).toBe("am:s:{sess-0001}:applied");
    expect(k.session("sess-0001", "log")).toBe("am:s:{sess-0001}:log");
    expect(k.idempotency("abc")).toBe("am:idem:abc");
    expect(k.timers).toBe("am:timers");
    expect(k.sessionOfStateKey("am:s:{sess-0001}:state")).toBe("sess-0001");
    expect(k.sessionOfStateKey("am:s:{sess-0001}:log")).toBeNull();
  });
});

describe("durability verdicts", () => {
  it("warns about AOF off, lax fsync and evicting policies, and not about a durable setup", () => {
    expect(durabilityWarnings({ aof: true, appendfsync: "always", maxmemoryPolicy: "noeviction" })).toEqual([]);
    const w = durabilityWarnings({ aof: false, appendfsync: "everysec", maxmemoryPolicy: "volatile-lru" });
    expect(w).toHaveLength(3);
    expect(w.join("\n")).toMatch(/AOF is off[\s\S]*everysec[\s\S]*volatile-lru/);
  });

  it("recognises a disabled or denied CONFIG command", () => {
    expect(isConfigUnavailable(new Error("ERR unknown command 'CONFIG', with args beginning with: 'GET' "))).toBe(true);
    expect(isConfigUnavailable(new Error("NOPERM this user has no permissions to run the 'config|get' command"))).toBe(
      true,
    );
    expect(isConfigUnavailable(new Error("connect ECONNREFUSED 127.0.0.1:6379"))).toBe(false);
  });
});
