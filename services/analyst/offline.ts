import { readFileSync } from "node:fs";
import type { OfflineContext } from "@agentmesh/agent-kit";
import {
  LIMITS,
  type DataCode,
  type DataGenerateRequest,
  type DataInput,
  type DataPlan,
  type DataPlanRequest,
  type DataSummarizeRequest,
} from "@agentmesh/contracts";
import { clip, dataColumns } from "@agentmesh/offline-kit";

/** The offline plan when no attachment, nor the query, nor the thread holds data. */
export const NO_DATA_PLAN =
  "No data was found in an attachment, the query or the conversation, so there is nothing to analyse: explain how to give the data.";

/** What the offline script prints when DATA_TEXT is empty (describe.py). */
const SCRIPT_NO_DATA = "No data was given";

const DESCRIBE_PLAN =
  "Describe each column: its count of values and of missing ones; for a number column its min, mean, median and max; for a text column its most frequent values.";

/** The columns the offline chart uses: the first text column as categories, the first number column as the measure. */
function chartColumns(data: DataInput | null): { category: string; measure: string } | null {
  if (!data) return null;
  const columns = dataColumns(data.format, data.text);
  const category = columns.find((c) => c.kind === "text")?.name;
  const measure = columns.find((c) => c.kind === "number")?.name;
  return category === undefined || measure === undefined ? null : { category, measure };
}

/** Offline plan: the fixed description of every column, and a chart when the data has a text and a number column. */
export function planOffline(input: DataPlanRequest): Extract<DataPlan, { action: "plan" }> {
  if (!input.data) return { action: "plan", analysis_plan: NO_DATA_PLAN, chart: false };
  const chart = chartColumns(input.data);
  const charting = chart
    ? ` Chart the sum of "${chart.measure}" per value of "${chart.category}" as a bar chart.`
    : " No chart: the data has no pair of a text column and a number column.";
  return { action: "plan", analysis_plan: `${DESCRIBE_PLAN}${charting}`, chart: chart !== null };
}

/** The offline analysis script, describe.py beside this file (a few kilobytes, read per call: no module state). */
const describeScript = (): string => readFileSync(new URL("./describe.py", import.meta.url), "utf8");

/**
 * Offline generate: the fixed, tested standard-library script over DATA_TEXT, charting (its last
 * line the rows, `category` and `value`) only when a chart was planned and the data allows one.
 */
export function generateOffline(input: DataGenerateRequest): DataCode {
  const columns = input.chart ? chartColumns(input.data) : null;
  const chart = columns && {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: `Sum of ${columns.measure} by ${columns.category}`,
    mark: "bar",
    encoding: {
      x: { field: "category", type: "nominal", title: columns.category, sort: "-y" },
      y: { field: "value", type: "quantitative", title: `sum of ${columns.measure}` },
    },
  };
  return { code: `CHART = ${chart ? "True" : "False"}\n${describeScript()}`, chart };
}

/**
 * Offline summary: the run's own report (its chart rows left out), failure with its error, or
 * how to give data when there was none. Nothing is added that the run did not print.
 */
export function summarizeOffline(input: DataSummarizeRequest, ctx: Pick<OfflineContext, "configHint">): string {
  const run = input.execution;
  if (input.analysis_plan === NO_DATA_PLAN || run.stdout.startsWith(SCRIPT_NO_DATA)) {
    return "I found no data to analyse. Paste it into your message as CSV (a header row, then one row per line) or as a JSON array of objects, ideally in a fenced block (```csv … ``` or ```json … ```), or attach it as a .csv or .json file, and ask again.";
  }
  if (run.exit_code !== 0 || run.error !== null) {
    const why = run.error ?? (run.stderr.trim() || "a limit stopped it");
    return `The analysis failed: ${clip(why, 1500)}\n\nCheck that the data is CSV with a header row or a JSON array of objects. ${ctx.configHint}`;
  }
  const lines = run.stdout.trimEnd().split("\n");
  if (input.charted && lines.at(-1)?.startsWith("[")) lines.pop();
  const report = lines.join("\n").trim() || "(the analysis printed nothing)";
  return clip(
    `What the analysis found (a fixed description of each column, computed offline; no model interpreted it):\n\n${report}`,
    LIMITS.maxTextChars,
  );
}
