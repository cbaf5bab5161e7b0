import type { Hono } from "hono";
import { cors } from "hono/cors";
import { ApiError } from "./http.js";

/** What the gateway's HTTP policy is built from (configuration; docs/gateway.md, "HTTP"). */
export interface HttpPolicy {
  /** Requests without a key are let in: the Host header is then checked. */
  readonly anonymous: boolean;
  /** Host names accepted in anonymous mode besides the loopback ones. */
  readonly allowedHosts: readonly string[];
  /** Origins whose pages may call the API from a browser; empty = none. */
  readonly corsOrigins: readonly string[];
}

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

/** The host name a Host header names, without its port, lower-cased; null when it has none. */
export function hostName(header: string | undefined): string | null {
  const h = header?.trim().toLowerCase();
  if (!h) return null;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end < 0 ? null : h.slice(0, end + 1);
  }
  return h.split(":")[0] ?? null;
}

/**
 * Mounts, in order: the Host check of anonymous mode (a page on another site that rebinds its own
 * name to this machine sends its own name as Host, and is refused), the CORS allow-list (no origin
 * by default), and the cache and buffering headers of every answer: API JSON is `no-store` and
 * `nosniff`; event streams are `no-cache, no-transform` with `X-Accel-Buffering: no`, so proxies
 * neither store nor hold them back.
 */
export function mountHttpPolicy<E extends object>(app: Hono<{ Variables: E }>, p: HttpPolicy): void {
  if (p.anonymous) {
    const allowed = new Set([...LOOPBACK_HOSTS, ...p.allowedHosts.map((h) => h.toLowerCase())]);
    app.use("*", async (c, next) => {
      // the Host header as sent (the request's URL is built from it; without one, from the URL)
      const host = hostName(c.req.header("host")) ?? hostName(new URL(c.req.url).host);
      const probe = c.req.path === "/healthz" || c.req.path === "/readyz";
      if (!probe && (host === null || !allowed.has(host)))
        throw new ApiError(
          "host_not_allowed",
          `this keyless gateway answers only requests addressed to ${[...allowed].join(", ")} (AGENTMESH_GATEWAY_ALLOWED_HOSTS adds a name)`,
        );
      await next();
    });
  }
  if (p.corsOrigins.length > 0) {
    const origins = new Set(p.corsOrigins);
    const policy = cors({
      origin: (origin) => (origins.has(origin) ? origin : null),
      allowMethods: ["GET", "POST", "OPTIONS"],
      allowHeaders: [
        "Authorization",
        "X-API-Key",
        "Content-Type",
        "Last-Event-ID",
        "Idempotency-Key",
        "X-Agentmesh-Thread",
        "traceparent",
      ],
      exposeHeaders: ["X-Agentmesh-Session", "X-Agentmesh-Thread", "Retry-After"],
      maxAge: 600,
    });
    app.use("/api/*", policy);
    app.use("/v1/*", policy);
  }
  app.use("*", async (c, next) => {
    await next();
    const type = c.res.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream")) {
      c.res.headers.set("Cache-Control", "no-cache, no-transform");
      c.res.headers.set("X-Accel-Buffering", "no");
    } else if (c.req.path.startsWith("/api/") || c.req.path.startsWith("/v1/")) {
      c.res.headers.set("Cache-Control", "no-store");
    }
    c.res.headers.set("X-Content-Type-Options", "nosniff");
  });
}
