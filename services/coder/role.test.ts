import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import { CoderAction, STREAMING_CONFIG, type CodeAttempt, type CodeGenerateRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { z } from "zod";
import {
  createScriptedModel,
  offlineModelOf,
  recordingModel,
  scriptedHttpModel,
  type ScriptEntry,
} from "../../test/setup/model.js";
import { strictSchemaProblems } from "../../test/setup/strict-schema.js";
import coder from "./role.js";

/** The model port, as the op runner takes it (a role folder does not import llm). */

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const SID = "sesscoder001";
const HANDOFF = { name: "handoff_to_data", description: "Hand a data analysis task to the data agent" };

function request(task: string, attempts: CodeAttempt[] = []): CodeGenerateRequest {
  return {
    brief: { query: task, task, handoff_context: null, memory: "" },
    tools: [HANDOFF],
    observations: [],
    attempts,
    rounds_left: 3 - attempts.length,
  };
}
const task = (input: CodeGenerateRequest, n = 0) => ({
  task_id: `${SID}.${n}.0.0`,
  session_id: SID,
  role: "coder",
  op: "generate",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;
const FAILED: CodeAttempt = {
  language: "python",
  code: "print(1 / 0)",
  exit_code: 1,
  stdout: "",
  stderr: "Traceback (most recent call last): ...",
  error: "ZeroDivisionError: division by zero",
};

/** The scripted model, and a port in front of it recording each request's user prompt. */
function recording(script: ScriptEntry[]) {
  const model = createScriptedModel(script);
  const { port, prompts } = recordingModel(model);
  return { model, port, prompts };
}
const draft = (d: Record<string, unknown>) => ({
  action: "answer",
  language: null,
  code: "",
  explanation: "",
  text: "",
  tool: "",
  arguments_json: "",
  ...d,
});

describe("coder.generate offline: runs the code it is given", () => {
  const run = createOpRunner(coder, offlineModelOf([coder]), { log, prompts });

  it("returns the task's fenced code with its language and an honest explanation", async () => {
    const out = await run(task(request("Please run this:\n```python\nprint(sum(range(10)))\n```")), signal());
    expect(out).toMatchObject({
      ok: true,
      output: {
        action: "code",
        language: "python",
        code: "print(sum(range(10)))",
        explanation: "Runs the code given in the request (offline: no model writes or fixes code).",
      },
    });
  });

  it("finds the code in the query when a handoff's task has none", async () => {
    const input = request("Run the user's snippet");
    const out = await run(
      task({ ...input, brief: { ...input.brief, query: "Run:\n```js\nconsole.log([1, 2].map((x) => x * 2))\n```" } }),
      signal(),
    );
    expect(out).toMatchObject({
      ok: true,
      output: { action: "code", language: "javascript", code: "console.log([1, 2].map((x) => x * 2))" },
    });
  });

  it("without code, says writing code needs a model and how to give code or configure one", async () => {
    const out = await run(task(request("Write a function that reverses a string")), signal());
    expect(out).toMatchObject({ ok: true, output: { action: "answer" } });
    const text = (out as { output: { text: string } }).output.text;
    expect(text).toMatch(/needs a language model/);
    expect(text).toMatch(/fenced block/);
    expect(text).toContain("AGENTMESH_LLM_BASE_URL");
  });

  it("after a failed run, cannot fix it: answers with the last error and the config hint instead of running it again", async () => {
    const out = await run(task(request("```python\nprint(1 / 0)\n```", [FAILED])), signal());
    expect(out).toMatchObject({ ok: true, output: { action: "answer" } });
    const text = (out as { output: { text: string } }).output.text;
    expect(text).toContain("ZeroDivisionError: division by zero");
    expect(text).toMatch(/cannot fix code/);
    expect(text).toContain("AGENTMESH_LLM_BASE_URL");
  });
});

describe("coder.generate with a model", () => {
  it("returns the model's code after one structured call, on the prompt file's version", async () => {
    const { model, port } = recording([
      {
        role: "coder",
        op: "generate",
        output: draft({ action: "code", language: "javascript", code: "console.log(42)", explanation: "Prints 42." }),
      },
    ]);
    const out = await createOpRunner(coder, port, { log, prompts })(task(request("Print 42 in JS")), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { action: "code", language: "javascript", code: "console.log(42)", explanation: "Prints 42." },
      provenance: { prompt_version: "coder.generate/v1" },
    });
    expect(model.calls).toEqual([expect.objectContaining({ mode: "structured" })]);
    model.assertConsumed();
  });

  it("a handoff: the offered tool with its arguments parsed from JSON text", async () => {
    const args = { task_description: "Chart sales by region", context: "the CSV is in the query" };
    const { port } = recording([
      {
        role: "coder",
        op: "generate",
        output: draft({ action: "tool", tool: "handoff_to_data", arguments_json: JSON.stringify(args) }),
      },
    ]);
    const out = await createOpRunner(coder, port, { log, prompts })(task(request("Analyse this CSV")), signal());
    expect(out).toMatchObject({ ok: true, output: { action: "tool", tool: "handoff_to_data", arguments: args } });
  });

  it("an answer that needs no code run", async () => {
    const { port } = recording([
      { role: "coder", op: "generate", output: draft({ text: "A closure keeps the variables of its scope." }) },
    ]);
    const out = await createOpRunner(coder, port, { log, prompts })(task(request("What is a closure?")), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { action: "answer", text: "A closure keeps the variables of its scope." },
    });
  });

  it("shows the last run's code and error and asks for a fix when earlier runs failed", async () => {
    const { port, prompts: seen } = recording([
      { role: "coder", op: "generate", output: draft({ action: "code", language: "python", code: "print(1 / 1)" }) },
    ]);
    const first: CodeAttempt = { ...FAILED, code: "prnt('x')", error: "NameError: name 'prnt' is not defined" };
    await createOpRunner(coder, port, { log, prompts })(
      task(request("Divide one by zero safely", [first, FAILED])),
      signal(),
    );
    expect(seen).toHaveLength(1);
    const prompt = seen[0] ?? "";
    expect(prompt).toContain("Task: Divide one by zero safely");
    expect(prompt).toContain("```python\nprint(1 / 0)\n```");
    expect(prompt).toContain("ZeroDivisionError: division by zero");
    expect(prompt).toContain("Traceback (most recent call last)");
    expect(prompt).toContain("Run 1 (python) failed: NameError");
    expect(prompt).toMatch(/Fix the last run's code/);
    expect(prompt).toContain("Rounds left, this one included: 1");
    expect(prompt).toContain("- handoff_to_data: Hand a data analysis task");
  });

  it("a refused handoff reaches the prompt, so the agent goes on with the task itself", async () => {
    const { port, prompts: seen } = recording([
      { role: "coder", op: "generate", output: draft({ action: "code", language: "python", code: "print(2)" }) },
    ]);
    const refused = {
      tool: "handoff_to_data",
      arguments: { task_description: "chart it" },
      ok: false,
      content: "You cannot hand the task back to the data agent: it just handed it to you.",
    };
    await createOpRunner(coder, port, { log, prompts })(
      task({ ...request("Chart the totals"), observations: [refused] }),
      signal(),
    );
    expect(seen[0]).toContain(
      'Your earlier tool calls:\n- handoff_to_data {"task_description":"chart it"} failed: You cannot hand the task back',
    );
  });

  it("without earlier runs the prompt asks for no fix", async () => {
    const { port, prompts: seen } = recording([{ role: "coder", op: "generate", output: draft({ text: "ok" }) }]);
    await createOpRunner(coder, port, { log, prompts })(task(request("Explain recursion")), signal());
    expect(seen[0]).not.toMatch(/Fix the last run/);
  });

  it("a draft that breaks its action's rules fails model_invalid_output (code without language or code, a tool without object arguments, a blank answer)", async () => {
    const bad = [
      draft({ action: "code", language: null, code: "print(1)" }),
      draft({ action: "code", language: "python", code: " " }),
      draft({ action: "tool", tool: "handoff_to_data", arguments_json: "[1]" }),
      draft({ action: "answer", text: "  " }),
    ];
    for (const [i, d] of bad.entries()) {
      const out = await createOpRunner(coder, createScriptedModel([{ role: "coder", op: "generate", output: d }]), {
        log,
        prompts,
      })(task(request("x"), i), signal());
      expect(out, JSON.stringify(d)).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
    }
  });

  it("a tool the code agent was not offered is the model's fault", async () => {
    const model = createScriptedModel([
      { role: "coder", op: "generate", output: draft({ action: "tool", tool: "web_search", arguments_json: "{}" }) },
    ]);
    const out = await createOpRunner(coder, model, { log, prompts })(task(request("Look this up")), signal());
    expect(out).toMatchObject({
      ok: false,
      error: { code: "model_invalid_output", message: expect.stringMatching(/web_search/) },
    });
  });

  it("a handoff outside the code agent's matrix goes to the workflow, which refuses it as the tool's result (the agent goes on)", async () => {
    const model = createScriptedModel([
      {
        role: "coder",
        op: "generate",
        output: draft({
          action: "tool",
          tool: "handoff_to_research",
          arguments_json: '{"task_description": "Look this up"}',
        }),
      },
    ]);
    const out = await createOpRunner(coder, model, { log, prompts })(task(request("Look this up")), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { action: "tool", tool: "handoff_to_research", arguments: { task_description: "Look this up" } },
    });
  });
});

describe("coder.generate through the OpenAI-compatible adapter", () => {
  it("sends its draft as a schema strict structured output accepts, and answers in one request", async () => {
    const { model, server } = await scriptedHttpModel(
      [
        {
          role: "coder",
          op: "generate",
          output: draft({ action: "code", language: "python", code: "print(2 + 2)", explanation: "Adds." }),
        },
      ],
      {
        roles: {},
        defaultRole: { model: "m", temperature: 0.2, tier: "standard" },
      },
    );
    try {
      const out = await createOpRunner(coder, model, { log, prompts })(task(request("Add two and two")), signal());
      expect(out).toMatchObject({ ok: true, output: { action: "code", language: "python", code: "print(2 + 2)" } });
      expect(server.calls).toHaveLength(1);
      expect(server.calls[0]).toMatchObject({
        responseFormat: "json_schema",
        body: { response_format: { json_schema: { strict: true } } },
      });
      const sent = (server.calls[0]?.body as { response_format: { json_schema: { schema: Record<string, unknown> } } })
        .response_format.json_schema.schema;
      expect(strictSchemaProblems(sent)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("why a draft: the contract's own union, a oneOf root with free-form arguments, is what strict mode refuses", () => {
    const problems = strictSchemaProblems(z.toJSONSchema(CoderAction) as Record<string, unknown>);
    expect(problems).toContain("$: the root is not an object (an anyOf or oneOf root is refused)");
    expect(problems.some((p) => p.includes(".arguments: additionalProperties is not false"))).toBe(true);
  });
});

describe("coder.generate does not stream (STREAMING_CONFIG.generate)", () => {
  it("publishes no token for a multi-chunk reply, as the streaming config says", async () => {
    expect(STREAMING_CONFIG.generate).toBe(false);
    const tokens: unknown[] = [];
    const long = draft({
      action: "code",
      language: "python",
      code: `print("${"chunk ".repeat(200)}")`,
      explanation: "Prints a long line.",
    });
    const model = createScriptedModel([{ role: "coder", op: "generate", output: long, chunkDelayMs: 1 }]);
    const out = await createOpRunner(coder, model, { log, prompts, tokens: (t) => void tokens.push(t) })(
      task(request("Print a long line")),
      signal(),
    );
    expect(out).toMatchObject({ ok: true, output: { action: "code" } });
    expect(tokens.length > 0).toBe(STREAMING_CONFIG.generate);
  });
});
