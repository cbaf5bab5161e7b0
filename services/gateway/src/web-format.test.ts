import { describe, expect, test } from "vitest";
import { codeRunText, formatDuration, safeHref } from "../public/format.js";

// The web page's text helpers (services/gateway/public/format.js).

describe("formatDuration", () => {
  test("milliseconds, tenths of seconds, then minutes, each rounded once to what is shown", () => {
    expect([0, 12.4, 999.4, 999.6, 1234, 59_940, 59_970, 61_000, 119_600, 3_600_000].map(formatDuration)).toEqual([
      "0 ms",
      "12 ms",
      "999 ms",
      "1.0 s",
      "1.2 s",
      "59.9 s",
      "1 min 0 s",
      "1 min 1 s",
      "2 min 0 s",
      "60 min 0 s",
    ]);
  });
});

describe("safeHref", () => {
  test("keeps http(s) links, normalised", () => {
    expect(safeHref("https://redis.io/docs")).toBe("https://redis.io/docs");
    expect(safeHref("HTTP://Example.com")).toBe("http://example.com/");
  });

  test("makes no link from any other scheme, a relative or a malformed URL", () => {
    for (const url of [
      "javascript:alert(1)",
      " JavaScript:alert(1)",
      "data:text/html,<b>x</b>",
      "file:///etc/passwd",
      "/relative",
      "not a url",
      "",
      null,
    ]) {
      expect(safeHref(url), String(url)).toBeNull();
    }
  });
});

describe("codeRunText", () => {
  const run = { language: "python", exitCode: 0, stdout: "", stderr: "", result: null, truncated: false };

  test("a run that ended shows its exit code, its output and its last value", () => {
    expect(codeRunText({ ...run, stdout: "6 * 7 is\n", result: "42" })).toBe(
      "exit code 0\nstdout:\n6 * 7 is\nresult: 42",
    );
  });

  test("a failed run shows its stderr whole, the exception at its end", () => {
    const stderr = `${"warning: deprecated\n".repeat(40)}Traceback (most recent call last):\nZeroDivisionError: division by zero`;
    const text = codeRunText({ ...run, exitCode: 1, stdout: "started\n", stderr });
    expect(text.startsWith("exit code 1\nstdout:\nstarted\nstderr:\nwarning: deprecated\n")).toBe(true);
    expect(text.endsWith("ZeroDivisionError: division by zero")).toBe(true);
    expect(text).toContain(stderr);
  });

  test("a run a limit stopped says so, and cut output is marked", () => {
    expect(codeRunText({ ...run, exitCode: null, stderr: "timeout: the code ran over 10 s", truncated: true })).toBe(
      "stopped by a limit\nstderr:\ntimeout: the code ran over 10 s\n(output cut)",
    );
  });
});
