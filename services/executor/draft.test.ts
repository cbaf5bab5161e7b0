import { describe, expect, it } from "vitest";
import { type OpRequest, type RetrievalBundle, type SummarizeContext } from "@agentmesh/contracts";
import { numberedSources, summarizeOffline } from "./draft.js";

const AOF = {
  path: "redis-persistence.md",
  passage:
    "With the append-only file enabled, Redis logs every write command to a file. The appendfsync setting decides how often the file is flushed.",
};
const RDB = {
  path: "redis-persistence.md",
  passage: "An RDB snapshot is a compact point-in-time copy of the whole dataset.",
};
const NATS = { path: "jetstream.md", passage: "JetStream is the persistence layer of NATS." };

const retrieval = (items: Array<{ c: typeof AOF; relevance: number }>): RetrievalBundle => ({
  items: items.map(({ c, relevance }) => ({ source: "corpus", content: c.passage, relevance, citation: c })),
  summary: "Redis persistence.",
  open_questions: [],
  corpus_ranking: null,
});

function summarizeRequest(question: string, context: SummarizeContext): OpRequest<"executor", "execute"> {
  return {
    question,
    step_index: 1,
    step: { description: "Write the answer", tool: "summarize", args: [], expected_outcome: "the answer" },
    strategy: "tool",
    query: null,
    limits: { max_attempts: 3, timeout_ms: 5000 },
    policy: { listed: [], banned: [] },
    context,
  };
}

const accepted = (tool: string, output: string, citations: (typeof AOF)[] = []) => ({
  plan_version: 1,
  step_index: 0,
  description: `Run ${tool}`,
  tool,
  strategy: "tool" as const,
  output,
  citations,
});

describe("offline summarize step", () => {
  it("states the last calculator result for arithmetic", () => {
    const d = summarizeOffline(
      summarizeRequest("What is 123456789 * 987654321?", {
        results: [accepted("calculator", "121932631112635269")],
        retrieval: null,
        user_replies: [],
      }),
    );
    expect(d).toEqual({ answer: "123456789 * 987654321 = 121932631112635269", citations: [] });
  });

  it("quotes the relevant passages with [n] numbers that match the final answer's source list", () => {
    const ctx: SummarizeContext = {
      results: [accepted("corpus_search", "[1] …", [NATS, AOF])],
      retrieval: retrieval([
        { c: RDB, relevance: 0.9 },
        { c: AOF, relevance: 0.8 },
      ]),
      user_replies: ["in production"],
    };
    expect(numberedSources(ctx)).toEqual([NATS, AOF, RDB]);
    const d = summarizeOffline(summarizeRequest("How does Redis persist data with the append-only file?", ctx));
    expect(d.answer).toContain(
      "According to redis-persistence.md: “With the append-only file enabled, Redis logs every write command to a file.",
    );
    expect(d.answer).toMatch(/\[2\]$/m);
    expect(d.answer).not.toContain("jetstream.md");
    expect(d.answer).toContain("You clarified: “in production”.");
    expect(d.citations).toEqual([AOF]);
  });

  it("without step sources quotes the top retrieval passages in order, and says so plainly when there is nothing", () => {
    const ctx: SummarizeContext = {
      results: [],
      retrieval: retrieval([
        { c: AOF, relevance: 0.9 },
        { c: NATS, relevance: 0.2 },
      ]),
      user_replies: [],
    };
    expect(summarizeOffline(summarizeRequest("How does Redis persist data?", ctx)).citations).toEqual([AOF]);
    const none = summarizeOffline(
      summarizeRequest("How does Redis persist data?", { results: [], retrieval: null, user_replies: [] }),
    );
    expect(none.answer).toMatch(/found nothing .* rather than guess/);
  });
});
