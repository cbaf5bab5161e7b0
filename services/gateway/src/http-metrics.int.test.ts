import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { naming as makeNaming, type Naming } from "@agentmesh/contracts";
import { connectNats, createPublisher, type Publisher } from "@agentmesh/messaging";
import { createLogger, createMetrics, type Metrics } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { deleteTestStreams, provisionTestStreams } from "./int-support.js";
import { sseReader, stageEvent, startTestGateway, type TestGateway } from "./test-support.js";

// The gateway's HTTP metrics as a Prometheus scrape reads them: requests by route pattern and
// status, their durations, the streams open and the bytes they hold for a reader that stalls.

let nc: NatsConnection;
let n: Naming;
let gateway: TestGateway;
let pub: Publisher;
let metrics: Metrics;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "gateway-metrics-test" });
  n = makeNaming(uniquePrefix("gwm"));
  await provisionTestStreams(nc, n);
  pub = createPublisher(nc, n, createLogger({ service: "test", level: "silent" }));
  metrics = createMetrics();
  gateway = await startTestGateway(nc, n, { metrics });
});

afterAll(async () => {
  await gateway.close();
  await deleteTestStreams(nc, n);
  await nc.drain();
});

/** One sample of the scrape: the value of `series` (its name and labels as written), or undefined. */
async function sample(series: string): Promise<number | undefined> {
  const line = (await metrics.text()).split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function until(series: string, ok: (v: number | undefined) => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(await sample(series)); i++) await new Promise((r) => setTimeout(r, 50));
  expect(await sample(series), series).toSatisfy(ok);
}

const auth = () => ({ authorization: `Bearer ${gateway.key}` });

describe("HTTP metrics", () => {
  it("counts requests by route pattern and status, refusals and unknown paths included, and times them", async () => {
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${gateway.url}/api/v1/sessions/s${i}nothere00000000`, { headers: auth() })).status).toBe(
        404,
      );
    expect((await fetch(`${gateway.url}/api/v1/sessions/whatever`)).status).toBe(401);
    expect((await fetch(`${gateway.url}/no/such/path/${Date.now()}`)).status).toBe(404);
    expect((await fetch(`${gateway.url}/v1/models`, { headers: auth() })).status).toBe(200);
    expect(await sample('agentmesh_http_requests_total{route="/api/v1/sessions/:id",status="404"}')).toBe(3);
    expect(await sample('agentmesh_http_requests_total{route="/api/v1/sessions/:id",status="401"}')).toBe(1);
    expect(await sample('agentmesh_http_requests_total{route="unmatched",status="404"}')).toBe(1);
    expect(await sample('agentmesh_http_requests_total{route="/v1/models",status="200"}')).toBe(1);
    expect(await sample('agentmesh_http_request_duration_seconds_count{route="/api/v1/sessions/:id"}')).toBe(4);
    // the client's own path never becomes a label
    expect(await metrics.text()).not.toMatch(/no\/such\/path|s0nothere/);
  });

  it("shows a stalled reader's stream open and the bytes it holds, both back to 0 once it leaves", async () => {
    const sid = "gwmetricsstall001";
    await gateway.own(sid);
    await pub.publishEvent(stageEvent(sid, 1, 1500));
    const res = await gateway.gw.app.request(`/api/v1/sessions/${sid}/events`, { headers: auth() });
    const reader = sseReader(res);
    expect(await reader.next()).toMatchObject({ event: "stage" });
    await until('agentmesh_http_open_streams{kind="api"}', (v) => v === 1);
    for (let v = 2; v <= 8; v++) await pub.publishEvent(stageEvent(sid, v, 1500)); // the reader reads none
    await until("agentmesh_http_stream_buffered_bytes", (v) => v !== undefined && v > 1500);
    await reader.cancel();
    await until("agentmesh_http_stream_buffered_bytes", (v) => v === 0);
    await until('agentmesh_http_open_streams{kind="api"}', (v) => v === 0);
    expect(await sample('agentmesh_http_open_streams{kind="v1"}')).toBe(0);
  });
});
