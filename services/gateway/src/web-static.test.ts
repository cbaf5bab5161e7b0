import { readFileSync } from "node:fs";
import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import { mountStatic } from "./static.js";

// The headers the web page is served with (static.ts): the page itself may not eval, submit a
// form or be framed; only the chart frame's document may eval, and it connects nowhere, is
// framed only by the page and is sandboxed with an opaque origin.

const app = new Hono<{ Variables: { owner: string } }>();
mountStatic(app);

/** The CSP of the answer to GET `path`, as directive → its sources. */
async function csp(path: string): Promise<Map<string, string[]>> {
  const res = await app.request(path);
  expect(res.status, path).toBe(200);
  const header = res.headers.get("content-security-policy");
  expect(header, `${path} has no CSP`).not.toBeNull();
  const out = new Map<string, string[]>();
  for (const part of (header ?? "").split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out.set(name, sources);
  }
  return out;
}

const FRAME = "/assets/chart-frame.html";
const OTHERS = [
  "/",
  "/assets/index.html",
  "/assets/app.js",
  "/assets/charts.js",
  "/assets/chart-frame.js",
  "/assets/style.css",
  "/vendor/vega.min.js",
];

describe("the web page's Content-Security-Policy", () => {
  test("the page runs only the gateway's scripts, never eval, submits no form, frames only the gateway and is framed by nobody", async () => {
    const page = await csp("/");
    expect(page.get("script-src")).toEqual(["'self'"]);
    expect(page.get("form-action")).toEqual(["'none'"]);
    expect(page.get("frame-src")).toEqual(["'self'"]);
    expect(page.get("frame-ancestors")).toEqual(["'none'"]);
    expect(page.get("connect-src")).toEqual(["'self'"]);
    expect(page.get("object-src")).toEqual(["'none'"]);
    expect(page.get("base-uri")).toEqual(["'none'"]);
    expect([...page.values()].flat()).not.toContain("'unsafe-eval'");
    expect([...page.values()].flat()).not.toContain("'unsafe-inline'");
  });

  test.each(OTHERS)("%s is served with a CSP without 'unsafe-eval'", async (path) => {
    const policy = await csp(path);
    expect([...policy.values()].flat()).not.toContain("'unsafe-eval'");
    expect(policy.get("frame-ancestors")).toEqual(["'none'"]);
  });

  test("the chart frame may eval, but connects nowhere, is framed only by the page and is sandboxed without its origin", async () => {
    const frame = await csp(FRAME);
    expect(frame.get("script-src")).toEqual(["'self'", "'unsafe-eval'"]);
    expect(frame.get("connect-src")).toEqual(["'none'"]);
    expect(frame.get("default-src")).toEqual(["'none'"]);
    expect(frame.get("form-action")).toEqual(["'none'"]);
    expect(frame.get("frame-ancestors")).toEqual(["'self'"]);
    expect(frame.get("sandbox")).toEqual(["allow-scripts"]);
    expect([...frame.values()].flat()).not.toContain("'unsafe-inline'");
  });

  test("the page loads no vega itself; the chart frame does, and the page frames it sandboxed without allow-same-origin", () => {
    const read = (name: string) => readFileSync(new URL(`../public/${name}`, import.meta.url), "utf8");
    expect(read("index.html")).not.toContain("/vendor/");
    expect(read("charts.js")).not.toContain("/vendor/");
    const sandboxes = [...read("charts.js").matchAll(/setAttribute\("sandbox", "([^"]*)"\)/g)].map((m) => m[1]);
    expect(sandboxes).toEqual(["allow-scripts"]);
    expect(read("chart-frame.html")).toContain('<script src="/vendor/vega-embed.min.js" defer></script>');
  });

  test("every answer is nosniff and sends no referrer", async () => {
    for (const path of [FRAME, ...OTHERS]) {
      const res = await app.request(path);
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), path).toBe("no-referrer");
    }
  });
});
