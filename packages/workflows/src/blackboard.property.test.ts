import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { isTerminal, type AwaitedTask, type StrategyProfile } from "@agentmesh/contracts";
import { replay } from "./runtime.js";
import { effectiveLimits } from "./blackboard-strategy.js";
import { AGENT_MAX_ATTEMPTS, MAX_HUMAN_QUESTIONS } from "./blackboard-tasks.js";
import {
  ARITHMETIC_QUESTION,
  CORPUS_QUESTION,
  answerInput,
  bbHarness,
  bbOut,
  goodAgents,
  keyOf,
  type Answer,
} from "./blackboard-testkit.js";
import { COULD_NOT_ANSWER } from "./critic-chain-messages.js";
import { failure } from "./testing.js";
import type { StepOutcome } from "./types.js";

type Behaviour =
  "good" | "reject" | "reject_rewrite" | "ask" | "retryable" | "fatal" | "timeout" | "tool_fail" | "invalid";

interface Script {
  readonly profile: StrategyProfile;
  readonly corpus: boolean;
  readonly planTools: readonly string[];
  /** Cycled over the session's inputs: what the agent does, and which awaited task answers first. */
  readonly moves: ReadonlyArray<{ readonly behaviour: Behaviour; readonly pick: number; readonly redeliver: boolean }>;
}

// Weighted: mostly good agents, so sessions get far enough for every rule to come into play.
const behaviours: Behaviour[] = [
  "good",
  "good",
  "good",
  "good",
  "good",
  "good",
  "reject",
  "reject_rewrite",
  "ask",
  "ask",
  "retryable",
  "fatal",
  "timeout",
  "tool_fail",
  "invalid",
];
const script: fc.Arbitrary<Script> = fc.record({
  profile: fc.constantFrom<StrategyProfile>("CONSERVATIVE", "EXPLORATORY", "FALLBACK"),
  corpus: fc.boolean(),
  planTools: fc.array(fc.constantFrom("calculator", "corpus_search", "run_python"), { maxLength: 3 }),
  moves: fc.array(fc.record({ behaviour: fc.constantFrom(...behaviours), pick: fc.nat(5), redeliver: fc.boolean() }), {
    minLength: 1,
    maxLength: 60,
    size: "max",
  }),
});

/** What an agent answers for `task` under `b`; behaviours that do not apply to the op fall back to a good answer. */
function answer(task: AwaitedTask, input: Record<string, unknown>, b: Behaviour, sc: Script, n: number): Answer {
  const key = keyOf(task);
  const isCritic = key === "critic.report";
  switch (b) {
    case "retryable":
      return { error: failure("model_error", true) };
    case "fatal":
      return { error: failure(key.startsWith("executor.execute") ? "sandbox_unavailable" : "needs_model", false) };
    case "timeout":
      return { timeout: true };
    case "invalid":
      return { output: { nonsense: n } };
    case "tool_fail":
      if (key.startsWith("executor.execute:")) {
        const strategy = (task.tag ?? "tool") as "tool" | "rag" | "web";
        return {
          output: bbOut.fail(
            strategy,
            strategy === "tool"
              ? (input.step as { tool: string }).tool
              : strategy === "rag"
                ? "corpus_search"
                : "web_search",
            n % 2 ? "tool_error" : "invalid_tool_input",
            n % 2 === 1,
          ),
        };
      }
      break;
    case "reject":
      if (isCritic) return { output: bbOut.report(false) };
      break;
    case "reject_rewrite":
      if (isCritic) return { output: bbOut.report(false, { rewrite_suggestion: `try another way ${n}` }) };
      break;
    case "ask":
      if (isCritic)
        return {
          output: bbOut.report(n % 2 === 0, { requires_human_input: true, question_for_human: `question ${n}?` }),
        };
      break;
    case "good":
      break;
  }
  if (key === "decision.plan") return { output: bbOut.plan(sc.planTools) };
  if (key === "perception.perceive" && input.kind === "query")
    return { output: bbOut.perception(sc.corpus ? "lookup" : "arithmetic") };
  return goodAgents(task, input, {} as never);
}

/** Drives one session by the script, like a coordinator with scripted agents and a person would. */
function run(sc: Script, validate: boolean) {
  const h = bbHarness({
    profile: sc.profile,
    query: sc.corpus ? CORPUS_QUESTION : ARITHMETIC_QUESTION,
    stepMs: 250,
    validate,
  });
  const outcomes: StepOutcome[] = [];
  let applied = 0;
  const send = (input: Parameters<typeof h.send>[0]) => {
    const o = h.send(input);
    outcomes.push(o);
    if (o.kind === "apply") applied++;
    return o;
  };
  send(h.startInput);
  for (let n = 0; !isTerminal(h.state.meta.status) && n < 3000; n++) {
    const move = sc.moves[n % sc.moves.length] ?? { behaviour: "good" as const, pick: 0, redeliver: false };
    const behaviour = move.behaviour;
    if (h.state.meta.status === "awaiting_user") {
      expect(h.state.meta.awaiting).toEqual([]);
      expect(send(h.startInput)).toMatchObject({ kind: "drop" });
      h.reply(`reply ${n}`);
      outcomes.push(h.last!);
      applied++;
      continue;
    }
    const awaiting = h.state.meta.awaiting;
    expect(awaiting.length).toBeGreaterThan(0);
    expect(awaiting.length).toBeLessThanOrEqual(3);
    const task = awaiting[move.pick % awaiting.length] as AwaitedTask;
    const input = answerInput(task, answer(task, h.input(task), behaviour, sc, n));
    expect(send(input).kind).toBe("apply");
    if (move.redeliver) expect(send(input)).toMatchObject({ kind: "drop" });
  }
  return { h, outcomes, applied };
}

/** A generous bound on applied inputs for a script: every retry, rewrite, agent attempt and question used. */
function bound(sc: Script): number {
  const l = effectiveLimits(sc.profile);
  const steps = Math.min(sc.planTools.length + 1, l.max_steps);
  const perAgent = AGENT_MAX_ATTEMPTS;
  const perRun = 3 + 3 * perAgent; // strategies, then perception, critic and memory with their attempts
  const perPlan = perAgent + steps * (1 + l.max_retries) * perRun;
  return 1 + 2 * perAgent + 2 * perAgent + (1 + l.max_rewrites) * perPlan + MAX_HUMAN_QUESTIONS * (1 + perAgent);
}

describe("blackboard under random agents", () => {
  it("is deterministic, always terminates within its bound, validates every task, and replays to the same state", () => {
    fc.assert(
      fc.property(script, (sc) => {
        const a = run(sc, true);
        // The replica skips re-validating: it only has to match run a, which was validated.
        const b = run(sc, false);
        expect(b.outcomes).toEqual(a.outcomes);

        const { state } = a.h;
        expect(isTerminal(state.meta.status)).toBe(true);
        expect(["completed", "failed"]).toContain(state.meta.status);
        expect(a.applied).toBeLessThanOrEqual(bound(sc));
        expect(state.meta.awaiting).toEqual([]);
        expect(state.data.phase).toBe("done");
        expect(state.data.final_answer).not.toBeNull();
        expect(state.data.rewrite_count).toBeLessThanOrEqual(state.data.limits.max_rewrites);
        expect(state.data.questions_asked).toBeLessThanOrEqual(MAX_HUMAN_QUESTIONS);
        for (const p of state.data.plan_versions)
          expect(p.steps.length).toBeLessThanOrEqual(state.data.limits.max_steps);
        if (state.meta.status === "failed" || state.data.plan_versions.at(-1)?.status !== "completed") {
          expect(state.data.final_answer?.startsWith(COULD_NOT_ANSWER)).toBe(true);
        } else {
          expect(state.data.final_answer?.startsWith("2 + 2 * 3 = 8")).toBe(true);
        }

        expect(replay(a.h.initial, a.h.log, a.h.defaults)).toEqual(state);
      }),
      { numRuns: 120 },
    );
    // Every step re-validates the whole state and each task against the contracts, so this is slow-ish.
  }, 120_000);
});
