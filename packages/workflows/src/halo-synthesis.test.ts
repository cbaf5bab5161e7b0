import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Capability, HaloCitation, SpecialistOutput, type SpecialistAnswer } from "@agentmesh/contracts";
import { judge } from "./halo-judge.js";
import { answeredOutput, unavailableOutput } from "./halo-outputs.js";
import { NO_PRIMARY_ANSWER, mergeCitations, synthesize } from "./halo-synthesis.js";

const url = (slug: string): HaloCitation => ({
  title: slug,
  url: `https://example.com/${slug}`,
  path: null,
  snippet: `about ${slug}`,
});
const file = (path: string): HaloCitation => ({ title: path, url: null, path, snippet: "" });
const answer = (c: Capability, response_str: string, citations: HaloCitation[] = []) =>
  answeredOutput(c, { response_str, citations }, 100);
const NEUTRAL = "Tell me about HER2 status";
const run = (outputs: SpecialistOutput[], plan: Capability[], question = NEUTRAL) =>
  synthesize(judge(outputs, plan, question));

/** The answer above its `Sources:` list, where the inline markers are. */
const body = (text: string) => text.split("\n\nSources:\n")[0] ?? "";
const inlineNumbers = (text: string) =>
  [...body(text).matchAll(/\[(\d+(?:,\d+)*)\]/g)].flatMap((m) => (m[1] ?? "").split(",").map(Number));

describe("halo synthesis", () => {
  it("answers one capability with its sources numbered inline and listed", () => {
    const out = run(
      [answer("rag", "[RAG] NCCN recommends trastuzumab-based regimens.", [url("nccn"), url("trastuzumab")])],
      ["rag"],
    );
    expect(out.response_str).toBe(
      "[HALO] NCCN recommends trastuzumab-based regimens [1,2].\n\nSources:\n1) https://example.com/nccn\n2) https://example.com/trastuzumab",
    );
    expect(out.citations).toEqual([url("nccn"), url("trastuzumab")]);
    expect(out.judge_response).toBe("rag: score 2, citations 2, length 43 (primary)");
  });

  it("puts the best answer first and the others under Additional insights, in rank order", () => {
    const graph = answer("graph", "[Graph] HER2 interacts with HER3", [file("triples.jsonl:3")]);
    const rag = answer("rag", "Trastuzumab is the backbone of therapy.", [url("nccn"), url("trastuzumab")]);
    const web = answer("web", "Pertuzumab is added in the neoadjuvant setting!", [url("pertuzumab")]);
    const out = run([web, graph, rag], ["graph", "rag", "web"]);
    expect(out.response_str).toBe(
      [
        "[HALO] Trastuzumab is the backbone of therapy [1,2].",
        "",
        "Additional insights:",
        "- HER2 interacts with HER3 [3]",
        "- Pertuzumab is added in the neoadjuvant setting [4]!",
        "",
        "Sources:",
        "1) https://example.com/nccn",
        "2) https://example.com/trastuzumab",
        "3) triples.jsonl:3",
        "4) https://example.com/pertuzumab",
      ].join("\n"),
    );
    expect(out.judge_response.split("\n").map((l) => l.split(":")[0])).toEqual(["rag", "graph", "web"]);
  });

  it("merges citations shared across specialists into one source and numbers each fragment by its own", () => {
    const graph = answer("graph", "Graph view.", [url("shared"), file("kg.jsonl:7"), url("shared")]);
    const rag = answer("rag", "Corpus view.", [url("rag-only"), { ...url("shared"), title: "Another title" }]);
    const biomcp = answer("biomcp", "Trial view.", [file("kg.jsonl:7"), url("trials")]);
    const { citations, markers } = mergeCitations([graph, rag, biomcp]);
    expect(citations.map((c) => c.url ?? c.path)).toEqual([
      "https://example.com/shared",
      "kg.jsonl:7",
      "https://example.com/rag-only",
      "https://example.com/trials",
    ]);
    expect(citations[0]?.title).toBe("shared");
    expect(markers).toEqual([
      [1, 2],
      [1, 3],
      [2, 4],
    ]);
    const out = run([graph, rag, biomcp], ["graph", "rag", "biomcp"]);
    expect(out.response_str).toContain("[HALO] Graph view [1,2].");
    expect(out.response_str).toContain("- Corpus view [1,3].");
    expect(out.response_str).toContain("- Trial view [2,4].");
    expect(out.citations).toHaveLength(4);
  });

  it("shows a failed and a timed-out specialist by their availability messages, last", () => {
    const out = run(
      [
        unavailableOutput("graph", "tool_error", 20),
        answer("rag", "From the notes.", [url("notes")]),
        unavailableOutput("web", "deadline_exceeded", 30_000),
      ],
      ["graph", "rag", "web"],
    );
    expect(out.response_str).toBe(
      [
        "[HALO] From the notes [1].",
        "",
        "Additional insights:",
        "- The graph specialist is unavailable right now.",
        "- The web specialist is unavailable right now.",
        "",
        "Sources:",
        "1) https://example.com/notes",
      ].join("\n"),
    );
    expect(out.judge_response).toBe(
      [
        "rag: score 1, citations 1, length 15 (primary)",
        "graph: score 0, citations 0, length 46 (unavailable: tool_error)",
        "web: score 0, citations 0, length 44 (unavailable: deadline_exceeded)",
      ].join("\n"),
    );
  });

  it('says "No primary answer available." when no specialist answered', () => {
    const out = run([unavailableOutput("rag", "deadline_exceeded", 30_000)], ["rag"]);
    expect(out.response_str).toBe(
      `[HALO] ${NO_PRIMARY_ANSWER}\n\nAdditional insights:\n- The rag specialist is unavailable right now.`,
    );
    expect(out.citations).toEqual([]);
    expect(run([], []).response_str).toBe(`[HALO] ${NO_PRIMARY_ANSWER}`);
  });

  it("appends the judge's summary as guidance when biomcp is primary, and only then", () => {
    const biomcp = answer("biomcp", "Trastuzumab deruxtecan trials are recruiting.", [url("t1"), url("t2")]);
    const graph = answer("graph", "HER2 binds HER3.", [file("kg.jsonl:1")]);
    const primaryBio = run([biomcp, graph], ["graph", "biomcp"]);
    expect(primaryBio.response_str.endsWith(`\n\nGuidance from the judge:\n${primaryBio.judge_response}`)).toBe(true);
    expect(primaryBio.judge_response.split("\n")).toHaveLength(2);
    const primaryGraph = run([answer("biomcp", "Trials exist."), graph], ["graph", "biomcp"]);
    expect(primaryGraph.response_str).not.toContain("Guidance");
  });

  it("indents the further lines of a multi-line supplementary answer under its bullet", () => {
    const out = run(
      [answer("rag", "Main.", [url("a"), url("b")]), answer("graph", "Line one.\nLine two.", [url("c")])],
      ["rag", "graph"],
    );
    expect(body(out.response_str)).toContain("\n- Line one.\n  Line two [3].");
  });
});

const POOL: HaloCitation[] = [
  url("a"),
  url("b"),
  url("c"),
  file("kg.jsonl:1"),
  file("notes/x.md"),
  { ...url("a"), title: "A again" },
];
const arbAnswer: fc.Arbitrary<SpecialistAnswer> = fc.record({
  response_str: fc.oneof(
    fc.constantFrom("Short.", "[Graph] Tagged answer!", "See [2] too?", "Two\nlines."),
    fc.string({ minLength: 1, maxLength: 200 }),
  ),
  citations: fc.array(fc.constantFrom(...POOL), { maxLength: 6 }),
});
const arbOutputs: fc.Arbitrary<SpecialistOutput[]> = fc
  .uniqueArray(fc.constantFrom(...Capability.options), { minLength: 1, maxLength: 6 })
  .chain((caps) =>
    fc.tuple(
      ...caps.map((c) =>
        fc.oneof(
          arbAnswer.map((a) => answeredOutput(c, a.response_str.trim() ? a : { ...a, response_str: "x" }, 10)),
          fc.constant(unavailableOutput(c, "deadline_exceeded", 30_000)),
        ),
      ),
    ),
  );

describe("halo synthesis properties", () => {
  it("is deterministic, keeps every output valid, and ties every inline marker and listed source together", () => {
    fc.assert(
      fc.property(
        arbOutputs,
        fc.constantFrom(NEUTRAL, "Which drugs and clinical trials exist?", "hello"),
        (outputs, question) => {
          for (const o of outputs) expect(SpecialistOutput.safeParse(o).success).toBe(true);
          const plan = outputs.map((o) => o.capability);
          const out = run(outputs, plan, question);
          expect(run(structuredClone(outputs), [...plan], question)).toEqual(out);
          const n = out.citations.length;
          const inline = inlineNumbers(out.response_str);
          for (const k of inline) expect(k >= 1 && k <= n, `[${k}] outside 1..${n}`).toBe(true);
          for (let k = 1; k <= n; k++) expect(inline, `source ${k} is never cited`).toContain(k);
          const keys = out.citations.map((c) => c.url ?? c.path);
          expect(new Set(keys).size).toBe(n);
          if (n > 0)
            expect(out.response_str).toContain(`\n\nSources:\n${keys.map((k, i) => `${i + 1}) ${k}`).join("\n")}`);
          expect(out.response_str.startsWith("[HALO] ")).toBe(true);
          expect(out.judge_response.split("\n")).toHaveLength(outputs.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
