// What `pnpm bench --workflow <name>` runs: per workflow, the roles to start, each session's query
// and submit extras, and how its answer is verified. See bench/README.md.
import type { RoleName, SessionOptions, SessionState, WorkflowName } from "@agentmesh/contracts";
import { AGENT_ROLES } from "../test/e2e/harness.js";

/** The workflows the bench can load. */
export const BENCH_WORKFLOWS = ["critic-chain", "supervisor"] as const;
export type BenchWorkflow = (typeof BENCH_WORKFLOWS)[number];

/** A code run the client saw, from its `code_result` event. */
export interface SeenCodeRun {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `text` cut to `max` characters, marked when cut. */
const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}…`);

/** What a client saw of a completed session, for the load's own answer check. */
export interface SeenAnswer {
  /** The `complete` event's final_answer. */
  readonly answer: string;
  /** `role.op` of each step event, in version order. */
  readonly stepNames: readonly string[];
  readonly codeRuns: readonly SeenCodeRun[];
}

/** One workflow's load: what is started, what each session asks, and what a right answer is. */
export interface Workload {
  readonly workflow: BenchWorkflow;
  /** The path each session takes, for the report's header. */
  readonly path: string;
  /** The agent roles to start (one process each), besides the coordinators. */
  readonly roles: readonly RoleName[];
  /** Session `i`'s query. */
  query(i: number): string;
  /** What a submit carries besides the query (the gateway sends the options as top-level fields). */
  readonly submit: { readonly workflow: WorkflowName; readonly options: SessionOptions };
  /** The workflow's own answer field of a stored session; null when the session is not of this workflow. */
  storedAnswer(data: SessionState["data"]): string | null;
  /** Why session `i`'s answer (or what the client saw of its run) is wrong; null when it is right. */
  check(i: number, seen: SeenAnswer): string | null;
}

/** The critic-chain question of session `i` and its exact offline answer (the finalizer repeats the expert's `<expr> = <value>`). */
export function questionFor(i: number): { question: string; expected: string } {
  return { question: `What is ${i} * 7 + 0.1?`, expected: `${i} * 7 + 0.1 = ${i * 7}.1` };
}

/** The steps of an offline critic-chain session: the expert computes through the calculator tool (an executor.call), then answers. */
export const CRITIC_CHAIN_STEPS = ["planner.plan", "critic.review_plan", "expert.answer", "executor.call", "expert.answer", "critic.review_answer", "finalizer.finalize"] as const;

/** critic-chain: planner → critic → expert ⇄ executor (calculator) → critic → finalizer, the steps and the exact answer compared; every critic-chain role and the executor started. */
export const CRITIC_CHAIN: Workload = {
  workflow: "critic-chain",
  path: "planner → critic → expert → executor (calculator) → expert → critic → finalizer",
  roles: AGENT_ROLES,
  query: (i) => questionFor(i).question,
  submit: { workflow: "critic-chain", options: {} },
  storedAnswer: (data) => (data.workflow === "critic-chain" ? data.final_answer : null),
  check(i, seen) {
    const { expected } = questionFor(i);
    const wanted = CRITIC_CHAIN_STEPS.join(" → ");
    const steps = seen.stepNames.join(" → ");
    const problems = [
      seen.answer === expected ? null : `wrong answer ${JSON.stringify(seen.answer)}, expected ${JSON.stringify(expected)}`,
      steps === wanted ? null : `steps ${steps || "(none)"}, expected ${wanted}`,
    ].filter((p) => p !== null);
    return problems.length === 0 ? null : problems.join("; ");
  },
};

/** The steps of a routed supervisor code session: the router picks the code agent, which runs the code once. */
export const SUPERVISOR_STEPS = ["router.route", "coder.generate", "executor.call"] as const;

/** The value session `i`'s code prints. */
export const supervisorValue = (i: number): string => String(i * 7 + 1);

/**
 * supervisor: the router is asked (no `mode`); offline it routes a fenced code block to the code
 * agent, which runs the block as given in the executor's QuickJS sandbox, and the workflow composes
 * the answer from what the run printed.
 */
export const SUPERVISOR: Workload = {
  workflow: "supervisor",
  path: "router → coder → executor (run_js in QuickJS)",
  roles: ["router", "coder", "executor"],
  query: (i) => `Run this JavaScript code:\n\`\`\`js\nconsole.log(${i} * 7 + 1)\n\`\`\``,
  submit: { workflow: "supervisor", options: {} },
  // the workflow's answer field (packages/contracts/src/supervisor-state.ts)
  storedAnswer: (data) => (data.workflow === "supervisor" ? data.response : null),
  check(i, seen) {
    const value = supervisorValue(i);
    const wanted = SUPERVISOR_STEPS.join(" → ");
    const steps = seen.stepNames.join(" → ");
    const runs = seen.codeRuns.map((r) => `exit code ${r.exitCode}, stdout ${JSON.stringify(clip(r.stdout, 100))}, stderr ${JSON.stringify(clip(r.stderr, 200))}`);
    const [run] = seen.codeRuns;
    const problems = [
      steps === wanted ? null : `steps ${steps || "(none)"}, expected ${wanted}`,
      seen.codeRuns.length === 1 && run!.exitCode === 0 && run!.stdout.trim() === value ? null : `code runs seen: ${runs.join(" | ") || "none"}, expected one with exit code 0 that printed ${value}`,
      // a line that is the value alone: the code's own line (`console.log(i * 7 + 1)`) never is
      seen.answer.split("\n").some((line) => line.trim() === value) ? null : `the answer has no line that is exactly ${value}`,
    ].filter((p) => p !== null);
    return problems.length === 0 ? null : `${problems.join("; ")} (answer: ${JSON.stringify(clip(seen.answer, 300))})`;
  },
};

/** The load of a workflow the bench runs. */
export function workloadFor(workflow: BenchWorkflow): Workload {
  return workflow === "supervisor" ? SUPERVISOR : CRITIC_CHAIN;
}
