import { describe, expect, it } from "vitest";
import type { CodeAttempt } from "@agentmesh/contracts";
import { isHandoffTool, parseToolArguments, renderAttempts, renderBrief, renderTools } from "./brief.js";

describe("renderBrief", () => {
  it("shows the task, and the query, handoff context and memory only when they add something", () => {
    expect(renderBrief({ query: "Plot sales", task: "Plot sales", handoff_context: null, memory: "" })).toBe(
      "Task: Plot sales",
    );
    const handed = renderBrief({
      query: "Analyse and explain",
      task: "Chart the CSV",
      handoff_context: "from the code agent",
      memory: "generated_code: print(1)",
    });
    expect(handed.split("\n\n")).toEqual([
      "Task: Chart the CSV",
      "The user's query: Analyse and explain",
      "Context from the agent that handed this task over: from the code agent",
      "Shared memory (what earlier agents found):\ngenerated_code: print(1)",
    ]);
  });
});

describe("renderTools", () => {
  it("lists each tool on a line, or says there is none", () => {
    expect(renderTools([{ name: "handoff_to_data", description: "Data work" }])).toBe("- handoff_to_data: Data work");
    expect(renderTools([])).toBe("(none)");
  });
});

describe("renderAttempts", () => {
  const run = (over: Partial<CodeAttempt>): CodeAttempt => ({
    language: "python",
    code: "print(1)",
    exit_code: 0,
    stdout: "",
    stderr: "",
    error: null,
    ...over,
  });

  it("is empty without runs; shows the last run in full and the earlier ones by outcome", () => {
    expect(renderAttempts([])).toBe("");
    const text = renderAttempts([
      run({ exit_code: null, error: "timeout after 5000 ms" }),
      run({ exit_code: 0 }),
      run({
        code: "x = [",
        exit_code: 1,
        stderr: "warn",
        stdout: "partial",
        error: "SyntaxError: '[' was never closed",
      }),
    ]);
    expect(text).toContain("Run 1 (python) failed: timeout after 5000 ms.");
    expect(text).toContain("Run 2 (python) ran to its end.");
    expect(text).toContain(
      "Run 3, the last (python), failed: SyntaxError: '[' was never closed. Its code:\n```python\nx = [\n```",
    );
    expect(text).toContain("Its error:\nSyntaxError");
    expect(text).toContain("Its stderr:\nwarn");
    expect(text).toContain("Its stdout:\npartial");
  });

  it("clips a long last program", () => {
    const text = renderAttempts([run({ code: "#".repeat(20_000), exit_code: 1, error: "E" })]);
    expect(text.length).toBeLessThan(13_000);
    expect(text).toContain("…");
  });
});

describe("parseToolArguments", () => {
  it("is the JSON object, or null for anything else", () => {
    expect(parseToolArguments('{"task_description": "t", "context": "c"}')).toEqual({
      task_description: "t",
      context: "c",
    });
    for (const bad of ["[1]", "null", "3", "{not json", ""]) expect(parseToolArguments(bad), bad).toBeNull();
  });
});

describe("isHandoffTool", () => {
  it("is true for every supervisor agent's handoff tool, offered or not, and for nothing else", () => {
    for (const agent of ["chat", "research", "code", "writing", "data"])
      expect(isHandoffTool(`handoff_to_${agent}`)).toBe(true);
    for (const tool of ["handoff_to_router", "handoff_to_", "web_search", "HANDOFF_TO_CODE", " handoff_to_code"])
      expect(isHandoffTool(tool)).toBe(false);
  });
});
