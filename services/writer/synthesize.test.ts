import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createOpRunner, loadPromptContracts } from "@agentmesh/agent-kit";
import type { GatheredPassage, SynthesizeRequest } from "@agentmesh/contracts";
import { createLogger } from "@agentmesh/service-kit";
import { createScriptedModel, offlineModelOf, recordingModel } from "../../test/setup/model.js";
import writer from "./role.js";

const log = createLogger({ service: "test", level: "silent" });
const prompts = loadPromptContracts({ builtinDirs: [dirname(fileURLToPath(import.meta.url))] });
const task = (input: SynthesizeRequest) => ({
  task_id: "sesssynth0001.1.0.0",
  session_id: "sesssynth0001",
  role: "writer",
  op: "synthesize",
  attempt: 0,
  input,
});
const signal = () => new AbortController().signal;
const corpus = (path: string, text: string): GatheredPassage => ({
  source: "corpus",
  text,
  citation: { title: path, url: null, path, snippet: text.slice(0, 100) },
});
const request = (passages: GatheredPassage[]): SynthesizeRequest => ({
  question: "Tell me more about it",
  clarification: { question: 'What does "it" refer to?', answer: "Redis persistence" },
  messages: [],
  passages,
});
const PASSAGES = [
  corpus(
    "redis-persistence.md",
    "# Persistence\nRedis offers RDB snapshots. The append-only file logs every write for Redis persistence.",
  ),
  { source: "memory", text: "User: we run Redis", citation: null } as GatheredPassage,
  corpus("jetstream.md", "JetStream persists streams on disk."),
];

describe("writer.synthesize (clarify's synthesis agent)", () => {
  it("with a model: the numbered cited sources and the conversation notes apart, the answer as written", async () => {
    const model = createScriptedModel([
      { role: "writer", op: "synthesize", content: "Redis logs every write to the AOF [1]." },
    ]);
    const rec = recordingModel(model);
    const out = await createOpRunner(writer, rec.port, { log, prompts })(task(request(PASSAGES)), signal());
    expect(out).toMatchObject({ ok: true, output: { answer: "Redis logs every write to the AOF [1]." } });
    const prompt = rec.seen[0]?.prompt ?? "";
    expect(prompt).toContain('We asked: What does "it" refer to?\nThe user answered: Redis persistence');
    expect(prompt).toContain("[1] redis-persistence.md\n# Persistence");
    expect(prompt).toContain("[2] jetstream.md\nJetStream persists");
    expect(prompt).toContain("Conversation notes (context, not sources):\nUser: we run Redis");
  });

  it("offline: the most relevant sentence of each cited passage, with its number", async () => {
    const out = await createOpRunner(writer, offlineModelOf([writer]), { log, prompts })(
      task(request(PASSAGES)),
      signal(),
    );
    expect(out).toMatchObject({
      ok: true,
      output: {
        answer:
          "You asked “Tell me more about it” and clarified “Redis persistence”. The sources say:\n- The append-only file logs every write for Redis persistence. [1]\n- JetStream persists streams on disk. [2]",
      },
    });
  });

  it("offline with nothing cited: needs_model, never a made-up answer", async () => {
    const out = await createOpRunner(writer, offlineModelOf([writer]), { log, prompts })(
      task(request([PASSAGES[1]!])),
      signal(),
    );
    expect(out).toMatchObject({
      ok: false,
      error: { code: "needs_model", message: expect.stringContaining("synthesis agent needs a language model") },
    });
  });
});
