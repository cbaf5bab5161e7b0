import { describe, expect, it } from "vitest";
import { AgentmeshError, EMPTY_MEMORY, ROLES, type MemoryState, type OpRequest } from "@agentmesh/contracts";
import type { ToolCallResult } from "@agentmesh/tools";
import { fromMemory, rankHits, retrieve, type ToolCaller } from "./retrieve.js";

const ctx = { sessionId: "s1", taskId: "s1.1.0.0", signal: new AbortController().signal };
const HITS = [
  {
    path: "redis-persistence.md",
    passage: "With the append-only file enabled, Redis logs every write command.",
    score: 9,
  },
  { path: "jetstream.md", passage: "JetStream is the persistence layer of NATS.", score: 3 },
];
const ok = (tool: string, output: unknown): ToolCallResult => ({ ok: true, tool, output, records: [] });
const fail = (tool: string, code: "tool_unavailable" | "tool_error", retryable: boolean): ToolCallResult => ({
  ok: false,
  tool,
  error: new AgentmeshError(code, `${code}!`, { retryable }),
  records: [],
});

function caller(
  answers: Record<string, ToolCallResult>,
): ToolCaller & { calls: Array<{ tool: string; args: unknown }> } {
  const calls: Array<{ tool: string; args: unknown }> = [];
  const call: ToolCaller = async (tool, args) => {
    calls.push({ tool, args });
    const a = answers[tool];
    if (!a) throw new Error(`unexpected ${tool}`);
    return a;
  };
  return Object.assign(call, { calls });
}

const request = (over: Partial<OpRequest<"retriever", "retrieve">> = {}): OpRequest<"retriever", "retrieve"> => ({
  query: "How does Redis persist data with the append-only file?",
  strategies: ["memory", "corpus", "web"],
  memory: EMPTY_MEMORY,
  max_items: 20,
  ...over,
});

describe("retriever.retrieve", () => {
  it("ranks corpus hits by how much of the query they cover, weighted by score, with citations", async () => {
    const call = caller({ corpus_search: ok("corpus_search", { results: HITS }) });
    const bundle = await retrieve(request(), { call, webConfigured: false, corpusConfigured: true }, ctx);
    expect(call.calls).toEqual([
      { tool: "corpus_search", args: { query: "redis persist data append-only file", limit: 8 } },
    ]);
    expect(bundle.items.map((i) => [i.citation?.path, i.relevance])).toEqual([
      ["redis-persistence.md", 0.6],
      ["jetstream.md", 0.147],
    ]);
    expect(bundle.summary).toContain("redis-persistence.md: With the append-only file enabled");
    expect(bundle.open_questions).toEqual(["Nothing retrieved about: data"]);
    expect(ROLES.retriever.retrieve.response.safeParse(bundle).success).toBe(true);
  });

  it("returns no web items, and no failure, when no web search provider is configured", async () => {
    const bundle = await retrieve(
      request({ strategies: ["web"] }),
      { call: caller({}), webConfigured: false, corpusConfigured: true },
      ctx,
    );
    expect(bundle).toEqual({
      items: [],
      summary: "",
      open_questions: ["No source mentions: How does Redis persist data with the append-only file?"],
      corpus_ranking: null,
    });
  });

  it("says how the corpus was ranked, and a passage found by meaning alone is relevant by its cosine", async () => {
    const hybrid = {
      results: [
        { ...HITS[1]!, score: 0.0164, cosine: null },
        { path: "aof.md", passage: "Every change is appended to a log on disk.", score: 0.0161, cosine: 0.8 },
      ],
      ranking: "hybrid",
      ranking_note: "",
    };
    const call = caller({ corpus_search: ok("corpus_search", hybrid) });
    const bundle = await retrieve(
      request({ strategies: ["corpus"] }),
      { call, webConfigured: false, corpusConfigured: true },
      ctx,
    );
    expect(bundle.corpus_ranking).toEqual({ method: "hybrid", note: "" });
    // no word of the query in it, yet ranked first: 0.8 * (0.6 + 0.4 * 0.0161 / 0.0164)
    expect(bundle.items.map((i) => [i.citation?.path, i.relevance])).toEqual([
      ["aof.md", 0.794],
      ["jetstream.md", 0.2],
    ]);
    const bm25 = { results: HITS, ranking: "bm25", ranking_note: "BM25 only: no embeddings endpoint is configured" };
    const offline = await retrieve(
      request({ strategies: ["corpus"] }),
      { call: caller({ corpus_search: ok("corpus_search", bm25) }), webConfigured: false, corpusConfigured: true },
      ctx,
    );
    expect(offline.corpus_ranking).toEqual({ method: "bm25", note: "BM25 only: no embeddings endpoint is configured" });
    expect(ROLES.retriever.retrieve.response.safeParse(offline).success).toBe(true);
  });

  it("matches session memory by word overlap, leaving out the question's own record", () => {
    const memory: MemoryState = {
      ...EMPTY_MEMORY,
      short_term: [
        { kind: "query", content: 'Asked "How does Redis persist data?"', step_index: null },
        { kind: "step", content: "Step 1 corpus_search ok: Redis append-only file logs writes", step_index: 0 },
        { kind: "user", content: "The person answered: Celsius", step_index: null },
      ],
    };
    expect(fromMemory("How does Redis persist data with the append-only file?", memory)).toEqual([
      {
        source: "memory",
        content: "Step 1 corpus_search ok: Redis append-only file logs writes",
        relevance: 0.6,
        citation: null,
      },
    ]);
  });

  it("matches the thread's long-term references too, best first, at most 5 memory items in all", () => {
    const memory: MemoryState = {
      ...EMPTY_MEMORY,
      short_term: [{ kind: "step", content: "Step 1 calculator ok: 42", step_index: 0 }],
      long_term_refs: [
        'Answered "How does Redis persist data?": Redis logs every write to the append-only file',
        "Evaluate 6 * 7 (calculator): 42",
        ...Array.from({ length: 6 }, (_, i) => `Redis note ${i}`),
      ],
    };
    const items = fromMemory("What does the Redis append-only file record?", memory);
    expect(items).toHaveLength(5);
    expect(items[0]).toEqual({
      source: "memory",
      content: 'Answered "How does Redis persist data?": Redis logs every write to the append-only file',
      relevance: 0.75,
      citation: null,
    });
    expect(items.slice(1).map((i) => i.content)).toEqual([
      "Redis note 5",
      "Redis note 4",
      "Redis note 3",
      "Redis note 2",
    ]);
  });

  it("fails the task on a transient search failure (it is retried), notes a permanent one as a gap", async () => {
    await expect(
      retrieve(
        request(),
        {
          call: caller({ corpus_search: fail("corpus_search", "tool_error", true) }),
          webConfigured: false,
          corpusConfigured: true,
        },
        ctx,
      ),
    ).rejects.toMatchObject({ code: "tool_error", retryable: true });
    const call = caller({
      corpus_search: ok("corpus_search", { results: HITS }),
      web_search: fail("web_search", "tool_unavailable", false),
    });
    const bundle = await retrieve(request(), { call, webConfigured: true, corpusConfigured: true }, ctx);
    expect(bundle.items).toHaveLength(2);
    expect(bundle.open_questions).toEqual([
      "The web search is unavailable (tool_unavailable): tool_unavailable!",
      "Nothing retrieved about: data",
    ]);
  });

  it("gives a weak best hit a weak relevance (never 1 just for being first)", () => {
    const [only] = rankHits("daily meal allowance", [
      { path: "jetstream.md", passage: "Consumers read messages daily.", score: 2 },
    ]);
    expect(only?.relevance).toBeLessThan(0.5);
  });
});
