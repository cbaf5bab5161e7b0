import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ENV_VARS, METRIC_CATALOGUE } from "@agentmesh/service-kit";

// The metrics table of the tracing-and-metrics page is the catalogue the services register from:
// checked row by row.

/** The page that holds the metrics table. */
const PAGE = "docs/tracing-and-metrics.md";
const doc = readFileSync(join(import.meta.dirname, "../..", PAGE), "utf8");

/** The table's rows as the catalogue says them. */
function catalogueRows(): string[] {
  return Object.values(METRIC_CATALOGUE).map(
    (m) =>
      `| \`${m.name}\` | ${m.type} | ${m.labels.length ? m.labels.map((l) => `\`${l}\``).join(", ") : "—"} | ${m.by} | ${m.help} |`,
  );
}

describe("the metrics section of the tracing-and-metrics page", () => {
  test("lists exactly the catalogue's metrics, with their types, labels and exporters", () => {
    const m = /<!-- metrics -->\n([\s\S]*?)<!-- \/metrics -->/.exec(doc);
    expect(m, `${PAGE} has no <!-- metrics --> table`).not.toBeNull();
    const rows = (m?.[1] ?? "").split("\n").filter((l) => l.startsWith("| `"));
    expect(rows).toEqual(catalogueRows());
  });

  test("names the variables that turn the endpoint on, and they are in the configuration table", () => {
    const section = doc.slice(doc.indexOf("## Metrics"), doc.indexOf("<!-- metrics -->"));
    for (const name of ["AGENTMESH_METRICS_PORT", "AGENTMESH_METRICS_HOST"]) {
      expect(section).toContain(`\`${name}\``);
      expect(ENV_VARS.some((v) => v.name === name)).toBe(true);
    }
  });

  test("every catalogue name is agentmesh_-prefixed and unique, and counters end in _total", () => {
    const names = Object.values(METRIC_CATALOGUE).map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const m of Object.values(METRIC_CATALOGUE)) {
      expect(m.name).toMatch(/^agentmesh_[a-z0-9_]+$/);
      expect(m.name.endsWith("_total")).toBe(m.type === "counter");
    }
  });
});
