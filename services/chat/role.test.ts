import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf } from "../../test/setup/model.js";
import { isThanks } from "./offline.js";
import chat from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const task = (question: string, n = 0) => ({
  task_id: `sesschat0001.${n}.0.0`,
  session_id: "sesschat0001",
  role: "chat",
  op: "chitchat",
  attempt: 0,
  input: { question },
});
const signal = () => new AbortController().signal;

describe("chat.chitchat offline", () => {
  const run = createOpRunner(chat, offlineModelOf([chat]), { log, prompts });

  it("greets back a greeting, citing nothing", async () => {
    for (const greeting of ["Hello!", "hi there", "Good morning"]) {
      const out = await run(task(greeting), signal());
      expect(out, greeting).toMatchObject({
        ok: true,
        output: { response_str: expect.stringMatching(/^Hello! /), citations: [] },
      });
    }
  });

  it("thanks back a thank-you", async () => {
    for (const thanks of ["Thanks!", "thank you so much", "Cheers, that helped"]) {
      const out = await run(task(thanks), signal());
      expect(out, thanks).toMatchObject({
        ok: true,
        output: { response_str: expect.stringMatching(/^You're welcome!/), citations: [] },
      });
    }
  });

  it("otherwise says briefly what it can answer offline and how to configure a model", async () => {
    const out = await run(task("What can you do for me?"), signal());
    expect(out).toMatchObject({ ok: true, output: { citations: [] } });
    const text = (out as { output: { response_str: string } }).output.response_str;
    expect(text).toMatch(/knowledge graph/);
    expect(text).toMatch(/document corpus/);
    expect(text).toMatch(/MCP servers/);
    expect(text).toContain("AGENTMESH_LLM_BASE_URL");
    expect(text).not.toMatch(/^Hello/);
  });
});

describe("isThanks", () => {
  it("is true for a short thank-you, false for a greeting or a long question", () => {
    expect(["Thanks!", "Thank you", "thx", "Much appreciated."].map(isThanks)).toEqual([true, true, true, true]);
    expect(
      ["Hello!", "What is HER2?", "Thanks, but which pathways does HER2 interact with in breast cancer cells?", ""].map(
        isThanks,
      ),
    ).toEqual([false, false, false, false]);
  });
});

describe("chat.chitchat with a model", () => {
  it("returns the model's text with no citations, even when the model offers some, after one call", async () => {
    const model = createScriptedModel([
      {
        role: "chat",
        op: "chitchat",
        output: {
          response_str: "Hi! Ask me about genes, papers or the news.",
          citations: [{ title: "t", url: "https://example.com/", path: null, snippet: "" }],
        },
      },
    ]);
    const out = await createOpRunner(chat, model, { log, prompts })(task("hi"), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { response_str: "Hi! Ask me about genes, papers or the news.", citations: [] },
      provenance: { prompt_version: "chat.chitchat/v1" },
    });
    expect(model.calls).toHaveLength(1);
    model.assertConsumed();
  });

  it("a blank reply fails the schema (model_invalid_output), not an empty answer", async () => {
    const model = createScriptedModel([{ role: "chat", op: "chitchat", output: { response_str: "   " } }]);
    const out = await createOpRunner(chat, model, { log, prompts })(task("hi"), signal());
    expect(out).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
  });
});
