import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type TokenSink } from "@agentmesh/agent-kit";
import {
  ResearchScenario,
  STREAMING_CONFIG,
  type AgentBrief,
  type HaloCitation,
  type ResearchAnalyzeRequest,
  type ResearchFinalizeRequest,
  type ResearchSearchRequest,
  type ResearchSynthesizeRequest,
  type StreamingNode,
  type TaskOutcome,
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
import { SCENARIOS } from "./research-agent.js";
import { researcherAgent } from "./role.js";

/** The researcher without search backends (these tests never gather). */
const researcher = researcherAgent({
  call: () => Promise.reject(new Error("no search in these tests")),
  corpusConfigured: false,
  webConfigured: false,
});

type ModelPort = Parameters<typeof createOpRunner>[1];
type TokenEvent = Parameters<TokenSink>[0];

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const SID = "sessrsch0001";
const SCENARIO_NAMES = ResearchScenario.options;

const brief: AgentBrief = {
  query: "How large is the market for home batteries?",
  task: "How large is the market for home batteries?",
  handoff_context: null,
  memory: "",
};
const sources: HaloCitation[] = [
  {
    title: "Battery market report 2025",
    url: "https://example.com/report",
    path: null,
    snippet: "The market grew 30% in 2024.",
  },
  { title: "Storage notes", url: null, path: "notes/storage.md", snippet: "" },
];
const searchInput = (over: Partial<ResearchSearchRequest> = {}): ResearchSearchRequest => ({
  brief,
  scenario: "market",
  depth: "standard",
  tools: [
    { name: "web_search", description: "Search the web." },
    { name: "handoff_to_data", description: "Hand a dataset to the data agent." },
  ],
  observations: [],
  search_rounds_left: 2,
  sources: [],
  ...over,
});
const material = { brief, scenario: "market" as const, sources, notes: ["Result: the market grew 30% in 2024 [1]."] };
const analyzeInput = (scenario: ResearchScenario = "market"): ResearchAnalyzeRequest => ({ ...material, scenario });
const synthesizeInput = (scenario: ResearchScenario = "market"): ResearchSynthesizeRequest => ({
  ...material,
  scenario,
  analysis: "Growth is 30% a year [1].",
});
const finalizeInput: ResearchFinalizeRequest = { ...material, synthesis: "The market grows 30% a year [1]." };

const REPORT =
  "# Home batteries\n\nThe market grew 30% in 2024 [1], driven by storage demand [2].\n\n## Sources\n[1] Battery market report 2025 — https://example.com/report\n[2] Storage notes — notes/storage.md";

let n = 0;
const task = (op: string, input: unknown) => ({
  task_id: `${SID}.${++n}.0.0`,
  session_id: SID,
  role: "researcher",
  op,
  attempt: 0,
  input,
});

const recording = recordingModel;

/** Runs one researcher op against `model`, collecting its token messages. */
async function run(op: string, input: unknown, model: ModelPort) {
  const tokens: TokenEvent[] = [];
  const outcome = await createOpRunner(researcher, model, { log, prompts, tokens: (t) => void tokens.push(t) })(
    task(op, input),
    new AbortController().signal,
  );
  return { outcome, tokens };
}

const entry = (op: string, e: Omit<ScriptEntry, "role" | "op">): ScriptEntry =>
  ({ role: "researcher", op, ...e }) as ScriptEntry;
const output = (o: TaskOutcome) => (o.ok ? o.output : o.error);

describe("researcher.search (the search_agent node)", () => {
  const draft = {
    action: "tool",
    text: "",
    tool: "web_search",
    arguments_json: '{"query": "home battery market size 2025", "count": 5}',
  };

  it("a tool call becomes an AgentAction with its arguments as an object, from one structured call, streaming nothing", async () => {
    const model = createScriptedModel([entry("search", { output: draft })]);
    const { outcome, tokens } = await run("search", searchInput(), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "web_search", arguments: { query: "home battery market size 2025", count: 5 } },
      provenance: { prompt_version: "researcher.search/v1" },
    });
    expect(model.calls).toEqual([expect.objectContaining({ mode: "structured" })]);
    expect(tokens).toEqual([]);
  });

  it("a handoff is a call of its handoff_to_<target> tool", async () => {
    const handoff = {
      ...draft,
      tool: "handoff_to_data",
      arguments_json: '{"task_description": "Chart sales by year", "context": "CSV in the thread"}',
    };
    const { outcome } = await run("search", searchInput(), createScriptedModel([entry("search", { output: handoff })]));
    expect(output(outcome)).toEqual({
      action: "tool",
      tool: "handoff_to_data",
      arguments: { task_description: "Chart sales by year", context: "CSV in the thread" },
    });
  });

  it("an answer ends the search with what was found", async () => {
    const { outcome } = await run(
      "search",
      searchInput(),
      createScriptedModel([
        entry("search", { output: { ...draft, action: "answer", text: "Found two market reports.", tool: "" } }),
      ]),
    );
    expect(output(outcome)).toEqual({ action: "answer", text: "Found two market reports." });
  });

  it("a tool that was not offered fails model_invalid_output, naming it", async () => {
    const { outcome } = await run(
      "search",
      searchInput(),
      createScriptedModel([entry("search", { output: { ...draft, tool: "run_python" } })]),
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", message: expect.stringContaining('"run_python"') },
    });
  });

  it("a handoff outside the research agent's matrix goes to the workflow, which refuses it as the tool's result (the agent goes on)", async () => {
    const handoff = {
      ...draft,
      tool: "handoff_to_writing",
      arguments_json: '{"task_description": "Write the report up"}',
    };
    for (const rounds of [3, 0]) {
      const { outcome } = await run(
        "search",
        searchInput({ search_rounds_left: rounds }),
        createScriptedModel([entry("search", { output: handoff })]),
      );
      expect(output(outcome), `rounds left ${rounds}`).toEqual({
        action: "tool",
        tool: "handoff_to_writing",
        arguments: { task_description: "Write the report up" },
      });
    }
  });

  it("arguments that are not a JSON object fail model_invalid_output", async () => {
    const { outcome } = await run(
      "search",
      searchInput(),
      createScriptedModel([entry("search", { output: { ...draft, arguments_json: '["a list"]' } })]),
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", message: expect.stringContaining("arguments_json") },
    });
  });

  it("with no rounds left the prompt offers no tool and asks for the answer; a search called anyway goes to the workflow, which ends the search at its depth (not a failed op)", async () => {
    const { port, seen } = recording(createScriptedModel([entry("search", { output: draft })]));
    const { outcome } = await run("search", searchInput({ search_rounds_left: 0 }), port);
    expect(outcome).toMatchObject({ ok: true, output: { action: "tool", tool: draft.tool } });
    expect(seen[0]?.prompt).toContain("No search rounds are left: end the search now with action answer");
    expect(seen[0]?.prompt).not.toContain("web_search");
  });

  it("the prompt carries the brief, the scenario's search advice, the depth, the sources and the earlier searches", async () => {
    const { port, seen } = recording(createScriptedModel([entry("search", { output: draft })]));
    const observations = [
      { tool: "web_search", arguments: { query: "battery market" }, ok: true, content: "3 results: ..." },
    ];
    await run("search", searchInput({ sources, observations, scenario: "news" }), port);
    const prompt = seen[0]?.prompt ?? "";
    for (const part of [
      `Task: ${brief.task}`,
      SCENARIOS.news.search,
      "Depth: standard (up to 3 search round(s), 10 sources kept)",
      "[1] Battery market report 2025 — https://example.com/report",
      "[2] Storage notes — notes/storage.md",
      'Your earlier tool calls:\n- web_search {"query":"battery market"} returned: 3 results: ...',
      "Search rounds left: 2",
      "- handoff_to_data: Hand a dataset to the data agent.",
    ]) {
      expect(prompt, part).toContain(part);
    }
    expect(seen[0]?.system).toBe(prompts.get("researcher.search")?.system);
  });
});

describe("researcher.analyze and synthesize: the scenario shapes the prompt", () => {
  it.each([
    ["analyze", analyzeInput, (s: ResearchScenario) => SCENARIOS[s].analyze],
    ["synthesize", synthesizeInput, (s: ResearchScenario) => SCENARIOS[s].synthesize],
  ] as const)("%s: each scenario's prompt has its own guidance, and no other scenario's", async (op, input, guide) => {
    const script = SCENARIO_NAMES.map(() =>
      entry(op, op === "analyze" ? { output: { analysis: "An analysis." } } : { content: "A synthesis." }),
    );
    const { port, seen } = recording(createScriptedModel(script));
    for (const s of SCENARIO_NAMES) expect((await run(op, input(s), port)).outcome.ok, s).toBe(true);
    expect(seen).toHaveLength(4);
    // the same prompt file for all four; the user prompt differs by the scenario's own guidance
    expect(new Set(seen.map((c) => c.system)).size).toBe(1);
    expect(new Set(seen.map((c) => c.prompt)).size).toBe(4);
    SCENARIO_NAMES.forEach((s, i) => {
      expect(seen[i]?.prompt, s).toContain(guide(s));
      for (const other of SCENARIO_NAMES.filter((o) => o !== s))
        expect(seen[i]?.prompt, `${s} without ${other}'s guidance`).not.toContain(guide(other));
    });
  });

  it("the scenarios ask for what each kind of research needs", () => {
    expect(SCENARIOS.academic.analyze).toMatch(/method.*evidence/s);
    expect(SCENARIOS.market.analyze).toMatch(/size.*players.*trends/s);
    expect(SCENARIOS.technical.analyze).toMatch(/architecture.*trade-offs.*versions/s);
    expect(SCENARIOS.news.analyze).toMatch(/what happened, when.*who.*publication date/s);
  });
});

describe("researcher.analyze", () => {
  it("returns the analysis from one structured call, streaming nothing; the prompt has the sources and the notes", async () => {
    const { port, seen } = recording(
      createScriptedModel([entry("analyze", { output: { analysis: "Two sources agree on 30% growth [1][2]." } })]),
    );
    const { outcome, tokens } = await run("analyze", analyzeInput(), port);
    expect(outcome).toMatchObject({
      ok: true,
      output: { analysis: "Two sources agree on 30% growth [1][2]." },
      provenance: { prompt_version: "researcher.analyze/v1" },
    });
    expect(tokens).toEqual([]);
    expect(seen[0]?.mode).toBe("structured");
    expect(seen[0]?.prompt).toContain("Note 1:\nResult: the market grew 30% in 2024 [1].");
    expect(seen[0]?.prompt).toContain("[2] Storage notes — notes/storage.md");
  });

  it("a blank analysis fails model_invalid_output", async () => {
    const { outcome } = await run(
      "analyze",
      analyzeInput(),
      createScriptedModel([entry("analyze", { output: { analysis: "  " } })]),
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
  });
});

describe("researcher.synthesize and finalize stream their text", () => {
  it("synthesize: a multi-chunk reply goes out as numbered token messages and comes back as the synthesis", async () => {
    const text = "Growth is strong: 30% in 2024 [1], and storage demand keeps rising [2]; estimates agree.";
    const { outcome, tokens } = await run(
      "synthesize",
      synthesizeInput(),
      createScriptedModel([entry("synthesize", { content: text })]),
    );
    expect(outcome).toMatchObject({ ok: true, output: { synthesis: text } });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.seq)).toEqual(tokens.map((_, i) => i));
    expect(tokens.map((t) => t.delta).join("")).toBe(text);
    expect(tokens[0]).toMatchObject({ session_id: SID, role: "researcher", op: "synthesize" });
  });

  it("finalize: the report is the model's text verbatim, streamed; the prompt numbers the sources in their order", async () => {
    const { port, seen } = recording(createScriptedModel([entry("finalize", { content: REPORT })]));
    const { outcome, tokens } = await run("finalize", finalizeInput, port);
    expect(outcome).toMatchObject({
      ok: true,
      output: { response: REPORT },
      provenance: { prompt_version: "researcher.finalize/v1" },
    });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.delta).join("")).toBe(REPORT);
    const prompt = seen[0]?.prompt ?? "";
    expect(prompt.indexOf("[1] Battery market report 2025")).toBeLessThan(prompt.indexOf("[2] Storage notes"));
    expect(prompt).toContain("Cite them as [1] to [2], in this order.");
    expect(prompt).toContain("Synthesis:\nThe market grows 30% a year [1].");
  });

  it("finalize with no sources tells the model to cite none", async () => {
    const { port, seen } = recording(
      createScriptedModel([entry("finalize", { content: "# Report\n\nNothing was found." })]),
    );
    await run("finalize", { ...finalizeInput, sources: [] }, port);
    expect(seen[0]?.prompt).toContain("Sources:\n(none)\nNo sources were found: cite none and say so.");
  });
});

describe("each op streams exactly when the STREAMING_CONFIG says its node does", () => {
  const NODE: Record<"search" | "analyze" | "synthesize" | "finalize", StreamingNode> = {
    search: "search_agent",
    analyze: "analyze",
    synthesize: "synthesize",
    finalize: "finalize",
  };

  it.each(Object.entries(NODE))("%s (node %s)", (op, node) => {
    const spec = researcher.ops[op as keyof typeof NODE] as { kind?: string; output?: string; stream?: boolean };
    const streams = spec.kind !== "handler" && spec.output === "text" && spec.stream === true;
    expect(streams).toBe(STREAMING_CONFIG[node]);
  });
});

describe("researcher's supervisor ops offline", () => {
  const inputs: Record<string, unknown> = {
    search: searchInput(),
    analyze: analyzeInput(),
    synthesize: synthesizeInput(),
    finalize: finalizeInput,
  };

  it.each(Object.keys(inputs))(
    "%s answers needs_model, saying the research agent needs a model and how to configure one",
    async (op) => {
      const { outcome, tokens } = await run(op, inputs[op], offlineModelOf([researcher]));
      expect(outcome).toMatchObject({
        ok: false,
        error: { code: "needs_model", retryable: false, component: "researcher" },
      });
      const message = (outcome as Extract<TaskOutcome, { ok: false }>).error.message;
      expect(message).toMatch(/^The research agent needs a language model/);
      expect(message).toContain("AGENTMESH_LLM_BASE_URL");
      expect(tokens).toEqual([]);
    },
  );

  it("the critic chain's research op still answers offline", async () => {
    const input = {
      message: {
        sender: "orchestrator",
        receiver: "researcher",
        type: "instruction",
        content: "Research",
        step_id: null,
      },
      question: "Q?",
      research_step: "Find X",
      feedback: null,
    };
    const { outcome } = await run("research", input, offlineModelOf([researcher]));
    expect(outcome).toMatchObject({ ok: true, output: { result: expect.stringContaining("was not researched") } });
  });
});

describe("researcher through the OpenAI-compatible adapter", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it("asks the endpoint for a stream and forwards its deltas as token messages; the report is the streamed text", async () => {
    const { model, server } = await scriptedHttpModel([{ role: "researcher", op: "finalize", content: REPORT }], {
      roles: {},
      defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" },
    });
    close = () => server.close();
    const { outcome, tokens } = await run("finalize", finalizeInput, model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { response: REPORT },
      provenance: { model: "m-default", tier: "standard" },
    });
    expect(server.calls).toHaveLength(1);
    expect(server.calls[0]).toMatchObject({ stream: true, responseFormat: null });
    const messages = (server.calls[0]?.body as { messages: Array<{ role: string; content: string }> }).messages;
    expect(messages[0]).toEqual({ role: "system", content: prompts.get("researcher.finalize")?.system });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.delta).join("")).toBe(REPORT);
  });

  it("search asks for its flat draft as strict json_schema, unstreamed, and a validation retry fixes a blank answer", async () => {
    const { model, server } = await scriptedHttpModel(
      [
        { role: "researcher", op: "search", output: { action: "answer", text: " ", tool: "", arguments_json: "" } },
        {
          role: "researcher",
          op: "search",
          output: { action: "answer", text: "Two market reports agree on 30% growth.", tool: "", arguments_json: "" },
        },
      ],
      { roles: {}, defaultRole: { model: "m-default", temperature: 0.2, tier: "standard" } },
    );
    close = () => server.close();
    const { outcome, tokens } = await run("search", searchInput(), model);
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "answer", text: "Two market reports agree on 30% growth." },
    });
    expect(server.calls.map((c) => [c.turn, c.stream, c.responseFormat])).toEqual([
      [0, false, "json_schema"],
      [1, false, "json_schema"],
    ]);
    const format = (
      server.calls[0]?.body as {
        response_format: { json_schema: { strict: boolean; schema: Record<string, unknown> } };
      }
    ).response_format.json_schema;
    expect(format.strict).toBe(true);
    expect(format.schema.required).toEqual(["action", "text", "tool", "arguments_json"]);
    expect(strictSchemaProblems(format.schema)).toEqual([]);
    expect(tokens).toEqual([]);
  });
});
