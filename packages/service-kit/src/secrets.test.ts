import { describe, expect, test } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { parseEnv, secretsOf } from "./env.js";
import { describeFailure } from "./lifecycle.js";
import { createLogger } from "./logger.js";

const KEY = "sk-planted-LLM-key-0123456789";
const SEARCH = "BSA-planted-search-key-9876";
const ENV = {
  NATS_URL: "nats://agent:nats-pass-4711@127.0.0.1:4222",
  REDIS_URL: "redis://coordinator:redis%40pass-0815@127.0.0.1:6379",
  AGENTMESH_LLM_API_KEY: KEY,
  AGENTMESH_WEB_SEARCH_KEY: SEARCH,
  AGENTMESH_PREFIX: "agentmesh",
};
const PLANTED = [KEY, SEARCH, "nats-pass-4711", "redis%40pass-0815", "redis@pass-0815"];

/** A logger writing into an array, with this env's secrets. */
function capture() {
  const lines: string[] = [];
  const log = createLogger({
    service: "t",
    level: "debug",
    secrets: secretsOf(ENV),
    destination: { write: (s: string) => void lines.push(s) },
  });
  return { log, text: () => lines.join("") };
}

describe("secretsOf", () => {
  test("API keys whole, URL passwords raw and decoded; nothing else", () => {
    expect([...secretsOf(ENV)].sort()).toEqual([...PLANTED].sort());
    expect(secretsOf({ NATS_URL: "nats://127.0.0.1:4222", AGENTMESH_PREFIX: "x" })).toEqual([]);
  });
});

describe("logs carry no secrets", () => {
  test("URLs, fields named like secrets, secret values inside messages and errors", () => {
    const { log, text } = capture();
    log.info({ nats: ENV.NATS_URL, redis: ENV.REDIS_URL }, "connecting");
    log.info({ apiKey: KEY, llm: { api_key: KEY, headers: { authorization: `Bearer ${KEY}` } } }, "config");
    log.warn(`the model said: your key ${KEY} is wrong; search key ${SEARCH}`);
    log.error({ err: new Error(`upstream refused ${KEY} at ${ENV.REDIS_URL}`) }, "failed");
    log.info({ quoted: `"${KEY}"` }, "json-escaped");
    const out = text();
    expect(out).toContain("connecting");
    expect(out).toContain("nats://agent:***@127.0.0.1:4222");
    for (const s of PLANTED) expect(out).not.toContain(s);
  });
});

describe("configuration errors echo no secrets", () => {
  test("an invalid URL with a password and a secret value are not shown", () => {
    let msg = "";
    try {
      parseEnv(["REDIS_URL", "AGENTMESH_LLM_API_KEY", "AGENTMESH_LLM_TIMEOUT_MS"] as const, {
        REDIS_URL: "redis://u:p/ss-secret@bad host",
        AGENTMESH_LLM_TIMEOUT_MS: "soon",
      });
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toContain("REDIS_URL=");
    expect(msg).toContain('AGENTMESH_LLM_TIMEOUT_MS="soon"');
    expect(msg).not.toContain("ss-secret");
  });
});

describe("describeFailure", () => {
  test("redacts URL credentials and known secrets", () => {
    const line = describeFailure(new Error(`model at https://u:pw1234@llm.example refused key ${KEY}`), secretsOf(ENV));
    expect(line).toBe("model at https://u:***@llm.example refused key ***");
    expect(describeFailure(new AgentmeshError("unavailable", `cannot reach NATS at ${ENV.NATS_URL}`))).not.toContain(
      "nats-pass-4711",
    );
  });
});
