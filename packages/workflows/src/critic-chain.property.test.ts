import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { isTerminal, type AwaitedTask, type InboxInput } from "@agentmesh/contracts";
import { createSession, replay, step } from "./runtime.js";
import { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
import {
  DEFAULTS,
  QUESTION,
  SID,
  T0,
  asCriticChain,
  checkApplied,
  failure,
  failureFor,
  inputs,
  out,
  resultFor,
} from "./testing.js";
import type { StepOutcome } from "./types.js";

/** What the next awaited task answers; "tool" makes a researcher or expert call the calculator (any other agent approves). */
type Verdict = "approve" | "reject" | "retryable" | "fatal" | "timeout" | "tool";

interface Script {
  readonly researchSteps: number;
  readonly retryLimit: number;
  readonly verdicts: readonly Verdict[];
  /** Whether to deliver the i-th input a second time (a redelivery), which must be dropped. */
  readonly redeliver: readonly boolean[];
}

const script: fc.Arbitrary<Script> = fc.record({
  researchSteps: fc.integer({ min: 0, max: 3 }),
  retryLimit: fc.integer({ min: 1, max: 6 }),
  verdicts: fc.array(fc.constantFrom<Verdict>("approve", "reject", "retryable", "fatal", "timeout", "tool"), {
    maxLength: 40,
  }),
  redeliver: fc.array(fc.boolean(), { maxLength: 40 }),
});

/** What an agent answers; approve/reject only matter to critics, the others always produce output. */
function answer(task: AwaitedTask, verdict: Verdict, n: number, sc: Script): InboxInput {
  switch (verdict) {
    case "retryable":
      return failureFor(task, failure("model_error", true));
    case "fatal":
      return failureFor(task, failure("model_refused", false));
    case "timeout":
      return inputs.taskTimer(task.task_id);
    case "approve":
    case "reject":
    case "tool":
      break;
  }
  if (task.role === "executor")
    return resultFor(task, {
      tool: "calculator",
      ok: true,
      content: String(n),
      error: null,
      latency_ms: 1,
      attempts: 1,
      citations: [],
      code: null,
    });
  const agent = `${task.role}.${task.op}`;
  if (verdict === "tool" && (agent === "researcher.research" || agent === "expert.answer")) {
    return resultFor(task, {
      action: "tool",
      tool: "calculator",
      arguments_json: JSON.stringify({ expression: `${n} + 1` }),
    });
  }
  const outputs: Record<string, unknown> = {
    "planner.plan": out.plan(
      Array.from({ length: sc.researchSteps }, (_, i) => `research ${i}`),
      ["reason it out"],
    ),
    "researcher.research": out.research(`finding ${n}`),
    "expert.answer": out.answer(`answer ${n}`),
    "finalizer.finalize": out.finalize(`final ${n}`),
  };
  const critic = verdict === "reject" ? out.reject(`feedback ${n}`) : out.approve();
  return resultFor(task, outputs[`${task.role}.${task.op}`] ?? critic);
}

/** Drives one session by the script, like a coordinator with scripted agents would. */
function run(sc: Script) {
  const initial = createSession({
    sessionId: SID,
    workflow: "critic-chain",
    query: QUESTION,
    options: { retry_limit: sc.retryLimit },
    now: T0,
    defaults: DEFAULTS,
  });
  let state = asCriticChain(initial);
  let now = T0;
  const log: Array<{ input: InboxInput; now: number }> = [];
  const outcomes: StepOutcome[] = [];
  let applied = 0;
  const send = (input: InboxInput): StepOutcome => {
    const o = step(state, input, { now, defaults: DEFAULTS });
    log.push({ input, now });
    outcomes.push(o);
    now += 250;
    if (o.kind === "apply") {
      checkApplied(o);
      expect(o.state.meta.version).toBe(state.meta.version + 1);
      state = asCriticChain(o.state);
      applied++;
    }
    return o;
  };
  send(inputs.start());
  // Generous cap: a looping machine shows up as a broken bound below, not as a hung test.
  for (let n = 0; !isTerminal(state.meta.status) && n < 200; n++) {
    expect(state.meta.awaiting).toHaveLength(1);
    const input = answer(state.meta.awaiting[0] as AwaitedTask, sc.verdicts[n] ?? "approve", n, sc);
    expect(send(input).kind).toBe("apply");
    if (sc.redeliver[n]) expect(send(input)).toMatchObject({ kind: "drop" });
    expect(state.data.retry_count).toBeLessThanOrEqual(state.data.retry_limit);
  }
  return { initial, final: state, log, outcomes, applied };
}

describe("critic-chain under random verdicts", () => {
  it("is deterministic, always terminates within its bound, and replays to the same state", () => {
    fc.assert(
      fc.property(script, (sc) => {
        const a = run(sc);
        const b = run(sc);
        expect(b.outcomes).toEqual(a.outcomes);

        // Happy path: start, planner, critic, 2 per research step, expert, critic, finalizer.
        // Each reject costs 2 more transitions and each failure or timeout 1, all under the retry limit;
        // each tool call 2 (the call, the executor's outcome), a refused one (past the rounds) 1.
        const happy = 2 * sc.researchSteps + 6;
        const tools = sc.verdicts.filter((v) => v === "tool").length;
        expect(isTerminal(a.final.meta.status)).toBe(true);
        expect(a.applied).toBeLessThanOrEqual(happy + 2 * sc.retryLimit + 2 * tools);
        expect(a.final.meta.awaiting).toEqual([]);

        const { data } = a.final;
        expect(["completed", "failed"]).toContain(a.final.meta.status);
        if (data.retry_count >= data.retry_limit) {
          expect(data).toMatchObject({
            final_answer: COULD_NOT_ANSWER,
            final_reasoning_trace: COULD_NOT_ANSWER,
            current_step: "finalizer",
          });
        }
        if (a.final.meta.status === "failed") expect(data.error_component).toBe("finalizer");
        expect(data.final_answer).not.toBeNull();

        expect(replay(a.initial, a.log, DEFAULTS)).toEqual(a.final);
      }),
      { numRuns: 300 },
    );
    // 300 full sessions, each re-validated against the contracts: seconds of CPU on a busy 2-core box.
  }, 120_000);

  it("completes with the research results in plan order when every critic approves", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5 }), (n) => {
        const r = run({ researchSteps: n, retryLimit: 5, verdicts: [], redeliver: [] });
        expect(r.final.meta.status).toBe("completed");
        expect(r.applied).toBe(2 * n + 6);
        // The n-th answer is a finding; research answers sit at odd positions after planner and critic.
        expect(r.final.data.research_results).toEqual(Array.from({ length: n }, (_, i) => `finding ${2 + 2 * i}`));
      }),
    );
  });
});
