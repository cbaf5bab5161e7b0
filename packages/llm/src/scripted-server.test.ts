import { afterEach, describe, expect, it } from "vitest";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "./scripted-server.js";

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(script: HttpScriptEntry[]) {
  server = await startScriptedOpenAIServer({ script, host: "127.0.0.1" });
  return server;
}

type Msg = { role: string; content: string };
function post(
  s: ScriptedServer,
  task: { role?: string; op?: string; taskId?: string },
  body: object | string,
  path = "/chat/completions",
) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (task.role) headers["x-agentmesh-role"] = task.role;
  if (task.op) headers["x-agentmesh-op"] = task.op;
  if (task.taskId) headers["x-agentmesh-task-id"] = task.taskId;
  return fetch(`${s.url}${path}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
const chat = (messages: Msg[] = [{ role: "user", content: "hi" }], extra: object = {}) => ({
  model: "m",
  messages,
  ...extra,
});
const task = (taskId: string) => ({ role: "expert", op: "answer", taskId });

describe("scripted OpenAI-compatible server", () => {
  it("answers a completion in the OpenAI shape, with usage", async () => {
    const s = await start([
      { role: "expert", op: "answer", output: { a: 1 }, usage: { prompt_tokens: 3, completion_tokens: 4 } },
    ]);
    const res = await post(s, task("t1"), chat());
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      object: "chat.completion",
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: '{"a":1}' }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
    s.assertConsumed();
  });

  it("replays the same answer for the same task and turn, and the next one for the next turn", async () => {
    const s = await start([
      { role: "expert", op: "answer", content: "first" },
      { role: "expert", op: "answer", content: "second" },
      { role: "expert", op: "answer", content: "third" },
    ]);
    const content = async (r: Response) =>
      ((await r.json()) as { choices: Array<{ message: Msg }> }).choices[0]!.message.content;
    expect(await content(await post(s, task("t1"), chat()))).toBe("first");
    expect(await content(await post(s, task("t1"), chat()))).toBe("first");
    const retry = chat([
      { role: "user", content: "hi" },
      { role: "assistant", content: "first" },
      { role: "user", content: "fix it" },
    ]);
    expect(await content(await post(s, task("t1"), retry))).toBe("second");
    expect(await content(await post(s, task("t2"), chat()))).toBe("third");
    expect(s.calls.map((c) => [c.taskId, c.turn, c.entry])).toEqual([
      ["t1", 0, 0],
      ["t1", 0, 0],
      ["t1", 1, 1],
      ["t2", 0, 2],
    ]);
  });

  it("consumes error responses per request, with Retry-After", async () => {
    const s = await start([
      { role: "expert", op: "answer", status: 429, retryAfterSec: 7 },
      { role: "expert", op: "answer", content: "ok" },
    ]);
    const first = await post(s, task("t1"), chat());
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("7");
    expect((await post(s, task("t1"), chat())).status).toBe(200);
    // A redelivery of the answered turn replays the answer, not the 429.
    expect((await post(s, task("t1"), chat())).status).toBe(200);
    s.assertConsumed();
  });

  it("streams server-sent events ending with a usage chunk and [DONE]", async () => {
    const s = await start([
      { role: "expert", op: "answer", content: "x".repeat(40), usage: { prompt_tokens: 1, completion_tokens: 2 } },
    ]);
    const res = await post(s, task("t1"), chat(undefined, { stream: true, stream_options: { include_usage: true } }));
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = (await res.text()).split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events
      .slice(0, -1)
      .map(
        (e) =>
          JSON.parse(e.slice("data: ".length)) as { choices: Array<{ delta: { content?: string } }>; usage?: object },
      );
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("x".repeat(40));
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
  });

  it("omitUsage leaves usage out of a completion and of a stream, even when asked for", async () => {
    const s = await start([
      { role: "expert", op: "answer", content: "a", omitUsage: true },
      { role: "expert", op: "answer", content: "b", omitUsage: true },
    ]);
    expect(await (await post(s, task("t1"), chat())).json()).not.toHaveProperty("usage");
    const events = (
      await (
        await post(s, task("t2"), chat(undefined, { stream: true, stream_options: { include_usage: true } }))
      ).text()
    )
      .split("\n\n")
      .filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(
      events
        .slice(0, -1)
        .map((e) => JSON.parse(e.slice("data: ".length)) as object)
        .filter((c) => "usage" in c),
    ).toEqual([]);
  });

  it("paces streamed deltas chunkDelayMs apart", async () => {
    const s = await start([{ role: "expert", op: "answer", content: "y".repeat(64), chunkDelayMs: 100 }]);
    const started = performance.now();
    const events = (await (await post(s, task("t1"), chat(undefined, { stream: true }))).text())
      .split("\n\n")
      .filter(Boolean);
    // Four 16-character deltas, three pauses between them.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    const chunks = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice("data: ".length)) as { choices: Array<{ delta: { content?: string } }> });
    expect(chunks.map((c) => c.choices[0]?.delta.content).filter(Boolean)).toEqual(Array(4).fill("y".repeat(16)));
  });

  it("records an unexpected call, answers it with a 400, and assertConsumed reports it", async () => {
    const s = await start([]);
    const res = await post(s, task("t1"), chat());
    expect(res.status).toBe(400);
    expect(await res.text()).not.toMatch(/response_format|json_schema/);
    expect((await post(s, {}, chat())).status).toBe(400);
    expect(() => s.assertConsumed()).toThrow(
      /unexpected calls:\n {2}expert\.answer task t1 turn 0\n {2}\?\.\? task \? turn 0/,
    );
  });

  it("serves /v1/models and rejects bad requests without falling over", async () => {
    const s = await start([{ role: "expert", op: "answer", content: "ok" }]);
    const models = await fetch(`${s.url}/models`);
    expect(await models.json()).toMatchObject({ object: "list", data: [{ id: "scripted" }] });
    expect((await post(s, task("t1"), "{not json")).status).toBe(400);
    expect((await post(s, task("t1"), { model: "m" })).status).toBe(400);
    expect((await post(s, task("t1"), chat(), "/nope")).status).toBe(404);
    // Still serving, and the script untouched by the bad requests.
    expect((await post(s, task("t1"), chat())).status).toBe(200);
    s.assertConsumed();
  });

  it("closes promptly while a delayed reply is pending", async () => {
    const s = await start([{ role: "expert", op: "answer", content: "late", delayMs: 60_000 }]);
    const pending = post(s, task("t1"), chat()).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 50));
    const started = performance.now();
    await s.close();
    server = undefined;
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(Error);
  });

  it("binds loopback only and checks the script up front", async () => {
    await expect(startScriptedOpenAIServer({ script: [], host: "0.0.0.0" as "127.0.0.1" })).rejects.toThrow(/loopback/);
    await expect(startScriptedOpenAIServer({ script: [{ role: "a", op: "b" }] })).rejects.toThrow(/exactly one of/);
    await expect(
      startScriptedOpenAIServer({ script: [{ role: "a", op: "b", content: "x", status: 500 }] }),
    ).rejects.toThrow(/#0/);
  });
});
