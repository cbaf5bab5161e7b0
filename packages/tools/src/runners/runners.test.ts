import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createRunJsTool, createRunPythonTool } from "../builtins/code-tools.js";
import { createSafeExecutor } from "../executor.js";
import { createToolRegistry } from "../registry.js";
import { createJsRunner } from "./run-js.js";
import { createPythonRunner } from "./run-python.js";
import { createSlots, defaultSandboxSlots } from "./slots.js";

const js = createJsRunner({ timeLimitMs: 1000, maxOutputBytes: 1000 });
const python = createPythonRunner({ timeLimitMs: 3000, maxOutputBytes: 1000 });
afterAll(() => Promise.all([js.close(), python.close()]));

describe("run_js (QuickJS)", () => {
  it("returns the last expression as JSON and captures console output", async () => {
    expect(await js.run("console.log('a', { b: 1 }); console.error('e'); [1, 'two', null]")).toMatchObject({
      ok: true,
      result: '[1,"two",null]',
      stdout: 'a {"b":1}',
      stderr: "e",
      truncated: false,
    });
    expect(await js.run("'plain string'")).toMatchObject({ ok: true, result: "plain string" });
    expect(await js.run("let x = 1")).toMatchObject({ ok: true, result: null });
  });

  it("awaits a returned promise and reports a thrown error as the code's own failure", async () => {
    expect(await js.run("(async () => { await null; return 6 * 7 })()")).toMatchObject({ ok: true, result: "42" });
    expect(await js.run("Promise.reject(new RangeError('nope'))")).toMatchObject({
      ok: false,
      error: "RangeError: nope",
    });
    expect(await js.run("null.x")).toMatchObject({ ok: false, error: expect.stringMatching(/TypeError/) as unknown });
    expect(await js.run("new Promise(() => {})")).toMatchObject({
      ok: false,
      error: "the result promise never settles",
    });
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

describe("run_js: a bounded number of interpreters", () => {
  it("with maxConcurrent 1, calls made together run one after another, each with its whole time limit", async () => {
    const one = createJsRunner({ timeLimitMs: 1000, maxConcurrent: 1 });
    try {
      // each program busies its interpreter for 150 ms and returns when it started
      const busy = "const t = Date.now(); while (Date.now() - t < 150) {} t";
      const runs = await Promise.all([1, 2, 3].map(() => one.run(busy)));
      expect(runs.map((r) => r.ok)).toEqual([true, true, true]);
      const starts = runs.map((r) => Number(r.result)).sort((a, b) => a - b);
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(140);
      expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(140);
    } finally {
      await one.close();
    }
  });
});

describe("run_python (Pyodide in bubblewrap)", { timeout: 60_000 }, () => {
  it("returns repr() of the last expression, stdout, and a raised exception as the code's failure", async () => {
    const st = await python.status();
    if (!st.available) {
      await expect(python.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
      return;
    }
    expect(await python.run("print('hi')\nx = {'a': [1, 2]}\nx")).toMatchObject({
      ok: true,
      result: "{'a': [1, 2]}",
      stdout: "hi\n",
    });
    expect(await python.run("import asyncio\nawait asyncio.sleep(0.01)\n'awaited'")).toMatchObject({
      ok: true,
      result: "'awaited'",
    });
    const err = await python.run("1 / 0");
    expect(err).toMatchObject({ ok: false, result: null });
    expect(err.error).toMatch(/ZeroDivisionError: division by zero/);
    expect(await python.run("0.1 + 0.2 == 0.3, sum(range(10))")).toMatchObject({ ok: true, result: "(False, 45)" });
    const long = await python.run("'x' * 5000");
    expect(long).toMatchObject({ ok: true, truncated: true });
    expect(long.result).toHaveLength(1000);
  });

  // The same for the node binary: a Node kept in a checkout below such a directory (the pinned
  // Node the preflight caches in .agentmesh/node/) must still start the sandbox.
  it.runIf(process.getuid?.() === 0)(
    "as root, runs under a node binary kept below a directory only root may enter",
    async () => {
      const hidden = mkdtempSync(join(tmpdir(), "agentmesh-hidden-node-"));
      const nodePath = join(hidden, "bin", "node");
      mkdirSync(dirname(nodePath), { recursive: true });
      copyFileSync(process.execPath, nodePath);
      const inside = createPythonRunner({ timeLimitMs: 8000, warm: 0, nodePath });
      try {
        expect(statSync(hidden).mode & 0o077).toBe(0);
        const st = await inside.status();
        if (process.env.TOOLS_REQUIRE_SANDBOX === "1") expect(st, st.detail).toMatchObject({ available: true });
        if (st.available) expect(await inside.run("6 * 7")).toMatchObject({ ok: true, result: "42" });
      } finally {
        await inside.close();
        rmSync(hidden, { recursive: true, force: true });
      }
    },
  );

  // As root the sandbox drops to a uid of its own before bwrap, and that uid must still reach the
  // Pyodide files: a checkout below a directory only root may enter (mktemp -d) broke it.
  it.runIf(process.getuid?.() === 0)(
    "as root, runs Pyodide installed below a directory only root may enter",
    async () => {
      const hidden = mkdtempSync(join(tmpdir(), "agentmesh-hidden-"));
      const inside = createPythonRunner({ timeLimitMs: 8000, warm: 0, pyodideDir: join(hidden, "pyodide") });
      try {
        expect(statSync(hidden).mode & 0o077).toBe(0);
        cpSync(dirname(createRequire(import.meta.url).resolve("pyodide/package.json")), join(hidden, "pyodide"), {
          recursive: true,
          dereference: true,
        });
        const st = await inside.status();
        if (process.env.TOOLS_REQUIRE_SANDBOX === "1") expect(st, st.detail).toMatchObject({ available: true });
        if (st.available) expect(await inside.run("6 * 7")).toMatchObject({ ok: true, result: "42" });
      } finally {
        await inside.close();
        rmSync(hidden, { recursive: true, force: true });
      }
    },
  );

  it("refuses to run anything when its boundary is missing: no unsandboxed fallback", async () => {
    for (const opts of [{ bwrapPath: "/nonexistent/bwrap" }, { prlimitPath: "/nonexistent/prlimit" }]) {
      const broken = createPythonRunner(opts);
      try {
        expect(await broken.status()).toMatchObject({ available: false });
        await expect(broken.run("print('should never run')")).rejects.toMatchObject({
          name: "AgentmeshError",
          code: "sandbox_unavailable",
          retryable: false,
        });
      } finally {
        await broken.close();
      }
    }
  });
});

describe("run_python: one interpreter's state is not the next one's", { timeout: 60_000 }, () => {
  it("random is reseeded per call: two calls draw different numbers (the snapshot froze the seed)", async () => {
    if (!(await python.status()).available)
      return expect(python.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
    const draw = "import random\n(random.random(), random.getrandbits(64))";
    const [a, b] = [await python.run(draw), await python.run(draw)];
    expect(a).toMatchObject({ ok: true });
    expect(b).toMatchObject({ ok: true });
    expect(a.result).not.toEqual(b.result);
  });
});

describe("run_python: a bounded number of sandboxes", { timeout: 60_000 }, () => {
  it("slots are numbered, handed out in order, and a waiter whose signal aborts leaves the line", async () => {
    const slots = createSlots(2);
    const a = await slots.acquire();
    const b = await slots.acquire();
    expect([a.slot, b.slot].sort()).toEqual([0, 1]);
    const order: number[] = [];
    const c = slots.acquire().then((s) => (order.push(1), s));
    const ac = new AbortController();
    const d = slots.acquire(ac.signal);
    const e = slots.acquire().then((s) => (order.push(3), s));
    ac.abort(new Error("deadline"));
    await expect(d).rejects.toThrow("deadline");
    b.release();
    b.release(); // twice is once
    a.release();
    const [sc, se] = await Promise.all([c, e]);
    expect(order).toEqual([1, 3]);
    expect([sc.slot, se.slot].sort()).toEqual([0, 1]);
    expect(slots.held()).toBe(2);
    expect(defaultSandboxSlots(2 ** 60)).toBe(1);
    expect(defaultSandboxSlots(1)).toBe(4);
  });

  it("N parallel calls never run more than maxProcesses interpreters at once; a queued call's signal still ends its wait", async () => {
    const one = createPythonRunner({ timeLimitMs: 3000, warm: 0, maxProcesses: 1 });
    try {
      if (!(await one.status()).available)
        return expect(one.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
      const busy = "import time\na = time.time()\nwhile time.time() - a < 0.4:\n    pass\n(a, time.time())";
      const calls = [one.run(busy), one.run(busy), one.run(busy)];
      const ac = new AbortController();
      const t0 = performance.now();
      const queued = one.run("'never'", { signal: ac.signal });
      setTimeout(() => ac.abort(new Error("executor deadline")), 300);
      await expect(queued).rejects.toThrow("executor deadline");
      expect(performance.now() - t0).toBeLessThan(1000);
      const spans = (await Promise.all(calls))
        .map((r) => JSON.parse((r.result ?? "").replace(/^\(/, "[").replace(/\)$/, "]")) as [number, number])
        .sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < spans.length; i++)
        expect((spans[i] as [number, number])[0]).toBeGreaterThanOrEqual((spans[i - 1] as [number, number])[1]);
    } finally {
      await one.close();
    }
  });
});

describe("run_python: the child's output is hostile", { timeout: 60_000 }, () => {
  // the interpreter layer off, as if guest code had reached the child's JS (and so its fd 1)
  const open = createPythonRunner({ timeLimitMs: 8000, warm: 0, hardenInterpreter: false });
  afterAll(() => open.close());
  const exec = createSafeExecutor({
    registry: createToolRegistry([createRunPythonTool({ runner: open, allowedRoles: ["expert"] })]),
  });
  const forge = (prefix: string, body: string) =>
    `import js, json\nforged = json.dumps({"type": "result", "ok": True, "result": "'forged'", "stdout": "x" * 1000000})\njs.process.getBuiltinModule('fs').writeSync(1, ${JSON.stringify(prefix)} + ${body} + "\\n")\njs.process.exit(0)`;

  it("a forged answer line (ok, 1 MB of stdout), a line with a made-up MAC and a non-JSON line are each one typed, non-retryable attempt", async () => {
    if (!(await open.status()).available)
      return expect(open.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
    for (const code of [forge("", "forged"), forge(`${"ab".repeat(32)} `, "forged"), forge("", "'not json at all'")]) {
      const r = await exec.call({
        tool: "run_python",
        args: { code },
        role: "expert",
        sessionId: `s-${Math.random()}`,
        taskId: "t",
      });
      expect(r, code).toMatchObject({
        ok: false,
        error: { code: "tool_error", retryable: false, message: expect.stringMatching(/result protocol/) as unknown },
      });
      expect(r.records).toHaveLength(1);
    }
  });
});

describe("run_python: output that is not UTF-8", { timeout: 60_000 }, () => {
  it("900 invalid bytes under a 1000-byte cap are output (900 replacement characters), not a protocol violation", async () => {
    if (!(await python.status()).available)
      return expect(python.run("1")).rejects.toMatchObject({ code: "sandbox_unavailable" });
    const r = await python.run("import sys\nsys.stdout.buffer.write(b'\\xff' * 900)\nsys.stdout.flush()\n'ok'");
    expect(r).toMatchObject({ ok: true, result: "'ok'" });
    expect(r.stdout).toHaveLength(900);
  });
});

describe("code tools through the executor", { timeout: 60_000 }, () => {
  const exec = createSafeExecutor({
    registry: createToolRegistry([
      createRunJsTool({ runner: js, allowedRoles: ["expert"] }),
      createRunPythonTool({ runner: python, allowedRoles: ["expert"] }),
    ]),
  });
  const call = (tool: string, code: string, role: "expert" | "critic" = "expert") =>
    exec.call({ tool, args: { code }, role, sessionId: `s-${Math.random()}`, taskId: "t" });

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
