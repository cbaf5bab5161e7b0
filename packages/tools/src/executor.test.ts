import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { argsDigest, canonicalJson } from "./digest.js";
import { createSafeExecutor, type ToolCallRequest } from "./executor.js";
import { scanDangerous } from "./patterns.js";
import { ToolCallRecord } from "./record.js";
import { createToolRegistry, defineTool, type ToolDefinition } from "./registry.js";
import { scriptedTool } from "./testing.js";

const req = (tool: string, args: unknown, extra: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
  tool,
  args,
  role: "researcher",
  sessionId: "s1",
  taskId: "s1.1.0.0",
  ...extra,
});

function setup(tools: ToolDefinition[], opts: { max?: number; random?: () => number } = {}) {
  const slept: number[] = [];
  const exec = createSafeExecutor({
    registry: createToolRegistry(tools),
    maxCallsPerSession: opts.max,
    random: opts.random ?? (() => 0.5),
    sleep: async (ms) => void slept.push(ms),
  });
  return { exec, slept };
}

const Add = defineTool({
  name: "add",
  description: "adds",
  input: z.object({ a: z.number(), b: z.number() }),
  output: z.object({ sum: z.number() }),
  allowedRoles: ["researcher"],
  async execute({ a, b }) {
    return { sum: a + b };
  },
});

describe("safe executor", () => {
  it("validates input before the tool runs and output after", async () => {
    let ran = 0;
    const liar = defineTool({
      name: "liar",
      description: "returns the wrong shape",
      input: z.object({}),
      output: z.object({ n: z.number() }),
      allowedRoles: ["researcher"],
      async execute() {
        ran++;
        return { n: "not a number" } as unknown as { n: number };
      },
    });
    const { exec } = setup([Add, liar]);
    const bad = await exec.call(req("add", { a: 1, b: "2" }));
    expect(bad).toMatchObject({ ok: false, error: { code: "invalid_tool_input", retryable: false, fault: "caller" } });
    expect(bad.records).toHaveLength(1);
    expect(bad.records[0]).toMatchObject({ attempt: 0, outcome: "invalid_tool_input" });
    const out = await exec.call(req("liar", {}));
    expect(out).toMatchObject({ ok: false, error: { code: "invalid_tool_output", retryable: false } });
    expect(ran).toBe(1);
    expect(await exec.call(req("add", { a: 1, b: 2 }))).toMatchObject({ ok: true, output: { sum: 3 } });
  });

  it("refuses a tool the request's policy bans or does not list, before it runs, and counts nothing against the session", async () => {
    let ran = 0;
    const counted = defineTool({
      ...Add,
      name: "counted",
      async execute({ a, b }) {
        ran++;
        return { sum: a + b };
      },
    });
    const { exec } = setup([counted], { max: 1 });
    const banned = await exec.call(req("counted", { a: 1, b: 2 }, { policy: { banned: ["counted"] } }));
    expect(banned).toMatchObject({
      ok: false,
      error: { code: "permission_denied", retryable: false, fault: "caller" },
      records: [{ attempt: 0, outcome: "permission_denied" }],
    });
    const unlisted = await exec.call(req("counted", { a: 1, b: 2 }, { policy: { listed: ["add"] } }));
    expect(unlisted).toMatchObject({ ok: false, error: { code: "permission_denied" }, records: [{ attempt: 0 }] });
    expect(ran).toBe(0);
    // the session's one call is still there
    expect(
      await exec.call(req("counted", { a: 1, b: 2 }, { policy: { listed: ["counted"], banned: [] } })),
    ).toMatchObject({ ok: true, output: { sum: 3 } });
    expect(ran).toBe(1);
  });

  it("answers tool_not_found for an unregistered tool", async () => {
    const { exec } = setup([Add]);
    const r = await exec.call(req("rm_rf", {}));
    expect(r).toMatchObject({ ok: false, error: { code: "tool_not_found", fault: "caller" } });
    expect(r.records[0]?.outcome).toBe("tool_not_found");
  });

  it("refuses a role that is not allowed, without running or retrying", async () => {
    const t = scriptedTool({ name: "secret", allowedRoles: ["expert"], script: [{ output: 1 }] });
    const { exec } = setup([t]);
    const r = await exec.call(req("secret", {}, { role: "critic" }));
    expect(r).toMatchObject({ ok: false, error: { code: "permission_denied", retryable: false } });
    expect(t.calls).toHaveLength(0);
    expect(r.records).toHaveLength(1);
  });

  it("never retries permission or validation errors thrown by the tool, even if marked retryable", async () => {
    for (const code of ["permission_denied", "invalid_tool_input"] as const) {
      const t = scriptedTool({ name: "strict", script: [{ fail: code, retryable: true }] });
      const { exec, slept } = setup([t]);
      const r = await exec.call(req("strict", {}));
      expect(r).toMatchObject({ ok: false, error: { code } });
      expect(t.calls).toHaveLength(1);
      expect(slept).toEqual([]);
    }
  });

  it("retries a tool that fails twice then succeeds: 3 attempts, backoff recorded", async () => {
    const t = scriptedTool({
      name: "flaky",
      script: [{ fail: "tool_error" }, { fail: "unavailable" }, { output: "fine" }],
    });
    const { exec, slept } = setup([t]);
    const r = await exec.call(req("flaky", { q: 1 }));
    expect(r).toMatchObject({ ok: true, output: "fine" });
    expect(r.records.map((x) => [x.attempt, x.outcome, x.backoffMs])).toEqual([
      [1, "tool_error", 200],
      [2, "unavailable", 400],
      [3, "ok", null],
    ]);
    expect(slept).toEqual([200, 400]);
    expect(t.calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    for (const rec of r.records) expect(ToolCallRecord.safeParse(rec).success).toBe(true);
  });

  it("stops after 3 attempts in all and keeps the backoff within ±10% jitter", async () => {
    for (const random of [() => 0, () => 0.999999]) {
      const t = scriptedTool({ name: "down", script: [{ fail: "tool_error" }], retry: { maxAttempts: 7 } });
      const { exec, slept } = setup([t], { random });
      const r = await exec.call(req("down", {}));
      expect(r).toMatchObject({ ok: false, error: { code: "tool_error" } });
      expect(t.calls).toHaveLength(3);
      expect(slept).toHaveLength(2);
      slept.forEach((ms, i) => {
        const base = 200 * 2 ** i;
        expect(Math.abs(ms - base)).toBeLessThanOrEqual(base * 0.1 + 1);
      });
    }
  });

  it("does not retry a code the tool lists as non-retryable", async () => {
    const t = scriptedTool({ name: "slowish", script: [{ fail: "timeout" }], retry: { nonRetryable: ["timeout"] } });
    const { exec } = setup([t]);
    expect(await exec.call(req("slowish", {}))).toMatchObject({ ok: false, error: { code: "timeout" } });
    expect(t.calls).toHaveLength(1);
  });

  it("kills a hung tool at its timeout (within +20%) and tells it through its signal", async () => {
    const t = scriptedTool({ name: "hang", script: [{ hang: true }], timeoutMs: 300, retry: { maxAttempts: 1 } });
    const { exec } = setup([t]);
    const t0 = performance.now();
    const r = await exec.call(req("hang", {}));
    const elapsed = performance.now() - t0;
    expect(r).toMatchObject({ ok: false, error: { code: "timeout", fault: "timeout" } });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(360);
    expect(t.aborted()).toBe(1);
    expect(t.calls[0]?.signal.aborted).toBe(true);
  });

  it("retries a timed-out attempt when the tool allows it, each attempt with its own deadline", async () => {
    const t = scriptedTool({ name: "hang_then_ok", script: [{ hang: true }, { output: 7 }], timeoutMs: 100 });
    const { exec } = setup([t]);
    const r = await exec.call(req("hang_then_ok", {}));
    expect(r).toMatchObject({ ok: true, output: 7 });
    expect(r.records.map((x) => x.outcome)).toEqual(["timeout", "ok"]);
  });

  it("stops at once when the caller aborts, and does not retry", async () => {
    const t = scriptedTool({ name: "hang2", script: [{ hang: true }], timeoutMs: 5000 });
    const { exec } = setup([t]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await exec.call(req("hang2", {}, { signal: ac.signal }));
    expect(r).toMatchObject({ ok: false, error: { code: "cancelled" } });
    expect(t.calls).toHaveLength(1);
  });

  it("caps tool calls per session; other sessions are unaffected", async () => {
    const { exec } = setup([Add], { max: 2 });
    expect((await exec.call(req("add", { a: 1, b: 1 }))).ok).toBe(true);
    expect((await exec.call(req("add", { a: 1, b: 1 }))).ok).toBe(true);
    const third = await exec.call(req("add", { a: 1, b: 1 }));
    expect(third).toMatchObject({ ok: false, error: { code: "budget_exceeded", retryable: false } });
    expect((await exec.call(req("add", { a: 1, b: 1 }, { sessionId: "s2" }))).ok).toBe(true);
  });

  it("gives the task id as idempotency key to tools with side effects only", async () => {
    const effect = scriptedTool({ name: "send", script: [{ output: 1 }], sideEffects: true });
    const pure = scriptedTool({ name: "look", script: [{ output: 1 }] });
    const { exec } = setup([effect, pure]);
    await exec.call(req("send", {}, { taskId: "sid.4.1.0" }));
    await exec.call(req("look", {}, { taskId: "sid.4.1.0" }));
    expect(effect.calls[0]?.idempotencyKey).toBe("sid.4.1.0");
    expect(pure.calls[0]?.idempotencyKey).toBeUndefined();
    expect(effect.calls[0]).toMatchObject({ sessionId: "s1", taskId: "sid.4.1.0" });
  });

  it("turns anything a tool throws into a typed failure instead of crashing", async () => {
    const boom = defineTool({
      name: "boom",
      description: "throws",
      input: z.object({}),
      output: z.unknown(),
      allowedRoles: ["researcher"],
      execute() {
        throw new TypeError("kaput");
      },
    });
    const { exec } = setup([boom]);
    const r = await exec.call(req("boom", {}));
    expect(r).toMatchObject({ ok: false, error: { code: "tool_error", message: "kaput" } });
    expect(r.records).toHaveLength(3);
  });

  it("records the args digest: stable across key order, different for different args", async () => {
    const { exec } = setup([Add]);
    const a = await exec.call(req("add", { a: 1, b: 2 }));
    const b = await exec.call(req("add", { b: 2, a: 1 }));
    const c = await exec.call(req("add", { a: 2, b: 1 }));
    expect(a.records[0]?.argsDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(a.records[0]?.argsDigest).toBe(b.records[0]?.argsDigest);
    expect(a.records[0]?.argsDigest).not.toBe(c.records[0]?.argsDigest);
    expect(argsDigest({ a: 1, b: 2 })).toBe(a.records[0]?.argsDigest);
  });

  it("digests any JSON value the same whatever its key order (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const shuffled = JSON.parse(JSON.stringify(v), (_k, x: unknown) =>
          x !== null && typeof x === "object" && !Array.isArray(x)
            ? Object.fromEntries(Object.entries(x).reverse())
            : x,
        ) as unknown;
        expect(argsDigest(shuffled)).toBe(argsDigest(v));
        expect(JSON.parse(canonicalJson(v))).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300 },
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cyclic/);
  });

  it("flags the dangerous patterns in the record but decides nothing by them", async () => {
    const run = scriptedTool({ name: "run_any", script: [{ output: "ran" }] });
    const { exec } = setup([run]);
    const flagged = await exec.call(
      req("run_any", { code: "import os; os.system('rm -rf /'); open('../../etc/passwd')" }),
    );
    expect(flagged.ok).toBe(true);
    expect(flagged.records[0]?.flags).toEqual(
      expect.arrayContaining(["import", "subprocess", "rm_rf", "open", "path_traversal"]),
    );
    // the same intent, spelled to dodge the list, is not flagged: the list cannot be the boundary
    const dodged = await exec.call(req("run_any", { code: "getattr(__builtins__, '__imp'+'ort__')('o'+'s')" }));
    expect(dodged.ok).toBe(true);
    expect(dodged.records[0]?.flags).toEqual([]);
    expect(scanDangerous({ nested: ["x", { k: "eval(1)" }] })).toEqual(["eval"]);
  });

  it("reports every record to onRecord as it happens", async () => {
    const seen: string[] = [];
    const t = scriptedTool({ name: "twice", script: [{ fail: "tool_error" }, { output: 1 }] });
    const exec = createSafeExecutor({
      registry: createToolRegistry([t]),
      sleep: async () => undefined,
      onRecord: (r) => seen.push(`${r.attempt}:${r.outcome}`),
    });
    await exec.call(req("twice", {}));
    expect(seen).toEqual(["1:tool_error", "2:ok"]);
  });
});
