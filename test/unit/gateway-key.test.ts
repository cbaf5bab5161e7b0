import { describe, expect, it } from "vitest";
import { apiKeyEntry, parseApiKeys } from "@agentmesh/gateway";
import { gatewayKey } from "../../scripts/gateway-key.js";

describe("pnpm gateway:key", () => {
  it("prints a new key once and the config entry that authenticates it as the name", () => {
    const r = gatewayKey(["alice"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const key = /^ {2}(am_[A-Za-z0-9_-]{43})$/m.exec(r.stdout)?.[1] ?? "";
    const entry = /^ {2}(alice=sha256:[0-9a-f]{64})$/m.exec(r.stdout)?.[1] ?? "";
    expect(entry).toBe(apiKeyEntry("alice", key));
    expect(r.stdout.split(key)).toHaveLength(2); // the key appears once
    expect(parseApiKeys({ inline: entry }).authenticate(key)).toBe("alice");
    expect(gatewayKey(["alice"]).stdout).not.toContain(key);
  });

  it("refuses a bad or reserved name, or a missing one, clearly and without making a key", () => {
    const made: string[] = [];
    const newKey = () => {
      made.push("x");
      return "am_x";
    };
    for (const [argv, message] of [
      [["Alice"], /no key made: a name must match \[a-z0-9\]\[a-z0-9_-\]\{0,63\}/],
      [["anonymous"], /no key made: the name anonymous is reserved/],
      [["am_team"], /no key made: a name may not start with am_/],
      [[], /^usage: pnpm gateway:key <name>/],
      [["alice", "bob"], /^usage: pnpm gateway:key <name>/],
    ] as const) {
      const r = gatewayKey(argv, newKey);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(message);
    }
    expect(made).toEqual([]);
  });
});
