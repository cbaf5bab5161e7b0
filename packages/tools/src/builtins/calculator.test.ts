import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createCalculatorTool } from "./calculator.js";
import { evaluateExact } from "./exact.mjs";

// a generous limit for the ordinary calls (mathjs loads on the first expression that is not plain arithmetic), a tight one for the runaway
const calc = createCalculatorTool({ allowedRoles: ["expert"], timeoutMs: 10_000 });
const exec = createSafeExecutor({ registry: createToolRegistry([calc.tool]) });
const tight = createCalculatorTool({ allowedRoles: ["expert"], timeoutMs: 2000 });
const tightExec = createSafeExecutor({ registry: createToolRegistry([tight.tool]) });
// the worker loads mathjs before its first answer that is not plain arithmetic (seconds on a busy
// machine): wait for that outside the tool's deadline, so no test's first call is a timeout
beforeAll(() => calc.pool.run({ expression: "[1]", maxChars: 10 }, AbortSignal.timeout(60_000)), 70_000);
afterAll(() => Promise.all([calc.pool.close(), tight.pool.close()]));

const evaluate = (expression: string) =>
  exec.call({ tool: "calculator", args: { expression }, role: "expert", sessionId: `s-${expression}`, taskId: "t" });

// each worker loads mathjs (~2 s on a busy 2-core machine) before its first answer that needs it
describe("calculator", { timeout: 30_000 }, () => {
  it("is exact for decimals: 0.1 + 0.2 is 0.3", async () => {
    expect(await evaluate("0.1 + 0.2")).toMatchObject({ ok: true, output: { result: "0.3" } });
    expect(await evaluate("0.3 - 0.1")).toMatchObject({ ok: true, output: { result: "0.2" } });
  });

  it("keeps every digit of 18-digit products, identical to exact integer arithmetic", async () => {
    const pairs: Array<[bigint, bigint]> = [
      [123456789012345678n, 987654321098765432n],
      [999999999999999999n, 999999999999999999n],
      [-314159265358979323n, 271828182845904523n],
    ];
    for (const [a, b] of pairs) {
      const r = await evaluate(`${a} * ${b}`);
      expect(r).toMatchObject({ ok: true, output: { result: (a * b).toString() } });
    }
  });

  it("evaluates plain arithmetic with the one exact evaluator: the same value as evaluateExact, and its refusals hold", async () => {
    for (const e of ["2^64", "1/3", "12.5 * (3 + 4)", "-7 mod 3", "10^100"]) {
      const exact = evaluateExact(e);
      if (!exact.ok) throw new Error(`${e}: ${exact.reason}`);
      expect(await evaluate(e), e).toMatchObject({ ok: true, output: { result: exact.value, type: "BigNumber" } });
    }
    expect(await evaluate("1/0")).toMatchObject({
      ok: false,
      error: { code: "invalid_tool_input", message: expect.stringContaining("division by zero") },
    });
    expect(await evaluate("10^10^10")).toMatchObject({
      ok: false,
      error: { code: "invalid_tool_input", message: expect.stringContaining("too large") },
    });
  });

  it("handles functions, matrices and units, with a fresh scope per call", async () => {
    expect(await evaluate("sqrt(16) + 2^10")).toMatchObject({ ok: true, output: { result: "1028" } });
    expect(await evaluate("det([1, 2; 3, 4])")).toMatchObject({ ok: true, output: { result: "-2" } });
    expect(await evaluate("x = 3; x^2")).toMatchObject({ ok: true, output: { result: "9" } });
    expect(await evaluate("x + 1")).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
  });

  it("has no way to reach the parser, imports or new units", async () => {
    for (const e of [
      "import({evil: 1})",
      'evaluate("1+1")',
      'parse("1")',
      'createUnit("foo")',
      'simplify("x+x")',
      'compile("1")',
    ]) {
      const r = await evaluate(e);
      expect(r, e).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
      expect(r.records).toHaveLength(1);
    }
  });

  it("no call changes what a later call computes: config, units, imports and assignments stay in their own call", async () => {
    // one worker serves every session here (the pool's default size is 1), as in production
    // matrices, units and det() are evaluated by mathjs itself (plain arithmetic never reaches it)
    const probes = [
      "[0.1 + 0.2]",
      "[sqrt(2)]",
      "5 cm to inch",
      "[pi]",
      "det([2, 1; 1, 3]) / 7",
      "[sin(pi / 6)]",
      "[cos(pi)]",
    ];
    const baseline = new Map<string, string>();
    for (const e of probes) {
      const r = await evaluate(e);
      if (!r.ok) throw new Error(`${e}: ${r.error.message}`);
      baseline.set(e, (r.output as { result: string }).result);
    }
    expect(baseline.get("[0.1 + 0.2]")).toBe("[0.3]");
    // mathjs' own functions still see the instance's config (BigNumber pi, 64 digits)
    expect(baseline.get("[sin(pi / 6)]")).toBe("[0.5]");
    expect(baseline.get("[cos(pi)]")).toBe("[-1]");
    expect(baseline.get("[sqrt(2)]")).toMatch(
      /^\[1\.4142135623730950488016887242096980785696718753769480731766797\d+\]$/,
    );
    const payloads = [
      'config({number: "number"})',
      "config({precision: number(1000000)})",
      'f = config; f({number: "number"})',
      "map([1], config)",
      'config({number: "Fraction"}); 0.1 + 0.2',
      'createUnit("inch", "1 m", {override: true})',
      "import({sqrt: 7}, {override: true})",
      "sqrt = 5; pi = 4",
      'evaluate("config({number: \\"number\\"})")',
      "parser()",
    ];
    for (const p of payloads) {
      const r = await evaluate(p);
      // the payload itself is refused or stays in its own scope; either way the next calls are unchanged
      if (r.ok) expect(p).toBe("sqrt = 5; pi = 4");
      const t0 = performance.now();
      for (const [e, want] of baseline)
        expect(await evaluate(e), `${e} after ${p}`).toMatchObject({ ok: true, output: { result: want } });
      expect(performance.now() - t0, `after ${p}`).toBeLessThan(5000);
    }
  });

  it("answers bad expressions with a typed error, never a crash", async () => {
    expect(await evaluate("1 +")).toMatchObject({ ok: false, error: { code: "invalid_tool_input", retryable: false } });
    expect(await evaluate("f(x) = f(x + 1); f(1)")).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
  });

  it("a matrix too big for its worker fails as resource_exhausted or timeout, and the next call works", async () => {
    const r = await evaluate("zeros(30000, 30000)");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(["resource_exhausted", "timeout"]).toContain(r.error.code);
    expect(await evaluate("1 + 1")).toMatchObject({ ok: true, output: { result: "2" } });
  });

  it("runs heavy work off the event loop and kills it at the deadline (main thread keeps ticking)", async () => {
    let last = performance.now();
    let maxGap = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 50);
    await tightExec.call({
      tool: "calculator",
      args: { expression: "1" },
      role: "expert",
      sessionId: "warm",
      taskId: "t",
    });
    const t0 = performance.now();
    // an exact 200x200 determinant takes ~20 s of synchronous mathjs work
    const r = await tightExec.call({
      tool: "calculator",
      args: { expression: "det(ones(200, 200) + diag(ones(200)))" },
      role: "expert",
      sessionId: "heavy",
      taskId: "t",
    });
    const elapsed = performance.now() - t0;
    clearInterval(tick);
    expect(r).toMatchObject({ ok: false, error: { code: "timeout" } });
    expect(r.records).toHaveLength(1);
    expect(elapsed).toBeLessThan(2000 * 1.2);
    expect(maxGap).toBeLessThan(200);
    // the worker was killed, not abandoned: this process burns no CPU on the determinant any more
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 600));
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(300);
  });
});
