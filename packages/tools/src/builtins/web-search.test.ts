import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import {
  createBraveWebSearch,
  createOfflineWebSearch,
  createWebSearchTool,
  type WebSearchProvider,
} from "./web-search.js";

let server: Server;
let base: string;
const seen: IncomingMessage[] = [];
let reply: (url: URL) => { status: number; body: string } = () => ({ status: 200, body: "{}" });

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    const r = reply(new URL(req.url ?? "/", "http://x"));
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(r.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const brave = (extra: { maxResponseBytes?: number } = {}) =>
  createBraveWebSearch({ apiKey: "k-123", baseUrl: base, ...extra });

function call(provider: WebSearchProvider, query = "nats jetstream") {
  const exec = createSafeExecutor({
    registry: createToolRegistry([createWebSearchTool({ provider, allowedRoles: ["researcher"] })]),
    sleep: async () => undefined,
  });
  return exec.call({ tool: "web_search", args: { query, count: 2 }, role: "researcher", sessionId: "s", taskId: "t" });
}

describe("web_search", () => {
  it("without a provider answers tool_unavailable: no web search provider is configured", async () => {
    const r = await call(createOfflineWebSearch());
    expect(r).toMatchObject({
      ok: false,
      error: { code: "tool_unavailable", retryable: false, message: "no web search provider is configured" },
    });
    expect(r.records).toHaveLength(1);
  });

  it("queries a Brave-style JSON API with the key, and returns plain-text hits", async () => {
    reply = (url) => ({
      status: 200,
      body: JSON.stringify({
        web: {
          results: [
            {
              title: "<strong>NATS</strong> docs",
              url: "https://docs.nats.io/",
              description: "JetStream &amp; <b>streams</b>",
            },
            { title: "bad", url: "javascript:alert(1)", description: "x" },
            { title: "q", url: `https://example.com/?q=${url.searchParams.get("q") ?? ""}`, description: "" },
            { title: "extra", url: "https://example.com/3", description: "" },
          ],
        },
      }),
    });
    const r = await call(brave());
    expect(r).toMatchObject({
      ok: true,
      output: {
        provider: "brave",
        results: [
          { title: "NATS docs", url: "https://docs.nats.io/", snippet: "JetStream & streams" },
          { title: "q", url: "https://example.com/?q=nats jetstream" },
        ],
      },
    });
    const last = seen.at(-1);
    expect(last?.headers["x-subscription-token"]).toBe("k-123");
    expect(last?.url).toMatch(/^\/res\/v1\/web\/search\?q=nats\+jetstream&count=2$/);
  });

  it("maps provider failures to typed errors: bad key is not retried, 5xx and 429 are", async () => {
    reply = () => ({ status: 401, body: "{}" });
    const denied = await call(brave());
    expect(denied).toMatchObject({ ok: false, error: { code: "tool_unavailable" } });
    expect(denied.records).toHaveLength(1);
    for (const status of [500, 429]) {
      reply = () => ({ status, body: "{}" });
      const r = await call(brave());
      expect(r).toMatchObject({ ok: false, error: { code: "tool_error", retryable: true } });
      expect(r.records).toHaveLength(3);
    }
    reply = () => ({ status: 400, body: "{}" });
    expect((await call(brave())).records).toHaveLength(1);
  });

  it("recovers when the provider fails once then answers", async () => {
    let n = 0;
    reply = () =>
      n++ === 0 ? { status: 503, body: "" } : { status: 200, body: JSON.stringify({ web: { results: [] } }) };
    const r = await call(brave());
    expect(r).toMatchObject({ ok: true, output: { results: [] } });
    expect(r.records.map((x) => x.outcome)).toEqual(["tool_error", "ok"]);
  });

  it("refuses oversized and malformed answers", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify({ web: { results: [{ title: "x".repeat(5000), url: "https://a", description: "" }] } }),
    });
    expect(await call(brave({ maxResponseBytes: 1000 }))).toMatchObject({
      ok: false,
      error: { code: "tool_error", retryable: false },
    });
    reply = () => ({ status: 200, body: "not json" });
    expect(await call(brave())).toMatchObject({ ok: false, error: { code: "tool_error", retryable: false } });
    reply = () => ({ status: 200, body: JSON.stringify({ web: { results: [{ title: 3 }] } }) });
    expect(await call(brave())).toMatchObject({ ok: false, error: { code: "tool_error" } });
  });

  it("reports an unreachable provider as a retryable tool error", async () => {
    const r = await call(createBraveWebSearch({ apiKey: "k", baseUrl: "http://127.0.0.1:1" }));
    expect(r).toMatchObject({ ok: false, error: { code: "tool_error", retryable: true } });
  });
});
