import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type TokenSink } from "@agentmesh/agent-kit";
import {
  LIMITS,
  STREAMING_CONFIG,
  type AgentBrief,
  type StreamingNode,
  type TaskOutcome,
  type WritingAnalyzeRequest,
  type WritingBrief,
  type WritingFinalizeRequest,
  type WritingOutlineRequest,
  type WritingWriteRequest,
} from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import {
  createScriptedModel,
  offlineModelOf,
  recordingModel,
  scriptedHttpModel,
  type ScriptEntry,
} from "../../test/setup/model.js";
import { strictSchemaProblems } from "../../test/setup/strict-schema.js";
import writer from "./role.js";

type ModelPort = Parameters<typeof createOpRunner>[1];
type TokenEvent = Parameters<TokenSink>[0];

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const SID = "sesswrit0001";

const brief: AgentBrief = {
  query: "Write a blog post about heat pumps for homeowners",
  task: "Write a blog post about heat pumps for homeowners",
  handoff_context: null,
  memory: "research_findings: Heat pumps cut heating bills by a third [1].",
};
const writing: WritingBrief = {
  writing_type: "blog post",
  tone: "friendly",
  audience: "homeowners",
  key_points: ["how they work", "what they save"],
};
const analyzeInput = (over: Partial<WritingAnalyzeRequest> = {}): WritingAnalyzeRequest => ({
  brief,
  tools: [{ name: "handoff_to_research", description: "Hand a research task to the research agent." }],
  observations: [],
  ...over,
});
const outlineInput: WritingOutlineRequest = { brief, writing };
const writeInput: WritingWriteRequest = { brief, writing, outline: "# Heat pumps\n- How they work\n- What they save" };
const finalizeInput: WritingFinalizeRequest = {
  brief,
  writing,
  draft: "Heat pumps move heat instead of making it. They cut bills by a third [1].",
};

const DRAFT =
  "# Heat pumps, explained\n\nA heat pump moves heat from outside into your home, even in winter. Because it moves heat rather than burning fuel, it can cut your heating bill by about a third [1].";
const EMPTY = { writing_type: "", tone: "", audience: "", key_points: [], tool: "", arguments_json: "" };

let n = 0;
const task = (op: string, input: unknown) => ({
  task_id: `${SID}.${++n}.0.0`,
  session_id: SID,
  role: "writer",
  op,
  attempt: 0,
  input,
});
const entry = (op: string, e: Omit<ScriptEntry, "role" | "op">): ScriptEntry =>
  ({ role: "writer", op, ...e }) as ScriptEntry;

const recording = recordingModel;

/** Runs one writer op against `model`, collecting its token messages. */
async function run(op: string, input: unknown, model: ModelPort) {
  const tokens: TokenEvent[] = [];
  const outcome = await createOpRunner(writer, model, { log, prompts, tokens: (t) => void tokens.push(t) })(
    task(op, input),
    new AbortController().signal,
  );
  return { outcome, tokens };
}

describe("writer.analyze (the analyze node)", () => {
  it("returns the writing brief from one structured call, streaming nothing", async () => {
    const model = createScriptedModel([entry("analyze", { output: { ...EMPTY, action: "brief", ...writing } })]);
    const { outcome, tokens } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "brief", ...writing },
      provenance: { prompt_version: "writer.analyze/v1" },
    });
    expect(model.calls).toEqual([expect.objectContaining({ mode: "structured" })]);
    expect(tokens).toEqual([]);
  });

  it("hands off to research with its arguments as an object", async () => {
    const args = { task_description: "Find current heat pump prices", context: "for a blog post for homeowners" };
    const model = createScriptedModel([
      entry("analyze", {
        output: { ...EMPTY, action: "tool", tool: "handoff_to_research", arguments_json: JSON.stringify(args) },
      }),
    ]);
    const { outcome } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "handoff_to_research", arguments: args },
    });
  });

  it("a tool that was not offered fails model_invalid_output, naming it", async () => {
    const model = createScriptedModel([
      entry("analyze", { output: { ...EMPTY, action: "tool", tool: "web_search", arguments_json: '{"query": "x"}' } }),
    ]);
    const { outcome } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", message: expect.stringContaining('"web_search"') },
    });
  });

  it("a handoff outside the writing agent's matrix goes to the workflow, which refuses it as the tool's result (the agent goes on)", async () => {
    const model = createScriptedModel([
      entry("analyze", {
        output: { ...EMPTY, action: "tool", tool: "handoff_to_code", arguments_json: '{"task_description": "x"}' },
      }),
    ]);
    const { outcome } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "handoff_to_code", arguments: { task_description: "x" } },
    });
  });

  it("a brief without its type or tone fails model_invalid_output", async () => {
    const model = createScriptedModel([
      entry("analyze", { output: { ...EMPTY, action: "brief", writing_type: "essay" } }),
    ]);
    const { outcome } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", message: expect.stringContaining("tone") },
    });
  });

  it("the prompt carries the brief (shared memory included), the earlier tool calls and the offered tools", async () => {
    const { port, seen } = recording(
      createScriptedModel([entry("analyze", { output: { ...EMPTY, action: "brief", ...writing } })]),
    );
    const observations = [
      {
        tool: "handoff_to_research",
        arguments: { task_description: "prices" },
        ok: false,
        content: "refused: the handoff limit is reached",
      },
    ];
    await run("analyze", analyzeInput({ observations }), port);
    const prompt = seen[0]?.prompt ?? "";
    for (const part of [
      `Task: ${brief.task}`,
      "Shared memory (what earlier agents found):\nresearch_findings: Heat pumps",
      'Your earlier tool calls:\n- handoff_to_research {"task_description":"prices"} failed: refused: the handoff limit is reached',
      "- handoff_to_research: Hand a research task",
    ]) {
      expect(prompt, part).toContain(part);
    }
    expect(seen[0]?.system).toBe(prompts.get("writer.analyze")?.system);
  });
});

describe("writer.outline, write and finalize", () => {
  it("outline: the model's text as the outline, from one unstreamed text call; the prompt has the writing brief", async () => {
    const outline = "# Heat pumps\n\n1. How they work\n2. What they save\n3. Should you get one?";
    const { port, seen } = recording(createScriptedModel([entry("outline", { content: outline })]));
    const { outcome, tokens } = await run("outline", outlineInput, port);
    expect(outcome).toMatchObject({
      ok: true,
      output: { outline },
      provenance: { prompt_version: "writer.outline/v1" },
    });
    expect(tokens).toEqual([]);
    expect(seen[0]?.mode).toBe("text");
    expect(seen[0]?.prompt).toContain(
      "Writing type: blog post\nTone: friendly\nAudience: homeowners\n\nKey points:\n- how they work\n- what they save",
    );
  });

  it("write: a multi-chunk draft goes out as numbered token messages and comes back as the draft; the prompt has the outline", async () => {
    const { port, seen } = recording(createScriptedModel([entry("write", { content: DRAFT })]));
    const { outcome, tokens } = await run("write", writeInput, port);
    expect(outcome).toMatchObject({ ok: true, output: { draft: DRAFT } });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.seq)).toEqual(tokens.map((_, i) => i));
    expect(tokens.map((t) => t.delta).join("")).toBe(DRAFT);
    expect(tokens[0]).toMatchObject({ session_id: SID, role: "writer", op: "write" });
    expect(seen[0]?.prompt).toContain(`Outline:\n${writeInput.outline}`);
  });

  it(`finalize: a text over ${LIMITS.maxTextChars} characters is cut and marked, not a failed session, and what streamed is where the final text starts`, async () => {
    const long = "A sentence of the long piece. ".repeat(1000);
    const { outcome, tokens } = await run(
      "finalize",
      finalizeInput,
      createScriptedModel([entry("finalize", { content: long })]),
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: { final_content: expect.stringMatching(/\[\.\.\.truncated\]$/) },
    });
    const final = (outcome as { output: { final_content: string } }).output.final_content;
    expect(final.length).toBeLessThanOrEqual(LIMITS.maxTextChars);
    const streamed = tokens.map((t) => t.delta).join("");
    expect(streamed.length).toBeGreaterThan(LIMITS.maxTextChars / 2);
    expect(final.startsWith(streamed)).toBe(true);
  });

  it("finalize: the final text is the model's text verbatim, streamed; the prompt has the draft", async () => {
    const { port, seen } = recording(createScriptedModel([entry("finalize", { content: DRAFT })]));
    const { outcome, tokens } = await run("finalize", finalizeInput, port);
    expect(outcome).toMatchObject({
      ok: true,
      output: { final_content: DRAFT },
      provenance: { prompt_version: "writer.finalize/v1" },
    });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.delta).join("")).toBe(DRAFT);
    expect(seen[0]?.prompt).toContain(`Draft:\n${finalizeInput.draft}`);
  });

  it("a blank text fails model_invalid_output, not an empty piece", async () => {
    const { outcome } = await run("write", writeInput, createScriptedModel([entry("write", { content: " \n " })]));
    expect(outcome).toMatchObject({ ok: false, error: { code: "model_invalid_output", retryable: true } });
  });
});

describe("each op streams exactly when the STREAMING_CONFIG says its node does", () => {
  const NODE: Record<"analyze" | "outline" | "write" | "finalize", StreamingNode> = {
    analyze: "analyze",
    outline: "outline",
    write: "write",
    finalize: "finalize",
  };

  it.each(Object.entries(NODE))("%s", (op, node) => {
    const spec = writer.ops[op as keyof typeof NODE] as { kind?: string; output?: string; stream?: boolean };
    const streams = spec.kind !== "handler" && spec.output === "text" && spec.stream === true;
    expect(streams).toBe(STREAMING_CONFIG[node]);
  });
});

describe("writer offline", () => {
  const inputs: Record<string, unknown> = {
    analyze: analyzeInput(),
    outline: outlineInput,
    write: writeInput,
    finalize: finalizeInput,
  };

  it.each(Object.keys(inputs))(
    "%s answers needs_model, saying the writing agent needs a model and how to configure one",
    async (op) => {
      const { outcome, tokens } = await run(op, inputs[op], offlineModelOf([writer]));
      expect(outcome).toMatchObject({
        ok: false,
        error: { code: "needs_model", retryable: false, component: "writer" },
      });
      const message = (outcome as Extract<TaskOutcome, { ok: false }>).error.message;
      expect(message).toMatch(/^The writing agent needs a language model/);
      expect(message).toContain("AGENTMESH_LLM_BASE_URL");
      expect(tokens).toEqual([]);
    },
  );
});

describe("writer through the OpenAI-compatible adapter", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it("asks the endpoint for a stream and forwards its deltas as token messages; the draft is the streamed text", async () => {
    const { model, server } = await scriptedHttpModel([{ role: "writer", op: "write", content: DRAFT }], {
      roles: { writer: { model: "m-writer", temperature: 0.7, tier: "standard" } },
      defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" },
    });
    close = () => server.close();
    const { outcome, tokens } = await run("write", writeInput, model);
    expect(outcome).toMatchObject({ ok: true, output: { draft: DRAFT }, provenance: { model: "m-writer" } });
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({
      stream: true,
      responseFormat: null,
      body: { model: "m-writer", temperature: 0.7 },
    });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.delta).join("")).toBe(DRAFT);
  });

  it("analyze sends its flat draft as a schema strict mode accepts, unstreamed, and gets the brief back", async () => {
    const { model, server } = await scriptedHttpModel(
      [{ role: "writer", op: "analyze", output: { ...EMPTY, action: "brief", ...writing } }],
      {
        roles: {},
        defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" },
      },
    );
    close = () => server.close();
    const { outcome, tokens } = await run("analyze", analyzeInput(), model);
    expect(outcome).toMatchObject({ ok: true, output: { action: "brief", ...writing } });
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({
      stream: false,
      responseFormat: "json_schema",
      body: { response_format: { json_schema: { strict: true } } },
    });
    const sent = (server.calls[0]?.body as { response_format: { json_schema: { schema: Record<string, unknown> } } })
      .response_format.json_schema.schema;
    expect(strictSchemaProblems(sent)).toEqual([]);
    expect(tokens).toEqual([]);
  });
});
