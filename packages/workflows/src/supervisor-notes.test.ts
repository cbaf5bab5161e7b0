import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { NOTE_PRIORITY, NoteField, SUPERVISOR_LIMITS, SharedAgentMemory } from "@agentmesh/contracts";
import { TRUNCATION_MARKER, allocateNotesBudget, renderSharedNotes, truncateAtBoundary } from "./supervisor-notes.js";

const BUDGET = SUPERVISOR_LIMITS.notesBudgetChars;
const MIN = SUPERVISOR_LIMITS.notesMinFieldChars;
const CUT = `\n${TRUNCATION_MARKER}`;

/** Exactly `n` characters of lowercase words, no punctuation, no newline, not ending in a space. */
const words = (n: number, letter = "w"): string =>
  `${`${letter.repeat(4)} `.repeat(Math.ceil(n / 5) + 1).slice(0, n - 1)}${letter}`;

/** The rendered text's blocks by field name. */
function blocks(rendered: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const block of rendered.split(/\n\n(?=## )/)) {
    const m = /^## (\w+)\n([\s\S]*)$/.exec(block);
    if (!m) throw new Error(`not a block: ${block.slice(0, 40)}`);
    out.set(m[1]!, m[2]!);
  }
  return out;
}

describe("truncation at natural boundaries (allowance 1000: the marker line is 15 of it)", () => {
  const A = 1000;

  it("leaves a text that fits whole, and never goes over the allowance", () => {
    expect(truncateAtBoundary("short. text", A)).toBe("short. text");
    const fits = words(A);
    expect(truncateAtBoundary(fits, A)).toBe(fits);
    expect(truncateAtBoundary(`${fits}x`, A).length).toBeLessThanOrEqual(A);
  });

  it("cuts at a paragraph boundary that keeps more than 60 %", () => {
    const text = `${words(601)}\n\n${words(80, "s")}. ${words(3000, "t")}`;
    expect(truncateAtBoundary(text, A)).toBe(`${words(601)}${CUT}`);
  });

  it("passes over a paragraph boundary that keeps exactly 60 %, to the sentence after it", () => {
    const text = `${words(600)}\n\n${words(80, "s")}. ${words(3000, "t")}`;
    expect(truncateAtBoundary(text, A)).toBe(`${words(600)}\n\n${words(80, "s")}.${CUT}`);
  });

  it("cuts at a sentence boundary that keeps more than 50 %", () => {
    const text = `${words(500)}! ${words(3000, "t")}`;
    expect(truncateAtBoundary(text, A)).toBe(`${words(500)}!${CUT}`);
    expect(truncateAtBoundary(`${words(499)}." ${words(3000, "t")}`, A)).toBe(`${words(499)}."${CUT}`);
  });

  it("passes over a sentence boundary that keeps exactly 50 %, to the last word that fits", () => {
    const text = `${words(499)}. ${"t".repeat(300)} ${"u".repeat(3000)}`;
    expect(truncateAtBoundary(text, A)).toBe(`${words(499)}. ${"t".repeat(300)}${CUT}`);
  });

  it("cuts at a word boundary that keeps more than 40 %", () => {
    expect(truncateAtBoundary(`${"x".repeat(401)} ${"y".repeat(3000)}`, A)).toBe(`${"x".repeat(401)}${CUT}`);
  });

  it("cuts hard when the last word boundary keeps exactly 40 %, filling the allowance exactly", () => {
    const out = truncateAtBoundary(`${"x".repeat(400)} ${"y".repeat(3000)}`, A);
    expect(out).toBe(`${"x".repeat(400)} ${"y".repeat(A - CUT.length - 401)}${CUT}`);
    expect(out.length).toBe(A);
  });

  it("holds the 60 % threshold at a small allowance too (205: 123 is not more, 124 is)", () => {
    expect(truncateAtBoundary(`${words(123)}\n\n${words(50, "s")}. ${"t".repeat(3000)}`, 205)).toBe(
      `${words(123)}\n\n${words(50, "s")}.${CUT}`,
    );
    expect(truncateAtBoundary(`${words(124)}\n\n${words(50, "s")}. ${"t".repeat(3000)}`, 205)).toBe(
      `${words(124)}${CUT}`,
    );
  });

  it("cuts hard with no boundary at all, and never splits a surrogate pair", () => {
    expect(truncateAtBoundary("z".repeat(5000), A)).toBe(`${"z".repeat(A - CUT.length)}${CUT}`);
    const emoji = "😀".repeat(3000);
    const out = truncateAtBoundary(emoji, A);
    expect(out.endsWith(CUT)).toBe(true);
    expect(out.slice(0, -CUT.length)).toBe("😀".repeat(Math.floor((A - CUT.length) / 2)));
  });

  it("counts a line's end as a sentence boundary (one list item a line)", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `item ${String(i).padStart(2, "0")} ${"v".repeat(40)}`).join(
      "\n",
    );
    const out = truncateAtBoundary(lines, A);
    const kept = out.slice(0, -CUT.length);
    expect(out.endsWith(CUT)).toBe(true);
    expect(lines.startsWith(`${kept}\n`)).toBe(true);
  });

  it("keeps within an allowance too small for the marker line", () => {
    expect(truncateAtBoundary("x".repeat(100), 15)).toBe(TRUNCATION_MARKER);
    expect(truncateAtBoundary("x".repeat(100), 10)).toBe("");
  });
});

describe("the budget: 200 each first, then priority 3, 2, 1 in field order", () => {
  it("gives every non-empty field up to 200 first, even when the budget is only that", () => {
    const fields = NoteField.options.map((field) => ({ field, length: 5000 }));
    const out = allocateNotesBudget(fields, MIN * fields.length);
    for (const f of NoteField.options) expect(out.get(f), f).toBe(MIN);
  });

  it("gives a short field exactly its length, and the rest to priority 3 before 2 before 1", () => {
    const out = allocateNotesBudget(
      [
        { field: "research_findings", length: 50 },
        { field: "research_sources", length: 900 },
        { field: "code_language", length: 6 },
        { field: "writing_draft", length: 1000 },
        { field: "data_visualizations", length: 700 },
      ],
      2000,
    );
    // 50 + 200 + 6 + 200 + 200 = 656 first; then the draft needs 800 (1456), sources 700 → only 544 left.
    expect(Object.fromEntries(out)).toEqual({
      research_findings: 50,
      research_sources: 744,
      code_language: 6,
      writing_draft: 1000,
      data_visualizations: 200,
    });
  });

  it("fills fields of one priority in the field order", () => {
    const out = allocateNotesBudget(
      [
        { field: "research_findings", length: 3000 },
        { field: "generated_code", length: 3000 },
        { field: "writing_draft", length: 3000 },
      ],
      4000,
    );
    // 600 first; research_findings takes the 2800 it still needs, generated_code the 600 left.
    expect(Object.fromEntries(out)).toEqual({ research_findings: 3000, generated_code: 800, writing_draft: 200 });
  });

  it("renders every field at least 200 characters long when a priority 3 field could take it all", () => {
    const long = (letter: string) => words(12_000, letter);
    const notes: SharedAgentMemory = {
      research_findings: long("f"),
      generated_code: long("g"),
      writing_draft: long("d"),
      execution_results: long("e"),
      data_analysis_plan: long("p"),
      code_language: "python",
      data_visualizations: [{ mark: "bar", description: long("v") }],
    };
    const rendered = renderSharedNotes(notes);
    expect(rendered.length).toBeLessThanOrEqual(BUDGET);
    const b = blocks(rendered);
    expect([...b.keys()]).toEqual([
      "research_findings",
      "generated_code",
      "code_language",
      "execution_results",
      "writing_draft",
      "data_analysis_plan",
      "data_visualizations",
    ]);
    expect(b.get("code_language")).toBe("python");
    for (const f of [
      "generated_code",
      "execution_results",
      "writing_draft",
      "data_analysis_plan",
      "data_visualizations",
    ]) {
      expect(b.get(f)!.length, f).toBeLessThanOrEqual(MIN);
      expect(b.get(f)!.length, f).toBeGreaterThan(MIN * 0.4);
      expect(b.get(f)!.endsWith(TRUNCATION_MARKER), f).toBe(true);
    }
    // research_findings, first of priority 3, takes everything else.
    expect(b.get("research_findings")!.length).toBeGreaterThan(BUDGET - 7 * 250);
  });

  it("keeps a priority 3 field whole before a priority 2 field gets more than its 200", () => {
    const rendered = renderSharedNotes({ additional_context: words(6000, "c"), writing_draft: words(5000, "d") });
    const b = blocks(rendered);
    expect(b.get("writing_draft")).toBe(words(5000, "d"));
    expect(b.get("additional_context")!.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(rendered.length).toBeLessThanOrEqual(BUDGET);
  });
});

describe("rendering", () => {
  it("renders nothing for empty notes, and skips empty and blank fields and empty lists", () => {
    expect(renderSharedNotes({})).toBe("");
    expect(
      renderSharedNotes({
        research_findings: "  \n",
        research_sources: [],
        data_visualizations: [],
        writing_outline: "",
      }),
    ).toBe("");
    expect(renderSharedNotes({ research_findings: " ", generated_code: "print(1)\n" })).toBe(
      "## generated_code\nprint(1)",
    );
  });

  it("joins list fields one item per line, in the field order", () => {
    const rendered = renderSharedNotes({
      data_visualizations: [{ mark: "bar" }, { mark: "line" }],
      research_sources: [
        { title: "JetStream\nguide", url: "https://docs.nats.io/jetstream", path: null, snippet: "persistence" },
        { title: "Notes", url: null, path: "corpus/notes.md", snippet: "" },
      ],
      research_findings: "JetStream persists messages.",
    });
    expect(rendered).toBe(
      [
        "## research_findings\nJetStream persists messages.",
        "## research_sources\nJetStream guide — https://docs.nats.io/jetstream: persistence\nNotes — corpus/notes.md",
        '## data_visualizations\n{"mark":"bar"}\n{"mark":"line"}',
      ].join("\n\n"),
    );
  });

  it("cuts a long list between items", () => {
    const sources = Array.from({ length: 20 }, (_, i) => ({
      title: `Source ${i}`,
      url: null,
      path: `corpus/${i}.md`,
      snippet: words(300, "s"),
    }));
    const b = blocks(renderSharedNotes({ research_sources: sources, research_findings: words(7000, "f") }));
    const kept = b.get("research_sources")!;
    expect(kept.endsWith(`\n${TRUNCATION_MARKER}`)).toBe(true);
    for (const line of kept.split("\n").slice(0, -1)) expect(line).toMatch(/^Source \d+ — corpus\/\d+\.md: s/);
  });

  it("never renders more than the budget, labels included, keeps the field order, and cuts nothing when all fits (property)", () => {
    const text = fc.oneof(
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
      {
        weight: 2,
        arbitrary: fc.string({ unit: fc.constantFrom("a", "b", " ", ".", "\n", "😀", "é"), maxLength: 12_000 }),
      },
    );
    const source = fc.record({
      title: fc.string({ minLength: 1, maxLength: 300 }),
      url: fc.constant(null),
      path: fc.string({ minLength: 1, maxLength: 300 }),
      snippet: fc.string({ maxLength: 500 }),
    });
    const notesArb = fc.record(
      {
        research_findings: text,
        research_sources: fc.array(source, { maxLength: 20 }),
        generated_code: text,
        code_language: fc.constantFrom("python" as const, "javascript" as const),
        execution_results: text,
        writing_outline: text,
        writing_draft: text,
        data_analysis_plan: text,
        data_visualizations: fc.array(fc.record({ mark: fc.constant("bar"), note: fc.string({ maxLength: 3000 }) }), {
          maxLength: 5,
        }),
        additional_context: text,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(notesArb, (m) => {
        const parsed = SharedAgentMemory.parse(JSON.parse(JSON.stringify(m)));
        const rendered = renderSharedNotes(parsed);
        expect(rendered.length).toBeLessThanOrEqual(BUDGET);
        const b = rendered === "" ? new Map<string, string>() : blocks(rendered);
        const order = [...b.keys()];
        expect(order).toEqual(NoteField.options.filter((f) => order.includes(f)));
        // When every field rendered whole fits the budget, that is what is rendered.
        const whole = NoteField.options.map((f) => renderSharedNotes({ [f]: parsed[f] })).filter((r) => r !== "");
        if (whole.join("\n\n").length <= BUDGET) expect(rendered).toBe(whole.join("\n\n"));
      }),
      { numRuns: 200 },
    );
  });

  it("has room for all ten labels and their 200 each inside the budget", () => {
    const labels = NoteField.options.reduce((n, f) => n + `## ${f}\n`.length, 0) + 2 * 9;
    expect(labels + MIN * NoteField.options.length).toBeLessThan(BUDGET);
    expect(Object.keys(NOTE_PRIORITY)).toHaveLength(10);
  });
});
