import { describe, expect, test } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { loadGatewayConfig } from "./config.js";

describe("the gateway's configuration", () => {
  test("serves no metrics unless AGENTMESH_METRICS_PORT is set; then on AGENTMESH_METRICS_HOST", () => {
    const base = { AGENTMESH_GATEWAY_ANONYMOUS: "1" };
    expect(loadGatewayConfig(base).metrics).toBeNull();
    expect(
      loadGatewayConfig({ ...base, AGENTMESH_METRICS_PORT: "9464", AGENTMESH_METRICS_HOST: "0.0.0.0" }).metrics,
    ).toEqual({ host: "0.0.0.0", port: 9464 });
    expect(() => loadGatewayConfig({ ...base, AGENTMESH_METRICS_PORT: "-1" })).toThrow(AgentmeshError);
  });

  test("HTTP: timeouts above a load balancer's idle 60 s by default, no CORS origin, loopback hosts only; bad lists named", () => {
    const base = { AGENTMESH_GATEWAY_ANONYMOUS: "1" };
    const d = loadGatewayConfig(base);
    expect(d.http).toEqual({
      keepAliveTimeoutMs: 65_000,
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 60_000,
      maxConnections: 4096,
    });
    expect(d.corsOrigins).toEqual([]);
    expect(d.allowedHosts).toEqual([]);
    const set = loadGatewayConfig({
      ...base,
      AGENTMESH_CORS_ORIGINS: "https://app.example.com, http://localhost:5173",
      AGENTMESH_GATEWAY_ALLOWED_HOSTS: "agentmesh.local",
    });
    expect(set.corsOrigins).toEqual(["https://app.example.com", "http://localhost:5173"]);
    expect(set.allowedHosts).toEqual(["agentmesh.local"]);
    expect(() => loadGatewayConfig({ ...base, AGENTMESH_CORS_ORIGINS: "https://app.example.com/page" })).toThrow(
      /AGENTMESH_CORS_ORIGINS.*no path/,
    );
    expect(() => loadGatewayConfig({ ...base, AGENTMESH_GATEWAY_ALLOWED_HOSTS: "http://x" })).toThrow(
      /AGENTMESH_GATEWAY_ALLOWED_HOSTS.*without scheme/,
    );
    expect(() =>
      loadGatewayConfig({
        ...base,
        AGENTMESH_HTTP_HEADERS_TIMEOUT_MS: "90000",
        AGENTMESH_HTTP_REQUEST_TIMEOUT_MS: "60000",
      }),
    ).toThrow(/headers are part of the request/);
  });
});
