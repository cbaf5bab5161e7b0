// The progress of one session as view state: a pure
// reducer from session events to what the page shows. It reads only the events, never a
// clock, so replaying a session's events after a reload rebuilds exactly the view the live
// stream built (token deltas aside: they are replayed too, but dropped once their task ends).

/**
 * @typedef {"running" | "completed" | "failed"} StageStatus
 * @typedef {"idle" | "running" | "awaiting_user" | "completed" | "failed" | "cancelled" | "budget_exceeded"} SessionStatus
 *
 * @typedef {object} Stage
 * @property {number} index position in `stages`, the parent key of its tool calls
 * @property {string} name
 * @property {string} description the latest description (a completed stage says what it did)
 * @property {StageStatus} status
 * @property {number} startedAt server time (ms) of its `running` event
 * @property {number | null} endedAt server time of its `completed` or `failed` event
 * @property {number | null} durationMs
 * @property {string[]} toolCallIds the calls made while it ran, in order
 *
 * @typedef {object} ToolResult
 * @property {boolean} ok
 * @property {string} content
 * @property {number} latencyMs
 * @property {number} at
 *
 * @typedef {object} CodeResult
 * @property {string} language
 * @property {number | null} exitCode
 * @property {string} stdout
 * @property {string} stderr
 * @property {string | null} result
 * @property {boolean} truncated
 *
 * @typedef {object} ToolCall
 * @property {string} id
 * @property {string} tool
 * @property {string} taskId
 * @property {Record<string, unknown>} args
 * @property {boolean} argsTruncated
 * @property {string[]} flags
 * @property {number} at
 * @property {number | null} parentStageIndex the stage running when it was called
 * @property {ToolResult | null} result
 * @property {CodeResult | null} code
 *
 * @typedef {{ title: string, url: string | null, path: string | null, snippet: string }} Source
 * @typedef {{ taskId: string, summary: string, role: string, at: number }} Step
 * @typedef {{ code: string, message: string, component: string | null, at: number }} EventError
 * @typedef {{ at: number, text: string }} Note
 * @typedef {{ key: string, spec: Record<string, unknown>, refused: string | null }} Chart
 * @typedef {{ status: string, answer: string, trace: string, truncated: boolean, at: number }} Final
 *
 * @typedef {object} Progress
 * @property {string | null} sessionId
 * @property {SessionStatus} status
 * @property {string | null} lastEventId `<version>:<index>` of the last event applied
 * @property {number | null} startedAt server time of the first event
 * @property {number | null} endedAt server time of the `complete` event
 * @property {Stage[]} stages in the order they started
 * @property {number | null} currentStageIndex the latest stage still running
 * @property {Record<string, ToolCall>} toolCalls by call id
 * @property {string[]} toolCallOrder call ids in arrival order
 * @property {Record<string, ToolResult>} orphanResults results whose call has not arrived yet
 * @property {Step[]} steps
 * @property {Source[]} sources de-duplicated by url or path
 * @property {Note[]} notes routing decisions, agent settings, handoffs (and refused ones) and clarify's orchestrator runs, as text
 * @property {Chart[]} charts
 * @property {Record<string, string>} streaming live token text by task id, while the task runs
 * @property {Record<string, number>} tokenSeq by task id, the seq after the last token delta shown, for deltas without an offset (a redelivered task streams from 0 again)
 * @property {Record<string, number>} tokenReach by task id, how far into the task's text the deltas shown reach (their offset + length)
 * @property {EventError[]} errors
 * @property {{ question: string } | null} awaiting the question a person is asked, while paused
 * @property {Final | null} final
 */

/** The stage the workflows open while they wait for a person; its description is the question. */
export const AWAITING_STAGE = "awaiting_user";

/**
 * An empty progress for a session (null before the server named it).
 * @param {string | null} [sessionId]
 * @returns {Progress}
 */
export function emptyProgress(sessionId = null) {
  return {
    sessionId,
    status: "idle",
    lastEventId: null,
    startedAt: null,
    endedAt: null,
    stages: [],
    currentStageIndex: null,
    toolCalls: {},
    toolCallOrder: [],
    orphanResults: {},
    steps: [],
    sources: [],
    notes: [],
    charts: [],
    streaming: {},
    tokenSeq: {},
    tokenReach: {},
    errors: [],
    awaiting: null,
    final: null,
  };
}

/**
 * Orders two events by their `<version>:<index>` (the last two parts of an SSE id, which leads
 * with the stream sequence): negative when `a` came first.
 * @param {string} a
 * @param {string} b
 */
export function compareEventIds(a, b) {
  const [va = 0, ia = 0] = a.split(":").map(Number);
  const [vb = 0, ib = 0] = b.split(":").map(Number);
  return va - vb || ia - ib;
}

/**
 * Applies one session event (the JSON of an SSE `data:` line) and returns the next progress;
 * the given one is not changed. An event at or before `lastEventId` is a duplicate (a
 * reconnect's overlap) and changes nothing.
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
export function applyEvent(p, e) {
  if (e.type === "token") return applyToken(p, e);
  if (typeof e.version !== "number" || typeof e.index !== "number") return p;
  const id = `${e.version}:${e.index}`;
  if (p.lastEventId !== null && compareEventIds(id, p.lastEventId) <= 0) return p;
  /** @type {Progress} */
  const base = {
    ...p,
    sessionId: p.sessionId ?? e.session_id ?? null,
    lastEventId: id,
    startedAt: p.startedAt ?? e.timestamp,
    status: p.status === "idle" ? "running" : p.status,
  };
  return applyTyped(base, e);
}

/**
 * Applies every event in order: what a reload does with the replayed stream.
 * @param {Iterable<Record<string, any>>} events
 * @param {string | null} [sessionId]
 */
export function replay(events, sessionId = null) {
  let p = emptyProgress(sessionId);
  for (const e of events) p = applyEvent(p, e);
  return p;
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyTyped(p, e) {
  switch (e.type) {
    case "stage":
      return applyStage(p, e);
    case "tool_call":
      return applyToolCall(p, e);
    case "tool_result":
      return applyToolResult(p, e);
    case "code_result":
      return applyCodeResult(p, e);
    case "step":
      return applyStep(p, e);
    case "source":
      return addSource(p, { title: e.title, url: e.url ?? null, path: e.path ?? null, snippet: e.snippet ?? "" });
    case "routing":
      return addNote(
        p,
        e.timestamp,
        `Routed to ${e.agent} (confidence ${Number(e.confidence).toFixed(2)}${e.is_low_confidence ? ", low" : ""}): ${e.reason}`,
      );
    case "config":
      return addNote(p, e.timestamp, configNote(e.agent, e.settings));
    case "handoff":
      return addNote(p, e.timestamp, `Handoff ${e.source_agent} → ${e.target_agent}: ${e.task_description}`);
    case "handoff_refused":
      return addNote(p, e.timestamp, `Handoff ${e.from} → ${e.to} refused: ${refusalText(e.reason)}`);
    case "orchestration":
      return addNote(
        p,
        e.timestamp,
        `Orchestrator (${e.layer}): ${e.next_agent}, clarifications ${e.clarification_count}/${e.max_clarifications}`,
      );
    case "visualization":
      return {
        ...p,
        charts: [...p.charts, { key: `${e.version}:${e.index}`, spec: e.spec, refused: chartRefusal(e.spec) }],
      };
    case "error":
      return {
        ...p,
        errors: [...p.errors, { code: e.code, message: e.message, component: e.component ?? null, at: e.timestamp }],
      };
    case "complete":
      return applyComplete(p, e);
    default:
      return p; // a type added later: the page shows what it knows
  }
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyStage(p, e) {
  const stages = [...p.stages];
  const awaitingNow = e.name === AWAITING_STAGE;
  if (e.status === "running") {
    const index = stages.length;
    stages.push({
      index,
      name: e.name,
      description: e.description,
      status: "running",
      startedAt: e.timestamp,
      endedAt: null,
      durationMs: null,
      toolCallIds: [],
    });
    return {
      ...p,
      stages,
      currentStageIndex: index,
      ...(awaitingNow ? { awaiting: { question: e.description }, status: "awaiting_user" } : {}),
    };
  }
  // `completed` or `failed` closes the latest running stage of that name.
  const open = findLast(stages, (s) => s.name === e.name && s.status === "running");
  if (open) {
    stages[open.index] = {
      ...open,
      status: e.status,
      description: e.description || open.description,
      endedAt: e.timestamp,
      durationMs: Math.max(0, e.timestamp - open.startedAt),
    };
  } else {
    // Closed without an opening we saw: show it as an instant.
    stages.push({
      index: stages.length,
      name: e.name,
      description: e.description,
      status: e.status,
      startedAt: e.timestamp,
      endedAt: e.timestamp,
      durationMs: 0,
      toolCallIds: [],
    });
  }
  const running = findLast(stages, (s) => s.status === "running");
  return {
    ...p,
    stages,
    currentStageIndex: running ? running.index : null,
    ...(awaitingNow ? { awaiting: null, status: p.status === "awaiting_user" ? "running" : p.status } : {}),
  };
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyToolCall(p, e) {
  if (p.toolCalls[e.id]) return p;
  const parent = p.currentStageIndex;
  const early = p.orphanResults[e.id] ?? null;
  /** @type {ToolCall} */
  const call = {
    id: e.id,
    tool: e.tool,
    taskId: e.task_id,
    args: e.args ?? {},
    argsTruncated: Boolean(e.args_truncated),
    flags: Array.isArray(e.flags) ? e.flags : [],
    at: e.timestamp,
    parentStageIndex: parent,
    result: early,
    code: null,
  };
  const stages =
    parent === null
      ? p.stages
      : p.stages.map((s) => (s.index === parent ? { ...s, toolCallIds: [...s.toolCallIds, e.id] } : s));
  return {
    ...p,
    stages,
    toolCalls: { ...p.toolCalls, [e.id]: call },
    toolCallOrder: [...p.toolCallOrder, e.id],
    orphanResults: omit(p.orphanResults, e.id),
  };
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyToolResult(p, e) {
  /** @type {ToolResult} */
  const result = {
    ok: Boolean(e.ok),
    content: String(e.content ?? ""),
    latencyMs: Number(e.latency_ms ?? 0),
    at: e.timestamp,
  };
  const call = p.toolCalls[e.id];
  if (!call) return { ...p, orphanResults: { ...p.orphanResults, [e.id]: result } };
  return { ...p, toolCalls: { ...p.toolCalls, [e.id]: { ...call, result } } };
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyCodeResult(p, e) {
  const call = p.toolCalls[e.id];
  if (!call) return p;
  /** @type {CodeResult} */
  const code = {
    language: e.language,
    exitCode: e.exit_code ?? null,
    stdout: e.stdout ?? "",
    stderr: e.stderr ?? "",
    result: e.result ?? null,
    truncated: Boolean(e.truncated),
  };
  return { ...p, toolCalls: { ...p.toolCalls, [e.id]: { ...call, code } } };
}

/**
 * A step ends its task: the summary replaces the task's streamed tokens.
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyStep(p, e) {
  const step = { taskId: e.task_id, summary: e.summary, role: e.provenance?.role ?? "", at: e.timestamp };
  return { ...p, steps: [...p.steps, step], streaming: omit(p.streaming, e.task_id) };
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyToken(p, e) {
  if (isFinished(p) || typeof e.delta !== "string") return p;
  const task = String(e.task_id ?? "");
  // A redelivered task streams its text again from offset 0, cut elsewhere; the server drops what
  // this connection sent, and this keeps only the part past what an earlier connection (before a
  // reconnect) already showed.
  if (typeof e.offset === "number") {
    const reach = p.tokenReach[task] ?? 0;
    const end = e.offset + e.delta.length;
    if (end <= reach) return p;
    const delta = e.offset >= reach ? e.delta : e.delta.slice(reach - e.offset);
    const streaming = { ...p.streaming, [task]: (p.streaming[task] ?? "") + delta };
    return { ...p, streaming, tokenReach: { ...p.tokenReach, [task]: end } };
  }
  const seq = typeof e.seq === "number" ? e.seq : null;
  // without an offset (an older agent): by seq, each delta once
  if (seq !== null && seq < (p.tokenSeq[task] ?? 0)) return p;
  const tokenSeq = seq === null ? p.tokenSeq : { ...p.tokenSeq, [task]: seq + 1 };
  return { ...p, streaming: { ...p.streaming, [task]: (p.streaming[task] ?? "") + e.delta }, tokenSeq };
}

/**
 * @param {Progress} p
 * @param {Record<string, any>} e
 * @returns {Progress}
 */
function applyComplete(p, e) {
  // Stages still open when the session ends ended with it.
  const stages = p.stages.map((s) =>
    s.status === "running"
      ? {
          ...s,
          status: /** @type {StageStatus} */ (e.status === "completed" ? "completed" : "failed"),
          endedAt: e.timestamp,
          durationMs: Math.max(0, e.timestamp - s.startedAt),
        }
      : s,
  );
  return {
    ...p,
    stages,
    currentStageIndex: null,
    status: e.status,
    endedAt: e.timestamp,
    awaiting: null,
    streaming: {},
    final: {
      status: e.status,
      answer: e.final_answer ?? "",
      trace: e.final_reasoning_trace ?? "",
      truncated: Boolean(e.truncated),
      at: e.timestamp,
    },
  };
}

/**
 * @param {Progress} p
 * @param {Source} s
 * @returns {Progress}
 */
function addSource(p, s) {
  const key = s.url ?? s.path ?? s.title;
  if (p.sources.some((x) => (x.url ?? x.path ?? x.title) === key)) return p;
  return { ...p, sources: [...p.sources, s] };
}

/**
 * @param {Progress} p
 * @param {number} at
 * @param {string} text
 * @returns {Progress}
 */
function addNote(p, at, text) {
  return { ...p, notes: [...p.notes, { at, text }] };
}

/**
 * Why a handoff was refused, in words: the three handoff controls (any other value shows as is).
 * @param {unknown} reason
 */
function refusalText(reason) {
  if (reason === "matrix") return "the handoff matrix does not allow it";
  if (reason === "ping_pong") return "it would hand the task straight back (A → B → A)";
  if (reason === "cap") return "the session has made its 3 handoffs";
  return typeof reason === "string" && reason !== "" ? reason : "no reason given";
}

/**
 * The note for an agent's `config` event: "Settings of the research agent: depth quick; scenario
 * technical; search iterations 1". The values come from the wire, so any shape becomes text
 * without throwing (a setting that is not a plain value shows as "?").
 * @param {unknown} agent
 * @param {unknown} settings
 */
function configNote(agent, settings) {
  const name = typeof agent === "string" && agent !== "" ? agent : "unnamed";
  const entries =
    typeof settings === "object" && settings !== null && !Array.isArray(settings) ? Object.entries(settings) : [];
  const list = entries.map(([k, v]) => `${k.replaceAll("_", " ")} ${settingText(v)}`).join("; ");
  return `Settings of the ${name} agent: ${list || "none announced"}`;
}

/**
 * One setting's value as text: yes/no for booleans, "none" for null.
 * @param {unknown} v
 */
function settingText(v) {
  if (typeof v === "string") return v === "" ? "(empty)" : v;
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "?";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (v === null) return "none";
  return "?";
}

/**
 * Why a chart is not drawn, or null when it may be: specs must carry their data inline, so a
 * `url` in any `data` (at any depth, also in layers and lookups) refuses the whole spec.
 * @param {unknown} spec
 * @returns {string | null}
 */
export function chartRefusal(spec) {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return "the chart is not a Vega-Lite spec";
  return hasDataUrl(spec) ? "the chart loads data from a URL; only inline data is drawn" : null;
}

/**
 * @param {unknown} v
 * @returns {boolean}
 */
function hasDataUrl(v) {
  if (Array.isArray(v)) return v.some(hasDataUrl);
  if (typeof v !== "object" || v === null) return false;
  return Object.entries(v).some(([k, x]) => (k === "data" && namesUrl(x)) || hasDataUrl(x));
}

/**
 * A `data` value that loads from a URL: `{ url }`, or a list holding one.
 * @param {unknown} d
 * @returns {boolean}
 */
function namesUrl(d) {
  if (Array.isArray(d)) return d.some(namesUrl);
  return typeof d === "object" && d !== null && "url" in d;
}

/**
 * True once the session reached a terminal status.
 * @param {Progress} p
 */
export function isFinished(p) {
  return p.final !== null;
}

/**
 * A copy of a record without one key.
 * @template T
 * @param {Record<string, T>} r
 * @param {string} key
 * @returns {Record<string, T>}
 */
function omit(r, key) {
  if (!(key in r)) return r;
  const copy = { ...r };
  delete copy[key];
  return copy;
}

/**
 * @template T
 * @param {T[]} xs
 * @param {(x: T) => boolean} f
 * @returns {T | undefined}
 */
function findLast(xs, f) {
  for (let i = xs.length - 1; i >= 0; i--) {
    const x = /** @type {T} */ (xs[i]);
    if (f(x)) return x;
  }
  return undefined;
}
