import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { RESEARCH_DEPTHS, ResearchDepth, ResearchScenario, SupervisorAgent } from "@agentmesh/contracts";

// The web page's supervisor options (services/gateway/public/index.html) are written out in the
// HTML; this keeps them to the values POST /api/v1/query accepts, and the depths' numbers true.

const html = readFileSync(new URL("../public/index.html", import.meta.url), "utf8");

/** The options of the <select> with this id, as [value, text]. */
function options(id: string): Array<[string, string]> {
  const select = new RegExp(`<select id="${id}"[^>]*>([\\s\\S]*?)</select>`).exec(html)?.[1];
  if (select === undefined) throw new Error(`index.html has no <select id="${id}">`);
  return [...select.matchAll(/<option value="([^"]*)"[^>]*>([^<]*)<\/option>/g)].map((m) => [m[1] ?? "", m[2] ?? ""]);
}

describe("the supervisor options on the web page", () => {
  test("Agent offers Automatic (no mode sent) and each of the five agents", () => {
    expect(options("mode").map(([v]) => v)).toEqual(["", ...SupervisorAgent.options]);
  });

  test("Depth offers each research depth with its true search rounds and sources, standard preselected", () => {
    const shown = options("depth");
    expect(shown.map(([v]) => v)).toEqual(ResearchDepth.options);
    for (const [depth, text] of shown) {
      const { searchIterations, sourcesKept } = RESEARCH_DEPTHS[depth as ResearchDepth];
      expect(text).toMatch(new RegExp(`\\b${searchIterations} search rounds?, ${sourcesKept} sources$`));
    }
    expect(html).toMatch(/<option value="standard" selected>/);
  });

  test("Scenario offers each research scenario, academic preselected", () => {
    expect(options("scenario").map(([v]) => v)).toEqual(ResearchScenario.options);
    expect(html).toMatch(/<option value="academic" selected>/);
  });
});
