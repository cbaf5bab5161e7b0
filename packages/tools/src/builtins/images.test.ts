import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { builtinTools, DEFAULT_TOOL_ROLES } from "./builtin-tools.js";
import { createAnalyzeImageTool, createGenerateImageTool } from "./image-tools.js";
import { createOfflineImages, createOpenAIImages, imageUrlProblem, type ImageProvider } from "./images.js";

const KEY = "sk-test-9f8e7d6c5b4a";
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly auth: string | undefined;
  readonly body: Record<string, unknown>;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
let reply: (path: string) => { status: number; body: string } = () => ({ status: 200, body: "{}" });

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      seen.push({
        method: req.method ?? "",
        path: req.url ?? "",
        auth: req.headers.authorization,
        body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
      });
      const r = reply(req.url ?? "/");
      res.writeHead(r.status, { "content-type": "application/json" });
      res.end(r.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const provider = (extra: { maxImageChars?: number; maxResponseBytes?: number } = {}) =>
  createOpenAIImages({ baseUrl: base, apiKey: KEY, imageModel: "img-model", visionModel: "vision-model", ...extra });

function executor(p: ImageProvider) {
  const roles = ["researcher", "chat"] as const;
  const registry = createToolRegistry([
    createGenerateImageTool({ provider: p, allowedRoles: roles }),
    createAnalyzeImageTool({ provider: p, allowedRoles: roles }),
  ]);
  return createSafeExecutor({ registry, sleep: async () => undefined });
}

const generate = (
  p: ImageProvider,
  args: unknown = { prompt: "a red fox in snow", size: "1024x1024" },
  role: "researcher" | "chat" | "expert" = "chat",
) => executor(p).call({ tool: "generate_image", args, role, sessionId: "s", taskId: "t" });
const analyze = (
  p: ImageProvider,
  args: unknown = { image_url: "https://example.com/fox.png", question: "What animal is this?" },
) => executor(p).call({ tool: "analyze_image", args, role: "researcher", sessionId: "s", taskId: "t" });

const chat = (content: string) =>
  JSON.stringify({
    id: "c1",
    object: "chat.completion",
    created: 1,
    model: "vision-model",
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
  });

describe("generate_image", () => {
  it("posts to {base}/images/generations with the key and model, and returns a URL image", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify({
        created: 1,
        data: [{ url: "https://img.example/fox.png", revised_prompt: "a red fox, snowy field" }],
      }),
    });
    const r = await generate(provider());
    expect(r).toMatchObject({
      ok: true,
      output: {
        provider: "openai-compatible",
        model: "img-model",
        images: [{ url: "https://img.example/fox.png", revised_prompt: "a red fox, snowy field" }],
      },
    });
    const last = seen.at(-1);
    expect(last).toMatchObject({
      method: "POST",
      path: "/v1/images/generations",
      auth: `Bearer ${KEY}`,
      body: { model: "img-model", prompt: "a red fox in snow", size: "1024x1024", n: 1 },
    });
  });

  it("returns base64 images with their type, and refuses an image over the size bound", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify({ created: 1, data: [{ b64_json: PNG }], output_format: "png" }),
    });
    expect(await generate(provider(), { prompt: "dot" })).toMatchObject({
      ok: true,
      output: { images: [{ b64_json: PNG, mime_type: "image/png" }] },
    });
    expect(seen.at(-1)?.body).not.toHaveProperty("size");
    const big = await generate(provider({ maxImageChars: 20 }), { prompt: "dot" });
    expect(big).toMatchObject({
      ok: false,
      error: {
        code: "tool_error",
        retryable: false,
        message: expect.stringContaining("over 20 base64 characters") as unknown,
      },
    });
    const huge = await generate(provider({ maxResponseBytes: 50 }), { prompt: "dot" });
    expect(huge).toMatchObject({
      ok: false,
      error: { code: "tool_error", retryable: false, message: expect.stringContaining("over 50 bytes") as unknown },
    });
    expect(huge.records).toHaveLength(1);
  });

  it("refuses an answer without an image or of the wrong shape, without retrying", async () => {
    reply = () => ({ status: 200, body: JSON.stringify({ created: 1, data: [{ url: "javascript:alert(1)" }] }) });
    expect(await generate(provider())).toMatchObject({
      ok: false,
      error: { code: "tool_error", retryable: false, message: "the images endpoint returned no image" },
    });
    reply = () => ({ status: 200, body: JSON.stringify({ data: "nope" }) });
    const r = await generate(provider());
    expect(r).toMatchObject({ ok: false, error: { code: "tool_error", retryable: false } });
    expect(r.records).toHaveLength(1);
  });

  it("validates its arguments before any request", async () => {
    const before = seen.length;
    for (const args of [
      { prompt: "" },
      { prompt: "   " },
      { prompt: "x".repeat(4001) },
      { prompt: "fox", size: "999x999" },
      { size: "1024x1024" },
    ]) {
      expect(await generate(provider(), args)).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
    }
    expect(seen.length).toBe(before);
  });

  it("is offered to researcher and chat only", async () => {
    expect(DEFAULT_TOOL_ROLES.generate_image).toEqual(["researcher", "chat"]);
    expect(DEFAULT_TOOL_ROLES.analyze_image).toEqual(["researcher", "chat"]);
    expect(await generate(createOfflineImages(), { prompt: "fox" }, "expert")).toMatchObject({
      ok: false,
      error: { code: "permission_denied" },
    });
  });
});

describe("analyze_image", () => {
  it("asks the vision model through chat completions with an image_url part", async () => {
    reply = () => ({ status: 200, body: chat("  A red fox.  ") });
    const r = await analyze(provider());
    expect(r).toMatchObject({ ok: true, output: { answer: "A red fox." } });
    const last = seen.at(-1);
    expect(last).toMatchObject({ method: "POST", path: "/v1/chat/completions", auth: `Bearer ${KEY}` });
    expect(last?.body).toEqual({
      model: "vision-model",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What animal is this?" },
            { type: "image_url", image_url: { url: "https://example.com/fox.png" } },
          ],
        },
      ],
    });
  });

  it("takes a data: image URL", async () => {
    reply = () => ({ status: 200, body: chat("a single dot") });
    expect(
      await analyze(provider(), { image_url: `data:image/png;base64,${PNG}`, question: "what is it?" }),
    ).toMatchObject({ ok: true, output: { answer: "a single dot" } });
  });

  it("refuses image URLs that are not http(s) or image data, or that point inside our network, before any request", async () => {
    const before = seen.length;
    for (const image_url of [
      "file:///etc/passwd",
      "ftp://example.com/a.png",
      "javascript:alert(1)",
      "data:text/html;base64,PGgxPg==",
      "data:image/png;base64,not base64!",
      "http://127.0.0.1/a.png",
      "http://localhost:8080/a.png",
      "http://169.254.169.254/latest/meta-data",
      "http://10.1.2.3/x.png",
      "http://[::1]/x.png",
      "https://user:pw@example.com/a.png",
      `https://example.com/${"a".repeat(5000)}`,
      "not a url",
    ]) {
      const r = await analyze(provider(), { image_url, question: "what?" });
      expect(r, image_url).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
    }
    expect(await analyze(provider(), { image_url: "https://example.com/a.png", question: "" })).toMatchObject({
      ok: false,
      error: { code: "invalid_tool_input" },
    });
    expect(seen.length).toBe(before);
    expect(imageUrlProblem("file:///etc/passwd")).toBe("image_url must be http(s) or data:, not file:");
    expect(imageUrlProblem("https://example.com/a.png")).toBeNull();
  });

  it("maps a refusal or an empty answer to a tool error that is not retried", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify({
        choices: [{ message: { role: "assistant", content: null, refusal: "I cannot help with that" } }],
      }),
    });
    expect(await analyze(provider())).toMatchObject({
      ok: false,
      error: { code: "tool_error", retryable: false, message: "the vision model refused: I cannot help with that" },
    });
    reply = () => ({ status: 200, body: chat("   ") });
    expect(await analyze(provider())).toMatchObject({ ok: false, error: { code: "tool_error", retryable: false } });
  });
});

describe("image tools without a provider, and provider failures", () => {
  it("answer tool_unavailable naming the variable to set, without retrying", async () => {
    for (const r of [await generate(createOfflineImages()), await analyze(createOfflineImages())]) {
      expect(r).toMatchObject({
        ok: false,
        error: {
          code: "tool_unavailable",
          retryable: false,
          message: expect.stringContaining("AGENTMESH_IMAGES_BASE_URL") as unknown,
        },
      });
      expect(r.records).toHaveLength(1);
    }
  });

  it("retry 500 and 429 (generate: 2 attempts, analyze: 3), not 400; a refused key is tool_unavailable", async () => {
    for (const status of [500, 429]) {
      reply = () => ({ status, body: JSON.stringify({ error: { message: "busy" } }) });
      const g = await generate(provider());
      expect(g).toMatchObject({
        ok: false,
        error: {
          code: "tool_error",
          retryable: true,
          message: `the images endpoint answered image generation with HTTP ${status}: busy`,
        },
      });
      expect(g.records).toHaveLength(2);
      const a = await analyze(provider());
      expect(a).toMatchObject({ ok: false, error: { code: "tool_error", retryable: true } });
      expect(a.records).toHaveLength(3);
    }
    reply = () => ({
      status: 400,
      body: JSON.stringify({ error: { message: "prompt rejected by the safety system" } }),
    });
    for (const r of [await generate(provider()), await analyze(provider())]) {
      expect(r).toMatchObject({
        ok: false,
        error: {
          code: "tool_error",
          retryable: false,
          message: expect.stringContaining("HTTP 400: prompt rejected") as unknown,
        },
      });
      expect(r.records).toHaveLength(1);
    }
    reply = () => ({ status: 401, body: JSON.stringify({ error: { message: "bad key" } }) });
    const denied = await analyze(provider());
    expect(denied).toMatchObject({ ok: false, error: { code: "tool_unavailable", retryable: false } });
    expect(denied.records).toHaveLength(1);
  });

  it("recovers when the endpoint fails once then answers", async () => {
    let n = 0;
    reply = () => (n++ === 0 ? { status: 503, body: "" } : { status: 200, body: chat("fox") });
    const r = await analyze(provider());
    expect(r).toMatchObject({ ok: true, output: { answer: "fox" } });
    expect(r.records.map((x) => x.outcome)).toEqual(["tool_error", "ok"]);
  });

  it("never puts the API key in an error, even when the endpoint echoes it", async () => {
    for (const status of [400, 401, 500]) {
      reply = () => ({ status, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } }) });
      for (const r of [await generate(provider()), await analyze(provider())]) {
        expect(r.ok).toBe(false);
        const text = JSON.stringify(r);
        expect(text).not.toContain(KEY);
        expect(text).toContain(status === 400 ? "Incorrect API key provided: ***" : `HTTP ${status}`);
      }
    }
  });

  it("reports an unreachable endpoint as a retryable tool error", async () => {
    const r = await analyze(
      createOpenAIImages({ baseUrl: "http://127.0.0.1:1/v1", apiKey: KEY, imageModel: "m", visionModel: "v" }),
    );
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: "tool_error",
        retryable: true,
        message: expect.stringContaining("could not reach the images endpoint") as unknown,
      },
    });
    expect(JSON.stringify(r)).not.toContain(KEY);
  });

  it("a slow endpoint runs into the tool's timeout", async () => {
    const hang = createServer(() => undefined);
    await new Promise<void>((resolve) => hang.listen(0, "127.0.0.1", resolve));
    try {
      const p = createOpenAIImages({
        baseUrl: `http://127.0.0.1:${(hang.address() as AddressInfo).port}/v1`,
        imageModel: "m",
        visionModel: "v",
      });
      const registry = createToolRegistry([
        createAnalyzeImageTool({
          provider: p,
          allowedRoles: ["researcher"],
          timeoutMs: 200,
          retry: { maxAttempts: 1 },
        }),
      ]);
      const r = await createSafeExecutor({ registry }).call({
        tool: "analyze_image",
        args: { image_url: "https://example.com/a.png", question: "q" },
        role: "researcher",
        sessionId: "s",
        taskId: "t",
      });
      expect(r).toMatchObject({ ok: false, error: { code: "timeout" } });
    } finally {
      hang.closeAllConnections();
      await new Promise<void>((resolve) => hang.close(() => resolve()));
    }
  });

  it("builtinTools offers both only when given a provider", async () => {
    const without = builtinTools({ js: false, python: false });
    const withImages = builtinTools({ js: false, python: false, images: createOfflineImages() });
    try {
      expect(without.tools.map((t) => t.name)).not.toContain("generate_image");
      const registry = createToolRegistry(withImages.tools);
      expect(registry.list({ role: "chat" }).map((t) => t.name)).toEqual(["analyze_image", "generate_image"]);
      expect(registry.list({ role: "researcher" }).map((t) => t.name)).toEqual(
        expect.arrayContaining(["analyze_image", "generate_image", "web_search"]) as unknown,
      );
      expect(registry.list({ role: "expert" }).map((t) => t.name)).not.toContain("generate_image");
    } finally {
      await Promise.all([without.close(), withImages.close()]);
    }
  });
});
