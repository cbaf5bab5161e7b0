// What `pnpm bench --workflow <name>` runs: per workflow, the roles to start, each session's query
// and submit extras, and how its answer is verified. See bench/README.md.
import type { RoleName, SessionOptions, SessionState, WorkflowName } from "@agentmesh/contracts";
import { AGENT_ROLES } from "../test/e2e/harness.js";

/** The workflows the bench can load. */
export const BENCH_WORKFLOWS = ["critic-chain", "supervisor", "blackboard", "halo", "clarify"] as const;
export type BenchWorkflow = (typeof BENCH_WORKFLOWS)[number];

/** A code run the client saw, from its `code_result` event. */
export interface SeenCodeRun {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `text` cut to `max` characters, marked when cut. */
const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}…`);

/** A session's steps: each entry one step, or a list of steps that run side by side (their step events come in any order). */
export type StepPath = ReadonlyArray<string | readonly string[]>;

const showPath = (path: StepPath): string =>
  path.map((s) => (typeof s === "string" ? s : `{${s.join(", ")} in any order}`)).join(" → ");

/** Why the steps seen are not `wanted` (parallel steps in any order, each exactly once); null when they are. */
export function stepsProblem(seen: readonly string[], wanted: StepPath): string | null {
  let at = 0;
  const same = wanted.every((w) => {
    const group = typeof w === "string" ? [w] : [...w];
    const got = seen.slice(at, (at += group.length));
    return got.length === group.length && [...got].sort().join("\n") === [...group].sort().join("\n");
  });
  return same && at === seen.length ? null : `steps ${seen.join(" → ") || "(none)"}, expected ${showPath(wanted)}`;
}

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

/** Why a session's answer is not exactly `expected` or its steps not exactly `path`; null when both are. */
function exactly(expected: string, path: StepPath, seen: SeenAnswer): string | null {
  const problems = [
    seen.answer === expected
      ? null
      : `wrong answer ${JSON.stringify(seen.answer)}, expected ${JSON.stringify(expected)}`,
    stepsProblem(seen.stepNames, path),
  ].filter((p) => p !== null);
  return problems.length === 0 ? null : problems.join("; ");
}

/** The critic-chain question of session `i` and its exact offline answer (the finalizer repeats the expert's `<expr> = <value>`). */
export function questionFor(i: number): { question: string; expected: string } {
  return { question: `What is ${i} * 7 + 0.1?`, expected: `${i} * 7 + 0.1 = ${i * 7}.1` };
}

/** The steps of an offline critic-chain session: the expert computes through the calculator tool (an executor.call), then answers. */
export const CRITIC_CHAIN_STEPS = [
  "planner.plan",
  "critic.review_plan",
  "expert.answer",
  "executor.call",
  "expert.answer",
  "critic.review_answer",
  "finalizer.finalize",
] as const;

/** critic-chain: planner → critic → expert ⇄ executor (calculator) → critic → finalizer, the steps and the exact answer compared; every critic-chain role and the executor started. */
export const CRITIC_CHAIN: Workload = {
  workflow: "critic-chain",
  path: "planner → critic → expert → executor (calculator) → expert → critic → finalizer",
  roles: AGENT_ROLES,
  query: (i) => questionFor(i).question,
  submit: { workflow: "critic-chain", options: {} },
  storedAnswer: (data) => (data.workflow === "critic-chain" ? data.final_answer : null),
  check(i, seen) {
    return exactly(questionFor(i).expected, CRITIC_CHAIN_STEPS, seen);
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
    const runs = seen.codeRuns.map(
      (r) =>
        `exit code ${r.exitCode}, stdout ${JSON.stringify(clip(r.stdout, 100))}, stderr ${JSON.stringify(clip(r.stderr, 200))}`,
    );
    const [run] = seen.codeRuns;
    const problems = [
      stepsProblem(seen.stepNames, SUPERVISOR_STEPS),
      seen.codeRuns.length === 1 && run!.exitCode === 0 && run!.stdout.trim() === value
        ? null
        : `code runs seen: ${runs.join(" | ") || "none"}, expected one with exit code 0 that printed ${value}`,
      // a line that is the value alone: the code's own line (`console.log(i * 7 + 1)`) never is
      seen.answer.split("\n").some((line) => line.trim() === value)
        ? null
        : `the answer has no line that is exactly ${value}`,
    ].filter((p) => p !== null);
    return problems.length === 0 ? null : `${problems.join("; ")} (answer: ${JSON.stringify(clip(seen.answer, 300))})`;
  },
};

/** One step of a blackboard plan: executed, its result perceived, reviewed by the critic and remembered. */
function planStep(): string[] {
  return ["executor.execute", "perception.perceive", "critic.report", "memory.update"];
}

/**
 * The steps of an offline blackboard session on an arithmetic question (CONSERVATIVE): the question
 * perceived while the executor lists its tools, memory, a plan of two steps (the calculator, then
 * summarize), and each step executed, perceived, reviewed by the critic and remembered. No retrieval.
 */
export const BLACKBOARD_STEPS: StepPath = [
  ["perception.perceive", "executor.list_tools"],
  "memory.update",
  "decision.plan",
  ...planStep(),
  ...planStep(),
];

/** blackboard: critic-chain's question through the blackboard's loop, the same exact answer from its calculator step. */
export const BLACKBOARD: Workload = {
  workflow: "blackboard",
  path: "perception ∥ executor (tools) → memory → decision → 2 × (executor → perception → critic → memory): the calculator, then summarize",
  roles: ["perception", "memory", "decision", "executor", "critic"],
  query: (i) => questionFor(i).question,
  submit: { workflow: "blackboard", options: { strategy_profile: "CONSERVATIVE" } },
  storedAnswer: (data) => (data.workflow === "blackboard" ? data.final_answer : null),
  check: (i, seen) => exactly(questionFor(i).expected, BLACKBOARD_STEPS, seen),
};

/** A question the handbook in corpus/ answers, with the exact offline answers of halo and clarify. */
export interface HandbookQuestion {
  readonly question: string;
  /** halo's: the graph's one triple (cited `file:line`) and the corpus passage (cited by file), the judge's pick first. */
  readonly halo: string;
  /** clarify's: the research agent's passage quoted by the synthesis agent, with its source. */
  readonly clarify: string;
}

/** Questions each answered by one fact of corpus/handbook (and its triple in corpus/graph), with nothing else of the corpus in either answer. */
export const HANDBOOK_QUESTIONS: readonly HandbookQuestion[] = [
  {
    question: "Who hands out the laptop and the badge?",
    halo: "[HALO] The IT desk hands out the laptop and the badge on the first day [1].\n\nAdditional insights:\n- On your first day, the IT desk hands out your laptop and your badge and sets up your accounts [2].\n\nSources:\n1) handbook/onboarding.md:3\n2) handbook/onboarding.md",
    clarify:
      "The sources say:\n- On your first day, the IT desk hands out your laptop and your badge and sets up your accounts. [1]\n\nSources:\n[1] onboarding.md (handbook/onboarding.md)",
  },
  {
    question: "Which rooms hold the freezers at -80 °C?",
    halo: "[HALO] The freezers in room B14 hold -80 °C for long-term storage [1].\n\nAdditional insights:\n- Samples for long-term storage go to the freezers in room B14, which hold -80 °C [2].\n\nSources:\n1) handbook/lab-safety.md:10\n2) handbook/lab-safety.md",
    clarify:
      "The sources say:\n- Samples for long-term storage go to the freezers in room B14, which hold -80 °C. [1]\n\nSources:\n[1] lab-safety.md (handbook/lab-safety.md)",
  },
  {
    question: "Where does chemical waste go?",
    halo: "[HALO] Chemical waste goes into the yellow containers in room B10 [1].\n\nAdditional insights:\n- Chemical waste goes into the yellow containers in room B10, never down the sink [2].\n\nSources:\n1) handbook/lab-safety.md:16\n2) handbook/lab-safety.md",
    clarify:
      "The sources say:\n- Chemical waste goes into the yellow containers in room B10, never down the sink. [1]\n\nSources:\n[1] lab-safety.md (handbook/lab-safety.md)",
  },
  {
    question: "What is the daily meal allowance?",
    halo: "[HALO] The daily meal allowance is 45 euros; hotel nights are refunded up to 160 euros per night in capital cities and 120 euros elsewhere [1].\n\nAdditional insights:\n- The daily meal allowance is 45 euros [2].\n\nSources:\n1) handbook/expenses.md\n2) handbook/expenses.md:9",
    clarify:
      "The sources say:\n- The daily meal allowance is 45 euros; hotel nights are refunded up to 160 euros per night in capital cities and 120 euros elsewhere. [1]\n\nSources:\n[1] expenses.md (handbook/expenses.md)",
  },
];

/** Session `i`'s handbook question: they take turns, so neighbouring sessions ask different ones. */
export const handbookQuestion = (i: number): HandbookQuestion => HANDBOOK_QUESTIONS[i % HANDBOOK_QUESTIONS.length]!;

/** The steps of an offline halo session with no cue word: the planner picks graph and rag, which run side by side. */
export const HALO_STEPS: StepPath = ["planner.capabilities", ["graph.answer", "retriever.answer"]];

/**
 * halo: the planner is asked (no `capabilities`); offline a question without cue words gets the
 * local-knowledge specialists, graph and rag, dispatched in one transition and joined when both
 * answered, well inside the join deadline (AGENTMESH_HALO_JOIN_DEADLINE_MS, 30 s by default).
 */
export const HALO: Workload = {
  workflow: "halo",
  path: "planner → graph ∥ retriever (corpus) → join (judge and synthesis in the coordinator)",
  roles: ["planner", "graph", "retriever"],
  query: (i) => handbookQuestion(i).question,
  submit: { workflow: "halo", options: {} },
  storedAnswer: (data) => (data.workflow === "halo" ? data.response_str : null),
  check: (i, seen) => exactly(handbookQuestion(i).halo, HALO_STEPS, seen),
};

/** The steps of an offline clarify session on a clear question: research at once, no clarification. */
export const CLARIFY_STEPS: StepPath = ["orchestrator.decide", "researcher.gather", "writer.synthesize"];

/**
 * clarify: a clear question, so the orchestrator (offline: its keyword rules) decides RESEARCH and
 * no person is asked; the research agent searches the corpus and the synthesis agent quotes it.
 */
export const CLARIFY: Workload = {
  workflow: "clarify",
  path: "orchestrator → researcher (corpus) → writer",
  roles: ["orchestrator", "researcher", "writer"],
  query: (i) => handbookQuestion(i).question,
  submit: { workflow: "clarify", options: {} },
  storedAnswer: (data) => (data.workflow === "clarify" ? data.final_answer : null),
  check: (i, seen) => exactly(handbookQuestion(i).clarify, CLARIFY_STEPS, seen),
};

const WORKLOADS: Readonly<Record<BenchWorkflow, Workload>> = {
  "critic-chain": CRITIC_CHAIN,
  supervisor: SUPERVISOR,
  blackboard: BLACKBOARD,
  halo: HALO,
  clarify: CLARIFY,
};

/** The load of a workflow the bench runs. */
export function workloadFor(workflow: BenchWorkflow): Workload {
  return WORKLOADS[workflow];
}
