// A NATS cluster in configuration: NATS_URL with several servers in every service, the stream
// replicas setting, the generated per-node server config, and the production values.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { parse as parseYaml } from "yaml";
import { loadAgentConfig } from "@agentmesh/agent-kit";
import { naming, ROLE_NAMES } from "@agentmesh/contracts";
import { loadCoordinatorConfig } from "@agentmesh/coordinator";
import { loadGatewayConfig } from "@agentmesh/gateway";
import { natsRouteUrl, natsServerConfig, newUserKey, parseNatsUrl, SERVICE_USERS } from "@agentmesh/messaging";

const root = join(import.meta.dirname, "../..");
const THREE = "nats://127.0.0.1:4222,nats://127.0.0.1:4223, nats://127.0.0.1:4224";

const loaders = {
  coordinator: (env: Record<string, string>) => loadCoordinatorConfig(env).natsUrl,
  gateway: (env: Record<string, string>) => loadGatewayConfig({ AGENTMESH_GATEWAY_ANONYMOUS: "1", ...env }).natsUrl,
  agent: (env: Record<string, string>) => loadAgentConfig({ SERVICE: "planner", ...env }).natsUrl,
};

describe("NATS_URL names one server or a cluster's servers, comma-separated", () => {
  test.each(Object.entries(loaders))("%s takes several servers and passes them on as given", (_name, load) => {
    expect(load({ NATS_URL: THREE })).toBe(THREE);
    expect(load({ NATS_URL: "127.0.0.1:4222,127.0.0.1:4223" })).toBe("127.0.0.1:4222,127.0.0.1:4223");
    expect(load({})).toBe("nats://127.0.0.1:4222");
  });

  test.each(Object.entries(loaders))(
    "%s refuses a list with an entry that is no server, naming the entry by position and never echoing it",
    (_name, load) => {
      const bad = (url: string) => {
        try {
          load({ NATS_URL: url });
        } catch (err) {
          return (err as Error).message;
        }
        throw new Error(`accepted ${url}`);
      };
      expect(bad("nats://127.0.0.1:4222,not a url")).toMatch(/NATS_URL[\s\S]*server 2 is not a URL/);
      expect(bad("nats://127.0.0.1:4222,,nats://127.0.0.1:4224")).toMatch(/server 2 is empty/);
      expect(bad("http://127.0.0.1:8080")).toMatch(/server 1 has scheme http:/);
      expect(bad(" , ")).toMatch(/NATS_URL/);
      const secret = bad("nats://u:hunter2-secret@127.0.0.1:4222,redis://u:hunter2-secret@h:1");
      expect(secret).toMatch(/server 2 has scheme redis:/);
      expect(secret).not.toContain("hunter2-secret");
    },
  );

  test("the client gets every server (host:port) and the credentials of the list", () => {
    expect(parseNatsUrl(THREE)).toEqual({ servers: ["127.0.0.1:4222", "127.0.0.1:4223", "127.0.0.1:4224"] });
    expect(parseNatsUrl("nats://svc:pw@a:4222,nats://svc:pw@b:4222,nats://svc:pw@c:4222")).toEqual({
      servers: ["a:4222", "b:4222", "c:4222"],
      user: "svc",
      pass: "pw",
    });
  });
});

describe("AGENTMESH_STREAM_REPLICAS", () => {
  test("1 by default, 3 on a cluster; 0 and more than 5 (JetStream's most) are refused", () => {
    expect(loadCoordinatorConfig({}).streamReplicas).toBe(1);
    expect(loadCoordinatorConfig({ AGENTMESH_STREAM_REPLICAS: "3" }).streamReplicas).toBe(3);
    expect(() => loadCoordinatorConfig({ AGENTMESH_STREAM_REPLICAS: "0" })).toThrow(/AGENTMESH_STREAM_REPLICAS/);
    expect(() => loadCoordinatorConfig({ AGENTMESH_STREAM_REPLICAS: "7" })).toThrow(/AGENTMESH_STREAM_REPLICAS/);
  });

  test("the production overlay sets 3", () => {
    const k = parseYaml(readFileSync(join(root, "deploy/overlays/prod/kustomization.yaml"), "utf8")) as {
      configMapGenerator: Array<{ name: string; literals: string[] }>;
    };
    const literals = k.configMapGenerator.find((g) => g.name === "agentmesh-config")?.literals ?? [];
    expect(literals).toContain("AGENTMESH_STREAM_REPLICAS=3");
  });
});

describe("the generated server config of a cluster node", () => {
  const keys = Object.fromEntries([...ROLE_NAMES, ...SERVICE_USERS].map((u) => [u, newUserKey().publicKey]));
  const auth = { user: "route", password: "p@ss word" };
  const routes = ["a:6222", "b:6222", "c:6222"].map((r) => natsRouteUrl(r, auth));
  const node = (name: string) =>
    JSON.parse(
      natsServerConfig({
        naming: naming("agentmesh"),
        roles: ROLE_NAMES,
        keys,
        serverName: name,
        cluster: { name: "agentmesh", listen: "0.0.0.0:6222", routes, authorization: auth },
      }),
    ) as Record<string, unknown> & { accounts: unknown; cluster: Record<string, unknown> };

  test("each node has its own name, the routes to every node with their credentials, and the same accounts", () => {
    const a = node("a");
    const b = node("b");
    expect(a.server_name).toBe("a");
    expect(b.server_name).toBe("b");
    expect(a.cluster).toMatchObject({
      name: "agentmesh",
      listen: "0.0.0.0:6222",
      routes: ["nats-route://route:p%40ss%20word@a:6222", "nats-route://route:p%40ss%20word@b:6222", routes[2]],
      authorization: auth,
    });
    expect(a.accounts).toEqual(b.accounts);
  });

  test("a cluster without a server name or without routes is refused", () => {
    const base = { naming: naming("agentmesh"), roles: ROLE_NAMES, keys };
    expect(() => natsServerConfig({ ...base, cluster: { name: "x", listen: "0.0.0.0:6222", routes } })).toThrow(
      /server name/,
    );
    expect(() =>
      natsServerConfig({ ...base, serverName: "a", cluster: { name: "x", listen: "0.0.0.0:6222", routes: [] } }),
    ).toThrow(/at least one route/);
  });

  test("a single server's config has no cluster block and no name, as before", () => {
    const one = JSON.parse(natsServerConfig({ naming: naming("agentmesh"), roles: ROLE_NAMES, keys })) as object;
    expect(one).not.toHaveProperty("cluster");
    expect(one).not.toHaveProperty("server_name");
  });
});

describe("the NATS chart's production values", () => {
  const values = parseYaml(readFileSync(join(root, "deploy/infra/nats-values.yaml"), "utf8")) as {
    config: {
      cluster: { enabled: boolean; replicas: number; routeURLs: Record<string, unknown> };
      jetstream: { merge: Record<string, unknown> };
    };
  };
  test("3 clustered nodes whose routes log in, with no route password in the file", () => {
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3, routeURLs: { user: "route" } });
    expect(values.config.cluster.routeURLs).not.toHaveProperty("password");
  });
  test("JetStream's sync_interval is set explicitly (a 2.10+ setting, explained beside it)", () => {
    expect(String(values.config.jetstream.merge.sync_interval)).toMatch(/^(always|\d+[smh])$/);
    expect(readFileSync(join(root, "deploy/infra/nats-values.yaml"), "utf8")).toMatch(/2\.10/);
  });
});
