import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import type { AskRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf, recordingModel } from "../../test/setup/model.js";
import clarifier from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const task = (input: AskRequest) => ({
  task_id: "sessclar00001.1.0.0",
  session_id: "sessclar00001",
  role: "clarifier",
  op: "ask",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;
const convo: AskRequest = {
  messages: [
    { role: "user", content: "What is RAG?" },
    { role: "assistant", content: "RAG systems use retrieval..." },
    { role: "user", content: "Tell me more about it" },
  ],
};

describe("clarifier.ask", () => {
  it("with a model: one free-text call over the conversation; the question comes back trimmed", async () => {
    const model = createScriptedModel([
      { role: "clarifier", op: "ask", content: "  Which aspect of RAG: retrieval, generation or evaluation?\n" },
    ]);
    const rec = recordingModel(model);
    const out = await createOpRunner(clarifier, rec.port, { log, prompts })(task(convo), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { question: "Which aspect of RAG: retrieval, generation or evaluation?" },
      provenance: { prompt_version: "clarifier.ask/v1" },
    });
    expect(model.calls).toEqual([expect.objectContaining({ mode: "text" })]);
    expect(rec.seen[0]?.prompt).toBe(
      "Conversation so far:\nUser: What is RAG?\nAssistant: RAG systems use retrieval...\nUser: Tell me more about it\n\nAsk your one question about the latest message.",
    );
  });

  it("an empty reply is the model's fault (model_invalid_output), not an empty question", async () => {
    const model = createScriptedModel([{ role: "clarifier", op: "ask", content: "   " }]);
    const out = await createOpRunner(clarifier, model, { log, prompts })(task(convo), signal());
    expect(out).toMatchObject({ ok: false, error: { code: "model_invalid_output" } });
  });

  it("offline: a templated question naming what is ambiguous", async () => {
    const out = await createOpRunner(clarifier, offlineModelOf([clarifier]), { log, prompts })(task(convo), signal());
    expect(out).toMatchObject({
      ok: true,
      output: { question: 'What does "it" refer to, and which aspect of it would you like to know about?' },
    });
  });
});
