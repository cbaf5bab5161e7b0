import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ENV_VARS, METRIC_CATALOGUE } from "@agentmesh/service-kit";
import { DOC_PAGES } from "../../scripts/doc-tables.js";

// The metrics table of the tracing-and-metrics page is the catalogue the services register from:
// generated from it (scripts/doc-tables.ts) and checked row by row by readme.test.ts; here, what
// the section says around it and the catalogue's own rules.

/** The page that holds the metrics table. */
const PAGE = DOC_PAGES.metrics as string;
const doc = readFileSync(join(import.meta.dirname, "../..", PAGE), "utf8");

describe("the metrics section of the tracing-and-metrics page", () => {
  test("names the variables that turn the endpoint on, and they are in the configuration table", () => {
    const section = doc.slice(doc.indexOf("## Metrics"), doc.indexOf("<!-- table:metrics -->"));
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
