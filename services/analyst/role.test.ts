import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts, type TextOpPrompt } from "@agentmesh/agent-kit";
import {
  LIMITS,
  STREAMING_CONFIG,
  type CodeAttempt,
  type DataGenerateRequest,
  type DataInput,
  type DataPlanRequest,
  type DataSummarizeRequest,
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
import { NO_DATA_PLAN } from "./offline.js";
import analyst from "./role.js";

/** The model port and token message types, as the op runner takes them (a role folder does not import llm or messaging). */
type ModelPort = Parameters<typeof createOpRunner>[1];
type TokenEvent = Parameters<NonNullable<Parameters<typeof createOpRunner>[2]["tokens"]>>[0];

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const SID = "sessanalyst01";
const signal = () => new AbortController().signal;
const brief = { query: "Which region sold most?", task: "Which region sold most?", handoff_context: null, memory: "" };
const CSV = "region,units\nNorth,10\nSouth,20\nNorth,5";
const DATA: DataInput = { format: "csv", text: CSV, origin: "query", columns: ["region", "units"], rows: 3 };
const HANDOFF = { name: "handoff_to_code", description: "Hand a programming task to the code agent" };

const planReq = (data: DataInput | null = DATA): DataPlanRequest => ({
  brief,
  data,
  tools: [HANDOFF],
  observations: [],
});
const genReq = (attempts: CodeAttempt[] = [], chart = true): DataGenerateRequest => ({
  brief,
  data: DATA,
  analysis_plan: "Sum units by region.",
  chart,
  attempts,
  rounds_left: 3 - attempts.length,
});
const RUN: CodeAttempt = {
  language: "python",
  code: "print('...')",
  exit_code: 0,
  stdout:
    'Rows: 3\n- units (number): 3 values, 0 missing; min 5, mean 11.6667, median 10, max 20\nChart: sum of units by region (2 categories)\n[{"category": "South", "value": 20}, {"category": "North", "value": 15}]\n',
  stderr: "",
  error: null,
};
const sumReq = (
  execution: CodeAttempt = RUN,
  analysis_plan = "Sum units by region.",
  charted = true,
): DataSummarizeRequest => ({ brief, analysis_plan, execution, charted });
const task = (op: "plan" | "generate" | "summarize", input: unknown, n = 0) => ({
  task_id: `${SID}.${n}.0.0`,
  session_id: SID,
  role: "analyst",
  op,
  attempt: 0,
  input,
});

/** The scripted model, and a port in front of it recording each request's user prompt (`seen`). */
function recording(script: ScriptEntry[]) {
  const model = createScriptedModel(script);
  const { port, prompts } = recordingModel(model);
  return { model, port, seen: prompts };
}
/** Runs one op, collecting the token messages it publishes. */
async function runOp(model: ModelPort, t: ReturnType<typeof task>) {
  const tokens: TokenEvent[] = [];
  const outcome = await createOpRunner(analyst, model, { log, prompts, tokens: (e) => void tokens.push(e) })(
    t,
    signal(),
  );
  return { outcome, tokens };
}
const output = <T>(o: { outcome: unknown }) => (o.outcome as { output: T }).output;

describe("analyst offline", () => {
  const offline = offlineModelOf([analyst]);

  it("plan: the fixed description, charting the first number column by the first text column when both exist", async () => {
    const { outcome } = await runOp(offline, task("plan", planReq()));
    expect(outcome).toMatchObject({
      ok: true,
      output: {
        action: "plan",
        chart: true,
        analysis_plan: expect.stringMatching(/^Describe each column: .*Chart the sum of "units" per value of "region"/),
      },
    });
    const numbers: DataInput = { ...DATA, text: "a,b\n1,2", columns: ["a", "b"] };
    expect(await runOp(offline, task("plan", planReq(numbers), 1))).toMatchObject({
      outcome: { ok: true, output: { action: "plan", chart: false } },
    });
    expect(await runOp(offline, task("plan", planReq(null), 2))).toMatchObject({
      outcome: { ok: true, output: { action: "plan", chart: false, analysis_plan: NO_DATA_PLAN } },
    });
  });

  it("generate: the fixed script over DATA_TEXT, and a bar chart spec without data only when a chart was planned", async () => {
    const charted = output<{ code: string; chart: Record<string, unknown> }>(
      await runOp(offline, task("generate", genReq())),
    );
    expect(charted.code).toMatch(/^CHART = True\n/);
    expect(charted.code).toContain("DATA_TEXT");
    expect(charted.code).toMatch(/^import csv$/m);
    expect(charted.code).not.toMatch(/^import (pandas|numpy)/m);
    expect(charted.chart).toEqual({
      $schema: "https://vega.github.io/schema/vega-lite/v5.json",
      title: "Sum of units by region",
      mark: "bar",
      encoding: {
        x: { field: "category", type: "nominal", title: "region", sort: "-y" },
        y: { field: "value", type: "quantitative", title: "sum of units" },
      },
    });
    const plain = output<{ code: string; chart: unknown }>(
      await runOp(offline, task("generate", genReq([], false), 1)),
    );
    expect(plain.chart).toBeNull();
    expect(plain.code).toMatch(/^CHART = False\n/);
  });

  it("summarize: the run's own report without its chart rows; nothing else invented", async () => {
    const { outcome, tokens } = await runOp(offline, task("summarize", sumReq()));
    const summary = output<{ summary: string }>({ outcome }).summary;
    expect(summary).toContain("- units (number): 3 values, 0 missing; min 5, mean 11.6667, median 10, max 20");
    expect(summary).toContain("Chart: sum of units by region (2 categories)");
    expect(summary).not.toContain('"category"');
    expect(summary).toMatch(/offline; no model interpreted it/);
    // the offline text streams too, as one piece
    expect(tokens.map((t) => t.delta).join("")).toBe(summary);
  });

  it("summarize: a failed run says the analysis failed with its error; no data says how to give data", async () => {
    const failed = { ...RUN, exit_code: 1, stdout: "", error: "ValueError: the JSON data is not an array of objects" };
    const fail = output<{ summary: string }>(await runOp(offline, task("summarize", sumReq(failed, "x", false))));
    expect(fail.summary).toMatch(/^The analysis failed: ValueError: the JSON data is not an array of objects/);
    expect(fail.summary).toContain("AGENTMESH_LLM_BASE_URL");
    const noData: Array<[string, string]> = [
      ["", NO_DATA_PLAN],
      ["No data was given: there is nothing to analyse.\n", "Describe each column."],
    ];
    for (const [i, [stdout, plan]] of noData.entries()) {
      const none = output<{ summary: string }>(
        await runOp(offline, task("summarize", sumReq({ ...RUN, stdout }, plan, false), i + 1)),
      );
      expect(none.summary).toMatch(/found no data/);
      expect(none.summary).toMatch(/CSV .*JSON array of objects/);
      expect(none.summary).toContain("attach it as a .csv or .json file");
    }
  });

  it("an attachment's data is planned and coded for exactly as inline data is", async () => {
    const attached: DataInput = { ...DATA, origin: "attachment", name: "sales.csv" };
    for (const op of ["plan", "generate"] as const) {
      const inline = await runOp(offline, task(op, op === "plan" ? planReq() : genReq(), 10));
      const fromFile = await runOp(
        offline,
        task(op, op === "plan" ? planReq(attached) : { ...genReq(), data: attached }, 11),
      );
      expect(output(fromFile), op).toEqual(output(inline));
    }
  });
});

describe("analyst.plan with a model", () => {
  it("returns the model's plan; the prompt shows the data's shape and first lines and the tools", async () => {
    const { model, port, seen } = recording([
      {
        role: "analyst",
        op: "plan",
        output: {
          action: "plan",
          analysis_plan: "1. Sum units per region.",
          chart: true,
          tool: "",
          arguments_json: "",
        },
      },
    ]);
    const { outcome, tokens } = await runOp(port, task("plan", planReq()));
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "plan", analysis_plan: "1. Sum units per region.", chart: true },
      provenance: { prompt_version: "analyst.plan/v1" },
    });
    expect(tokens).toEqual([]);
    expect(seen[0]).toContain("Data: CSV from the query, 3 row(s), columns: region, units");
    expect(seen[0]).toContain("```csv\nregion,units\nNorth,10");
    expect(seen[0]).toContain("- handoff_to_code: Hand a programming task");
    expect(model.calls).toEqual([expect.objectContaining({ mode: "structured" })]);
  });

  it("the prompt names an attachment the data came from", async () => {
    const { port, seen } = recording([
      {
        role: "analyst",
        op: "plan",
        output: {
          action: "plan",
          analysis_plan: "1. Sum units per region.",
          chart: true,
          tool: "",
          arguments_json: "",
        },
      },
    ]);
    await runOp(port, task("plan", planReq({ ...DATA, origin: "attachment", name: "sales.csv" })));
    expect(seen[0]).toContain('Data: CSV from the attachment "sales.csv", 3 row(s), columns: region, units');
  });

  it("a handoff to code with its arguments; a tool it was not offered is the model's fault", async () => {
    const args = { task_description: "Write a CSV parser", context: "" };
    const ok = await runOp(
      createScriptedModel([
        {
          role: "analyst",
          op: "plan",
          output: {
            action: "tool",
            analysis_plan: "",
            chart: false,
            tool: "handoff_to_code",
            arguments_json: JSON.stringify(args),
          },
        },
      ]),
      task("plan", planReq()),
    );
    expect(ok.outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "handoff_to_code", arguments: args },
    });
    const bad = await runOp(
      createScriptedModel([
        {
          role: "analyst",
          op: "plan",
          output: { action: "tool", analysis_plan: "", chart: false, tool: "web_search", arguments_json: "{}" },
        },
      ]),
      task("plan", planReq(), 1),
    );
    expect(bad.outcome).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
  });

  it("a handoff outside the data agent's matrix goes to the workflow, which refuses it as the tool's result (the agent goes on)", async () => {
    const args = { task_description: "Find the market size" };
    const { outcome } = await runOp(
      createScriptedModel([
        {
          role: "analyst",
          op: "plan",
          output: {
            action: "tool",
            analysis_plan: "",
            chart: false,
            tool: "handoff_to_research",
            arguments_json: JSON.stringify(args),
          },
        },
      ]),
      task("plan", planReq()),
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "handoff_to_research", arguments: args },
    });
  });
});

describe("analyst.generate with a model", () => {
  const spec = {
    mark: "bar",
    encoding: { x: { field: "region", type: "nominal" }, y: { field: "units", type: "quantitative" } },
  };

  it("returns the code and the chart spec, its inline data dropped; no chart when none was planned", async () => {
    const code = "import csv, io, json\nprint('ok')";
    const withData = JSON.stringify({ ...spec, data: { values: [{ region: "x", units: 1 }] } });
    const { outcome, tokens } = await runOp(
      createScriptedModel([{ role: "analyst", op: "generate", output: { code, chart_json: withData } }]),
      task("generate", genReq()),
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: { code, chart: spec },
      provenance: { prompt_version: "analyst.generate/v1" },
    });
    expect(output<{ chart: object }>({ outcome }).chart).not.toHaveProperty("data");
    expect(tokens).toEqual([]);
    const unplanned = await runOp(
      createScriptedModel([{ role: "analyst", op: "generate", output: { code, chart_json: JSON.stringify(spec) } }]),
      task("generate", genReq([], false), 1),
    );
    expect(unplanned.outcome).toMatchObject({ ok: true, output: { code, chart: null } });
  });

  it("shows the last run's code and error and asks for a fix; names the data variable", async () => {
    const failed: CodeAttempt = {
      language: "python",
      code: "import pandas as pd",
      exit_code: 1,
      stdout: "",
      stderr: "",
      error: "ModuleNotFoundError: No module named 'pandas'",
    };
    const rec = recording([{ role: "analyst", op: "generate", output: { code: "print(1)", chart_json: "" } }]);
    await runOp(rec.port, task("generate", genReq([failed])));
    const prompt = rec.seen[0] ?? "";
    expect(prompt).toContain("```python\nimport pandas as pd\n```");
    expect(prompt).toContain("ModuleNotFoundError: No module named 'pandas'");
    expect(prompt).toMatch(/Fix the cause of the last run's error/);
    expect(prompt).toContain("the Python variable DATA_TEXT");
    expect(prompt).toContain("Analysis plan: Sum units by region.");
  });

  it("blank code or a chart that is not a Vega-Lite spec fails model_invalid_output", async () => {
    for (const [i, bad] of [
      { code: " ", chart_json: "" },
      { code: "print(1)", chart_json: '{"title": "no mark"}' },
      { code: "print(1)", chart_json: "[1]" },
    ].entries()) {
      const { outcome } = await runOp(
        createScriptedModel([{ role: "analyst", op: "generate", output: bad }]),
        task("generate", genReq(), i),
      );
      expect(outcome, JSON.stringify(bad)).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
    }
  });
  it(`a chart spec whose inline data puts it over ${LIMITS.maxVisualizationSpecChars} characters keeps the chart: its data is dropped (the run's rows replace it), not the code`, async () => {
    const code = "import json\nprint(json.dumps([{'region': 'North', 'units': 15}]))";
    const values = Array.from({ length: 1500 }, (_, i) => ({ region: `Region number ${i}`, units: i }));
    const chart_json = JSON.stringify({
      mark: "bar",
      encoding: { x: { field: "region", type: "nominal" } },
      data: { values },
    });
    expect(chart_json.length).toBeGreaterThan(LIMITS.maxVisualizationSpecChars);
    const { outcome } = await runOp(
      createScriptedModel([{ role: "analyst", op: "generate", output: { code, chart_json } }]),
      task("generate", genReq(), 7),
    );
    expect(outcome).toMatchObject({
      ok: true,
      output: { code, chart: { mark: "bar", encoding: { x: { field: "region", type: "nominal" } } } },
    });
  });
});

describe("analyst.summarize with a model (streamed)", () => {
  const REPLY = "South sold the most units (20), ahead of North (15 over two rows); the chart compares the regions.";

  it("streams a multi-chunk reply as token messages in order and returns the whole text as the summary", async () => {
    const { port, seen } = recording([{ role: "analyst", op: "summarize", content: REPLY, chunkDelayMs: 1 }]);
    const { outcome, tokens } = await runOp(port, task("summarize", sumReq()));
    expect(outcome).toMatchObject({
      ok: true,
      output: { summary: REPLY },
      provenance: { prompt_version: "analyst.summarize/v1" },
    });
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(tokens.map((t) => t.seq)).toEqual(tokens.map((_, i) => i));
    expect(tokens.map((t) => t.delta).join("")).toBe(REPLY);
    expect(seen[0]).toContain("Its output:\nRows: 3");
    expect(seen[0]).toMatch(/A chart of the output's last line is shown/);
  });

  it(`the summary is the streamed text: a reply opening with white space or over ${LIMITS.maxTextChars} characters still starts with exactly what streamed`, async () => {
    for (const [i, content] of [`\n\n${REPLY}`, `\n${"Each region grew. ".repeat(1500)}`].entries()) {
      const { outcome, tokens } = await runOp(
        createScriptedModel([{ role: "analyst", op: "summarize", content }]),
        task("summarize", sumReq(), i),
      );
      const summary = output<{ summary: string }>({ outcome }).summary;
      expect(summary.length).toBeLessThanOrEqual(LIMITS.maxTextChars);
      expect(summary.startsWith(tokens.map((t) => t.delta).join("")), content.slice(0, 20)).toBe(true);
    }
  });

  it("a blank reply fails model_invalid_output (retryable), not an empty answer", async () => {
    const { outcome } = await runOp(
      createScriptedModel([{ role: "analyst", op: "summarize", content: "  \n " }]),
      task("summarize", sumReq()),
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: "model_invalid_output", retryable: true } });
  });

  it("a failed run reaches the prompt with its error", async () => {
    const failed = { ...RUN, exit_code: 1, stdout: "", error: "KeyError: 'units'" };
    const { port, seen } = recording([
      { role: "analyst", op: "summarize", content: "The analysis failed: a column was missing." },
    ]);
    await runOp(port, task("summarize", sumReq(failed, "x", false)));
    expect(seen[0]).toContain("The analysis code (python) failed.");
    expect(seen[0]).toContain("Its error:\nKeyError: 'units'");
  });
});

describe("analyst plan and generate through the OpenAI-compatible adapter", () => {
  it("send their drafts as schemas strict structured output accepts, one request each", async () => {
    const { model, server } = await scriptedHttpModel(
      [
        {
          role: "analyst",
          op: "plan",
          output: { action: "plan", analysis_plan: "Sum units by region.", chart: true, tool: "", arguments_json: "" },
        },
        { role: "analyst", op: "generate", output: { code: "print(1)", chart_json: JSON.stringify({ mark: "bar" }) } },
      ],
      { roles: {}, defaultRole: { model: "m", temperature: 0.2, tier: "standard" } },
    );
    try {
      const run = createOpRunner(analyst, model, { log, prompts });
      expect(await run(task("plan", planReq()), signal())).toMatchObject({
        ok: true,
        output: { action: "plan", chart: true },
      });
      expect(await run(task("generate", genReq(), 1), signal())).toMatchObject({
        ok: true,
        output: { code: "print(1)", chart: { mark: "bar" } },
      });
      expect(server.calls.map((c) => c.responseFormat)).toEqual(["json_schema", "json_schema"]);
      for (const call of server.calls) {
        const sent = (call.body as { response_format: { json_schema: { schema: Record<string, unknown> } } })
          .response_format.json_schema.schema;
        expect(strictSchemaProblems(sent), call.op).toEqual([]);
      }
    } finally {
      await server.close();
    }
  });
});

describe("the analyst's streaming follows the STREAMING_CONFIG", () => {
  it("summarize streams as the config says; plan and generate are structured handler calls, which never stream", () => {
    const ops = analyst.ops;
    expect((ops.summarize as TextOpPrompt<unknown, unknown>).stream).toBe(STREAMING_CONFIG.summarize);
    expect(ops.summarize).toMatchObject({ output: "text" });
    expect(STREAMING_CONFIG.generate).toBe(false);
    expect([ops.plan.kind, ops.generate.kind]).toEqual(["handler", "handler"]);
  });
});
