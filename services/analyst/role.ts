import { defineAgent, type HandlerContext } from "@agentmesh/agent-kit";
import {
  DATA_VARIABLE,
  STREAMING_CONFIG,
  VegaLiteSpec,
  type DataCode,
  type DataGenerateRequest,
  type DataInput,
  type DataPlan,
  type DataPlanRequest,
  type DataSummarizeRequest,
} from "@agentmesh/contracts";
import {
  clip,
  draftToolCall,
  parseToolArguments,
  renderAttempts,
  renderBrief,
  renderObservations,
  renderTools,
} from "@agentmesh/offline-kit";
import { z } from "zod";
import { generateOffline, planOffline, summarizeOffline } from "./offline.js";

/** Characters of the data shown to the model (its first lines); the code reads all of it. */
const DATA_PREVIEW_CHARS = 3000;

/** A chart spec written as JSON text, as the object it must be: a Vega-Lite spec, its inline data dropped (the run's rows replace it). */
function chartOf(json: string): Record<string, unknown> | null {
  const spec = parseToolArguments(json);
  if (!spec) return null;
  const { data: _inline, ...rest } = spec;
  return VegaLiteSpec.safeParse(rest).success ? rest : null;
}

/**
 * What the model writes for plan and generate: flat objects, every field present (unused ones
 * empty), so strict structured output accepts them; a tool's arguments and a chart spec travel as
 * JSON text. The refinements hold what the flat shape cannot say (the model port retries once).
 */
export const PlanDraft = z
  .object({
    action: z.enum(["plan", "tool"]),
    analysis_plan: z.string().max(4000),
    chart: z.boolean(),
    tool: z.string().max(80),
    arguments_json: z.string().max(30_000),
  })
  .superRefine((d, ctx) => {
    if (d.action === "plan" && d.analysis_plan.trim() === "")
      ctx.addIssue({ code: "custom", path: ["analysis_plan"], message: "action plan needs the plan" });
    if (d.action === "tool" && parseToolArguments(d.arguments_json) === null)
      ctx.addIssue({ code: "custom", path: ["arguments_json"], message: "arguments_json must be a JSON object" });
  });
export type PlanDraft = z.infer<typeof PlanDraft>;

/** The longest chart_json taken: a model often inlines its data, which is dropped, so only the spec left must fit `LIMITS.maxVisualizationSpecChars`. */
const CHART_JSON_MAX = 100_000;

export const CodeDraft = z
  .object({ code: z.string().max(100_000), chart_json: z.string().max(CHART_JSON_MAX) })
  .superRefine((d, ctx) => {
    if (d.code.trim() === "") ctx.addIssue({ code: "custom", path: ["code"], message: "the code is empty" });
    if (d.chart_json.trim() !== "" && chartOf(d.chart_json) === null)
      ctx.addIssue({
        code: "custom",
        path: ["chart_json"],
        message: "chart_json must be a Vega-Lite spec as a JSON object (with a mark or a composition)",
      });
  });
export type CodeDraft = z.infer<typeof CodeDraft>;

/** The data as the model sees it: where it came from, its shape, and its first lines. */
export function renderData(data: DataInput | null): string {
  if (!data) return "Data: none was found in an attachment, the query or the conversation.";
  const from = data.name === undefined ? data.origin : `${data.origin} ${JSON.stringify(data.name)}`;
  const shape = `${data.format.toUpperCase()} from the ${from}, ${data.rows} row(s), columns: ${data.columns.join(", ") || "(none found)"}`;
  const cut =
    data.text.length > DATA_PREVIEW_CHARS
      ? `\n(the first ${DATA_PREVIEW_CHARS} of ${data.text.length} characters)`
      : "";
  return `Data: ${shape}\n\`\`\`${data.format}\n${data.text.slice(0, DATA_PREVIEW_CHARS)}\n\`\`\`${cut}`;
}

/** plan's user prompt: the brief, the data, the tools and what earlier tool calls returned. */
export function renderPlan(input: DataPlanRequest): string {
  return [
    renderBrief(input.brief),
    renderData(input.data),
    `Tools you may call:\n${renderTools(input.tools)}`,
    renderObservations(input.observations),
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** generate's user prompt: the brief, the data, the plan, whether to chart, and with earlier runs the last one to fix. */
export function renderGenerate(input: DataGenerateRequest): string {
  return [
    renderBrief(input.brief),
    renderData(input.data),
    `Analysis plan: ${input.analysis_plan}`,
    `The data's text is in the Python variable ${DATA_VARIABLE} (a str), defined before your code runs.`,
    input.chart
      ? "Chart: wanted. Print the chart's rows as a JSON array of objects (json.dumps) as the very last line of output, and give chart_json, a Vega-Lite spec without data whose fields are those rows' keys."
      : "Chart: not wanted. Leave chart_json empty.",
    input.attempts.length
      ? `Earlier runs of your code:\n\n${renderAttempts(input.attempts)}\n\nFix the cause of the last run's error and return the whole corrected program.`
      : "",
    `Rounds left, this one included: ${input.rounds_left}`,
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** summarize's user prompt: the brief, the plan and what the run printed. */
export function renderSummarize(input: DataSummarizeRequest): string {
  const run = input.execution;
  return [
    renderBrief(input.brief),
    `Analysis plan: ${input.analysis_plan}`,
    `The analysis code (${run.language}) ${run.exit_code === 0 && run.error === null ? "ran to its end" : "failed"}.`,
    run.stdout ? `Its output:\n${run.stdout}` : "It printed nothing.",
    run.error ? `Its error:\n${run.error}` : "",
    run.stderr ? `Its stderr:\n${clip(run.stderr, 2000)}` : "",
    input.charted ? "A chart of the output's last line is shown to the user beside your summary." : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The model's tool call, if it is one the agent was offered or a handoff (the workflow decides it); otherwise the model's fault. */
function offeredTool(d: PlanDraft, input: DataPlanRequest): DataPlan {
  return draftToolCall(d, input.tools, "data");
}

/** plan: one structured model call (not streamed: an internal step). */
async function plan(input: DataPlanRequest, ctx: Pick<HandlerContext, "complete">): Promise<DataPlan> {
  const d = await ctx.complete({ schema: PlanDraft, schemaName: "analyst_plan", prompt: renderPlan(input) });
  return d.action === "plan"
    ? { action: "plan", analysis_plan: d.analysis_plan, chart: d.chart }
    : offeredTool(d, input);
}

/** generate: one structured model call, never streamed (STREAMING_CONFIG.generate); a chart only when one was planned. */
async function generate(input: DataGenerateRequest, ctx: Pick<HandlerContext, "complete">): Promise<DataCode> {
  const d = await ctx.complete({ schema: CodeDraft, schemaName: "analyst_generate", prompt: renderGenerate(input) });
  return { code: d.code, chart: input.chart ? chartOf(d.chart_json) : null };
}

/** The analyst role: the supervisor's data agent (plan → generate → execute → summarize); the executor runs its code. */
export default defineAgent({
  role: "analyst",
  description:
    "Plans an analysis of inline CSV or JSON data, writes standard-library Python for it with a Vega-Lite chart, and summarizes what the run printed",
  ops: {
    plan: {
      kind: "handler",
      version: "analyst.plan/1",
      contract: "analyst.plan",
      run: plan,
      summarize: (o) =>
        o.action === "plan"
          ? `a plan of ${o.analysis_plan.length} characters${o.chart ? ", with a chart" : ""}`
          : `tool ${o.tool}`,
      // the handler's model call, answered offline
      offline: (input) => ({ ...planOffline(input), tool: "", arguments_json: "" }),
    },
    generate: {
      kind: "handler",
      version: "analyst.generate/1",
      contract: "analyst.generate",
      run: generate,
      summarize: (o) => `${o.code.split("\n").length} line(s) of Python${o.chart ? ", a chart" : ""}`,
      // the handler's model call, answered offline
      offline: (input) => {
        const out = generateOffline(input);
        return { code: out.code, chart_json: out.chart ? JSON.stringify(out.chart) : "" };
      },
    },
    summarize: {
      contract: "analyst.summarize",
      output: "text",
      stream: STREAMING_CONFIG.summarize,
      render: renderSummarize,
      // the summary is the session's final answer as the model wrote (and streamed) it
      toOutput: (text) => ({ summary: text }),
      summarize: (o) => `a summary of ${o.summary.length} characters`,
      offline: summarizeOffline,
    },
  },
});
