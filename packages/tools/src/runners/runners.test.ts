import { afterAll, describe, expect, it } from "vitest";
import { createRunJsTool, createRunPythonTool } from "../builtins/code-tools.js";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createJsRunner } from "./run-js.js";
import { createPythonRunner } from "./run-python.js";

const js = createJsRunner({ timeLimitMs: 1000, maxOutputBytes: 1000 });
const python = createPythonRunner({ timeLimitMs: 3000, maxOutputBytes: 1000 });
afterAll(() => Promise.all([js.close(), python.close()]));

describe("run_js (QuickJS)", () => {
  it("returns the last expression as JSON and captures console output", async () => {
    expect(await js.run("console.log('a', { b: 1 }); console.error('e'); [1, 'two', null]")).toMatchObject({
      ok: true, result: '[1,"two",null]', stdout: 'a {"b":1}', stderr: "e", truncated: false,
    });
    expect(await js.run("'plain string'")).toMatchObject({ ok: true, result: "plain string" });
    expect(await js.run("let x = 1")).toMatchObject({ ok: true, result: null });
  });

  it("awaits a returned promise and reports a thrown error as the code's own failure", async () => {
    expect(await js.run("(async () => { await null; return 6 * 7 })()")).toMatchObject({ ok: true, result: "42" });
    expect(await js.run("Promise.reject(new RangeError('nope'))")).toMatchObject({ ok: false, error: "RangeError: nope" });
    expect(await js.run("null.x")).toMatchObject({ ok: false, error: expect.stringMatching(/TypeError/) as unknown });
    expect(await js.run("new Promise(() => {})")).toMatchObject({ ok: false, error: "the result promise never settles" });
  });

  it("cuts a long result and says so", async () => {
    const r = await js.run("'x'.repeat(5000)");
    expect(r).toMatchObject({ ok: true, truncated: true });
    expect(r.result).toHaveLength(1000);
  });

  it("reports its boundary", async () => {
    expect(await js.status()).toMatchObject({ available: true, detail: expect.stringMatching(/QuickJS/) as unknown });
  });
});

describe("run_python (Pyodide in bubblewrap)", { timeout: 60_000 }, () => {
  it("returns repr() of the last expression, stdout, and a raised exception as the code's failure", async () => {
    const st = await python.status();
    if (!st.available) {
      await expect(python.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
      return;
    }
    expect(await python.run("print('hi')\nx = {'a': [1, 2]}\nx")).toMatchObject({ ok: true, result: "{'a': [1, 2]}", stdout: "hi\n" });
    expect(await python.run("import asyncio\nawait asyncio.sleep(0.01)\n'awaited'")).toMatchObject({ ok: true, result: "'awaited'" });
    const err = await python.run("1 / 0");
    expect(err).toMatchObject({ ok: false, result: null });
    expect(err.error).toMatch(/ZeroDivisionError: division by zero/);
    expect(await python.run("0.1 + 0.2 == 0.3, sum(range(10))")).toMatchObject({ ok: true, result: "(False, 45)" });
    const long = await python.run("'x' * 5000");
    expect(long).toMatchObject({ ok: true, truncated: true });
    expect(long.result).toHaveLength(1000);
  });

  it("refuses to run anything when its boundary is missing: no unsandboxed fallback", async () => {
    for (const opts of [{ bwrapPath: "/nonexistent/bwrap" }, { prlimitPath: "/nonexistent/prlimit" }]) {
      const broken = createPythonRunner(opts);
      try {
        expect(await broken.status()).toMatchObject({ available: false });
        await expect(broken.run("print('should never run')")).rejects.toMatchObject({ name: "AgentmeshError", code: "sandbox_unavailable", retryable: false });
      } finally {
        await broken.close();
      }
    }
  });
});

describe("code tools through the executor", { timeout: 60_000 }, () => {
  const exec = createSafeExecutor({
    registry: createToolRegistry([createRunJsTool({ runner: js, allowedRoles: ["expert"] }), createRunPythonTool({ runner: python, allowedRoles: ["expert"] })]),
  });
  const call = (tool: string, code: string, role: "expert" | "critic" = "expert") => exec.call({ tool, args: { code }, role, sessionId: `s-${Math.random()}`, taskId: "t" });

  it("runs code for an allowed role and refuses others", async () => {
    expect(await call("run_js", "2 ** 10")).toMatchObject({ ok: true, output: { ok: true, result: "1024" } });
    expect(await call("run_js", "1", "critic")).toMatchObject({ ok: false, error: { code: "permission_denied" } });
    expect(await call("run_js", "")).toMatchObject({ ok: false, error: { code: "invalid_tool_input" } });
  });

  it("does not retry a runaway: one attempt, a typed timeout", async () => {
    const r = await call("run_js", "for (;;) {}");
    expect(r).toMatchObject({ ok: false, error: { code: "timeout", retryable: false } });
    expect(r.records).toHaveLength(1);
  });

  it("run_python answers through the executor (or sandbox_unavailable where it cannot be confined)", async () => {
    const r = await call("run_python", "len('agentmesh')");
    if ((await python.status()).available) expect(r).toMatchObject({ ok: true, output: { ok: true, result: "9" } });
    else expect(r).toMatchObject({ ok: false, error: { code: "sandbox_unavailable" } });
  });
});
