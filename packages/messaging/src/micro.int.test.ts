import { AgentmeshError } from "@agentmesh/contracts";
import { Ajv } from "ajv";
import formats from "ajv-formats";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { createMicroService, SERVICE_ERROR, SERVICE_ERROR_CODE } from "./micro.js";
import { createPublisher } from "./publisher.js";
import { listServices, request } from "./request.js";
import {
  connectTest,
  dropStreams,
  freshNaming,
  makeTask,
  recordingLog,
  sessionId,
  sleep,
  waitFor,
} from "./test-support.js";
import { startWorker } from "./worker.js";

// JSON schemas written from the ADR-32 field lists (Standard Field, INFO, PING, STATS).
const defs = {
  name: { type: "string", pattern: "^[a-zA-Z0-9_-]+$", minLength: 1 },
  semver: {
    type: "string",
    pattern:
      "^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$",
  },
  // Go reads these as int64; staying within exact JSON integers keeps them exact too
  nanos: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  count: { type: "integer", minimum: 0 },
  metadata: { oneOf: [{ type: "object", additionalProperties: { type: "string" } }, { type: "null" }] },
};
const standard = {
  name: { $ref: "#/$defs/name" },
  id: { type: "string", minLength: 1 },
  version: { $ref: "#/$defs/semver" },
  metadata: { $ref: "#/$defs/metadata" },
};
const schema = (type: string, props: Record<string, unknown>, required: string[]) => ({
  $defs: defs,
  type: "object",
  additionalProperties: false,
  required: ["type", "name", "id", "version", "metadata", ...required],
  properties: { type: { const: type }, ...standard, ...props },
});
const PING = schema("io.nats.micro.v1.ping_response", {}, []);
const INFO = schema(
  "io.nats.micro.v1.info_response",
  {
    description: { type: "string" },
    endpoints: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "subject", "queue_group", "metadata"],
        properties: {
          name: { $ref: "#/$defs/name" },
          subject: { type: "string", minLength: 1 },
          queue_group: { type: "string" },
          metadata: { $ref: "#/$defs/metadata" },
        },
      },
    },
  },
  ["description", "endpoints"],
);
const STATS = schema(
  "io.nats.micro.v1.stats_response",
  {
    started: { type: "string", format: "date-time" },
    endpoints: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: [
          "name",
          "subject",
          "queue_group",
          "num_requests",
          "num_errors",
          "last_error",
          "processing_time",
          "average_processing_time",
        ],
        properties: {
          name: { $ref: "#/$defs/name" },
          subject: { type: "string", minLength: 1 },
          queue_group: { type: "string" },
          num_requests: { $ref: "#/$defs/count" },
          num_errors: { $ref: "#/$defs/count" },
          last_error: { type: "string" },
          processing_time: { $ref: "#/$defs/nanos" },
          average_processing_time: { $ref: "#/$defs/nanos" },
          data: { type: "object" },
        },
      },
    },
  },
  ["started", "endpoints"],
);

const ajv = new Ajv({ allErrors: true, strict: true });
formats.default(ajv);
const validators = { PING: ajv.compile(PING), INFO: ajv.compile(INFO), STATS: ajv.compile(STATS) };

function valid(verb: keyof typeof validators, reply: unknown): void {
  const ok = validators[verb](reply);
  expect(validators[verb].errors ?? [], `${verb} reply ${JSON.stringify(reply)}`).toEqual([]);
  expect(ok).toBe(true);
}

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectTest("messaging-micro-test");
});
afterAll(async () => {
  await nc.drain();
});

describe("createMicroService", () => {
  it("answers $SRV PING/INFO/STATS with ADR-32 replies; stats carry the JetStream work counts", async () => {
    const { naming } = await freshNaming(nc);
    const worker = await startWorker(nc, {
      naming,
      role: "planner",
      concurrency: 1,
      ackWaitMs: 1000,
      maxDeliver: 3,
      log: recordingLog(),
      handler: async () => ({
        ok: false,
        error: { code: "needs_model", message: "offline", retryable: false, component: "planner" },
        provenance: null,
      }),
    });
    const name = `svc_${uniquePrefix()}`;
    const svc = createMicroService(nc, {
      name,
      version: "1.2.3-rc.1+build.5",
      description: "test service",
      metadata: { prefix: naming.prefix },
      statsData: () => ({ ...worker.stats }),
    });
    try {
      svc.addEndpoint("echo", `${naming.prefix}.rpc.echo`, async (data) => ({ echoed: data }));
      svc.addEndpoint("fail", `${naming.prefix}.rpc.fail`, async () => {
        await sleep(20);
        throw new AgentmeshError("unknown_op", "no such op");
      });
      await createPublisher(nc, naming, recordingLog()).publishTask(makeTask(sessionId()));
      await waitFor(() => worker.stats.failed === 1, 10_000, "task reported");

      expect(await request(nc, `${naming.prefix}.rpc.echo`, { a: 1 }, 2000)).toEqual({ echoed: { a: 1 } });
      const err = await request(nc, `${naming.prefix}.rpc.fail`, {}, 2000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentmeshError);
      expect(err).toMatchObject({ code: "unknown_op", message: "no such op" });
      const raw = await nc.request(`${naming.prefix}.rpc.fail`, "{}", { timeout: 2000 });
      expect(raw.headers?.get(SERVICE_ERROR_CODE)).toBe("404");
      expect(raw.headers?.get(SERVICE_ERROR)).toBe("no such op");

      for (const subject of [`$SRV.PING.${name}`, `$SRV.PING.${name}.${svc.id}`])
        valid("PING", (await nc.request(subject, "", { timeout: 2000 })).json());
      const info = (await nc.request(`$SRV.INFO.${name}.${svc.id}`, "", { timeout: 2000 })).json();
      valid("INFO", info);
      expect(info).toMatchObject({
        name,
        id: svc.id,
        description: "test service",
        metadata: { prefix: naming.prefix },
        endpoints: [
          { name: "echo", subject: `${naming.prefix}.rpc.echo`, queue_group: "q" },
          { name: "fail", queue_group: "q" },
        ],
      });
      const stats = (await nc.request(`$SRV.STATS.${name}`, "", { timeout: 2000 })).json<{
        started: string;
        endpoints: Array<Record<string, unknown>>;
      }>();
      valid("STATS", stats);
      const [echo, fail] = stats.endpoints;
      expect(echo).toMatchObject({ num_requests: 1, num_errors: 0, last_error: "" });
      // the async error is counted (the upstream services lib misses these)
      expect(fail).toMatchObject({ num_requests: 2, num_errors: 2, last_error: "404:no such op" });
      expect(fail!.processing_time as number).toBeGreaterThanOrEqual(2 * 15_000_000);
      expect(Number.isInteger(fail!.average_processing_time)).toBe(true);
      expect(echo!.data).toMatchObject({ processed: 0, failed: 1, dropped: 0, in_flight: 0 });
      expect(Date.parse(stats.started)).toBeLessThanOrEqual(Date.now());

      // the all-services subjects reach us too, and listServices joins INFO with STATS
      const all = await listServices(nc, 500);
      const mine = all.find((s) => s.info.id === svc.id);
      expect(mine?.info.name).toBe(name);
      expect(mine?.stats?.endpoints[0]?.data).toMatchObject({ failed: 1 });
    } finally {
      await svc.stop();
      await worker.stop(200);
      await dropStreams(nc, naming);
    }
    await expect(request(nc, `$SRV.PING.${name}.${svc.id}`, null, 500)).rejects.toMatchObject({ code: "unavailable" });
  });

  it("rejects names and versions that `nats micro` would refuse", () => {
    expect(() => createMicroService(nc, { name: "planner.v1", version: "1.0.0" })).toThrow(/must match/);
    expect(() => createMicroService(nc, { name: "planner", version: "1.0" })).toThrow(/SemVer/);
    const svc = createMicroService(nc, { name: `ok_${uniquePrefix()}`, version: "0.1.0" });
    expect(() => svc.addEndpoint("review.plan", "x.y", async () => null)).toThrow(/must match/);
    return svc.stop();
  });
});

describe("request", () => {
  it("maps no responders to `unavailable` naming the subject", async () => {
    const subject = `${uniquePrefix()}.nobody`;
    const err = await request(nc, subject, { q: 1 }, 1000).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "unavailable" });
    expect((err as Error).message).toContain(`no service answers on ${subject}`);
  });

  it("maps a missing reply to `timeout`", async () => {
    const subject = `${uniquePrefix()}.silent`;
    const sub = nc.subscribe(subject, { callback: () => undefined });
    try {
      const err = await request(nc, subject, {}, 300).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "timeout", retryable: true });
    } finally {
      sub.unsubscribe();
    }
  });

  it("to an endpoint: types the reply by its response schema and refuses a reply that fails it", async () => {
    const subject = `${uniquePrefix()}.echo`;
    const sub = nc.subscribe(subject, {
      callback: (_err, m) => {
        m.respond(JSON.stringify({ echoed: m.json() }));
      },
    });
    try {
      const echo = {
        subject,
        request: z.object({ a: z.number() }),
        response: z.object({ echoed: z.object({ a: z.number() }) }),
      };
      const typed = await request(nc, echo, { a: 2 }, 2000);
      expect(typed.echoed.a).toBe(2);
      const wrong = { ...echo, response: z.object({ echoed: z.object({ a: z.string() }) }) };
      await expect(request(nc, wrong, { a: 3 }, 2000)).rejects.toMatchObject({
        code: "invalid_message",
        message: expect.stringContaining(`the reply on ${subject} is not what the endpoint answers`),
      });
    } finally {
      sub.unsubscribe();
    }
  });
});
