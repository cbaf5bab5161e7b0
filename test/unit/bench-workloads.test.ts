// `pnpm bench --workflow`: the flag, and each load's sessions and answer checks.
import { describe, expect, it } from "vitest";
import { findCode, routeByKeywords } from "@agentmesh/offline-kit";
import type { SessionState } from "@agentmesh/contracts";
import { parseArgs, type BenchOptions } from "../../bench/args.js";
import { queryBody } from "../../bench/gateway.js";
import { CRITIC_CHAIN, CRITIC_CHAIN_STEPS, SUPERVISOR, SUPERVISOR_STEPS, workloadFor, type SeenAnswer } from "../../bench/workloads.js";

const options = (argv: string[]): BenchOptions => {
  const o = parseArgs(argv);
  if (o === "help") throw new Error("unexpected help");
  return o;
};

/** Stored session data as far as the loads read it (the rest of a state does not matter to them). */
const data = (d: Record<string, unknown>) => d as unknown as SessionState["data"];

describe("pnpm bench --workflow", () => {
  it("runs critic-chain unless told otherwise, and supervisor when asked", () => {
    expect(options([]).workflow).toBe("critic-chain");
    expect(options(["--workflow", "supervisor", "--quick"]).workflow).toBe("supervisor");
    expect(options(["--workflow", "critic-chain"]).workflow).toBe("critic-chain");
  });

  it("refuses a workflow it has no load for, naming the ones it has", () => {
    expect(() => parseArgs(["--workflow", "halo"])).toThrow("--workflow must be one of critic-chain, supervisor, got halo");
    expect(() => parseArgs(["--workflow"])).toThrow("--workflow needs a value");
  });

  it("picks the load of the workflow", () => {
    expect(workloadFor("critic-chain")).toBe(CRITIC_CHAIN);
    expect(workloadFor("supervisor")).toBe(SUPERVISOR);
  });
});

describe("the critic-chain load", () => {
  const seen = (answer: string): SeenAnswer => ({ answer, stepNames: [...CRITIC_CHAIN_STEPS], codeRuns: [] });

  it("asks session i for i * 7 + 0.1 and accepts only the exact answer", () => {
    expect(CRITIC_CHAIN.query(3)).toBe("What is 3 * 7 + 0.1?");
    expect(CRITIC_CHAIN.check(3, seen("3 * 7 + 0.1 = 21.1"))).toBeNull();
    expect(CRITIC_CHAIN.check(3, seen("3 * 7 + 0.1 = 21.10"))).toBe('wrong answer "3 * 7 + 0.1 = 21.10", expected "3 * 7 + 0.1 = 21.1"');
  });

  it("accepts only the path where the expert computes through the calculator (an executor.call) before it answers", () => {
    const without = CRITIC_CHAIN.check(3, { ...seen("3 * 7 + 0.1 = 21.1"), stepNames: ["planner.plan", "critic.review_plan", "expert.answer", "critic.review_answer", "finalizer.finalize"] });
    expect(without).toBe(`steps planner.plan → critic.review_plan → expert.answer → critic.review_answer → finalizer.finalize, expected ${CRITIC_CHAIN_STEPS.join(" → ")}`);
  });

  it("starts the five critic-chain roles and the executor, and submits the workflow by name", () => {
    expect(CRITIC_CHAIN.roles).toEqual(["planner", "critic", "researcher", "expert", "finalizer", "executor"]);
    expect(CRITIC_CHAIN.submit).toEqual({ workflow: "critic-chain", options: {} });
  });

  it("reads final_answer of a critic-chain session, nothing of another workflow's", () => {
    expect(CRITIC_CHAIN.storedAnswer(data({ workflow: "critic-chain", final_answer: "x = 1" }))).toBe("x = 1");
    expect(CRITIC_CHAIN.storedAnswer(data({ workflow: "supervisor", response: "x = 1" }))).toBeNull();
  });
});

describe("the supervisor load", () => {
  const right = (i: number): SeenAnswer => ({
    answer: `Runs the code given in the request.\n\n\`\`\`javascript\nconsole.log(${i} * 7 + 1)\n\`\`\`\n\nOutput:\n\`\`\`\n${i * 7 + 1}\n\`\`\``,
    stepNames: [...SUPERVISOR_STEPS],
    codeRuns: [{ exitCode: 0, stdout: `${i * 7 + 1}\n`, stderr: "" }],
  });

  it("starts only the router, the code agent and the executor, and leaves routing to the router", () => {
    expect(SUPERVISOR.roles).toEqual(["router", "coder", "executor"]);
    expect(SUPERVISOR.submit).toEqual({ workflow: "supervisor", options: {} });
    expect(SUPERVISOR.submit.options).not.toHaveProperty("mode");
  });

  it("asks a query the offline router sends to the code agent, with JavaScript the offline code agent runs as given", () => {
    const query = SUPERVISOR.query(12);
    expect(routeByKeywords(query).agent).toBe("code");
    expect(findCode(query)).toEqual({ language: "javascript", code: "console.log(12 * 7 + 1)" });
  });

  it("accepts a routed run that printed i * 7 + 1 and an answer with that value on a line of its own", () => {
    expect(SUPERVISOR.check(12, right(12))).toBeNull();
    expect(SUPERVISOR.check(0, right(0))).toBeNull();
  });

  it("fails an answer without the value on a line of its own, even though the code's line holds the expression", () => {
    const answer = "```javascript\nconsole.log(0 * 7 + 1)\n```\n\nOutput:\n```\n(the code printed nothing)\n```";
    expect(SUPERVISOR.check(0, { ...right(0), answer })).toBe(`the answer has no line that is exactly 1 (answer: ${JSON.stringify(answer)})`);
    expect(SUPERVISOR.check(12, { ...right(12), answer: right(13).answer })).toMatch(/^the answer has no line that is exactly 85 \(answer: /);
  });

  it("fails a session that skipped the router or took other steps", () => {
    expect(SUPERVISOR.check(12, { ...right(12), stepNames: ["coder.generate", "executor.call"] })).toMatch(
      /^steps coder.generate → executor.call, expected router.route → coder.generate → executor.call \(answer: /,
    );
    expect(SUPERVISOR.check(12, { ...right(12), stepNames: [...SUPERVISOR_STEPS, "coder.generate"] })).toMatch(/^steps router.route → coder.generate → executor.call → coder.generate, expected/);
  });

  it("fails a run that was not seen once, failed, or printed something else", () => {
    const runs = /^code runs seen: (.*), expected one with exit code 0 that printed 85 \(answer: /;
    const seenRuns = (codeRuns: SeenAnswer["codeRuns"]) => runs.exec(SUPERVISOR.check(12, { ...right(12), codeRuns }) ?? "")?.[1];
    expect(seenRuns([])).toBe("none");
    expect(seenRuns([{ exitCode: 1, stdout: "85\n", stderr: "ReferenceError: x" }])).toBe('exit code 1, stdout "85\\n", stderr "ReferenceError: x"');
    expect(seenRuns([{ exitCode: 0, stdout: "84\n", stderr: "" }])).toBe('exit code 0, stdout "84\\n", stderr ""');
    expect(seenRuns([right(12).codeRuns[0]!, right(12).codeRuns[0]!])).toMatch(/ \| /);
  });

  it("names every problem of a failed session at once, with its answer", () => {
    const reason = SUPERVISOR.check(12, { answer: "The code failed: timeout", stepNames: [...SUPERVISOR_STEPS, "coder.generate"], codeRuns: [{ exitCode: null, stdout: "", stderr: "" }] });
    expect(reason?.split("; ").map((p) => p.split(/[:,]/)[0])).toEqual(["steps router.route → coder.generate → executor.call → coder.generate", "code runs seen", "the answer has no line that is exactly 85 (answer"]);
  });

  it("reads the workflow's response field from Redis, nothing of another workflow's", () => {
    expect(SUPERVISOR.storedAnswer(data({ workflow: "supervisor", response: "85" }))).toBe("85");
    expect(SUPERVISOR.storedAnswer(data({ workflow: "supervisor", response: null }))).toBeNull();
    expect(SUPERVISOR.storedAnswer(data({ workflow: "critic-chain", final_answer: "85" }))).toBeNull();
  });

  it("posts to the gateway with the workflow and without a mode", () => {
    expect(queryBody(SUPERVISOR, 2)).toEqual({ query: SUPERVISOR.query(2), workflow: "supervisor" });
    expect(queryBody(CRITIC_CHAIN, 2)).toEqual({ query: "What is 2 * 7 + 0.1?", workflow: "critic-chain" });
  });
});
