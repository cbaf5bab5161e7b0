import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  SCHEMA_VERSION,
  inputIds,
  isTerminal,
  parseTaskId,
  type ChatMessage,
  type ClarifyData,
  type HaloCitation,
  type InboxInput,
  type SessionEvent,
  type SessionState,
  type ThreadCarry,
} from "@agentmesh/contracts";
import { createSession, step } from "./runtime.js";
import { DEFAULTS, SID, T0, checkApplied, eventsOf, failure, failureFor, resultFor, tasksOf } from "./testing.js";
import { parseDecision } from "./clarify.js";
import type { RuntimeDefaults, StepOutcome } from "./types.js";

type ClarifySession = SessionState & { data: ClarifyData };

const cite = (n: number): HaloCitation => ({
  title: `doc-${n}.md`,
  url: null,
  path: `corpus/doc-${n}.md`,
  snippet: `passage ${n}`,
});
const gathered = (n = 2) => ({
  query: "redis persistence",
  passages: [
    ...Array.from({ length: n }, (_, i) => ({
      source: "corpus" as const,
      text: `Passage ${i + 1} about Redis.`,
      citation: cite(i + 1),
    })),
    { source: "memory" as const, text: "User: Tell me more about it", citation: null },
  ],
  gaps: [],
});

/** Drives one clarify session through step() as the coordinator does, checking every outcome against the contracts. */
function clarifyHarness(
  query: string,
  opts: { messages?: ChatMessage[]; carry?: ThreadCarry; defaults?: Partial<RuntimeDefaults> } = {},
) {
  const defaults: RuntimeDefaults = { ...DEFAULTS, ...opts.defaults };
  const created = createSession({
    sessionId: SID,
    workflow: "clarify",
    query,
    options: {},
    now: T0,
    defaults,
    messages: opts.messages ?? [],
    ...(opts.carry ? { carry: opts.carry } : {}),
  });
  const h = {
    state: created as ClarifySession,
    now: T0,
    outcomes: [] as StepOutcome[],
    get data(): ClarifyData {
      return h.state.data;
    },
    send(input: InboxInput): StepOutcome {
      h.now += 100;
      const o = step(h.state, input, { now: h.now, defaults });
      h.outcomes.push(o);
      if (o.kind === "apply") {
        checkApplied(o);
        h.state = o.state as ClarifySession;
      }
      return o;
    },
    start: () =>
      h.send({
        v: SCHEMA_VERSION,
        kind: "start",
        session_id: SID,
        input_id: inputIds.start(SID),
        workflow: "clarify",
        query,
        options: {},
      }),
    awaited() {
      const [task, ...more] = h.state.meta.awaiting;
      if (!task || more.length > 0)
        throw new Error(
          `expected one awaited task, have ${h.state.meta.awaiting.length} (status ${h.state.meta.status})`,
        );
      return task;
    },
    reply(op: string, output: unknown) {
      const t = h.awaited();
      if (`${t.role}.${t.op}` !== op) throw new Error(`awaiting ${t.role}.${t.op}, not ${op}`);
      return h.send(resultFor(t, output));
    },
    fail(op: string, code: Parameters<typeof failure>[0], retryable: boolean) {
      const t = h.awaited();
      if (`${t.role}.${t.op}` !== op) throw new Error(`awaiting ${t.role}.${t.op}, not ${op}`);
      return h.send(failureFor(t, failure(code, retryable)));
    },
    answer: (text: string) =>
      h.send({
        v: SCHEMA_VERSION,
        kind: "user_reply",
        session_id: SID,
        input_id: inputIds.user(`r${h.outcomes.length}`),
        text,
      }),
    tasks: () => h.outcomes.flatMap(tasksOf),
    ops: () => h.tasks().map((t) => `${t.role}.${t.op}`),
    /** The orchestrator tasks dispatched: the model calls Layer 3 makes. */
    modelCalls: () => h.tasks().filter((t) => t.role === "orchestrator"),
    events: (): SessionEvent[] => h.outcomes.flatMap(eventsOf),
    ofType: <T extends SessionEvent["type"]>(type: T) =>
      h.events().filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type),
  };
  return h;
}

/** Research then synthesis to the end. */
function finish(
  h: ReturnType<typeof clarifyHarness>,
  answer = "Redis persists with RDB snapshots [1] and the AOF [2].",
) {
  h.reply("researcher.gather", gathered());
  return h.reply("writer.synthesize", { answer });
}

describe("task ids after a version was lost", () => {
  it("a version made again from another input mints other ids, so the lost version's result is not taken for the new task", () => {
    const h = clarifyHarness("Tell me more about it");
    h.start();
    h.reply("orchestrator.decide", { decision: "CLARIFICATION" });
    h.reply("clarifier.ask", { question: "What aspect would you like to know about?" });
    const kept = h.state;
    const reply = (id: string, text: string): InboxInput => ({
      v: SCHEMA_VERSION,
      kind: "user_reply",
      session_id: SID,
      input_id: inputIds.user(id),
      text,
    });
    // the version one reply made, which a Redis failover then lost
    h.send(reply("first", "The implementation details"));
    const lost = h.awaited();
    // the store is back at the version before; another reply makes that version again
    h.state = kept;
    h.send(reply("second", "Its history"));
    const remade = h.awaited();
    expect([remade.role, remade.op, remade.attempt]).toEqual([lost.role, lost.op, lost.attempt]);
    const [a, b] = [parseTaskId(lost.task_id), parseTaskId(remade.task_id)];
    expect([b?.version, b?.index]).toEqual([a?.version, a?.index]);
    expect(remade.task_id).not.toBe(lost.task_id);
    // the lost task's result comes: not awaited, nothing applied
    const late = h.send(resultFor(lost, gathered()));
    expect(late).toMatchObject({ kind: "drop", reason: "not_awaited" });
    expect(h.awaited().task_id).toBe(remade.task_id);
    // the same reply again (redelivered after a crash before its commit) mints the same id
    h.state = kept;
    h.send(reply("second", "Its history"));
    expect(h.awaited().task_id).toBe(remade.task_id);
  });
});

describe("clarify: the orchestrator's unit and integration cases", () => {
  it("clarification routing: a vague query, the model says CLARIFICATION, count 0 → 1, one model call", () => {
    const h = clarifyHarness("Tell me more about it");
    h.start();
    expect(h.modelCalls()).toHaveLength(1);
    expect(h.modelCalls()[0]?.input).toEqual({
      messages: [{ role: "user", content: "Tell me more about it" }],
      clarification_count: 0,
      max_clarifications: 2,
    });
    h.reply("orchestrator.decide", {
      decision: 'Decision: CLARIFICATION\nReasoning: the pronoun "it" has no antecedent',
    });
    expect(h.data).toMatchObject({
      next_agent: "clarification",
      last_agent: "orchestrator",
      clarification_count: 1,
      iteration: 1,
      phase: "clarify",
    });
    expect(h.awaited()).toMatchObject({ role: "clarifier", op: "ask" });
    expect(h.ofType("orchestration")).toMatchObject([
      { layer: "model", next_agent: "clarification", clarification_count: 1, max_clarifications: 2, iteration: 1 },
    ]);
  });

  it("max clarifications: count 2 of 2 forces research and resets the count, with no model call", () => {
    const h = clarifyHarness("Still unclear", { carry: { clarification_count: 2 } });
    h.start();
    expect(h.modelCalls()).toHaveLength(0);
    expect(h.data).toMatchObject({
      next_agent: "research",
      clarification_count: 0,
      last_agent: "orchestrator",
      iteration: 1,
      phase: "research",
    });
    expect(h.awaited()).toMatchObject({ role: "researcher", op: "gather" });
    expect(h.ofType("orchestration")).toMatchObject([{ layer: "cap", next_agent: "research", clarification_count: 0 }]);
  });

  it("pattern detection: clarification then the person's reply goes to research with the count unchanged, with no second model call", () => {
    const h = clarifyHarness("Tell me more about it");
    h.start();
    h.reply("orchestrator.decide", { decision: "CLARIFICATION" });
    h.reply("clarifier.ask", { question: "What aspect would you like to know about?" });
    expect(h.state.meta.status).toBe("awaiting_user");
    expect(h.data).toMatchObject({ last_agent: "clarification", clarification_count: 1, phase: "awaiting_user" });
    expect(h.data.messages.slice(-2)).toEqual([
      { role: "user", content: "Tell me more about it" },
      { role: "assistant", content: "What aspect would you like to know about?" },
    ]);
    h.answer("The implementation details");
    expect(h.modelCalls()).toHaveLength(1);
    expect(h.data).toMatchObject({
      next_agent: "research",
      last_agent: "orchestrator",
      clarification_count: 1,
      iteration: 2,
      phase: "research",
    });
    expect(h.data.clarification).toEqual({
      question: "What aspect would you like to know about?",
      answer: "The implementation details",
    });
    expect(h.ofType("orchestration").map((e) => [e.layer, e.clarification_count])).toEqual([
      ["model", 1],
      ["answered", 1],
    ]);
    finish(h);
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.clarification_count).toBe(1);
  });

  it("the integration case's state exactly: [AI question, Human reply], last_agent clarification, count 1 → research, count 1", () => {
    // The integration case's state, reached through a paused session whose messages are only those two.
    const h = clarifyHarness("What aspect would you like to know about?");
    h.start();
    h.reply("orchestrator.decide", { decision: "CLARIFICATION" });
    h.reply("clarifier.ask", { question: "What aspect would you like to know about?" });
    h.state = {
      ...h.state,
      data: { ...h.data, messages: [{ role: "assistant", content: "What aspect would you like to know about?" }] },
    };
    h.answer("The implementation details");
    expect(h.data).toMatchObject({ next_agent: "research", clarification_count: 1 });
    expect(h.modelCalls()).toHaveLength(1);
  });
});

describe("clarify: the decision record on the transition's span", () => {
  const spanOf = (o: StepOutcome | undefined) => (o?.kind === "apply" ? o.spanAttributes : undefined);
  it("every orchestrator run records agent, next_agent, iteration, its layer and the count; other transitions record none", () => {
    const h = clarifyHarness("Tell me more about it");
    expect(spanOf(h.start())).toBeUndefined(); // Layer 3: the decision is recorded when the model's reply is applied
    expect(spanOf(h.reply("orchestrator.decide", { decision: "CLARIFICATION" }))).toEqual({
      "orchestrator_decision.metadata.agent": "orchestrator",
      "orchestrator_decision.metadata.next_agent": "clarification",
      "orchestrator_decision.metadata.iteration": 1,
      "orchestrator_decision.layer": "model",
      "orchestrator_decision.clarification_count": 1,
    });
    expect(spanOf(h.reply("clarifier.ask", { question: "Which aspect?" }))).toBeUndefined();
    expect(spanOf(h.answer("The persistence options"))).toMatchObject({
      "orchestrator_decision.metadata.next_agent": "research",
      "orchestrator_decision.metadata.iteration": 2,
      "orchestrator_decision.layer": "answered",
      "orchestrator_decision.clarification_count": 1,
    });
    const capped = clarifyHarness("Still unclear", { carry: { clarification_count: 2 } });
    expect(spanOf(capped.start())).toMatchObject({
      "orchestrator_decision.layer": "cap",
      "orchestrator_decision.clarification_count": 0,
      "orchestrator_decision.metadata.iteration": 1,
    });
    const failed = clarifyHarness("Tell me more about it");
    failed.start();
    expect(spanOf(failed.fail("orchestrator.decide", "timeout", true))).toMatchObject({
      "orchestrator_decision.layer": "fallback",
      "orchestrator_decision.metadata.next_agent": "research",
    });
  });
});

describe("clarify: Layer 3's parse and its failures", () => {
  it("parses the reply: CLARIFICATION first, then RESEARCH, else research", () => {
    expect(parseDecision("Decision: RESEARCH (no clarification needed)")).toEqual({
      next: "clarification",
      matched: "CLARIFICATION",
    });
    expect(parseDecision("decision: research")).toEqual({ next: "research", matched: "RESEARCH" });
    expect(parseDecision("I am not sure")).toEqual({ next: "research", matched: null });
  });

  it("RESEARCH resets the count; a reply naming neither (the default branch) goes to research and resets it too", () => {
    const research = clarifyHarness("Which prompt gave the highest accuracy in Zhang 2024?", {
      carry: { clarification_count: 1 },
    });
    research.start();
    research.reply("orchestrator.decide", { decision: "Decision: RESEARCH" });
    expect(research.data).toMatchObject({ next_agent: "research", clarification_count: 0 });
    const neither = clarifyHarness("Which prompt gave the highest accuracy in Zhang 2024?", {
      carry: { clarification_count: 1 },
    });
    neither.start();
    neither.reply("orchestrator.decide", { decision: "hmm" });
    expect(neither.data).toMatchObject({ next_agent: "research", clarification_count: 0 });
    expect(neither.ofType("orchestration")).toMatchObject([{ layer: "model", clarification_count: 0 }]);
  });

  it.each([
    ["a typed model failure", "model_error", false],
    ["its deadline", "deadline_exceeded", true],
  ] as const)(
    "a failed orchestrator (%s) falls back to research with the count reset, not a failed session, and is not retried",
    (_what, code, retryable) => {
      const h = clarifyHarness("Tell me more about it", { carry: { clarification_count: 1 } });
      h.start();
      h.fail("orchestrator.decide", code, retryable);
      expect(h.modelCalls()).toHaveLength(1);
      expect(h.state.meta.status).toBe("running");
      expect(h.data).toMatchObject({
        next_agent: "research",
        last_agent: "orchestrator",
        clarification_count: 0,
        iteration: 1,
      });
      expect(h.ofType("orchestration")).toMatchObject([
        { layer: "fallback", next_agent: "research", clarification_count: 0 },
      ]);
      finish(h);
      expect(h.state.meta.status).toBe("completed");
    },
  );

  it("a deadline timer on the orchestrator's task is the same fallback, count reset", () => {
    const h = clarifyHarness("Tell me more about it", { carry: { clarification_count: 1 } });
    h.start();
    const t = h.awaited();
    h.send({
      v: SCHEMA_VERSION,
      kind: "timer",
      session_id: SID,
      input_id: inputIds.timer(t.task_id),
      task_id: t.task_id,
      reason: "task_deadline",
    });
    expect(h.data).toMatchObject({ next_agent: "research", phase: "research", clarification_count: 0 });
  });
});

describe("clarify: research and synthesis", () => {
  it("the answer cites the gathered corpus passages as [n], lists them, and announces each as a source event", () => {
    const h = clarifyHarness("How does Redis persist data?");
    h.start();
    h.reply("orchestrator.decide", { decision: "RESEARCH" });
    const gather = h.tasks().at(-1);
    expect(gather?.input).toEqual({
      question: "How does Redis persist data?",
      clarification: null,
      messages: [{ role: "user", content: "How does Redis persist data?" }],
    });
    h.reply("researcher.gather", gathered());
    expect(h.tasks().at(-1)?.input).toMatchObject({ passages: gathered().passages });
    h.reply("writer.synthesize", { answer: "Redis persists with RDB snapshots [1] and the AOF [2]." });
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.final_answer).toBe(
      "Redis persists with RDB snapshots [1] and the AOF [2].\n\nSources:\n[1] doc-1.md (corpus/doc-1.md)\n[2] doc-2.md (corpus/doc-2.md)",
    );
    expect(h.ofType("source").map((s) => s.path)).toEqual(["corpus/doc-1.md", "corpus/doc-2.md"]);
    expect(h.data.messages.at(-1)).toEqual({ role: "assistant", content: h.data.final_answer });
    expect(
      h
        .ofType("stage")
        .filter((s) => s.status === "running")
        .map((s) => s.name),
    ).toEqual(["orchestrator", "research", "synthesis"]);
  });

  it("a research agent that fails for good leaves the synthesis agent with no passages; a synthesis that fails for good fails the session", () => {
    const h = clarifyHarness("How does Redis persist data?", { carry: { clarification_count: 2 } });
    h.start();
    h.fail("researcher.gather", "tool_error", true);
    h.fail("researcher.gather", "tool_error", true);
    expect(h.awaited()).toMatchObject({ role: "writer", op: "synthesize" });
    expect(h.data.research?.gaps[0]).toMatch(/The research agent failed \(tool_error\)/);
    h.fail("writer.synthesize", "needs_model", false);
    expect(h.state.meta.status).toBe("failed");
    expect(h.state.meta.error?.code).toBe("needs_model");
    expect(h.data.final_answer).toMatch(
      /^The question could not be answered\. The synthesis agent failed \(needs_model\)/,
    );
  });

  it("a clarifier that fails for good goes to research instead of stranding the session", () => {
    const h = clarifyHarness("Tell me more about it");
    h.start();
    h.reply("orchestrator.decide", { decision: "CLARIFICATION" });
    h.fail("clarifier.ask", "model_error", false);
    expect(h.awaited()).toMatchObject({ role: "researcher", op: "gather" });
  });
});

describe("clarify: history, threads and the cap across sessions", () => {
  const turns = (n: number): ChatMessage[] =>
    Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `turn ${i}` }));

  it("the orchestrator sees the last max_history messages (configurable), the count and the max", () => {
    const h = clarifyHarness("Tell me more about it", { messages: turns(14) });
    h.start();
    const input = h.modelCalls()[0]?.input as { messages: ChatMessage[] };
    expect(input.messages).toHaveLength(10);
    expect(input.messages[0]?.content).toBe("turn 5");
    expect(input.messages.at(-1)).toEqual({ role: "user", content: "Tell me more about it" });
    const narrow = clarifyHarness("Tell me more about it", {
      messages: turns(14),
      defaults: { clarify: { max_clarifications: 1, max_history: 3 } },
    });
    narrow.start();
    expect(narrow.modelCalls()[0]?.input).toMatchObject({
      messages: [{ content: "turn 12" }, { content: "turn 13" }, { content: "Tell me more about it" }],
      max_clarifications: 1,
    });
  });

  it("the count lives as long as the thread: 0 → 1 → (answered) 1 → 2 → (answered) → the cap, forced research, 0", () => {
    let carry: ThreadCarry = { clarification_count: 0 };
    const counts: number[] = [];
    const calls: number[] = [];
    for (const query of ["Tell me more about it", "And the other one?", "What about that?"]) {
      const h = clarifyHarness(query, { carry });
      h.start();
      if (h.data.phase === "orchestrate") {
        h.reply("orchestrator.decide", { decision: "CLARIFICATION" });
        h.reply("clarifier.ask", { question: "Which one do you mean?" });
        h.answer("The Redis one");
      }
      finish(h);
      expect(h.state.meta.status).toBe("completed");
      counts.push(h.data.clarification_count);
      calls.push(h.modelCalls().length);
      carry = { clarification_count: h.data.clarification_count };
    }
    // the second session's reply meets the cap (2 of 2) before Layer 2 and resets; the third starts at 0 and asks again
    expect(counts).toEqual([1, 0, 1]);
    expect(calls).toEqual([1, 1, 1]);
  });

  it("a session carried in at the cap makes no model call at all", () => {
    const h = clarifyHarness("What about that?", { carry: { clarification_count: 2 } });
    h.start();
    finish(h);
    expect(h.modelCalls()).toHaveLength(0);
    expect(h.data.clarification_count).toBe(0);
  });
});

describe("clarify: replayed steps are deterministic", () => {
  const decisions = ["CLARIFICATION", "RESEARCH", "neither", null] as const;
  it("any mix of decisions, failures and replies keeps the count within its cap, asks at most once, and steps deterministically", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(20), { minLength: 1, maxLength: 12 }), fc.nat(3), (picks, carried) => {
        const h = clarifyHarness("Tell me more about it", { carry: { clarification_count: carried } });
        h.start();
        for (const pick of picks) {
          if (isTerminal(h.state.meta.status)) break;
          const before = h.state;
          if (h.state.meta.status === "awaiting_user") {
            h.answer(`reply ${pick}`);
          } else {
            const t = h.awaited();
            const ok = pick % 5 !== 0;
            const out = (() => {
              switch (`${t.role}.${t.op}`) {
                case "orchestrator.decide":
                  return decisions[pick % 4] === null ? null : { decision: decisions[pick % 4] };
                case "clarifier.ask":
                  return { question: `Which one, ${pick}?` };
                case "researcher.gather":
                  return gathered(pick % 3);
                default:
                  return { answer: `Answer ${pick} [1].` };
              }
            })();
            const input =
              ok && out !== null ? resultFor(t, out) : failureFor(t, failure("model_error", pick % 2 === 0));
            const again = step(before, input, { now: h.now + 100, defaults: DEFAULTS });
            h.send(input);
            expect(again).toEqual(h.outcomes.at(-1));
          }
          expect(h.data.clarification_count).toBeLessThanOrEqual(h.data.max_clarifications);
        }
        // every route to research resets the count, except Layer 2 (an answered clarification)
        for (const run of h.ofType("orchestration")) {
          if (run.next_agent === "research" && run.layer !== "answered") expect(run.clarification_count).toBe(0);
        }
        // never more than one question per session, never more than two orchestrator runs
        expect(h.tasks().filter((t) => t.role === "clarifier" && t.attempt === 0).length).toBeLessThanOrEqual(1);
        expect(h.data.iteration).toBeLessThanOrEqual(2);
      }),
      { numRuns: 200 },
    );
  });
});
