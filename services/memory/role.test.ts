import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import { EMPTY_MEMORY, type MemoryState, type OpRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf, recordingModel } from "../../test/setup/model.js";
import { derivePatterns } from "./offline.js";
import memory from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
type ModelPort = Parameters<typeof recordingModel>[0];
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });

const input: OpRequest<"memory", "update"> = {
  question: "How does Redis persist data?",
  memory: EMPTY_MEMORY,
  event: {
    kind: "step",
    step_index: 0,
    step: { description: "Search the corpus for persistence", tool: "corpus_search", args: [], expected_outcome: "" },
    result: {
      strategy: "tool",
      tool: "corpus_search",
      ok: true,
      output: "Redis logs every write command to the append-only file.",
      error: null,
      latency_ms: 2,
      attempts: 1,
      records: [],
      citations: [{ path: "redis-persistence.md", passage: "append-only file" }],
    },
    critic: {
      quality: 0.9,
      hallucination_risk: 0.05,
      issues: [],
      is_acceptable: true,
      rewrite_suggestion: null,
      requires_human_input: false,
      question_for_human: null,
    },
  },
};

async function run(model: ModelPort, req: OpRequest<"memory", "update"> = input) {
  const outcome = await createOpRunner(memory, model, { log, prompts })(
    {
      task_id: "sessmem000001.1.0.0",
      session_id: "sessmem000001",
      role: "memory",
      op: "update",
      attempt: 0,
      input: req,
    },
    new AbortController().signal,
  );
  if (!outcome.ok) throw new Error(`memory.update failed: ${outcome.error.message}`);
  return { output: outcome.output as MemoryState, provenance: outcome.provenance };
}

describe("memory.update with a model: the patterns are the model's, the fold is code", () => {
  it("asks the model under the memory.update prompt and folds its patterns about the step's tool", async () => {
    const model = createScriptedModel([
      {
        role: "memory",
        op: "update",
        output: {
          patterns: [
            { kind: "prefer", tool: "corpus_search", pattern: "Search the corpus first for Redis questions" },
            { kind: "avoid", tool: "web_search", pattern: "not about this step" },
          ],
        },
      },
    ]);
    const rec = recordingModel(model);
    const { output, provenance } = await run(rec.port);
    model.assertConsumed();
    expect(rec.seen[0]?.system).toContain("behavioural patterns a critic report shows");
    expect(rec.seen[0]?.prompt).toContain("Critic: acceptable, quality 0.9");
    expect(provenance).toMatchObject({ prompt_version: "memory.update/v2" });
    expect(output.patterns).toEqual([
      { kind: "prefer", tool: "corpus_search", pattern: "Search the corpus first for Redis questions", seen: 1 },
    ]);
    expect(output.long_term_refs).toEqual([
      "Search the corpus for persistence (corpus_search, redis-persistence.md): Redis logs every write command to the append-only file.",
    ]);
  });

  it("falls back to the rule when the model call fails, so the step is still folded", async () => {
    const model = createScriptedModel([
      { role: "memory", op: "update", error: { code: "model_error", message: "boom", retryable: false } },
    ]);
    const { output } = await run(model);
    expect(output.patterns.map(({ seen: _s, ...p }) => p)).toEqual(derivePatterns(input).patterns);
    expect(output.short_term).toHaveLength(1);
  });

  it("makes no model call for an event without a critic report", async () => {
    const model = createScriptedModel([]);
    const req = { ...input, event: { kind: "user_reply" as const, question_for_human: "Which?", text: "v7" } };
    const { output } = await run(model, req);
    expect(model.calls).toHaveLength(0);
    expect(output.short_term[0]?.kind).toBe("user");
  });

  it("offline, the rule answers the model call", async () => {
    const { output } = await run(offlineModelOf([memory]));
    expect(output.patterns).toEqual([{ ...derivePatterns(input).patterns[0], seen: 1 }]);
    expect(output.patterns[0]?.kind).toBe("prefer");
  });
});
