import { describe, expect, test } from "vitest";
import { AgentmeshError, redactArgs, redactText, redactUrls, secretsOfUrl } from "@agentmesh/contracts";

describe("redactUrls: no URL credentials survive, whatever the text around them", () => {
  test.each([
    ["nats://u:secret@h:1", "nats://u:***@h:1"],
    ["nats://u:secret@h:1,nats://v:x@k:2", "nats://u:***@h:1,nats://v:***@k:2"],
    ["redis://:pw-only@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"],
    ["rediss://coordinator:p@ss@redis.example:6380", "rediss://coordinator:***@redis.example:6380"],
    ["nats://s3cr3t-token@127.0.0.1:4222", "nats://***@127.0.0.1:4222"],
    ["https://user:k%2Fey@api.example/v1", "https://user:***@api.example/v1"],
    ['{"nats":"nats://a:b@c:1","msg":"x"}', '{"nats":"nats://a:***@c:1","msg":"x"}'],
    [
      "cannot reach Redis at redis://u:pw@h:1: ECONNREFUSED, mail me at ops@example.com",
      "cannot reach Redis at redis://u:***@h:1: ECONNREFUSED, mail me at ops@example.com",
    ],
    ["nats://h:1 and redis://h:2", "nats://h:1 and redis://h:2"],
    ["no url here", "no url here"],
  ])("%s", (input, want) => {
    expect(redactUrls(input)).toBe(want);
  });
});

describe("redactText: known secret values are replaced wherever they appear", () => {
  test("API keys and passwords, longest first, short values left alone", () => {
    const out = redactText("key sk-live-123456 and sk-live-123456-extended, pw hunter2x, short ab", [
      "sk-live-123456",
      "sk-live-123456-extended",
      "hunter2x",
      "ab",
    ]);
    expect(out).toBe("key *** and ***, pw ***, short ab");
  });

  test("URL credentials are redacted even without a list", () => {
    expect(redactText("at nats://u:pw@h:1")).toBe("at nats://u:***@h:1");
  });
});

describe("secretsOfUrl", () => {
  test("passwords and tokens, raw and percent-decoded", () => {
    expect(secretsOfUrl("redis://u:p%40ss@h:1")).toEqual(["p%40ss", "p@ss"]);
    expect(secretsOfUrl("nats://tok@a:1,nats://v:w@b:2")).toEqual(["tok", "w"]);
    expect(secretsOfUrl("nats://127.0.0.1:4222")).toEqual([]);
  });
});

describe("AgentmeshError never carries URL credentials", () => {
  test("in its message and its wire form", () => {
    const e = new AgentmeshError("unavailable", "cannot reach NATS at nats://svc:topsecret@10.0.0.1:4222");
    expect(e.message).toBe("cannot reach NATS at nats://svc:***@10.0.0.1:4222");
    expect(JSON.stringify(e.toWire())).not.toContain("topsecret");
    expect(AgentmeshError.from(new Error("redis://u:topsecret@h failed")).message).not.toContain("topsecret");
  });
});

describe("redactArgs: tool arguments as events show them", () => {
  test("hides values whose names say they are secrets, at any depth, and URL credentials in every string", () => {
    const args = {
      url: "https://bob:hunter22@api.example.com/v1?q=1",
      headers: { Authorization: "Bearer sk-live-123456", "X-API-Key": "k-9999", accept: "json" },
      password: "s3cret-pass",
      apiKey: "abcd1234",
      private_key: "-----BEGIN",
      access_token: "tok-5555",
      nested: [{ client_secret: "zzzz" }, "redis://:pw12345@cache:6379"],
      max_tokens: 100,
      tokenizer: "cl100k",
      author: "Ada",
      query: "weather in Paris",
      empty_password: "",
    };
    expect(redactArgs(args)).toEqual({
      url: "https://bob:***@api.example.com/v1?q=1",
      headers: { Authorization: "***", "X-API-Key": "***", accept: "json" },
      password: "***",
      apiKey: "***",
      private_key: "***",
      access_token: "***",
      nested: [{ client_secret: "***" }, "redis://:***@cache:6379"],
      max_tokens: 100,
      tokenizer: "cl100k",
      author: "Ada",
      query: "weather in Paris",
      empty_password: "",
    });
    // the input is not changed: the task still carries what the workflow gave
    expect(args.password).toBe("s3cret-pass");
  });
});
