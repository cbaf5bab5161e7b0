import { describe, expect, it } from "vitest";
import {
  DATA_VARIABLE,
  LIMITS,
  SUPERVISOR_LIMITS,
  SessionOptions,
  conversationTurn,
  type Attachment,
  type ResearchDepth,
} from "@agentmesh/contracts";
import { failure, inputs } from "./testing.js";
import { codeOutcome, outcome, source, started, sup } from "./supervisor-testkit.js";

describe("supervisor chat agent", () => {
  it("agent ⇄ tools: a tool call is an executor.call with a tool_call id, its result comes back as an observation, the answer is final verbatim", () => {
    const h = started("chat");
    expect(h.input()).toMatchObject({ tool_rounds_left: 5, observations: [] });
    h.reply("chat.respond", sup.tool("web_search", { query: "growth" }));
    expect(h.current()).toMatchObject({ role: "executor", op: "call" });
    expect(h.input()).toEqual({
      tool: "web_search",
      arguments: { query: "growth" },
      allowed: ["web_search", "corpus_search", "generate_image", "analyze_image"],
      limits: { max_attempts: 2, timeout_ms: 30_000 },
    });
    expect(h.ofType("tool_call")).toEqual([
      expect.objectContaining({ id: "call-1", tool: "web_search", args: { query: "growth" } }),
    ]);
    h.reply("executor.call", outcome("web_search", "Region A grew 5%."));
    expect(h.ofType("tool_result")).toEqual([
      expect.objectContaining({ id: "call-1", ok: true, content: "Region A grew 5%." }),
    ]);
    expect(h.input()).toMatchObject({
      tool_rounds_left: 4,
      observations: [{ tool: "web_search", ok: true, content: "Region A grew 5%." }],
    });
    h.reply("chat.respond", sup.answer("Region A grew 5%, says the web."));
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.response).toBe("Region A grew 5%, says the web.");
    expect(conversationTurn(h.state)).toEqual({
      question: h.data.query,
      answer: "Region A grew 5%, says the web.",
      asked: null,
    });
  });

  it(`runs at most ${SUPERVISOR_LIMITS.chatMaxToolIterations} tool rounds: at 0 left another tool call ends the chat with the last result, never a loop`, () => {
    const h = started("chat");
    for (let i = 0; i < SUPERVISOR_LIMITS.chatMaxToolIterations; i++) {
      h.reply("chat.respond", sup.tool("corpus_search", { query: `q${i}` }));
      h.reply("executor.call", outcome("corpus_search", `result ${i}`));
    }
    expect(h.input().tool_rounds_left).toBe(0);
    h.reply("chat.respond", sup.tool("corpus_search", { query: "more" }));
    expect(h.state.meta.status).toBe("completed");
    expect(h.ops().filter((o) => o === "executor.call")).toHaveLength(5);
    expect(h.data.response).toContain("result 4");
  });

  it("a tool the deployment does not serve is refused as not offered", () => {
    const h = started("chat", { tools: ["corpus_search", "run_python", "run_js"] });
    expect((h.input().tools as Array<{ name: string }>).map((t) => t.name)).toEqual([
      "corpus_search",
      "handoff_to_research",
      "handoff_to_code",
      "handoff_to_writing",
      "handoff_to_data",
    ]);
    h.reply("chat.respond", sup.tool("web_search"));
    expect(h.ops()).toEqual(["chat.respond", "chat.respond"]);
    expect(h.input().observations).toEqual([
      expect.objectContaining({ ok: false, content: expect.stringContaining("not one you were offered") }),
    ]);
  });

  it("a failed executor task is a failed call the agent sees, not the end of the session", () => {
    const h = started("chat");
    h.reply("chat.respond", sup.tool("web_search"));
    h.fail("executor.call", failure("deadline_exceeded", true, "too slow"));
    expect(h.ofType("tool_result")).toEqual([expect.objectContaining({ id: "call-1", ok: false })]);
    expect(h.input().observations).toEqual([
      expect.objectContaining({ ok: false, content: expect.stringContaining("deadline_exceeded") }),
    ]);
  });
});

describe("supervisor research agent", () => {
  const depths: Array<[ResearchDepth, number, number]> = [
    ["quick", 1, 5],
    ["standard", 3, 10],
    ["deep", 5, 20],
  ];
  for (const [depth, rounds, kept] of depths) {
    it(`depth ${depth}: ${rounds} search round(s), ${kept} sources kept (each announced once)`, () => {
      const h = started("research", { options: { depth } });
      expect(h.ofType("config")[0]?.settings).toMatchObject({ depth, search_iterations: rounds, sources_kept: kept });
      let n = 0;
      while (h.current().op === "search") {
        h.reply("researcher.search", sup.tool("web_search", { query: `q${n}` }));
        if (h.current().op !== "call") break;
        const citations = Array.from({ length: 10 }, (_, i) => source(n * 10 + i));
        h.reply("executor.call", outcome("web_search", `page ${n}`, { citations: [...citations, source(n * 10)] }));
        n++;
      }
      expect(n).toBe(rounds);
      expect(h.current()).toMatchObject({ role: "researcher", op: "analyze" });
      expect(h.data.sources).toHaveLength(kept);
      expect(h.ofType("source")).toHaveLength(kept);
    });
  }

  it("scenario and depth reach every research request; the report is the final answer verbatim and findings are shared", () => {
    const h = started("research", { options: { scenario: "news", depth: "quick" } });
    expect(h.input()).toMatchObject({ scenario: "news", depth: "quick", search_rounds_left: 1 });
    h.reply("researcher.search", sup.tool("corpus_search"));
    h.reply("executor.call", outcome("corpus_search", "a note", { citations: [source(1)] }));
    expect(h.input()).toMatchObject({ search_rounds_left: 0 });
    h.reply("researcher.search", sup.answer("found enough"));
    expect(h.input()).toMatchObject({ scenario: "news", notes: ["a note"], sources: [source(1)] });
    h.reply("researcher.analyze", sup.analysis());
    expect(h.input()).toMatchObject({ scenario: "news", analysis: "the analysis" });
    h.reply("researcher.synthesize", sup.synthesis("the synthesis"));
    expect(h.input()).toMatchObject({ scenario: "news", synthesis: "the synthesis" });
    h.reply("researcher.finalize", sup.report("News report [1]."));
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.response).toBe("News report [1].");
    expect(h.data.shared_memory).toMatchObject({ research_findings: "the synthesis", research_sources: [source(1)] });
  });

  it("an offline deployment (needs_model) ends the session with an answer that names the agent and how to configure a model", () => {
    const h = started("research");
    h.fail("researcher.search", failure("needs_model", false, "the offline engine cannot answer researcher.search"));
    expect(h.state.meta.status).toBe("failed");
    expect(h.data.response).toContain("research agent needs a language model");
    expect(h.data.response).toContain("AGENTMESH_LLM_BASE_URL");
    expect(h.ofType("complete")[0]?.final_answer).toBe(h.data.response);
  });

  it("a role that already says it needs a model and how to get one is quoted once, not wrapped", () => {
    const h = started("writing");
    const said =
      "The writing agent needs a language model: without one it cannot write. To use a language model, set AGENTMESH_LLM_BASE_URL to an endpoint.";
    h.fail("writer.analyze", failure("needs_model", false, said));
    expect(h.data.response).toBe(said);
  });

  it("a retryable failure runs the node once more, then ends the session", () => {
    const h = started("writing");
    h.fail("writer.analyze", failure("model_invalid_output", true));
    expect(h.current()).toMatchObject({ op: "analyze", attempt: 1 });
    h.fail("writer.analyze", failure("model_invalid_output", true));
    expect(h.state.meta.status).toBe("failed");
    expect(h.data.error_component).toBe("analyze");
  });
});

describe("supervisor code agent", () => {
  it("a run that prints nothing answers with the value of its last expression", () => {
    const h = started("code");
    h.reply("coder.generate", sup.code("6 * 7", "javascript", "Multiplies."));
    const ran = codeOutcome(0, "", null, "javascript");
    h.reply("executor.call", { ...ran, code: ran.code && { ...ran.code, result: "42" } });
    expect(h.data.response).toBe("Multiplies.\n\n```javascript\n6 * 7\n```\n\nValue of the last expression: `42`");
    expect(h.data.code_attempts.at(-1)).toMatchObject({ result: "42" });
  });

  it("fixes its code on the second iteration after an error; the answer is composed from the explanation, the code and its output", () => {
    const h = started("code");
    expect(h.input()).toMatchObject({ attempts: [], rounds_left: 3 });
    h.reply("coder.generate", sup.code("print(1/0)"));
    expect(h.input()).toEqual({
      tool: "run_python",
      arguments: { code: "print(1/0)" },
      allowed: ["run_python"],
      limits: { max_attempts: 2, timeout_ms: 60_000 },
    });
    h.reply("executor.call", codeOutcome(1, "", "ZeroDivisionError: division by zero"));
    expect(h.input()).toMatchObject({
      rounds_left: 2,
      attempts: [{ code: "print(1/0)", exit_code: 1, error: "ZeroDivisionError: division by zero" }],
    });
    h.reply("coder.generate", sup.code("print(42)", "python", "It prints the answer."));
    h.reply("executor.call", codeOutcome(0, "42\n"));
    expect(h.ofType("code_result").map((e) => [e.id, e.exit_code, e.stderr])).toEqual([
      ["call-1", 1, "ZeroDivisionError: division by zero"],
      ["call-2", 0, ""],
    ]);
    expect(h.ofType("tool_call").map((e) => e.id)).toEqual(["call-1", "call-2"]);
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.response).toBe("It prints the answer.\n\n```python\nprint(42)\n```\n\nOutput:\n```\n42\n```");
    expect(h.data.shared_memory).toMatchObject({
      generated_code: "print(42)",
      code_language: "python",
      execution_results: "stdout:\n42",
    });
  });

  it("gives up honestly after 3 failed runs, with the last error", () => {
    const h = started("code");
    for (let i = 1; i <= 3; i++) {
      h.reply("coder.generate", sup.code(`bad${i}()`, "javascript"));
      expect(h.current().input).toMatchObject({ tool: "run_js" });
      h.reply("executor.call", codeOutcome(1, "", `ReferenceError: bad${i} is not defined`, "javascript"));
    }
    expect(h.ops().filter((o) => o === "coder.generate")).toHaveLength(3);
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.response).toContain("still fails after 3 attempts");
    expect(h.data.response).toContain("bad3 is not defined");
  });

  it("an executor failure (no sandbox) is a failed attempt with its error text", () => {
    const h = started("code");
    h.reply("coder.generate", sup.code("print(1)"));
    h.fail("executor.call", failure("sandbox_unavailable", false, "no sandbox here"));
    expect(h.input()).toMatchObject({
      attempts: [{ exit_code: null, error: expect.stringContaining("no sandbox here") }],
    });
  });
});

describe("supervisor writing agent", () => {
  it("analyze → outline → write → finalize; the final text is the answer verbatim, outline and draft shared", () => {
    const h = started("writing");
    h.reply("writer.analyze", sup.writingBrief());
    expect(h.input()).toMatchObject({ writing: { writing_type: "essay", tone: "formal" } });
    h.reply("writer.outline", sup.outline("1. a"));
    h.reply("writer.write", sup.draft("Draft text."));
    expect(h.input()).toMatchObject({ draft: "Draft text." });
    h.reply("writer.finalize", sup.final("Final text."));
    expect(h.data).toMatchObject({
      response: "Final text.",
      shared_memory: { writing_outline: "1. a", writing_draft: "Draft text." },
    });
  });
});

describe("supervisor data agent", () => {
  const csv = "region,growth\nA,5\nB,7\nC,2";

  it("charts inline data: the code gets the data as DATA_TEXT, the last stdout line becomes the spec's inline values, the summary is the answer", () => {
    const h = started("data", { query: `Chart this:\n\`\`\`csv\n${csv}\n\`\`\`` });
    expect(h.input().data).toMatchObject({ format: "csv", origin: "query", columns: ["region", "growth"], rows: 3 });
    h.reply("analyst.plan", sup.dataPlan(true));
    expect(h.input()).toMatchObject({ chart: true, analysis_plan: "Sum each region's growth", rounds_left: 3 });
    const chart = { mark: "bar", encoding: { x: { field: "region" }, y: { field: "growth" } } };
    h.reply("analyst.generate", sup.dataCode("print('rows')", chart));
    const code = (h.input().arguments as { code: string }).code;
    expect(code).toBe(`${DATA_VARIABLE} = ${JSON.stringify(csv)}\nprint('rows')`);
    const rows = [
      { region: "A", growth: 5 },
      { region: "B", growth: 7 },
    ];
    h.reply("executor.call", codeOutcome(0, `total 14\n${JSON.stringify(rows)}\n`));
    expect(h.ofType("visualization")).toEqual([
      expect.objectContaining({ spec: { ...chart, data: { values: rows } } }),
    ]);
    expect(h.input()).toMatchObject({ charted: true, execution: { exit_code: 0 } });
    h.reply("analyst.summarize", sup.summary("B grew most."));
    expect(h.data.response).toBe("B grew most.");
    expect(h.data.shared_memory.data_visualizations).toHaveLength(1);
  });

  it("finds the data in the thread's earlier messages when the query has none; a bad chart line is noted, not charted", () => {
    const h = started("data", {
      query: "Which region grew most?",
      messages: [
        { role: "user", content: `Here:\n${csv}` },
        { role: "assistant", content: "Noted." },
      ],
    });
    expect(h.input().data).toMatchObject({ format: "csv", origin: "thread", rows: 3 });
    h.reply("analyst.plan", sup.dataPlan(true));
    h.reply("analyst.generate", sup.dataCode("print(1)", { mark: "bar" }));
    h.reply("executor.call", codeOutcome(0, "B\n"));
    expect(h.ofType("visualization")).toEqual([]);
    expect(h.input()).toMatchObject({ charted: false });
    expect(h.data.notes.join("\n")).toContain("No chart");
  });

  it("with no data anywhere the code still runs, with DATA_TEXT empty", () => {
    const h = started("data", { query: "Make up some numbers and average them" });
    expect(h.input().data).toBeNull();
    h.reply("analyst.plan", sup.dataPlan());
    h.reply("analyst.generate", sup.dataCode("print(2)"));
    expect((h.input().arguments as { code: string }).code).toBe(`${DATA_VARIABLE} = ""\nprint(2)`);
  });
});

describe("supervisor data agent with attachments", () => {
  const sales: Attachment = { name: "sales.csv", content_type: "text/csv", content: "region,total\nA,5\nB,7\n" };
  const bytesOf = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

  it("an attachment's data goes to the analyst and into the code as DATA_TEXT, preferred over the query's inline data", () => {
    const h = started("data", {
      query: "Total this, not the attachment:\n```csv\nq,r\n1,2\n```",
      options: { attachments: [{ name: "notes.txt", content_type: "text/plain", content: "nothing" }, sales] },
    });
    expect(h.ofType("config")).toEqual([
      expect.objectContaining({
        agent: "data",
        settings: expect.objectContaining({ data: "csv, 2 row(s), from the attachment sales.csv" }),
      }),
    ]);
    expect(h.input().data).toEqual({
      format: "csv",
      text: "region,total\nA,5\nB,7",
      origin: "attachment",
      name: "sales.csv",
      columns: ["region", "total"],
      rows: 2,
    });
    h.reply("analyst.plan", sup.dataPlan());
    expect(h.input().data).toMatchObject({ origin: "attachment", name: "sales.csv" });
    h.reply("analyst.generate", sup.dataCode("print(12)"));
    expect(h.current()).toMatchObject({ role: "executor", op: "call" });
    expect((h.input().arguments as { code: string }).code).toBe(
      `${DATA_VARIABLE} = ${JSON.stringify("region,total\nA,5\nB,7")}\nprint(12)`,
    );
  });

  it("the attachment's data survives a handoff to the data agent; an attachment without data leaves the query's inline data in use", () => {
    const h = started("chat", { query: "Please analyze my upload", options: { attachments: [sales] } });
    expect(h.data.data_input).toMatchObject({ origin: "attachment" });
    h.reply("chat.respond", sup.handoff("data", "Total these: x,y\n1,2\n3,4"));
    expect(h.input().data).toMatchObject({ origin: "attachment", name: "sales.csv", rows: 2 });

    const empty = started("data", {
      query: "Chart:\n```csv\nq,r\n1,2\n```",
      options: { attachments: [{ ...sales, content: "" }] },
    });
    expect(empty.data.data_input).toMatchObject({ origin: "query", columns: ["q", "r"] });
    expect(started("chat", { options: { attachments: [{ ...sales, content: "" }] } }).data.data_input).toBeNull();
    const long = started("data", { options: { attachments: [{ ...sales, name: `${"n".repeat(196)}.csv` }] } });
    expect(long.ofType("config")[0]?.settings.data).toMatch(/^csv, 2 row\(s\), from the attachment n+…$/);
  });

  it(`the largest attachments the contract takes keep the state under LIMITS.maxStateBytes and the code run's task under LIMITS.maxMessageBytes`, () => {
    const csvRows = `a,b\n${"1234567,89\n".repeat(LIMITS.maxAttachmentChars / 11 - 2)}`;
    const jsonRows = `[${Array.from({ length: LIMITS.maxAttachmentChars / 10 - 1 }, () => '{"k":"v"}').join(",")}]`;
    for (const big of [
      { ...sales, content: csvRows },
      { name: "rows.json", content_type: "application/json" as const, content: jsonRows },
    ]) {
      expect(SessionOptions.safeParse({ attachments: [big] }).success).toBe(true);
      const h = started("data", { query: "Sum column b", options: { attachments: [big] } });
      h.reply("analyst.plan", sup.dataPlan());
      h.reply("analyst.generate", sup.dataCode("print(1)"));
      expect(h.current()).toMatchObject({ role: "executor", op: "call" });
      expect(h.state.meta.status).toBe("running");
      expect(bytesOf(h.state)).toBeGreaterThan(2 * big.content.length);
      expect(bytesOf(h.state)).toBeLessThan(LIMITS.maxStateBytes / 2);
      expect(bytesOf(h.current())).toBeLessThan(LIMITS.maxMessageBytes);
    }
  });
});

describe("supervisor ended by the runtime", () => {
  it("a cancel leaves a final answer in the workflow's own terms", () => {
    const h = started("chat");
    h.send(inputs.cancel());
    expect(h.state.meta.status).toBe("cancelled");
    expect(h.data).toMatchObject({ node: "done", error_component: "agent", pending_call: null });
    expect(h.data.response).toContain("ended early (cancelled)");
  });
});
