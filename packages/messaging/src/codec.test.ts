import { LIMITS, redactUrls, SCHEMA_VERSION, TaskEnvelope, Traceparent } from "@agentmesh/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseNatsUrl } from "./connect.js";
import { decodeMessage, jsonDepthOver, parseBoundedJsonOrThrow, retryDelayMs } from "./decode.js";
import { MICRO_NAME, SEMVER } from "./micro.js";
import { encodeBounded } from "./publisher.js";
import { childTraceparent, newTraceparent } from "./trace.js";

const enc = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
const task = {
  v: SCHEMA_VERSION,
  task_id: "abcdefgh.1.0.0",
  session_id: "abcdefgh",
  role: "planner",
  op: "plan",
  attempt: 0,
  deadline_at: null,
  input: {},
};

describe("decodeMessage", () => {
  it("accepts a valid message", () => {
    expect(decodeMessage(enc(task), TaskEnvelope, "task")).toEqual({ ok: true, value: task });
  });
  it("names the first problem: size, JSON, version, schema", () => {
    const big = new Uint8Array(LIMITS.maxMessageBytes + 1);
    expect(decodeMessage(big, TaskEnvelope, "task")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^oversized task/),
    });
    expect(decodeMessage(enc("{nope"), TaskEnvelope, "task")).toEqual({
      ok: false,
      code: "invalid_message",
      reason: "task is not JSON",
    });
    expect(decodeMessage(enc({ ...task, v: 2 }), TaskEnvelope, "task")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("unsupported schema version 2"),
    });
    expect(decodeMessage(enc([1, 2]), TaskEnvelope, "task")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("version (none)"),
    });
    expect(decodeMessage(enc({ ...task, task_id: "x" }), TaskEnvelope, "task")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("task_id"),
    });
  });
  it("refuses bytes that are not UTF-8 instead of reading them as U+FFFD", () => {
    const text = enc(task);
    const at = text.indexOf(0x22) + 1;
    const bad = Uint8Array.from([...text.subarray(0, at), 0xc3, 0x28, ...text.subarray(at)]);
    expect(decodeMessage(bad, TaskEnvelope, "task")).toEqual({
      ok: false,
      code: "invalid_message",
      reason: "task is not valid UTF-8",
    });
  });
  it('never prints an unexpected version whole (a deep value in "v" must not break the error message)', () => {
    const deepV = new TextEncoder().encode(`{"v":${"[".repeat(60)}${"]".repeat(60)}}`);
    expect(decodeMessage(deepV, TaskEnvelope, "task")).toEqual({
      ok: false,
      code: "invalid_message",
      reason: "task has unsupported schema version a list, expected 1",
    });
  });
});

/** A task whose whole body nests exactly `depth` levels (the envelope object is level 1). */
function taskNested(depth: number): string {
  const inner = depth - 1; // the input value's own levels
  return JSON.stringify({ ...task, input: null }).replace(
    '"input":null',
    `"input":${"[".repeat(inner)}${"]".repeat(inner)}`,
  );
}

describe("JSON nesting cap", () => {
  it("refuses 100,000 levels at decode as a typed invalid_message, under the byte limit", () => {
    const bomb = enc(taskNested(100_000));
    expect(bomb.byteLength).toBeLessThan(LIMITS.maxMessageBytes);
    expect(decodeMessage(bomb, TaskEnvelope, "task")).toEqual({
      ok: false,
      code: "invalid_message",
      reason: "task nests JSON deeper than 64 levels",
    });
    expect(() => parseBoundedJsonOrThrow(bomb, "request body")).toThrow(
      expect.objectContaining({ code: "invalid_message" }),
    );
  });
  it("accepts 64 levels and refuses 65", () => {
    expect(LIMITS.maxJsonDepth).toBe(64);
    const at = decodeMessage(enc(taskNested(64)), TaskEnvelope, "task");
    expect(at.ok).toBe(true);
    expect(decodeMessage(enc(taskNested(65)), TaskEnvelope, "task")).toMatchObject({
      ok: false,
      code: "invalid_message",
      reason: expect.stringMatching(/deeper than 64/),
    });
  });
  it("does not count brackets inside strings, escaped quotes included", () => {
    const deepText = { ...task, input: { text: `\\"${"[{".repeat(500)}` } };
    expect(decodeMessage(enc(deepText), TaskEnvelope, "task").ok).toBe(true);
    // JSON text ["\\"] is one string holding a backslash: the quote after it closes the string
    expect(jsonDepthOver(enc(String.raw`["\\"]`), 1)).toBe(false);
    expect(jsonDepthOver(enc(String.raw`["\\", [1]]`), 1)).toBe(true);
    expect(jsonDepthOver(enc(String.raw`["\"[[", 1]`), 1)).toBe(false);
  });
  it("refuses to publish a message nested deeper than the cap", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 64; i++) deep = [deep];
    expect(() => encodeBounded({ a: deep }, "result")).toThrow(expect.objectContaining({ code: "invalid_message" }));
    expect(() => encodeBounded({ a: [[1]] }, "result")).not.toThrow();
  });
});

describe("retryDelayMs", () => {
  it("doubles from 500 ms, caps at 30 s, and adds at most 250 ms of jitter", () => {
    expect(retryDelayMs(1, { random: () => 0 })).toBe(500);
    expect(retryDelayMs(2, { random: () => 0 })).toBe(1000);
    expect(retryDelayMs(3, { random: () => 0 })).toBe(2000);
    expect(retryDelayMs(50, { random: () => 0 })).toBe(30_000);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (n, r) => {
        const d = retryDelayMs(n, { random: () => r });
        const base = Math.min(500 * 2 ** Math.min(n - 1, 30), 30_000);
        return Number.isInteger(d) && d >= base && d < base + Math.min(250, base / 10) + 1 && d > 0;
      }),
    );
  });
});

describe("encodeBounded", () => {
  it("allows exactly the limit and refuses one byte more", () => {
    const overhead = JSON.stringify("").length;
    expect(encodeBounded("a".repeat(LIMITS.maxMessageBytes - overhead), "x").byteLength).toBe(LIMITS.maxMessageBytes);
    expect(() => encodeBounded("a".repeat(LIMITS.maxMessageBytes - overhead + 1), "x")).toThrow(
      /over the 262144-byte limit/,
    );
  });
  it("counts bytes, not characters", () => {
    expect(() => encodeBounded("é".repeat(LIMITS.maxMessageBytes / 2), "x")).toThrow(
      expect.objectContaining({ code: "payload_too_large" }),
    );
  });
});

describe("traceparent", () => {
  it("generates valid W3C traceparents and continues a trace with a new parent id", () => {
    for (let i = 0; i < 50; i++) {
      const tp = newTraceparent();
      expect(Traceparent.safeParse(tp).success).toBe(true);
      const child = childTraceparent(tp);
      expect(Traceparent.safeParse(child).success).toBe(true);
      expect(child.slice(0, 36)).toBe(tp.slice(0, 36));
      expect(child.slice(36, 52)).not.toBe(tp.slice(36, 52));
    }
    expect(Traceparent.safeParse(childTraceparent("garbage")).success).toBe(true);
    expect(Traceparent.safeParse(childTraceparent(undefined)).success).toBe(true);
  });
});

describe("parseNatsUrl", () => {
  it("takes credentials out of the URL, since the v3 client ignores them", () => {
    expect(parseNatsUrl("nats://test:p%40ss@127.0.0.1:4222")).toEqual({
      servers: ["127.0.0.1:4222"],
      user: "test",
      pass: "p@ss",
    });
    expect(parseNatsUrl("127.0.0.1")).toEqual({ servers: ["127.0.0.1:4222"] });
    expect(parseNatsUrl("nats://a:1, nats://u:p@b:2")).toEqual({ servers: ["a:1", "b:2"], user: "u", pass: "p" });
    expect(parseNatsUrl("tls://secure.example:4443").servers).toEqual(["tls://secure.example:4443"]);
    expect(() => parseNatsUrl("")).toThrow(/no NATS URL/);
  });
  it("redacts passwords", () => {
    expect(redactUrls("nats://u:secret@h:1,nats://v:x@k:2")).toBe("nats://u:***@h:1,nats://v:***@k:2");
    expect(redactUrls("nats://h:1")).toBe("nats://h:1");
  });
});

describe("ADR-32 rules", () => {
  it("accepts SemVer and names without dots only", () => {
    for (const v of ["0.1.0", "1.2.3-rc.1", "1.0.0+build.7", "10.20.30-alpha.beta+exp.sha.5114f85"])
      expect(SEMVER.test(v)).toBe(true);
    for (const v of ["1.0", "v1.0.0", "01.0.0", "1.0.0-", ""]) expect(SEMVER.test(v)).toBe(false);
    expect(MICRO_NAME.test("review_plan-2")).toBe(true);
    expect(MICRO_NAME.test("review.plan")).toBe(false);
  });
});
