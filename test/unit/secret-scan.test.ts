import { describe, expect, test } from "vitest";
import { SecretScan, findSecrets } from "../e2e/secret-scan.js";

describe("the e2e secret scan finds what it planted", () => {
  test("planting: URL passwords, an LLM key only for the scripted server, a web key only where it changes nothing", () => {
    const scan = new SecretScan();
    const env = scan.plant("planner", {
      NATS_URL: "nats://127.0.0.1:4222",
      REDIS_URL: "redis://127.0.0.1:6379",
      AGENTMESH_LLM_BASE_URL: "http://127.0.0.1:5555/v1",
      LOG_LEVEL: "warn",
    });
    expect(env.NATS_URL).toMatch(/^nats:\/\/agentmesh:planted-nats-pw-[0-9a-f]+@127\.0\.0\.1:4222$/);
    expect(env.REDIS_URL).toMatch(/^redis:\/\/default:planted-redis-pw-[0-9a-f]+@127\.0\.0\.1:6379$/);
    expect(env.AGENTMESH_LLM_API_KEY).toMatch(/^planted-llm-key-/);
    expect(env.AGENTMESH_WEB_SEARCH_KEY).toMatch(/^planted-web-key-/);
    expect(env.LOG_LEVEL).toBe("info");
    const retriever = scan.plant("retriever", {
      NATS_URL: "nats://u:already-there@127.0.0.1:4222",
      AGENTMESH_LLM_BASE_URL: "https://api.example/v1",
    });
    expect(retriever.AGENTMESH_WEB_SEARCH_KEY).toBeUndefined();
    expect(retriever.AGENTMESH_LLM_API_KEY).toBeUndefined();
    expect(retriever.NATS_URL).toBe("nats://u:already-there@127.0.0.1:4222");
    expect(scan.secrets).toContain("already-there");
    expect(scan.secrets).toHaveLength(5);
  });

  test("a planted secret in any recorded text fails the check, naming where; the report masks it", () => {
    const scan = new SecretScan();
    const env = scan.plant("coordinator", { REDIS_URL: "redis://127.0.0.1:6379" });
    const pw = /default:([^@]+)@/.exec(env.REDIS_URL ?? "")?.[1] ?? "";
    scan.record("output of coordinator", '{"level":30,"msg":"connecting"}');
    expect(() => scan.check()).not.toThrow();
    scan.record(
      "events of s1",
      `{"type":"error","message":"cannot reach Redis at redis://default:${pw}@127.0.0.1:6379"}`,
    );
    let msg = "";
    try {
      scan.check();
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toContain("secret scan: 1 planted secret(s) found");
    expect(msg).toContain("events of s1");
    expect(msg).not.toContain(pw);
  });

  test("findSecrets counts every occurrence", () => {
    const hits = findSecrets(
      [
        { where: "a", text: "k1 x k1" },
        { where: "b", text: "none" },
      ],
      ["k1"],
    );
    expect(hits.map((h) => h.where)).toEqual(["a", "a"]);
  });
});
