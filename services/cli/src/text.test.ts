import { describe, expect, test } from "vitest";
import { SessionEvent } from "@agentmesh/contracts";
import { sessionOptions } from "./commands.js";
import { renderEvent, renderFinal } from "./render.js";
import {
  checkTypedText,
  createTerminalOut,
  parseCapabilities,
  parseCount,
  parseSeconds,
  parseSupervisorFlags,
  terminalSafe,
} from "./text.js";

const ESC = "\u001b";
/** Escape sequences a hostile model or web page could plant: colour, clear screen, OSC 8 link, title, 8-bit CSI, CR overwrite, bell. */
const HOSTILE = `${ESC}[31mred${ESC}[0m ${ESC}[2J${ESC}]8;;https://evil.example${ESC}\\link${ESC}]8;;${ESC}\\ ${ESC}]0;pwned\u0007 \u009b2J ok\rFAKE \u202eevil\u202c`;
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

function captured(secrets: readonly string[] = []) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    sink: createTerminalOut({ stdout: (s) => void out.push(s), stderr: (s) => void err.push(s) }, secrets),
    out,
    err,
  };
}

describe("what the CLI prints holds no terminal control sequences", () => {
  test("terminalSafe strips C0 (but \\n, \\t), DEL, C1 and bidi overrides", () => {
    expect(terminalSafe(`a\tb\nc${ESC}[1md\u007fe\u0085f\u2066g`)).toBe("a\tb\nc[1mdefg");
    expect(terminalSafe(HOSTILE)).not.toMatch(CONTROLS);
  });

  test("every line and error written through the CLI's sink, events and the final answer included", () => {
    const { sink, out, err } = captured();
    const base = { v: 1, session_id: "sess_test_0001", version: 3, index: 0, timestamp: 1 } as const;
    const events = [
      SessionEvent.parse({ ...base, type: "stage", name: "critic", status: "completed", description: HOSTILE }),
      SessionEvent.parse({
        ...base,
        type: "source",
        title: HOSTILE,
        url: "https://x.example",
        path: null,
        snippet: "",
      }),
      SessionEvent.parse({ ...base, type: "error", code: "model_error", message: HOSTILE, component: "planner" }),
    ];
    for (const e of events) sink.line(renderEvent(e, true) ?? "");
    const complete = SessionEvent.parse({
      ...base,
      type: "complete",
      status: "completed",
      final_answer: `answer\n${HOSTILE}`,
      final_reasoning_trace: HOSTILE,
    });
    if (complete.type !== "complete") throw new Error("unreachable");
    sink.line(renderFinal(complete));
    sink.line(JSON.stringify(complete));
    sink.err(`agentmesh: ${HOSTILE}`);
    for (const s of [...out, ...err]) expect(s.slice(0, -1)).not.toMatch(CONTROLS);
    expect(out.join("")).toContain("Answer (completed):\n  answer\n");
  });

  test("secrets are redacted from CLI output", () => {
    const { sink, out, err } = captured(["sk-planted-key-1234"]);
    sink.line("key sk-planted-key-1234 at nats://u:pw-999@h:1");
    sink.err("redis://:pw-888@h:2 refused");
    expect(out.join("") + err.join("")).toBe("key *** at nats://u:***@h:1\nredis://:***@h:2 refused\n");
  });
});

describe("typed questions and answers", () => {
  test.each([
    ["ESC", `What is ${ESC}[2J 2+2?`, /control character \(U\+001B\) at position 9/],
    ["NUL", "What\u0000is 2+2?", /control character \(U\+0000\)/],
    ["C1 CSI", "What \u009b is it?", /control character \(U\+009B\)/],
    ["RLO", "Pay \u202eevil\u202c now", /bidi override character \(U\+202E\)/],
    ["LRI", "a \u2066b\u2069", /bidi override character \(U\+2066\)/],
  ])("refuses %s", (_n, text, msg) => {
    expect(() => checkTypedText("question", text)).toThrow(msg);
  });

  test("accepts newlines, tabs and right-to-left scripts", () => {
    expect(checkTypedText("answer", "line one\n\tline two — שלום مرحبا")).toBe("line one\n\tline two — שלום مرحبا");
  });
});

describe("numeric options", () => {
  test.each(["abc", "", " ", "NaN", "-5", "0", "Infinity", "1e99", "3s"])(
    "--timeout %j is an error, not NaN",
    (raw) => {
      expect(() => parseSeconds("timeout", raw)).toThrow(/--timeout must be a number of seconds/);
    },
  );

  test("valid seconds and counts", () => {
    expect(parseSeconds("timeout", "300")).toBe(300);
    expect(parseSeconds("timeout", "0.5")).toBe(0.5);
    expect(parseSeconds("grace", "0", { allowZero: true })).toBe(0);
    expect(parseCount("limit", "1000")).toBe(1000);
    for (const bad of ["0", "-1", "1.5", "x"])
      expect(() => parseCount("limit", bad)).toThrow(/--limit must be a whole number/);
  });

  test("halo capabilities: known tags in order, repeats dropped; unknown or none named is a clear error", () => {
    expect(parseCapabilities(" Graph,rag,graph ")).toEqual(["graph", "rag"]);
    expect(() => parseCapabilities("graph,telepathy")).toThrow(
      /--capabilities: unknown capability "telepathy" \(known: graph, rag, biomcp, web, llama_mcp, chitchat\)/,
    );
    expect(() => parseCapabilities(" , ")).toThrow(/no capability given/);
  });

  test("supervisor flags: --mode, --depth and --scenario become session options; an unknown value is a clear error", () => {
    expect(parseSupervisorFlags({ mode: "Code", depth: "quick", scenario: "news" })).toEqual({
      mode: "code",
      depth: "quick",
      scenario: "news",
    });
    expect(parseSupervisorFlags({})).toEqual({});
    expect(() => parseSupervisorFlags({ mode: "poetry" })).toThrow(
      /--mode: unknown value "poetry" \(known: chat, research, code, writing, data\)/,
    );
    expect(() => parseSupervisorFlags({ depth: "shallow" })).toThrow(/--depth: unknown value "shallow"/);
    const asked = {
      workflow: "supervisor" as const,
      supervisor: parseSupervisorFlags({ mode: "code", depth: "quick", scenario: "news" }),
      verbose: false,
      json: false,
      timeoutMs: 1000,
    };
    expect(sessionOptions(asked)).toEqual({ mode: "code", depth: "quick", scenario: "news" });
  });
});
