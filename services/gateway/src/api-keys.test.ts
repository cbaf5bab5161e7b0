import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import {
  ANONYMOUS_OWNER,
  apiKeyEntry,
  generateApiKey,
  keyNameProblem,
  parseApiKeys,
  presentedApiKey,
} from "./api-keys.js";

const hashOf = (key: string) => `sha256:${createHash("sha256").update(key).digest("hex")}`;

/** The invalid_config error `parseApiKeys` throws for these sources. */
function configProblem(...args: Parameters<typeof parseApiKeys>): AgentmeshError {
  try {
    parseApiKeys(...args);
  } catch (e) {
    if (e instanceof AgentmeshError) return e;
    throw e;
  }
  throw new Error("expected an invalid_config error");
}

describe("API keys", () => {
  it("makes keys of am_ and 32 random bytes, base64url, and their config entries", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^am_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.slice(3), "base64url")).toHaveLength(32);
    expect(a).not.toBe(b);
    expect(apiKeyEntry("alice", a)).toBe(`alice=${hashOf(a)}`);
    expect(apiKeyEntry("alice", a)).toMatch(/^alice=sha256:[0-9a-f]{64}$/);
  });

  it("authenticates a configured key as its name and nothing else", () => {
    const alice = generateApiKey();
    const bob = generateApiKey();
    const v = parseApiKeys({ inline: `${apiKeyEntry("alice", alice)}, ${apiKeyEntry("bob", bob)},` });
    expect(v.names).toEqual(["alice", "bob"]);
    expect(v.authenticate(alice)).toBe("alice");
    expect(v.authenticate(bob)).toBe("bob");
    expect(v.authenticate(generateApiKey())).toBeNull();
    expect(v.authenticate(alice.slice(0, -1))).toBeNull();
    expect(v.authenticate(`${alice} `)).toBeNull();
    expect(v.authenticate("")).toBeNull();
    expect(v.authenticate(hashOf(alice))).toBeNull(); // the configured hash is not a key
    expect(v.authenticate("x".repeat(100_000))).toBeNull();
  });

  it("reads a keys file with comments and blank lines, together with the inline entries", () => {
    const [a, b, c] = [generateApiKey(), generateApiKey(), generateApiKey()];
    const text = `# gateway keys\n\n${apiKeyEntry("ci-bot", a)}\r\n   # revoked: old\n  ${apiKeyEntry("dana_2", b)}  \n`;
    const v = parseApiKeys({ inline: apiKeyEntry("alice", c), file: { path: "/run/keys", text } });
    expect(v.names).toEqual(["alice", "ci-bot", "dana_2"]);
    expect([v.authenticate(a), v.authenticate(b), v.authenticate(c)]).toEqual(["ci-bot", "dana_2", "alice"]);
    expect(parseApiKeys({}).names).toEqual([]);
    expect(parseApiKeys({ inline: " , ", file: { path: "/run/keys", text: "# none yet\n" } }).names).toEqual([]);
  });

  it("lists every bad entry at once by position, quoting no key, hash or bad name", () => {
    const raw = generateApiKey();
    const good = apiKeyEntry("alice", generateApiKey());
    const goodHash = good.slice("alice=".length);
    const upper = `sha256:${"AB".repeat(32)}`;
    const inline = [
      good,
      raw,
      `eve=${raw}`,
      `Mallory=${hashOf("m")}`,
      `${raw}=${hashOf("x")}`,
      `anonymous=${hashOf("y")}`,
      "bob=sha256:abc",
      `carol=${upper}`,
    ].join(",");
    const file = {
      path: "/etc/keys",
      text: `# ok\n${apiKeyEntry("alice", generateApiKey())}\nfrank=${goodHash}\nsha256:${"0".repeat(64)}\n`,
    };
    const err = configProblem({ inline, file });
    expect(err.code).toBe("invalid_config");
    const lines = err.message
      .split("\n")
      .slice(1)
      .map((l) => l.trim());
    expect(lines).toEqual([
      "- API keys: AGENTMESH_API_KEYS entry 2: this is a raw key; configure its hash instead (`pnpm gateway:key <name>` prints an entry)",
      "- API keys: AGENTMESH_API_KEYS entry 3 (eve): this is a raw key; configure its hash instead (`pnpm gateway:key <name>` prints an entry)",
      "- API keys: AGENTMESH_API_KEYS entry 4: a name must match [a-z0-9][a-z0-9_-]{0,63} (this one has 7 characters, not shown)",
      "- API keys: AGENTMESH_API_KEYS entry 5: a name may not start with am_ (the prefix of keys)",
      "- API keys: AGENTMESH_API_KEYS entry 6: the name anonymous is reserved for requests without a key",
      "- API keys: AGENTMESH_API_KEYS entry 7 (bob): expected name=sha256:<64 lowercase hex digits>",
      "- API keys: AGENTMESH_API_KEYS entry 8 (carol): the hash must be lowercase hex",
      "- API keys: /etc/keys line 2 (alice): the name is already used by AGENTMESH_API_KEYS entry 1",
      "- API keys: /etc/keys line 3 (frank): the same key as AGENTMESH_API_KEYS entry 1 (alice); each key has one owner",
      "- API keys: /etc/keys line 4: expected name=sha256:<64 lowercase hex digits>",
    ]);
    for (const secret of [raw, raw.slice(3, 20), goodHash.slice(7, 30), "Mallory", "ABAB"])
      expect(err.message).not.toContain(secret);
  });

  it("checks names: the pattern, unique, anonymous and the key prefix reserved", () => {
    for (const ok of ["alice", "a", "0", "ci-bot_2", "x".repeat(64)]) expect(keyNameProblem(ok), ok).toBeNull();
    for (const bad of ["", "Alice", "-a", "_a", "a b", "a.b", "x".repeat(65), "é"])
      expect(keyNameProblem(bad), bad).toMatch(/must match/);
    expect(keyNameProblem(ANONYMOUS_OWNER)).toMatch(/reserved/);
    expect(keyNameProblem("am_team")).toMatch(/may not start with am_/);
  });

  it("takes the key from Authorization: Bearer, else X-API-Key", () => {
    const from = (h: Record<string, string>) => presentedApiKey((name) => h[name]);
    expect(from({ authorization: "Bearer am_abc" })).toBe("am_abc");
    expect(from({ authorization: "bearer   am_abc  " })).toBe("am_abc");
    expect(from({ "x-api-key": " am_xyz " })).toBe("am_xyz");
    expect(from({ authorization: "Bearer am_abc", "x-api-key": "am_xyz" })).toBe("am_abc");
    expect(from({ authorization: "Basic dXNlcjpwYXNz", "x-api-key": "am_xyz" })).toBe("am_xyz");
    expect(from({ authorization: "Basic dXNlcjpwYXNz" })).toBeNull();
    expect(from({ authorization: "Bearer" })).toBeNull();
    expect(from({ authorization: "Bearer a b" })).toBeNull();
    expect(from({ "x-api-key": "  " })).toBeNull();
    expect(from({})).toBeNull();
  });
});
