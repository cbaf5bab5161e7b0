import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type AgentDefinition } from "@agentmesh/agent-kit";
import { AgentmeshError, type GatherRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { offlineModelOf } from "../../test/setup/model.js";
import { gather, gatherQuery } from "./gather.js";
import { createResearcher } from "./role.js";

const here = dirname(fileURLToPath(import.meta.url));
const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [here] });
const setup = createResearcher({ AGENTMESH_CORPUS_DIR: join(resolve(here, "../.."), "corpus") }, log);
afterAll(async () => setup.close?.());
const researcher = setup.agents[0] as AgentDefinition;
const run = createOpRunner(researcher, offlineModelOf([researcher]), { log, prompts });
const task = (input: GatherRequest) => ({
  task_id: "sessgather001.1.0.0",
  session_id: "sessgather001",
  role: "researcher",
  op: "gather",
  attempt: 0,
  input,
});

describe("researcher.gather (clarify's research agent)", () => {
  it("searches the corpus with the question and the clarifying reply, citing each passage by path; earlier turns come as uncited memory", async () => {
    const out = await run(
      task({
        question: "Tell me more about it",
        clarification: { question: 'What does "it" refer to?', answer: "Redis persistence with the append-only file" },
        messages: [
          { role: "user", content: "We use Redis for sessions and want to know about persistence" },
          { role: "assistant", content: "Redis keeps data in memory." },
          { role: "user", content: "Tell me more about it" },
        ],
      }),
      new AbortController().signal,
    );
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    const result = out.output as {
      query: string;
      passages: Array<{ source: string; citation: { path: string | null } | null; text: string }>;
      gaps: string[];
    };
    expect(result.query).toBe("redis persistence append-only file");
    const corpus = result.passages.filter((p) => p.source === "corpus");
    expect(corpus[0]?.citation?.path).toContain("redis-persistence.md");
    expect(result.passages.filter((p) => p.source === "memory").map((p) => p.text)).toEqual([
      "User: We use Redis for sessions and want to know about persistence",
      "Assistant: Redis keeps data in memory.",
    ]);
    expect(result.passages.every((p) => (p.source === "memory") === (p.citation === null))).toBe(true);
    // no web key: the web is skipped without a gap, and no model was needed
    expect(result.gaps).toEqual([]);
    expect(out.provenance.usage.model_calls).toBe(0);
  });

  it("without a corpus it notes the gap; a transient search failure fails the task as retryable", async () => {
    const none = await gather(
      { question: "How does Redis persist data?", clarification: null, messages: [] },
      { call: () => Promise.reject(new Error("not called")), corpusConfigured: false, webConfigured: false },
      { sessionId: "s", taskId: "t", signal: new AbortController().signal },
    );
    expect(none).toEqual({
      query: "redis persist data",
      passages: [],
      gaps: ["No corpus is configured (AGENTMESH_CORPUS_DIR names no folder)."],
    });
    const flaky = gather(
      { question: "How does Redis persist data?", clarification: null, messages: [] },
      {
        call: async (tool) => ({
          ok: false,
          tool,
          error: new AgentmeshError("timeout", "slow", { retryable: true }),
          records: [],
        }),
        corpusConfigured: true,
        webConfigured: false,
      },
      { sessionId: "s", taskId: "t", signal: new AbortController().signal },
    );
    await expect(flaky).rejects.toMatchObject({ code: "timeout", retryable: true });
    // a failed web search is a gap: the corpus's passages are kept
    const webDown = await gather(
      { question: "How does Redis persist data?", clarification: null, messages: [] },
      {
        call: async (tool) =>
          tool === "corpus_search"
            ? {
                ok: true,
                tool,
                output: { results: [{ path: "redis.md", passage: "Redis can persist data with the AOF.", score: 1 }] },
                records: [],
              }
            : {
                ok: false,
                tool,
                error: new AgentmeshError("tool_error", "fetch failed", { retryable: true }),
                records: [],
              },
        corpusConfigured: true,
        webConfigured: true,
      },
      { sessionId: "s", taskId: "t", signal: new AbortController().signal },
    );
    expect(webDown.passages.map((p) => p.citation?.path)).toEqual(["redis.md"]);
    expect(webDown.gaps).toEqual(["The web search is unavailable (tool_error): fetch failed"]);
  });

  it("the search is the question's content words, then the reply's", () => {
    expect(
      gatherQuery({
        question: "The best approach",
        clarification: { question: "For what?", answer: "text-to-SQL accuracy" },
      }),
    ).toBe("best approach text-to-sql accuracy");
  });
});
