import { describe, expect, it } from "vitest";
import { ROLES, type OpRequest, type RetrievalBundle, type StepResult } from "@agentmesh/contracts";
import { reportOffline } from "./report.js";

const AOF = {
  path: "redis-persistence.md",
  passage:
    "With the append-only file enabled, Redis logs every write command to a file. The appendfsync setting decides how often the file is flushed.",
};
const retrieval = (items: Array<{ c: typeof AOF; relevance: number }>): RetrievalBundle => ({
  items: items.map(({ c, relevance }) => ({ source: "corpus", content: c.passage, relevance, citation: c })),
  summary: "Redis persistence.",
  open_questions: [],
  corpus_ranking: null,
});

const result = (output: string, over: Partial<StepResult> = {}): StepResult => ({
  strategy: "tool",
  tool: "summarize",
  ok: true,
  output,
  error: null,
  latency_ms: 1,
  attempts: 1,
  records: [],
  citations: [],
  ...over,
});

function reportRequest(
  question: string,
  r: StepResult,
  over: Partial<OpRequest<"critic", "report">> = {},
): OpRequest<"critic", "report"> {
  return {
    question,
    step_index: 0,
    step: { description: `Run ${r.tool}`, tool: r.tool, args: [], expected_outcome: "a useful result" },
    is_final_step: false,
    result: r,
    perception: null,
    retrieval: null,
    ...over,
  };
}

describe("offline critic.report", () => {
  const parse = (r: unknown) => ROLES.critic.report.response.parse(r);

  it("rejects a failed or empty result", () => {
    const failed = result("", {
      ok: false,
      output: null,
      error: { code: "timeout", message: "slow", retryable: true },
    });
    expect(parse(reportOffline(reportRequest("What is 2 + 2?", failed)))).toMatchObject({
      is_acceptable: false,
      quality: 0,
    });
    expect(reportOffline(reportRequest("What is 2 + 2?", result(" ", { tool: "calculator" })))).toMatchObject({
      is_acceptable: false,
      rewrite_suggestion: null,
    });
  });

  it("checks a calculator output is a number and the right one", () => {
    const q = "What is 123456789 * 987654321?";
    expect(reportOffline(reportRequest(q, result("121932631112635269", { tool: "calculator" })))).toMatchObject({
      is_acceptable: true,
    });
    expect(reportOffline(reportRequest(q, result("NaN or so", { tool: "calculator" })))).toMatchObject({
      is_acceptable: false,
    });
    expect(reportOffline(reportRequest(q, result("121932631112635268", { tool: "calculator" })))).toMatchObject({
      is_acceptable: false,
      hallucination_risk: 0.8,
    });
  });

  it("suggests a rewrite only when the tool choice is wrong", () => {
    const r = reportOffline(
      reportRequest(
        "What is 6 * 7?",
        result("[1] jetstream.md: JetStream is the persistence layer", { tool: "corpus_search" }),
      ),
    );
    expect(r).toMatchObject({
      is_acceptable: false,
      rewrite_suggestion: "Use calculator to evaluate 6 * 7 exactly instead of corpus_search.",
    });
  });

  it("asks a person only for a real ambiguity, and not on the final step", () => {
    const q = "Where does the handbook say to store samples at 4 degrees?";
    const r = reportOffline(
      reportRequest(
        q,
        result("[1] handbook/lab-safety.md: samples are stored in the cold room", { tool: "corpus_search" }),
      ),
    );
    expect(parse(r)).toMatchObject({
      requires_human_input: true,
      is_acceptable: true,
      question_for_human: "Your question mentions 4 degrees without a scale: is that Celsius or Fahrenheit?",
    });
    expect(
      reportOffline(
        reportRequest(
          "Where are samples stored at 4 °C?",
          result("samples are stored in the cold room", { tool: "corpus_search" }),
        ),
      ).requires_human_input,
    ).toBe(false);
    const final = reportOffline(
      reportRequest(
        q,
        result("According to handbook/lab-safety.md: “Samples are stored in the cold room B12.” [1]", {
          citations: [{ path: "handbook/lab-safety.md", passage: "Samples are stored in the cold room B12." }],
        }),
        { is_final_step: true },
      ),
    );
    expect(final).toMatchObject({ requires_human_input: false, is_acceptable: true });
  });

  it("rates a final answer's hallucination risk by its overlap with the sources", () => {
    const q = "How does Redis persist data with the append-only file?";
    const backed = result("According to redis-persistence.md: “Redis logs every write command to a file.” [1]", {
      citations: [AOF],
    });
    expect(
      reportOffline(
        reportRequest(q, backed, { is_final_step: true, retrieval: retrieval([{ c: AOF, relevance: 0.9 }]) }),
      ),
    ).toMatchObject({ is_acceptable: true, hallucination_risk: 0.1 });
    const invented = result(
      "Redis stores everything on punched cards in a vault. Operators rotate those cards weekly.",
      { citations: [AOF] },
    );
    expect(reportOffline(reportRequest(q, invented, { is_final_step: true }))).toMatchObject({
      is_acceptable: false,
      hallucination_risk: 0.9,
    });
    expect(reportOffline(reportRequest(q, result("Redis writes a log."), { is_final_step: true }))).toMatchObject({
      is_acceptable: false,
      hallucination_risk: 0.7,
    });
    const arithmetic = "What is 123456789 * 987654321?";
    expect(
      reportOffline(reportRequest(arithmetic, result("It is 121,932,631,112,635,269."), { is_final_step: true }))
        .is_acceptable,
    ).toBe(true);
    expect(
      reportOffline(reportRequest(arithmetic, result("It is about 1.2e17."), { is_final_step: true })).is_acceptable,
    ).toBe(false);
  });
});
