/**
 * The ops endpoint's probes on real service processes: an agent that waits for its streams is
 * alive but not ready and says why; it and the coordinator turn ready together, and ready means
 * their `$SRV` services answer; the gateway's ops port answers them too; a SIGTERM'd agent still
 * working a task is alive and not ready.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { freePort } from "../setup/infra.js";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, type Proc } from "./harness.js";
import { alive, sleep, waitFor } from "./fault-kit.js";

/** A model endpoint that never answers: a task the agent takes stays in flight. */
const held: ServerResponse[] = [];
const model = createServer((_req, res) => void held.push(res));
let cluster: Cluster;

beforeAll(async () => {
  await new Promise<void>((r) => model.listen(0, "127.0.0.1", r));
  const llmBaseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("probe"),
    llmBaseUrl,
  });
  await cluster.open();
});

afterAll(async () => {
  for (const res of held) res.destroy();
  model.close();
  await cluster?.close();
});

/** One probe's status and parsed one-line body; undefined while nothing listens. */
async function probe(port: number, path: string): Promise<{ status: number; body: unknown } | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    const text = await res.text();
    return { status: res.status, body: path === "/metrics" ? text : JSON.parse(text) };
  } catch {
    return undefined;
  }
}

const ready = async (port: number) => (await probe(port, "/readyz"))?.status === 200;

describe("/readyz and /healthz of real service processes", () => {
  let planner: Proc;
  let plannerPort: number;

  test("an agent whose streams are not provisioned yet is alive, not ready, and says why; unknown paths are 404", async () => {
    plannerPort = await freePort();
    planner = cluster.start("planner", { AGENTMESH_METRICS_PORT: String(plannerPort) });
    const live = await waitFor("the planner's /healthz", () => probe(plannerPort, "/healthz"), 60_000, 50);
    expect(live).toEqual({ status: 200, body: { status: "alive" } });
    // no coordinator has provisioned this prefix: the agent waits for its consumer, not ready
    for (let i = 0; i < 5; i++) {
      expect(await probe(plannerPort, "/readyz")).toEqual({
        status: 503,
        body: { status: "fail", reason: "starting" },
      });
      await sleep(200);
    }
    expect((await cluster.ping()).get("planner")).toBeUndefined();
    expect((await fetch(`http://127.0.0.1:${plannerPort}/status`)).status).toBe(404);
    expect(alive(planner)).toBe(true);
  });

  test("with a coordinator up both are ready, and ready means their $SRV services answer PING", async () => {
    const coordinatorPort = await freePort();
    cluster.start("coordinator", { AGENTMESH_METRICS_PORT: String(coordinatorPort) });
    await waitFor("the coordinator ready", () => ready(coordinatorPort), 60_000, 20);
    await waitFor("the planner ready", () => ready(plannerPort), 30_000, 20);
    const seen = await cluster.ping();
    expect(seen.get("coordinator")).toBe(1);
    expect(seen.get("planner")).toBe(1);
    expect(await probe(coordinatorPort, "/healthz")).toEqual({ status: 200, body: { status: "alive" } });
    expect(String((await probe(coordinatorPort, "/metrics"))?.body)).toContain("agentmesh_");
  });

  test("the gateway answers the same probes on its ops port as on its API port", async () => {
    const opsPort = await freePort();
    const { url } = await cluster.startGateway({
      AGENTMESH_GATEWAY_ANONYMOUS: "1",
      AGENTMESH_METRICS_PORT: String(opsPort),
    });
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    await waitFor("the gateway's ops /readyz", () => ready(opsPort), 10_000, 20);
    expect(await probe(opsPort, "/healthz")).toEqual({ status: 200, body: { status: "alive" } });
  });

  test("SIGTERM with a task in flight: not ready (draining) while it finishes, still alive", async () => {
    await cluster.submit("What is CRISPR and who invented it?", `probe-${Date.now()}`);
    // the planner took the plan task: its model call is held open
    await waitFor("the planner's model call", () => held.length > 0, 30_000, 20);
    planner.child.kill("SIGTERM");
    const draining = await waitFor(
      "the planner draining",
      async () => {
        const r = await probe(plannerPort, "/readyz");
        return r?.status === 503 ? r : false;
      },
      10_000,
      5,
    );
    expect(draining.body).toEqual({ status: "fail", reason: "draining (shutting down)" });
    expect(await probe(plannerPort, "/healthz")).toEqual({ status: 200, body: { status: "alive" } });
    // it stays draining (never ready again) while the task holds its stop
    for (let i = 0; i < 3; i++) {
      await sleep(200);
      expect(await probe(plannerPort, "/readyz")).toEqual(draining);
    }
    expect(alive(planner)).toBe(true);
  });
});
