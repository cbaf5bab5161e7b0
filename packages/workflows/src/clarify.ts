import {
  AgentmeshError,
  CLARIFY_LIMITS,
  LIMITS,
  OPS,
  type ChatMessage,
  type ClarifyData,
  type ClarifyRoute,
  type ClarifySettings,
  type EventDraft,
  type GatherResult,
  type HaloCitation,
  type OrchestratorDecision,
  type WireError,
} from "@agentmesh/contracts";
import { COULD_NOT_ANSWER, clip } from "./critic-chain-messages.js";
import { stage } from "./events.js";
import { isResultOf } from "./ops.js";
import type { Control, SpanAttributes, TaskSpec, WorkflowDefinition, WorkflowInput } from "./types.js";

type Decided = {
  readonly data: ClarifyData;
  readonly control: Control;
  readonly events: readonly EventDraft[];
  readonly span?: SpanAttributes;
};
type TaskInput = Extract<WorkflowInput, { kind: "result" | "failure" }>;

/** The default settings (`max_clarifications = 2`, `max_history = 10`), for a deployment that sets none. */
export const DEFAULT_CLARIFY_SETTINGS: ClarifySettings = {
  max_clarifications: CLARIFY_LIMITS.defaultMaxClarifications,
  max_history: CLARIFY_LIMITS.defaultMaxHistory,
};

/** Attempts of the clarifier, the research agent and the synthesis agent on a retryable failure (the orchestrator gets one: it falls back to research instead). */
export const CLARIFY_MAX_ATTEMPTS = 2;

/** Stage names, as the `stage` events and the tasks name them (the graph's node names). */
const STAGE = {
  orchestrator: "orchestrator",
  clarification: "clarification",
  research: "research",
  synthesis: "synthesis",
} as const;

/** The messages a session keeps: the latest, within the contract's bound. */
const keep = (messages: readonly ChatMessage[]): ChatMessage[] => messages.slice(-CLARIFY_LIMITS.maxMessages);
const say = (role: ChatMessage["role"], content: string): ChatMessage => ({
  role,
  content: clip(content, LIMITS.maxConversationChars),
});

/**
 * The Layer 3 parse, in this order: "CLARIFICATION" anywhere in the upper-cased
 * reply wins (checked first), then "RESEARCH", else research by default.
 */
export function parseDecision(reply: string): {
  readonly next: ClarifyRoute;
  readonly matched: "CLARIFICATION" | "RESEARCH" | null;
} {
  const upper = reply.toUpperCase();
  if (upper.includes("CLARIFICATION")) return { next: "clarification", matched: "CLARIFICATION" };
  if (upper.includes("RESEARCH")) return { next: "research", matched: "RESEARCH" };
  return { next: "research", matched: null };
}

/** The Layer 2 pattern: the clarification agent ran last, and the two latest messages are its question then the person's reply. */
function answeredClarification(data: ClarifyData): boolean {
  const m = data.messages;
  return (
    data.last_agent === "clarification" && m.length >= 2 && m.at(-2)?.role === "assistant" && m.at(-1)?.role === "user"
  );
}

const decideTask = (data: ClarifyData): TaskSpec => ({
  role: "orchestrator",
  op: "decide",
  input: {
    messages: data.messages.slice(-data.max_history),
    clarification_count: data.clarification_count,
    max_clarifications: data.max_clarifications,
  },
  attempt: 0,
  stage: STAGE.orchestrator,
  description: `The orchestrator decides: clarification or research (count ${data.clarification_count}/${data.max_clarifications})`,
});

const askTask = (data: ClarifyData, attempt: number): TaskSpec => ({
  role: "clarifier",
  op: "ask",
  input: { messages: data.messages.slice(-data.max_history) },
  attempt,
  stage: STAGE.clarification,
  description: "The clarification agent asks what the query leaves open",
});

/** The conversation the research and synthesis agents see as memory: the turns before the query. */
const memoryOf = (data: ClarifyData): ChatMessage[] => data.messages.slice(-LIMITS.maxConversationMessages);

const gatherTask = (data: ClarifyData, attempt: number): TaskSpec => ({
  role: "researcher",
  op: "gather",
  input: { question: data.question, clarification: data.clarification, messages: memoryOf(data) },
  attempt,
  stage: STAGE.research,
  description: "The research agent gathers passages from the corpus, the web and the conversation",
});

const synthesizeTask = (data: ClarifyData, attempt: number): TaskSpec => ({
  role: "writer",
  op: "synthesize",
  input: {
    question: data.question,
    clarification: data.clarification,
    messages: memoryOf(data),
    passages: data.research?.passages ?? [],
  },
  attempt,
  stage: STAGE.synthesis,
  description: `The synthesis agent writes the answer from ${data.research?.passages.length ?? 0} passage(s)`,
});

const dispatch = (data: ClarifyData, tasks: readonly TaskSpec[], events: readonly EventDraft[]): Decided => ({
  data,
  control: { kind: "dispatch", tasks },
  events,
});

/** Records one orchestrator run (its state updates) and announces it. */
function decided(
  data: ClarifyData,
  layer: OrchestratorDecision["layer"],
  next: ClarifyRoute,
  count: number,
  reason: string,
): Routed {
  const decision: OrchestratorDecision = {
    iteration: data.iteration + 1,
    layer,
    next_agent: next,
    clarification_count: count,
    max_clarifications: data.max_clarifications,
    reason: clip(reason, CLARIFY_LIMITS.maxDecisionChars),
  };
  const recorded: ClarifyData = {
    ...data,
    next_agent: next,
    last_agent: "orchestrator",
    clarification_count: count,
    iteration: decision.iteration,
    decisions: [...data.decisions, decision].slice(-CLARIFY_LIMITS.maxDecisions),
  };
  const line = `${next} (${layer}; count ${count}/${data.max_clarifications})`;
  // the orchestrator decision's metadata, on the transition's span (the orchestrator's task span has its input, output, model and prompt)
  const span: SpanAttributes = {
    "orchestrator_decision.metadata.agent": "orchestrator",
    "orchestrator_decision.metadata.next_agent": next,
    "orchestrator_decision.metadata.iteration": decision.iteration,
    "orchestrator_decision.layer": layer,
    "orchestrator_decision.clarification_count": count,
  };
  return {
    data: recorded,
    events: [{ type: "orchestration", ...decision }, stage(STAGE.orchestrator, "completed", line)],
    span,
  };
}

/** One orchestrator run's outcome: the state, its events and its span attributes. */
type Routed = { data: ClarifyData; events: EventDraft[]; span: SpanAttributes };

/** Goes where the orchestrator routed: the clarification agent, or the research agent. */
function route(step: Routed): Decided {
  const { data, events, span } = step;
  if (data.next_agent === "clarification") {
    const next = { ...data, phase: "clarify" as const };
    return { ...dispatch(next, [askTask(next, 0)], events), span };
  }
  const next = { ...data, phase: "research" as const };
  return { ...dispatch(next, [gatherTask(next, 0)], events), span };
}

/**
 * One orchestrator run, Layers 1 and 2 (no model call): the cap forces research and resets the
 * count; an answered clarification goes to research with the count unchanged. Otherwise Layer 3
 * asks the model.
 */
function orchestrate(data: ClarifyData): Decided {
  if (data.clarification_count >= data.max_clarifications) {
    return route(
      decided(
        data,
        "cap",
        "research",
        0,
        `Max clarifications (${data.max_clarifications}) reached: research is forced.`,
      ),
    );
  }
  if (answeredClarification(data)) {
    return route(
      decided(
        data,
        "answered",
        "research",
        data.clarification_count,
        "The person answered the clarification: research without asking the model.",
      ),
    );
  }
  const next = { ...data, phase: "orchestrate" as const };
  return dispatch(next, [decideTask(next)], []);
}

/**
 * Layer 3's outcome: CLARIFICATION counts one more; every way to research resets the count to 0 —
 * RESEARCH, a reply naming neither (the default branch) and a failed call (a typed failure, its
 * deadline: the error fallback), as the orchestrator's state update does for any research route
 * (docs/workflows/clarify.md). Never retried.
 */
function onDecision(data: ClarifyData, input: TaskInput): Decided {
  if (input.kind === "failure") {
    const events = [
      stage(
        STAGE.orchestrator,
        "failed",
        `failed (${input.error.code}: ${clip(input.error.message, 300)}); falling back to research`,
      ),
    ];
    const step = decided(
      data,
      "fallback",
      "research",
      0,
      `The orchestrator failed (${input.error.code}); research is the safe default.`,
    );
    return route({ ...step, events: [...events, ...step.events] });
  }
  if (!isResultOf(input, OPS.orchestrator.decide))
    return internal(data, `a ${input.role}.${input.op} result to decide on`);
  const reply = input.output.decision;
  const parsed = parseDecision(reply);
  const count = parsed.next === "clarification" ? data.clarification_count + 1 : 0;
  return route(decided(data, "model", parsed.next, count, reply.trim() || "(an empty reply: research by default)"));
}

/** The clarification agent's question: kept, added to the conversation, and put to the person (a durable pause). */
function onQuestion(data: ClarifyData, input: TaskInput): Decided {
  if (input.kind === "failure") {
    if (input.error.retryable && input.attempt + 1 < CLARIFY_MAX_ATTEMPTS) {
      return dispatch(
        data,
        [askTask(data, input.attempt + 1)],
        [stage(STAGE.clarification, "failed", `failed (${input.error.code}); asking again`)],
      );
    }
    // Nobody to put a question to: research is the safe default, as for the orchestrator.
    const next = { ...data, phase: "research" as const, next_agent: "research" as const };
    return dispatch(
      next,
      [gatherTask(next, 0)],
      [
        stage(
          STAGE.clarification,
          "failed",
          `failed (${input.error.code}: ${clip(input.error.message, 300)}); researching without a clarification`,
        ),
      ],
    );
  }
  if (!isResultOf(input, OPS.clarifier.ask)) return internal(data, `a ${input.role}.${input.op} result to ask with`);
  const question = clip(input.output.question.trim(), CLARIFY_LIMITS.maxQuestionChars);
  const next: ClarifyData = {
    ...data,
    phase: "awaiting_user",
    last_agent: "clarification",
    clarification: { question, answer: null },
    messages: keep([...data.messages, say("assistant", question)]),
  };
  return {
    data: next,
    control: { kind: "await_user", question },
    events: [stage(STAGE.clarification, "completed", question)],
  };
}

/** The person's reply: into the conversation, then the orchestrator runs again (Layer 2 routes it to research). */
function onReply(data: ClarifyData, text: string): Decided {
  if (data.phase !== "awaiting_user" || data.clarification === null)
    return internal(data, `a reply from a person in phase ${data.phase}`);
  const next: ClarifyData = {
    ...data,
    clarification: { ...data.clarification, answer: clip(text, LIMITS.queryMaxChars) },
    messages: keep([...data.messages, say("user", text)]),
  };
  const run = orchestrate(next);
  return { ...run, events: [stage("awaiting_user", "completed", clip(text, 300)), ...run.events] };
}

/** The research agent's passages (none when it failed for good: the synthesis agent then says what it can). */
function onGathered(data: ClarifyData, input: TaskInput): Decided {
  const events: EventDraft[] = [];
  let research: GatherResult;
  if (input.kind === "failure") {
    if (input.error.retryable && input.attempt + 1 < CLARIFY_MAX_ATTEMPTS) {
      return dispatch(
        data,
        [gatherTask(data, input.attempt + 1)],
        [stage(STAGE.research, "failed", `failed (${input.error.code}); gathering again`)],
      );
    }
    research = {
      query: "",
      passages: [],
      gaps: [clip(`The research agent failed (${input.error.code}): ${input.error.message}`, 300)],
    };
    events.push(stage(STAGE.research, "failed", research.gaps[0] ?? "failed"));
  } else if (isResultOf(input, OPS.researcher.gather)) {
    research = input.output;
    const cited = research.passages.filter((p) => p.citation !== null).length;
    events.push(
      stage(
        STAGE.research,
        "completed",
        `${research.passages.length} passage(s), ${cited} cited${research.gaps.length ? `; ${research.gaps.join("; ")}` : ""}`,
      ),
    );
  } else {
    return internal(data, `a ${input.role}.${input.op} result to research with`);
  }
  const next: ClarifyData = { ...data, phase: "synthesize", last_agent: "research", research };
  return dispatch(next, [synthesizeTask(next, 0)], events);
}

/** The cited passages' citations, in the order given: the answer's `[n]` is the n-th. */
export function citationsOf(research: GatherResult | null): HaloCitation[] {
  return (research?.passages ?? []).flatMap((p) => (p.citation === null ? [] : [p.citation]));
}

/** The answer with its numbered sources below it. */
function withSources(answer: string, citations: readonly HaloCitation[]): string {
  if (citations.length === 0) return answer;
  const lines = citations.map(
    (c, i) => `[${i + 1}] ${c.title}${c.url ? ` (${c.url})` : c.path && c.path !== c.title ? ` (${c.path})` : ""}`,
  );
  return `${answer.trim()}\n\nSources:\n${lines.join("\n")}`;
}

/** The synthesis agent's answer: the session's final answer, its sources announced; or its failure ends the session. */
function onSynthesis(data: ClarifyData, input: TaskInput): Decided {
  if (input.kind === "failure") {
    if (input.error.retryable && input.attempt + 1 < CLARIFY_MAX_ATTEMPTS) {
      return dispatch(
        data,
        [synthesizeTask(data, input.attempt + 1)],
        [stage(STAGE.synthesis, "failed", `failed (${input.error.code}); writing again`)],
      );
    }
    const answer = clip(
      `${COULD_NOT_ANSWER} The synthesis agent failed (${input.error.code}): ${input.error.message}`,
      LIMITS.maxTextChars,
    );
    const ended: ClarifyData = {
      ...data,
      phase: "done",
      final_answer: answer,
      error: clip(input.error.message, 4000),
      error_component: "synthesis",
    };
    const error: WireError = { ...input.error, component: input.error.component ?? "writer" };
    return {
      data: ended,
      control: { kind: "fail", error, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) },
      events: [stage(STAGE.synthesis, "failed", clip(input.error.message, 300))],
    };
  }
  const citations = citationsOf(data.research);
  if (!isResultOf(input, OPS.writer.synthesize))
    return internal(data, `a ${input.role}.${input.op} result to answer with`);
  const answer = clip(withSources(input.output.answer, citations), LIMITS.maxTextChars * 2);
  const done: ClarifyData = {
    ...data,
    phase: "done",
    last_agent: "synthesis",
    final_answer: answer,
    citations,
    messages: keep([...data.messages, say("assistant", answer)]),
  };
  const events: EventDraft[] = [
    stage(
      STAGE.synthesis,
      "completed",
      `an answer of ${answer.length} characters citing ${citations.length} source(s)`,
    ),
  ];
  for (const c of citations) events.push({ type: "source", ...c });
  return {
    data: done,
    control: { kind: "complete", final_answer: answer, final_reasoning_trace: reasoningTrace(done) },
    events,
  };
}

/** The trace: each orchestrator run, the clarification, what research found. */
function reasoningTrace(data: ClarifyData): string {
  const lines = data.decisions.map(
    (d) =>
      `Orchestrator run ${d.iteration} (${d.layer}): ${d.next_agent}, count ${d.clarification_count}/${d.max_clarifications}. ${clip(d.reason, 300)}`,
  );
  if (data.clarification)
    lines.push(
      `Asked: ${data.clarification.question}${data.clarification.answer === null ? " (no reply)" : ` Reply: ${clip(data.clarification.answer, 500)}`}`,
    );
  if (data.research) {
    lines.push(
      `Research (${data.research.query || "no search"}): ${data.research.passages.length} passage(s), ${citationsOf(data.research).length} cited.`,
    );
    for (const g of data.research.gaps) lines.push(`Gap: ${g}`);
  }
  return clip(lines.join("\n"), 20_000);
}

/** A fault of ours: an input the runtime should never have passed on. */
function internal(data: ClarifyData, message: string): Decided {
  const error = new AgentmeshError("internal", `clarify: ${message}`, { component: "clarify" }).toWire();
  const answer = `${COULD_NOT_ANSWER} (an internal error stopped the session)`;
  const ended: ClarifyData = {
    ...data,
    phase: "done",
    final_answer: answer,
    error: clip(error.message, 4000),
    error_component: "clarify",
  };
  return {
    data: ended,
    control: { kind: "fail", error, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) },
    events: [],
  };
}

/** Which op each phase awaits. */
const EXPECTED: Readonly<Record<ClarifyData["phase"], string | null>> = {
  orchestrate: "orchestrator.decide",
  clarify: "clarifier.ask",
  awaiting_user: null,
  research: "researcher.gather",
  synthesize: "writer.synthesize",
  done: null,
};

function onTask(data: ClarifyData, input: TaskInput): Decided {
  const key = `${input.role}.${input.op}`;
  if (EXPECTED[data.phase] !== key) return internal(data, `${input.kind} of ${key} in phase ${data.phase}`);
  switch (data.phase) {
    case "orchestrate":
      return onDecision(data, input);
    case "clarify":
      return onQuestion(data, input);
    case "research":
      return onGathered(data, input);
    case "synthesize":
      return onSynthesis(data, input);
    case "awaiting_user":
    case "done":
      return internal(data, `${key} in phase ${data.phase}`);
  }
}

function decide(data: ClarifyData, input: WorkflowInput): Decided {
  switch (input.kind) {
    case "start":
      if (data.iteration !== 0 || data.phase !== "orchestrate") return internal(data, "start after the run began");
      return orchestrate(data);
    case "result":
    case "failure":
      return onTask(data, input);
    case "user_reply":
      return onReply(data, input.text);
  }
}

/** An orchestrator with three layers, one clarifying question at a time, then research and a cited answer. */
export const clarify: WorkflowDefinition<ClarifyData> = {
  name: "clarify",
  version: 1,
  init: (query, _options, messages, defaults, carry) => {
    const settings = defaults?.clarify ?? DEFAULT_CLARIFY_SETTINGS;
    return {
      workflow: "clarify",
      question: query,
      phase: "orchestrate",
      messages: keep([...(messages ?? []), say("user", query)]),
      next_agent: null,
      last_agent: null,
      clarification_count: carry?.clarification_count ?? 0,
      iteration: 0,
      max_clarifications: settings.max_clarifications,
      max_history: settings.max_history,
      decisions: [],
      clarification: null,
      research: null,
      final_answer: null,
      citations: [],
      error: null,
      error_component: null,
    };
  },
  decide,
  abort: (data, error) => {
    const answer = clip(`${COULD_NOT_ANSWER} The session ended early (${error.code}): ${error.message}`, 20_000);
    const ended: ClarifyData = {
      ...data,
      phase: "done",
      final_answer: answer,
      error: clip(error.message, 4000),
      error_component: error.component ?? data.phase,
    };
    return { data: ended, final_answer: answer, final_reasoning_trace: reasoningTrace(ended) };
  },
};
