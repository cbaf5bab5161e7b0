import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Hono } from "hono";

const PUBLIC_DIR = fileURLToPath(new URL("../public/", import.meta.url));

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

/**
 * The page may talk only to this gateway, and runs no eval: only scripts served by the gateway
 * itself run at all; it submits no form anywhere (its forms are read by its scripts), frames
 * only the gateway's own documents (the chart frame) and is framed by nobody. Every response of
 * this module carries it except the chart frame's document.
 */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The chart frame's document: the page shows it in a sandboxed iframe (public/charts.js). */
export const CHART_FRAME = "chart-frame.html";

/**
 * The chart frame's CSP. Vega compiles its expressions with `Function`, so its scripts may eval;
 * in exchange it connects nowhere (a spec fetches nothing), submits nothing, is framed only by the
 * page, and is sandboxed with an opaque origin however it is opened (as the page's iframe is), so
 * it can read none of the page's storage and call no API with the page's cookies or key.
 */
export const CHART_FRAME_CSP = [
  "default-src 'none'",
  "script-src 'self' 'unsafe-eval'",
  "style-src 'self'",
  "img-src data:",
  "connect-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
  "sandbox allow-scripts",
].join("; ");

/** The CSP a file of the page is served with. */
export const cspFor = (name: string): string => (name === CHART_FRAME ? CHART_FRAME_CSP : PAGE_CSP);

/** The vega libraries the page renders charts with, served by the gateway (no CDN). */
const VENDOR: Record<string, [pkg: string, file: string]> = {
  "vega.min.js": ["vega", "vega.min.js"],
  "vega-lite.min.js": ["vega-lite", "vega-lite.min.js"],
  "vega-embed.min.js": ["vega-embed", "vega-embed.min.js"],
};

/** Reads every file of the page once, at start: only the files present then are served (no path from a request reaches the file system). */
function loadPage(): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (dir: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full, `${rel}${name}/`);
      else if (TYPES[extname(name)] !== undefined) files.set(`${rel}${name}`, readFileSync(full));
    }
  };
  walk(PUBLIC_DIR, "");
  return files;
}

function loadVendor(): Map<string, Buffer> {
  const require = createRequire(import.meta.url);
  const out = new Map<string, Buffer>();
  for (const [name, [pkg, file]] of Object.entries(VENDOR))
    out.set(name, readFileSync(join(dirname(require.resolve(pkg)), file)));
  return out;
}

/**
 * Serves the web page (`/`, `/assets/*`, the chart frame among them) and the vega libraries the
 * chart frame loads (`/vendor/*`), each with its CSP (`cspFor`).
 */
export function mountStatic<E extends object>(app: Hono<E & { Variables: { owner: string } }>): void {
  const page = loadPage();
  const vendor = loadVendor();
  const send = (body: Buffer, name: string, extra: Record<string, string>) =>
    new Response(new Uint8Array(body), {
      headers: {
        "Content-Type": TYPES[extname(name)] ?? "application/octet-stream",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": cspFor(name),
        "Referrer-Policy": "no-referrer",
        ...extra,
      },
    });
  app.get("/", () => {
    const html = page.get("index.html");
    if (!html) return new Response("the web page is not installed", { status: 404 });
    return send(html, "index.html", { "Cache-Control": "no-cache" });
  });
  app.get("/assets/*", (c) => {
    const name = c.req.path.slice("/assets/".length);
    const body = page.get(name);
    return body ? send(body, name, { "Cache-Control": "no-cache" }) : c.notFound();
  });
  app.get("/vendor/:name", (c) => {
    const name = c.req.param("name");
    const body = vendor.get(name);
    return body ? send(body, name, { "Cache-Control": "public, max-age=86400" }) : c.notFound();
  });
}
