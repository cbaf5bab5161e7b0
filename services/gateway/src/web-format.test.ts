import { describe, expect, test } from "vitest";
import { formatDuration, safeHref } from "../public/format.js";

// The web page's text helpers (services/gateway/public/format.js).

describe("formatDuration", () => {
  test("milliseconds, tenths of seconds, then minutes, each rounded once to what is shown", () => {
    expect([0, 12.4, 999.4, 999.6, 1234, 59_940, 59_970, 61_000, 119_600, 3_600_000].map(formatDuration)).toEqual([
      "0 ms", "12 ms", "999 ms", "1.0 s", "1.2 s", "59.9 s", "1 min 0 s", "1 min 1 s", "2 min 0 s", "60 min 0 s",
    ]);
  });
});

describe("safeHref", () => {
  test("keeps http(s) links, normalised", () => {
    expect(safeHref("https://redis.io/docs")).toBe("https://redis.io/docs");
    expect(safeHref("HTTP://Example.com")).toBe("http://example.com/");
  });

  test("makes no link from any other scheme, a relative or a malformed URL", () => {
    for (const url of ["javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd", "/relative", "not a url", "", null]) {
      expect(safeHref(url), String(url)).toBeNull();
    }
  });
});
