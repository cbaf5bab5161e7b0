import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createLangfusePromptSource, createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import type { ChatMessage, DecideRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createRecordingTracing } from "@agentmesh/service-kit/testing";
import { createScriptedModel, offlineModelOf, recordingModel } from "../../test/setup/model.js";
import orchestrator, { ORCHESTRATOR_PROMPT } from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const task = (input: DecideRequest) => ({
  task_id: "sessorch00001.1.0.0",
  session_id: "sessorch00001",
  role: "orchestrator",
  op: "decide",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;
const turns = (n: number): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message ${i}` }));

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** Runs orchestrator.decide once against a model answering `reply`, recording what the model was sent. */
async function decide(
  input: DecideRequest,
  reply = 'Decision: CLARIFICATION\nReasoning: "it" has no antecedent',
  promptSource?: Parameters<typeof createOpRunner>[2]["promptSource"],
) {
  const model = createScriptedModel([{ role: "orchestrator", op: "decide", content: reply }]);
  const rec = recordingModel(model);
  const outcome = await createOpRunner(orchestrator, rec.port, {
    log,
    prompts,
    ...(promptSource ? { promptSource } : {}),
  })(task(input), signal());
  return { outcome, calls: model.calls, seen: rec.seen };
}

describe("orchestrator.decide renders the prompt", () => {
  it("shows the messages it is given (the workflow's last 10) as User/AI lines and the count as count/max; one free-text call at 0.3", async () => {
    const messages = turns(10);
    const { outcome, calls, seen } = await decide({ messages, clarification_count: 1, max_clarifications: 2 });
    expect(outcome).toMatchObject({
      ok: true,
      output: { decision: 'Decision: CLARIFICATION\nReasoning: "it" has no antecedent' },
      provenance: { prompt_version: "orchestrator.decide/v1" },
    });
    expect(calls).toEqual([expect.objectContaining({ mode: "text", temperature: 0.3 })]);
    const system = seen[0]?.system ?? "";
    expect(system).toContain("You are the Orchestrator agent in a multi-agent RAG system.");
    expect(system).toContain(
      `Conversation History:\n${messages.map((m, i) => `${i % 2 ? "AI" : "User"}: message ${i}`).join("\n")}\n`,
    );
    expect(system).toContain("Current Clarification Count: 1/2");
    expect(system).toContain("Decision: [CLARIFICATION | RESEARCH]");
    expect(system).not.toMatch(/\{\{/);
    expect(seen[0]?.prompt).toMatch(/^Decide for the latest message \(10 message\(s\) shown\)/);
  });

  it("takes the prompt `agent_orchestrator` from Langfuse when it has one, with the same variables", async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      const found = req.url?.startsWith(`/api/public/v2/prompts/${ORCHESTRATOR_PROMPT}?`);
      res.writeHead(found ? 200 : 404, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          found
            ? {
                type: "text",
                version: 7,
                prompt:
                  "LF history:\n{{conversation_history}}\nLF count {{clarification_count}} of {{max_clarifications}}",
              }
            : { message: "not found" },
        ),
      );
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const source = createLangfusePromptSource({
      host: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      publicKey: "pk",
      secretKey: "sk",
      ttlMs: 60_000,
      timeoutMs: 2000,
      log,
    });
    const input = { messages: turns(2), clarification_count: 0, max_clarifications: 2 };
    const first = await decide(input, "RESEARCH", source);
    expect(first.seen[0]?.system).toBe("LF history:\nUser: message 0\nAI: message 1\nLF count 0 of 2");
    expect(first.outcome).toMatchObject({ ok: true, provenance: { prompt_version: "langfuse:agent_orchestrator/v7" } });
    await decide(input, "RESEARCH", source);
    expect(requests).toBe(1);
  });
});

describe("orchestrator.decide offline (offline-kit's keyword rules)", () => {
  const run = createOpRunner(orchestrator, offlineModelOf([orchestrator]), { log, prompts });
  it.each([
    ["Tell me more about it", "CLARIFICATION"],
    ["How does Redis persist data with the append-only file?", "RESEARCH"],
  ])("%s → %s", async (query, word) => {
    const out = await run(
      task({ messages: [{ role: "user", content: query }], clarification_count: 0, max_clarifications: 2 }),
      signal(),
    );
    expect(out).toMatchObject({
      ok: true,
      output: { decision: expect.stringMatching(new RegExp(`^Decision: ${word}\\n`)) },
    });
  });
});

describe("orchestrator.decide's decision record", () => {
  it("puts the orchestrator_decision (input, output, model, prompt name) on the task's span when tracing is on", async () => {
    const tracing = createRecordingTracing("orchestrator");
    const model = createScriptedModel([
      { role: "orchestrator", op: "decide", content: "Decision: RESEARCH\nReasoning: clear" },
    ]);
    const input: DecideRequest = {
      messages: [{ role: "user", content: "Which prompt gave the highest accuracy in Zhang 2024?" }],
      clarification_count: 1,
      max_clarifications: 2,
    };
    const outcome = await createOpRunner(orchestrator, model, { log, prompts, tracing })(task(input), signal());
    expect(outcome.ok).toBe(true);
    const span = tracing.spans().find((s) => s.name === "task");
    expect(span?.attributes).toMatchObject({
      "orchestrator_decision.input.conversation_history": "User: Which prompt gave the highest accuracy in Zhang 2024?",
      "orchestrator_decision.input.clarification_count": 1,
      "orchestrator_decision.output": "Decision: RESEARCH\nReasoning: clear",
      "orchestrator_decision.prompt_name": ORCHESTRATOR_PROMPT,
      "orchestrator_decision.prompt_version": "orchestrator.decide/v1",
      "orchestrator_decision.metadata.agent": "orchestrator",
    });
    expect(typeof span?.attributes["orchestrator_decision.model"]).toBe("string");
  });
});
