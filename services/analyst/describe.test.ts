// The offline analysis script, run for real: the op's code in the Python sandbox (Pyodide in
// bubblewrap) with DATA_TEXT defined before it, as the supervisor's workflow runs it.
import { afterAll, describe, expect, it } from "vitest";
import { DATA_VARIABLE, type DataGenerateRequest, type DataInput } from "@agentmesh/contracts";
import { dataColumns } from "@agentmesh/offline-kit";
import { createPythonRunner } from "@agentmesh/tools";
import { generateOffline, planOffline } from "./offline.js";

const python = createPythonRunner({ timeLimitMs: 10_000, maxOutputBytes: 64_000 });
afterAll(() => python.close());

const brief = { query: "Describe this data", task: "Describe this data", handoff_context: null, memory: "" };
const input = (format: "csv" | "json", text: string): DataInput => ({
  format,
  text,
  origin: "query",
  columns: dataColumns(format, text).map((c) => c.name),
  rows: 0,
});

/** plan then generate offline, then the code in the sandbox with the data defined before it (JSON.stringify of a str is a Python string literal). */
async function analyse(data: DataInput | null) {
  const plan = planOffline({ brief, data, tools: [], observations: [] });
  const req: DataGenerateRequest = {
    brief,
    data,
    analysis_plan: plan.analysis_plan,
    chart: plan.chart,
    attempts: [],
    rounds_left: 3,
  };
  const out = generateOffline(req);
  const st = await python.status();
  expect(st.available, `the Python sandbox is needed: ${st.detail}`).toBe(true);
  const run = await python.run(`${DATA_VARIABLE} = ${JSON.stringify(data?.text ?? "")}\n${out.code}`);
  const lines = run.stdout.trimEnd().split("\n");
  return { plan, out, run, lines, last: lines.at(-1) ?? "" };
}

const CSV = [
  "region,product,units,price",
  "North,apples,10,1.5",
  "South,pears,20,2",
  'North,"pears, green",,2.5',
  "East,apples,7,1",
  "South,apples,3,1.25",
  "",
].join("\n");
const JSON_DATA = JSON.stringify([
  { team: "red", score: 3, note: null },
  { team: "blue", score: 4.5, note: "late" },
  { team: "red", score: "2", note: "" },
  { team: null, score: 10 },
]);

describe("the data agent's offline script in the Python sandbox", { timeout: 120_000 }, () => {
  it("describes a CSV's columns and ends with the chart rows: the first number column summed by the first text column", async () => {
    const { plan, out, run, lines, last } = await analyse(input("csv", CSV));
    expect(plan).toMatchObject({ action: "plan", chart: true });
    expect(run).toMatchObject({ ok: true, error: null });
    expect(lines.slice(0, -1)).toEqual([
      "Rows: 5",
      "Columns: 4 (region, product, units, price)",
      "- region (text): 5 values, 0 missing, 3 distinct; top: North (2), South (2), East (1)",
      "- product (text): 5 values, 0 missing, 3 distinct; top: apples (3), pears (1), pears, green (1)",
      "- units (number): 4 values, 1 missing; min 3, mean 10, median 8.5, max 20",
      "- price (number): 5 values, 0 missing; min 1, mean 1.65, median 1.5, max 2.5",
      "Chart: sum of units by region (3 categories)",
    ]);
    expect(JSON.parse(last)).toEqual([
      { category: "South", value: 23 },
      { category: "North", value: 10 },
      { category: "East", value: 7 },
    ]);
    expect(out.chart).toMatchObject({
      mark: "bar",
      title: "Sum of units by region",
      encoding: {
        x: { field: "category", type: "nominal", title: "region" },
        y: { field: "value", type: "quantitative" },
      },
    });
    expect(out.chart).not.toHaveProperty("data");
  });

  it("reads a JSON array of objects: null and blank are missing, number-like text is a number", async () => {
    const { plan, run, lines, last } = await analyse(input("json", JSON_DATA));
    expect(plan).toMatchObject({ chart: true });
    expect(run).toMatchObject({ ok: true });
    expect(lines.slice(0, -1)).toEqual([
      "Rows: 4",
      "Columns: 3 (team, score, note)",
      "- team (text): 3 values, 1 missing, 2 distinct; top: red (2), blue (1)",
      "- score (number): 4 values, 0 missing; min 2, mean 4.875, median 3.75, max 10",
      "- note (text): 1 value, 3 missing, 1 distinct; top: late (1)",
      "Chart: sum of score by team (2 categories)",
    ]);
    expect(JSON.parse(last)).toEqual([
      { category: "red", value: 5 },
      { category: "blue", value: 4.5 },
    ]);
  });

  it("keeps the 50 largest categories and prints no chart rows when none was planned", async () => {
    const many = ["id,amount", ...Array.from({ length: 60 }, (_, i) => `k${i},${i}`)].join("\n");
    const { last, lines } = await analyse(input("csv", many));
    const rows = JSON.parse(last) as Array<{ category: string; value: number }>;
    expect(rows).toHaveLength(50);
    expect(rows[0]).toEqual({ category: "k59", value: 59 });
    expect(rows.at(-1)).toEqual({ category: "k10", value: 10 });
    expect(lines).toContain("Chart: sum of amount by id (the 50 largest of 60 categories)");
    const numbersOnly = await analyse(input("csv", "a,b\n1,2\n3,4"));
    expect(numbersOnly.plan.chart).toBe(false);
    expect(numbersOnly.out.chart).toBeNull();
    expect(numbersOnly.last).toBe("- b (number): 2 values, 0 missing; min 2, mean 3, median 3, max 4");
  });

  it("fits its whole output within 3600 characters for wide data, so a 4000-character cap never cuts the chart rows", async () => {
    const names = Array.from({ length: 60 }, (_, i) => `a rather long column name number ${i}`);
    const row = (r: number) =>
      names.map((_, i) => (i === 0 ? `${r} category ${"x".repeat(50)}` : String(r * i))).join(",");
    const wide = [names.join(","), ...Array.from({ length: 80 }, (_, r) => row(r))].join("\n");
    const { run, lines, last } = await analyse(input("csv", wide));
    expect(run).toMatchObject({ ok: true });
    expect(run.stdout.length).toBeLessThanOrEqual(3601);
    expect(lines).toContainEqual(expect.stringMatching(/^- … \d+ more columns not shown \(output limit\)$/));
    const rows = JSON.parse(last) as Array<{ category: string; value: number }>;
    expect(last.length).toBeLessThanOrEqual(2400);
    expect(lines).toContain(
      `Chart: sum of a rather long column name number 1 by a rather long column name number 0 (the ${rows.length} largest of 80 categories)`,
    );
    // labels are cut at 40 characters
    expect(rows[0]).toEqual({ category: `79 category ${"x".repeat(27)}…`, value: 79 });
  });

  it("without data says so; JSON that is not an array fails with a clear error", async () => {
    const none = await analyse(null);
    expect(none.plan).toMatchObject({ chart: false });
    expect(none.run).toMatchObject({ ok: true, stdout: "No data was given: there is nothing to analyse.\n" });
    const bad = await analyse(input("json", '{"a": 1}'));
    expect(bad.run).toMatchObject({ ok: false });
    expect(bad.run.error).toMatch(/ValueError: the JSON data is not an array of objects/);
  });
});
