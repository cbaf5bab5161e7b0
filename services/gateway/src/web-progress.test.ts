import { describe, expect, test } from "vitest";
import { SessionEvent, type EventDraft } from "@agentmesh/contracts";
import {
  applyEvent,
  chartRefusal,
  compareEventIds,
  emptyProgress,
  replay,
  type Progress,
} from "../public/progress-store.js";

// The web page's progress store (services/gateway/public/progress-store.js): session events in,
// view state out. Every fixture event is parsed by the contract's schema first, so the store is
// tested on the shapes the gateway really sends.

const SID = "webtest000000000001";
const T0 = 1_700_000_000_000;
const provenance = {
  role: "executor",
  op: "run",
  model: "none",
  tier: "fast",
  prompt_version: "executor.run/v1",
  attempt: 1,
  usage: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, model_calls: 0 },
  latency_ms: 5,
} as const;

/** Stamps drafts the way the runtime does: a version per transition, an index within it, a time. */
function session(transitions: ReadonlyArray<{ at: number; events: readonly EventDraft[] }>): SessionEvent[] {
  return transitions.flatMap((t, v) =>
    t.events.map((d, index) =>
      SessionEvent.parse({ ...d, v: 1, session_id: SID, version: v + 1, index, timestamp: t.at }),
    ),
  );
}

const token = (taskId: string, delta: string) => ({
  type: "token",
  task_id: taskId,
  delta,
  v: 1,
  session_id: SID,
  version: 0,
  index: 0,
  timestamp: 0,
});

const EVENTS = session([
  { at: T0, events: [{ type: "stage", name: "perception", status: "running", description: "reading the question" }] },
  {
    at: T0 + 400,
    events: [
      { type: "stage", name: "perception", status: "completed", description: "an arithmetic question" },
      { type: "stage", name: "executor", status: "running", description: "running the plan" },
      {
        type: "tool_call",
        id: "call-1",
        task_id: "t1",
        tool: "calculator",
        args: { expression: "6 * 7" },
        args_truncated: false,
      },
      {
        type: "tool_call",
        id: "call-2",
        task_id: "t2",
        tool: "corpus_search",
        args: { query: "redis" },
        args_truncated: false,
      },
    ],
  },
  {
    at: T0 + 900,
    events: [
      { type: "tool_result", id: "call-2", tool: "corpus_search", ok: false, content: "no index", latency_ms: 12 },
      { type: "tool_result", id: "call-1", tool: "calculator", ok: true, content: "42", latency_ms: 3 },
      { type: "step", task_id: "t1", summary: "computed 6 * 7", provenance },
      {
        type: "source",
        title: "Redis persistence",
        url: null,
        path: "redis-persistence.md",
        snippet: "AOF logs every write",
      },
      {
        type: "source",
        title: "Redis persistence again",
        url: null,
        path: "redis-persistence.md",
        snippet: "duplicate",
      },
      { type: "source", title: "Redis docs", url: "https://redis.io/docs/", path: null, snippet: "" },
    ],
  },
  {
    at: T0 + 1000,
    events: [{ type: "stage", name: "awaiting_user", status: "running", description: "Celsius or Fahrenheit?" }],
  },
  {
    at: T0 + 5000,
    events: [
      { type: "stage", name: "awaiting_user", status: "completed", description: "Celsius" },
      { type: "visualization", spec: { mark: "bar", data: { values: [{ a: 1 }] } } },
      { type: "error", code: "tool_error", message: "corpus index missing", component: "executor" },
    ],
  },
  {
    at: T0 + 6500,
    events: [
      { type: "stage", name: "executor", status: "completed", description: "ran 2 tools" },
      {
        type: "complete",
        status: "completed",
        final_answer: "6 * 7 = 42",
        final_reasoning_trace: "calculated exactly",
      },
    ],
  },
]);

/** The live stream: the replayable events with token deltas between them. */
function live(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const e of EVENTS) {
    if (e.type === "tool_call" && e.id === "call-1") out.push(token("t1", "The answer"), token("t1", " is 4"));
    if (e.type === "complete") out.push(token("t9", "6 * 7"));
    out.push(e);
  }
  return out;
}

function applyAll(events: Iterable<Record<string, unknown>>, from: Progress = emptyProgress()): Progress {
  let p = from;
  for (const e of events) p = applyEvent(p, e);
  return p;
}

describe("progress store", () => {
  test("stages carry their start, end and duration from the events' times; the current stage is the latest running", () => {
    const p = applyAll(EVENTS.slice(0, 3));
    expect(p.stages.map((s) => [s.name, s.status, s.startedAt, s.endedAt, s.durationMs])).toEqual([
      ["perception", "completed", T0, T0 + 400, 400],
      ["executor", "running", T0 + 400, null, null],
    ]);
    expect(p.stages[0]?.description).toBe("an arithmetic question");
    expect(p.currentStageIndex).toBe(1);
    expect(p.status).toBe("running");
    expect(p.sessionId).toBe(SID);
    expect(p.lastEventId).toBe("2:1");
  });

  test("each tool result is matched to its call by id, whatever the order, and calls are linked to the stage they ran in", () => {
    const p = replay(EVENTS);
    expect(p.toolCallOrder).toEqual(["call-1", "call-2"]);
    expect(p.toolCalls["call-1"]).toMatchObject({
      tool: "calculator",
      parentStageIndex: 1,
      args: { expression: "6 * 7" },
      result: { ok: true, content: "42", latencyMs: 3, at: T0 + 900 },
    });
    expect(p.toolCalls["call-2"]).toMatchObject({
      tool: "corpus_search",
      parentStageIndex: 1,
      result: { ok: false, content: "no index" },
    });
    expect(p.stages[1]?.toolCallIds).toEqual(["call-1", "call-2"]);
  });

  test("a result that arrives before its call is kept and attached when the call comes", () => {
    const [call, result] = [EVENTS[3], EVENTS[6]];
    const p = applyAll([EVENTS[0]!, result!, { ...call!, version: 3, index: 9 }]);
    expect(p.toolCalls["call-1"]?.result).toMatchObject({ ok: true, content: "42" });
    expect(p.orphanResults).toEqual({});
  });

  test("sources are aggregated once per url or path, in arrival order", () => {
    expect(replay(EVENTS).sources.map((s) => s.title)).toEqual(["Redis persistence", "Redis docs"]);
  });

  test("a running awaiting_user stage pauses the view with its question; its completion resumes it", () => {
    const at = EVENTS.findIndex((e) => e.type === "stage" && e.name === "awaiting_user");
    const paused = applyAll(EVENTS.slice(0, at + 1));
    expect(paused.status).toBe("awaiting_user");
    expect(paused.awaiting).toEqual({ question: "Celsius or Fahrenheit?" });
    const resumed = applyAll(EVENTS.slice(at + 1, at + 2), paused);
    expect(resumed.status).toBe("running");
    expect(resumed.awaiting).toBeNull();
    expect(resumed.stages.find((s) => s.name === "awaiting_user")).toMatchObject({
      status: "completed",
      durationMs: 4000,
      description: "Celsius",
    });
  });

  test("token deltas are appended live per task, dropped when the task's step arrives, ignored after complete", () => {
    let p = applyAll(EVENTS.slice(0, 3));
    p = applyAll([token("t1", "The answer"), token("t1", " is 4"), token("t2", "searching")], p);
    expect(p.streaming).toEqual({ t1: "The answer is 4", t2: "searching" });
    p = applyAll(EVENTS.slice(3, 8), p);
    expect(p.streaming).toEqual({ t2: "searching" });
    p = applyAll([...EVENTS.slice(8), token("t2", "late")], p);
    expect(p.streaming).toEqual({});
  });

  test("a redelivered task's token deltas (seq from 0 again, e.g. after a reconnect) are not shown twice", () => {
    const seqd = (seq: number, delta: string) => ({ ...token("t1", delta), seq });
    let p = applyAll(EVENTS.slice(0, 3));
    p = applyAll([seqd(0, "The "), seqd(1, "answer")], p);
    p = applyAll([seqd(0, "The "), seqd(1, "answer"), seqd(2, " is 4")], p);
    expect(p.streaming).toEqual({ t1: "The answer is 4" });
    // a delta without a seq (an older agent) is always shown
    p = applyAll([token("t1", "!")], p);
    expect(p.streaming).toEqual({ t1: "The answer is 4!" });
  });

  test("a redelivered task cutting its text elsewhere (offsets): only the characters past what was shown are added", () => {
    const at = (offset: number, delta: string, seq: number) => ({ ...token("t1", delta), seq, offset });
    let p = applyAll(EVENTS.slice(0, 3));
    p = applyAll([at(0, "The ans", 0), at(7, "wer", 1)], p);
    // the second run: other cuts, numbered from 0 again
    p = applyAll([at(0, "The", 0), at(3, " answer is", 1), at(13, " 4", 2)], p);
    expect(p.streaming).toEqual({ t1: "The answer is 4" });
    // nothing new: dropped
    p = applyAll([at(4, "answer", 3)], p);
    expect(p.streaming).toEqual({ t1: "The answer is 4" });
  });

  test("the complete event gives the final answer, its trace, the status and the total time", () => {
    const p = replay(EVENTS);
    expect(p.final).toEqual({
      status: "completed",
      answer: "6 * 7 = 42",
      trace: "calculated exactly",
      truncated: false,
      at: T0 + 6500,
    });
    expect(p.status).toBe("completed");
    expect([p.startedAt, p.endedAt]).toEqual([T0, T0 + 6500]);
    expect(p.currentStageIndex).toBeNull();
    expect(p.errors).toEqual([
      { code: "tool_error", message: "corpus index missing", component: "executor", at: T0 + 5000 },
    ]);
    expect(p.steps).toEqual([{ taskId: "t1", summary: "computed 6 * 7", role: "executor", at: T0 + 900 }]);
    expect(p.charts).toEqual([{ key: "5:1", spec: { mark: "bar", data: { values: [{ a: 1 }] } }, refused: null }]);
  });

  test("stages still running when the session fails end with it", () => {
    const failed = { ...EVENTS.at(-1)!, status: "failed", final_answer: "", final_reasoning_trace: "" };
    const p = applyAll([...EVENTS.slice(0, 3), failed]);
    expect(p.stages[1]).toMatchObject({ status: "failed", endedAt: T0 + 6500, durationMs: 6100 });
    expect(p.status).toBe("failed");
  });

  test("a reload's replay builds the same view as the live stream, however the reconnects overlapped", () => {
    const whole = applyAll(live());
    expect(replay(EVENTS, SID)).toEqual(whole);
    // Mid-session reloads: the first k live events, then a replay from the start (duplicates) or
    // from the last id seen; either way the view ends the same.
    for (let k = 0; k <= live().length; k++) {
      const before = applyAll(live().slice(0, k));
      expect(applyAll(EVENTS, before), `overlap after ${k}`).toEqual(whole);
      const last = before.lastEventId;
      const after = last === null ? EVENTS : EVENTS.filter((e) => compareEventIds(`${e.version}:${e.index}`, last) > 0);
      expect(applyAll(after, before), `resume after ${k}`).toEqual(whole);
    }
  });

  test("a view rebuilt mid-session equals the live view once no task is mid-stream", () => {
    const paused = (e: { type?: unknown; name?: unknown }) => e.type === "stage" && e.name === "awaiting_user";
    const cut = live().findIndex(paused);
    expect(replay(EVENTS.slice(0, EVENTS.findIndex(paused) + 1), SID)).toEqual(applyAll(live().slice(0, cut + 1)));
  });

  test("each refused handoff becomes a note saying why, timed by the event's timestamp", () => {
    const p = replay(
      session([
        { at: T0, events: [{ type: "handoff_refused", from: "research", to: "chat", reason: "matrix" }] },
        { at: T0 + 1, events: [{ type: "handoff_refused", from: "data", to: "code", reason: "ping_pong" }] },
        { at: T0 + 2, events: [{ type: "handoff_refused", from: "code", to: "data", reason: "cap" }] },
      ]),
    );
    expect(p.notes).toEqual([
      { at: T0, text: "Handoff research → chat refused: the handoff matrix does not allow it" },
      { at: T0 + 1, text: "Handoff data → code refused: it would hand the task straight back (A → B → A)" },
      { at: T0 + 2, text: "Handoff code → data refused: the session has made its 3 handoffs" },
    ]);
    expect(p.startedAt).toBe(T0);
  });

  test("the supervisor's routing, each agent's settings and a handoff become notes, in order", () => {
    const p = replay(
      session([
        {
          at: T0,
          events: [
            {
              type: "routing",
              agent: "research",
              confidence: 0.42,
              reason: 'the query mentions "latest"',
              is_low_confidence: true,
            },
          ],
        },
        {
          at: T0 + 1,
          events: [
            {
              type: "config",
              agent: "research",
              settings: {
                depth: "quick",
                scenario: "technical",
                search_iterations: 1,
                sources_kept: 5,
                tools: "web_search, corpus_search",
              },
            },
          ],
        },
        {
          at: T0 + 2,
          events: [
            {
              type: "handoff",
              source_agent: "research",
              target_agent: "code",
              task_description: "Compute 2 ** 10",
              context: "",
            },
          ],
        },
        {
          at: T0 + 3,
          events: [{ type: "config", agent: "code", settings: { strict: true, cached: false, data: null, label: "" } }],
        },
      ]),
    );
    expect(p.notes).toEqual([
      { at: T0, text: 'Routed to research (confidence 0.42, low): the query mentions "latest"' },
      {
        at: T0 + 1,
        text: "Settings of the research agent: depth quick; scenario technical; search iterations 1; sources kept 5; tools web_search, corpus_search",
      },
      { at: T0 + 2, text: "Handoff research → code: Compute 2 ** 10" },
      { at: T0 + 3, text: "Settings of the code agent: strict yes; cached no; data none; label (empty)" },
    ]);
  });

  test("clarify's orchestrator runs become notes: the layer, the route and the count", () => {
    const p = replay(
      session([
        {
          at: T0,
          events: [
            {
              type: "orchestration",
              iteration: 1,
              layer: "model",
              next_agent: "clarification",
              clarification_count: 1,
              max_clarifications: 2,
              reason: "Decision: CLARIFICATION",
            },
          ],
        },
        {
          at: T0 + 1,
          events: [
            {
              type: "orchestration",
              iteration: 2,
              layer: "answered",
              next_agent: "research",
              clarification_count: 1,
              max_clarifications: 2,
              reason: "answered",
            },
          ],
        },
      ]),
    );
    expect(p.notes).toEqual([
      { at: T0, text: "Orchestrator (model): clarification, clarifications 1/2" },
      { at: T0 + 1, text: "Orchestrator (answered): research, clarifications 1/2" },
    ]);
  });

  test("a config event of any shape is a note, never a throw", () => {
    const odd = [
      { agent: "data", settings: null },
      { settings: [1, 2] },
      { agent: 7, settings: "depth quick" },
      {
        agent: "code",
        settings: { nested: { a: 1 }, list: [1], nan: Number.NaN, bare: Object.create(null) as unknown },
      },
    ];
    const p = applyAll(
      odd.map((e, i) => ({ type: "config", v: 1, session_id: SID, version: i + 1, index: 0, timestamp: T0 + i, ...e })),
    );
    expect(p.notes.map((n) => n.text)).toEqual([
      "Settings of the data agent: none announced",
      "Settings of the unnamed agent: none announced",
      "Settings of the unnamed agent: none announced",
      "Settings of the code agent: nested ?; list ?; nan ?; bare ?",
    ]);
  });

  test("a code run's result is attached to the call that ran it; one for an unknown call is dropped", () => {
    const run = {
      type: "code_result",
      language: "javascript",
      exit_code: 1,
      stdout: "",
      stderr: "ReferenceError: x is not defined",
      result: null,
      truncated: false,
      duration_ms: 8,
    } as const;
    const p = replay(
      session([
        {
          at: T0,
          events: [
            {
              type: "tool_call",
              id: "call-1",
              task_id: "t1",
              tool: "run_js",
              args: { code: "x" },
              args_truncated: false,
            },
          ],
        },
        {
          at: T0 + 50,
          events: [
            { type: "tool_result", id: "call-1", tool: "run_js", ok: false, content: "exit code: 1", latency_ms: 40 },
            { ...run, id: "call-1" },
            { ...run, id: "call-9" },
          ],
        },
      ]),
    );
    expect(p.toolCalls["call-1"]?.code).toEqual({
      language: "javascript",
      exitCode: 1,
      stdout: "",
      stderr: "ReferenceError: x is not defined",
      result: null,
      truncated: false,
    });
    expect(Object.keys(p.toolCalls)).toEqual(["call-1"]);
  });

  test("event ids order by version, then index", () => {
    expect(["10:0", "2:5", "2:10", "1:0"].sort(compareEventIds)).toEqual(["1:0", "2:5", "2:10", "10:0"]);
  });
});

describe("chart specs", () => {
  test("inline data is drawn", () => {
    expect(chartRefusal({ mark: "point", data: { values: [{ x: 1 }] } })).toBeNull();
    expect(chartRefusal({ layer: [{ mark: "line" }], datasets: { a: [{ x: 1 }] }, data: { name: "a" } })).toBeNull();
  });

  test("a data.url anywhere refuses the spec", () => {
    const refused = [
      { mark: "bar", data: { url: "https://example.com/data.csv" } },
      {
        layer: [
          { mark: "line", data: { values: [] } },
          { mark: "bar", data: { url: "x.json" } },
        ],
      },
      { mark: "bar", transform: [{ lookup: "id", from: { data: { url: "/etc/passwd" }, key: "id" } }] },
      { vconcat: [{ hconcat: [{ mark: "bar", data: [{ url: "x" }] }] }] },
    ];
    for (const spec of refused) expect(chartRefusal(spec), JSON.stringify(spec)).toMatch(/only inline data/);
    expect(chartRefusal(null)).toMatch(/not a Vega-Lite spec/);
  });
});
