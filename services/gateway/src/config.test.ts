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
});
