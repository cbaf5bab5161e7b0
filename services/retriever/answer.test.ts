import { describe, expect, it } from "vitest";
import { AgentmeshError, ROLES } from "@agentmesh/contracts";
import type { HandlerModelCall } from "@agentmesh/agent-kit";
import type { ToolCallResult } from "@agentmesh/tools";
import { answerFromSources, extractiveAnswer } from "./answer.js";
import type { RetrieverDeps, ToolCaller } from "./retrieve.js";

const HITS = [
  {
    path: "docs/redis-persistence.md",
    passage: "Redis has two modes. With the append-only file enabled, Redis logs every write command to disk.",
    score: 9,
  },
  { path: "jetstream.md", passage: "JetStream is the persistence layer of NATS.", score: 3 },
  { path: "unrelated.md", passage: "The cafeteria opens at noon.", score: 1 },
];
const WEB = [
  {
    title: "Redis persistence",
    url: "https://redis.io/docs/persistence",
    snippet: "AOF logs every write operation received by the server.",
  },
  { title: "Not a web page", url: "javascript:alert(1)", snippet: "dropped" },
];
const ok = (tool: string, output: unknown): ToolCallResult => ({ ok: true, tool, output, records: [] });

function deps(
  answers: Record<string, ToolCallResult>,
  over: Partial<RetrieverDeps> = {},
): RetrieverDeps & { calls: Array<{ tool: string; args: unknown }> } {
  const calls: Array<{ tool: string; args: unknown }> = [];
  const call: ToolCaller = async (tool, args) => {
    calls.push({ tool, args });
    const a = answers[tool];
    if (!a) throw new Error(`unexpected ${tool}`);
    return a;
  };
  return { call, webConfigured: true, corpusConfigured: true, ...over, calls };
}

/** The offline engine's reply to an op without offline behaviour. */
const noModel = {
  complete: (): Promise<never> =>
    Promise.reject(new AgentmeshError("needs_model", "the offline engine cannot answer retriever.answer")),
};
function model(answer: string) {
  const prompts: string[] = [];
  return {
    prompts,
    complete: <T>(c: HandlerModelCall<T>): Promise<T> => (
      prompts.push(c.prompt),
      Promise.resolve(c.schema.parse({ answer }))
    ),
  };
}
const base = { sessionId: "s1", taskId: "s1.1.0.0", signal: new AbortController().signal };
const question = "How does Redis persist data with the append-only file?";

describe("retriever.answer", () => {
  it("corpus, offline: quotes the most relevant sentence of the top passages; each passage cited by path, snippet and file name", async () => {
    const d = deps({ corpus_search: ok("corpus_search", { results: HITS }) });
    const out = await answerFromSources({ question, source: "corpus" }, d, { ...base, ...noModel });
    expect(d.calls).toEqual([
      { tool: "corpus_search", args: { query: "redis persist data append-only file", limit: 8 } },
    ]);
    expect(out.response_str).toBe(
      "With the append-only file enabled, Redis logs every write command to disk. JetStream is the persistence layer of NATS.",
    );
    expect(out.citations).toEqual([
      { title: "redis-persistence.md", url: null, path: "docs/redis-persistence.md", snippet: HITS[0]!.passage },
      { title: "jetstream.md", url: null, path: "jetstream.md", snippet: HITS[1]!.passage },
    ]);
    expect(ROLES.retriever.answer.response.parse(out)).toEqual(out);
  });

  it("corpus, with a model: the model writes the answer from the passages, which are exactly the citations", async () => {
    const m = model("Redis appends every write to the AOF.");
    const out = await answerFromSources(
      { question, source: "corpus" },
      deps({ corpus_search: ok("corpus_search", { results: HITS }) }),
      { ...base, ...m },
    );
    expect(out.response_str).toBe("Redis appends every write to the AOF.");
    expect(out.citations.map((c) => c.path)).toEqual(["docs/redis-persistence.md", "jetstream.md"]);
    expect(m.prompts[0]).toContain("[1] docs/redis-persistence.md\nRedis has two modes.");
    expect(m.prompts[0]).not.toContain("cafeteria");
  });

  it("corpus, nothing relevant found: a short honest answer with no citations", async () => {
    const out = await answerFromSources(
      { question, source: "corpus" },
      deps({ corpus_search: ok("corpus_search", { results: [HITS[2]] }) }),
      { ...base, ...noModel },
    );
    expect(out).toEqual({ response_str: "The document corpus has nothing on this.", citations: [] });
  });

  it("no corpus configured: tool_unavailable, not retryable, without searching", async () => {
    const d = deps({}, { corpusConfigured: false });
    await expect(answerFromSources({ question, source: "corpus" }, d, { ...base, ...noModel })).rejects.toMatchObject({
      code: "tool_unavailable",
      retryable: false,
      message: expect.stringContaining("no corpus is configured") as unknown,
    });
    expect(d.calls).toEqual([]);
  });

  it("a transient search failure stays retryable; a model failure other than needs_model is not swallowed", async () => {
    const failing = deps({
      corpus_search: {
        ok: false,
        tool: "corpus_search",
        error: new AgentmeshError("tool_error", "worker died", { retryable: true }),
        records: [],
      },
    });
    await expect(
      answerFromSources({ question, source: "corpus" }, failing, { ...base, ...noModel }),
    ).rejects.toMatchObject({ code: "tool_error", retryable: true });
    const broken = { complete: (): Promise<never> => Promise.reject(new AgentmeshError("model_error", "502")) };
    await expect(
      answerFromSources(
        { question, source: "corpus" },
        deps({ corpus_search: ok("corpus_search", { results: HITS }) }),
        { ...base, ...broken },
      ),
    ).rejects.toMatchObject({ code: "model_error" });
  });

  it("web with the offline provider (no key): tool_unavailable, not retryable", async () => {
    const d = deps({}, { webConfigured: false });
    await expect(answerFromSources({ question, source: "web" }, d, { ...base, ...noModel })).rejects.toMatchObject({
      code: "tool_unavailable",
      retryable: false,
      message: expect.stringContaining("AGENTMESH_WEB_SEARCH_KEY") as unknown,
    });
    expect(d.calls).toEqual([]);
  });

  it("web with a provider: results cited by URL (anything that is not an http(s) page left out)", async () => {
    const d = deps({ web_search: ok("web_search", { results: WEB }) });
    const out = await answerFromSources({ question, source: "web" }, d, { ...base, ...noModel });
    expect(d.calls).toEqual([{ tool: "web_search", args: { query: "redis persist data append-only file", count: 5 } }]);
    expect(out.citations).toEqual([
      { title: "Redis persistence", url: "https://redis.io/docs/persistence", path: null, snippet: WEB[0]!.snippet },
    ]);
    expect(out.response_str).toBe("AOF logs every write operation received by the server.");
  });

  it("the extractive answer quotes at most three sources", () => {
    const many = Array.from({ length: 5 }, (_, i) => ({
      text: `Fact ${i}.`,
      citation: { title: `f${i}.md`, url: null, path: `f${i}.md`, snippet: `Fact ${i}.` },
    }));
    expect(extractiveAnswer("facts", many)).toBe("Fact 0. Fact 1. Fact 2.");
  });

  it("quotes prose, not markdown headings or list markers, and a sentence two sources share once", () => {
    const doc = (path: string, text: string) => ({
      text,
      citation: { title: path, url: null, path, snippet: text.slice(0, 100) },
    });
    const sources = [
      doc("a.md", "## The coordinator\nThe coordinator drives each session."),
      doc("b.md", "- The coordinator drives each session."),
      doc("c.md", "# Agents\n1. An agent pulls tasks for its role."),
    ];
    expect(extractiveAnswer("What does the coordinator drive?", sources)).toBe(
      "The coordinator drives each session. An agent pulls tasks for its role.",
    );
  });
});
