import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "@agentmesh/service-kit";
import { compileTemplate, createLangfusePromptSource } from "./prompt-source.js";
import type { PromptContract } from "./prompts.js";
import { loadAgentConfig } from "./config.js";

// Langfuse is stood in for by a local HTTP server (127.0.0.1, a free port) answering its public
// prompts API: what is fetched, how often (the cache), and the prompt file when it fails.

const FILE: PromptContract = {
  id: "orchestrator.decide",
  version: 1,
  focus: "f",
  system: "file: count {{clarification_count}}/{{max_clarifications}}",
};
const PUBLIC = "pk-lf-test";
const SECRET = "sk-lf-test-secret";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A stand-in Langfuse: counts requests and answers each with `handler`. */
async function standIn(handler: Handler) {
  const requests: Array<{ url: string; authorization: string | undefined }> = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const json =
  (status: number, body: unknown): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

/** A source over `host` with a hand-moved clock and the warnings it logs. */
function sourceFor(host: string, timeoutMs = 2000) {
  const lines: string[] = [];
  const log = createLogger({
    service: "test",
    level: "warn",
    destination: { write: (l: string) => void lines.push(l) },
  });
  const clock = { t: 1_000_000 };
  const source = createLangfusePromptSource({
    host,
    publicKey: PUBLIC,
    secretKey: SECRET,
    ttlMs: 60_000,
    timeoutMs,
    log,
    now: () => clock.t,
  });
  return { source, clock, warnings: () => lines.filter((l) => l.includes("using the prompt file")) };
}

describe("prompts from Langfuse, with the prompt file as the fallback", () => {
  it("fetches a text prompt by name with the production label and basic auth, and caches it for the TTL", async () => {
    const lf = await standIn(
      json(200, {
        name: "agent_orchestrator",
        type: "text",
        version: 3,
        prompt: "from Langfuse: {{clarification_count}}/{{max_clarifications}}",
        labels: ["production"],
      }),
    );
    const { source, clock } = sourceFor(lf.url);
    const first = await source.resolve("agent_orchestrator", FILE);
    expect(first).toEqual({
      text: "from Langfuse: {{clarification_count}}/{{max_clarifications}}",
      version: "langfuse:agent_orchestrator/v3",
      source: "langfuse",
    });
    expect(lf.requests[0]).toEqual({
      url: "/api/public/v2/prompts/agent_orchestrator?label=production",
      authorization: `Basic ${Buffer.from(`${PUBLIC}:${SECRET}`).toString("base64")}`,
    });
    // within the TTL: from the cache, concurrent asks included
    await Promise.all([source.resolve("agent_orchestrator", FILE), source.resolve("agent_orchestrator", FILE)]);
    clock.t += 59_999;
    await source.resolve("agent_orchestrator", FILE);
    expect(lf.requests).toHaveLength(1);
    clock.t += 1;
    await source.resolve("agent_orchestrator", FILE);
    expect(lf.requests).toHaveLength(2);
  });

  it("concurrent first asks share one request", async () => {
    const lf = await standIn(json(200, { type: "text", version: 1, prompt: "p" }));
    const { source } = sourceFor(lf.url);
    await Promise.all(Array.from({ length: 5 }, () => source.resolve("clarifier.ask", FILE)));
    expect(lf.requests).toHaveLength(1);
  });

  it("a 404, a chat prompt or a server error gives the file's text; the miss is cached too, and logged once per name", async () => {
    for (const handler of [
      json(404, { message: "not found" }),
      json(200, { type: "chat", version: 1, prompt: [{ role: "system", content: "x" }] }),
      json(500, {}),
    ]) {
      const lf = await standIn(handler);
      const { source, clock, warnings } = sourceFor(lf.url);
      expect(await source.resolve("agent_orchestrator", FILE)).toEqual({
        text: FILE.system,
        version: "orchestrator.decide/v1",
        source: "file",
      });
      await source.resolve("agent_orchestrator", FILE);
      expect(lf.requests).toHaveLength(1);
      clock.t += 60_000;
      await source.resolve("agent_orchestrator", FILE);
      expect(lf.requests).toHaveLength(2);
      expect(warnings()).toHaveLength(1);
      expect(warnings().join("")).not.toContain(SECRET);
    }
  });

  it("Langfuse down (nothing listening) gives the file's text", async () => {
    const lf = await standIn(json(200, {}));
    const down = lf.url;
    await new Promise((r) => servers.pop()?.close(r));
    const { source, warnings } = sourceFor(down);
    expect(await source.resolve("agent_orchestrator", FILE)).toMatchObject({ source: "file", text: FILE.system });
    expect(warnings()[0]).toContain("unreachable");
  });

  it("a Langfuse that does not answer within the timeout gives the file's text after the timeout, not later", async () => {
    const lf = await standIn(() => {
      /* never answers */
    });
    const { source, warnings } = sourceFor(lf.url, 200);
    const started = performance.now();
    expect(await source.resolve("agent_orchestrator", FILE)).toMatchObject({ source: "file" });
    expect(performance.now() - started).toBeLessThan(1500);
    expect(warnings()[0]).toContain("no answer within 200 ms");
  });

  it("logs again once Langfuse has served the prompt after a miss", async () => {
    let up = false;
    const lf = await standIn((req, res) =>
      (up ? json(200, { type: "text", version: 2, prompt: "back" }) : json(503, {}))(req, res),
    );
    const { source, clock, warnings } = sourceFor(lf.url);
    await source.resolve("agent_orchestrator", FILE);
    up = true;
    clock.t += 60_000;
    expect(await source.resolve("agent_orchestrator", FILE)).toMatchObject({ source: "langfuse", text: "back" });
    up = false;
    clock.t += 60_000;
    await source.resolve("agent_orchestrator", FILE);
    expect(warnings()).toHaveLength(2);
  });
});

describe("compileTemplate", () => {
  it("fills {{name}} and {{ name }} placeholders, leaving unknown ones as they are", () => {
    expect(compileTemplate("a {{x}} b {{ y }} c {{z}}", { x: 1, y: "two" })).toBe("a 1 b two c {{z}}");
  });
});

describe("Langfuse configuration", () => {
  it("is off without its variables, on with all three, and refused with only some", () => {
    expect(loadAgentConfig({}).langfuse).toBeNull();
    expect(
      loadAgentConfig({
        LANGFUSE_HOST: "http://127.0.0.1:3000",
        LANGFUSE_PUBLIC_KEY: PUBLIC,
        LANGFUSE_SECRET_KEY: SECRET,
        AGENTMESH_PROMPT_CACHE_TTL_MS: "5000",
      }).langfuse,
    ).toEqual({
      host: "http://127.0.0.1:3000",
      publicKey: PUBLIC,
      secretKey: SECRET,
      ttlMs: 5000,
      timeoutMs: 2000,
    });
    expect(() => loadAgentConfig({ LANGFUSE_HOST: "http://127.0.0.1:3000", LANGFUSE_SECRET_KEY: SECRET })).toThrow(
      /LANGFUSE_HOST is set: LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are required too/,
    );
    // a bad secret key is never echoed
    expect(() =>
      loadAgentConfig({ LANGFUSE_HOST: "not a url", LANGFUSE_PUBLIC_KEY: PUBLIC, LANGFUSE_SECRET_KEY: SECRET }),
    ).toThrow(/LANGFUSE_HOST/);
  });
});
