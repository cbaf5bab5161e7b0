import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { HttpScriptEntry } from "@agentmesh/llm/testing";
import { freePort, startNats, startRedis } from "../setup/infra.js";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce, comparable, logShape } from "./harness.js";
import { happyPath } from "./scripts.js";
import { describeLog, sleep, startModelProxy, waitAnswering, waitFor, type ModelProxy } from "./fault-kit.js";

// These tests restart the NATS and Redis servers, so they run their OWN servers on free ports
// (never the shared ones): SIGKILL, then start again on the same port and data directory.

const QUESTION = "What is CRISPR and who invented it?";
const ALL = { coordinator: 2, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) };

interface Server {
  proc: ChildProcess;
  readonly port: number;
  readonly dir: string;
}
let nats: Server;
let redis: Server;
let proxy: ModelProxy;
let cluster: Cluster;
let baseline: { data: unknown; log: string[] };

/** The happy path with the first research call held back `delayMs`, so a restart lands mid-session. */
function slowResearch(delayMs: number): HttpScriptEntry[] {
  const script: HttpScriptEntry[] = happyPath();
  const i = script.findIndex((e) => e.role === "researcher");
  script[i] = { ...script[i]!, delayMs };
  return script;
}

async function kill(s: Server): Promise<void> {
  const exited = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGKILL");
  await exited;
}

beforeAll(async () => {
  nats = {
    port: await freePort(),
    dir: mkdtempSync(join(tmpdir(), "agentmesh-e2e-nats-")),
    proc: null as unknown as ChildProcess,
  };
  redis = {
    port: await freePort(),
    dir: mkdtempSync(join(tmpdir(), "agentmesh-e2e-redis-")),
    proc: null as unknown as ChildProcess,
  };
  nats.proc = await startNats(nats.port, nats.dir);
  redis.proc = await startRedis(redis.port, redis.dir);
  proxy = await startModelProxy();
  cluster = new Cluster({
    natsUrl: `nats://127.0.0.1:${nats.port}`,
    redisUrl: `redis://127.0.0.1:${redis.port}`,
    prefix: uniquePrefix("rst"),
    llmBaseUrl: proxy.url,
    accessControl: false, // this test stops and restarts its own plain nats-server
  });
  await cluster.open();
  // Coordinators first: they provision the streams and consumers the agents attach to.
  cluster.start("coordinator");
  cluster.start("coordinator");
  await cluster.waitReady({ coordinator: 2 });
  for (const r of AGENT_ROLES) cluster.start(r);
  await cluster.waitReady(ALL);

  // The undisturbed run every disturbed run must equal.
  cluster.redisClient.on("error", () => undefined); // reconnects by itself; the outage is the point
  const sid = "rstbaseline000000001";
  const llm = await proxy.script(sid, happyPath());
  await cluster.submit(QUESTION, sid);
  const { state, log } = await cluster.waitDone(sid);
  expect(state.meta.status).toBe("completed");
  assertAppliedOnce(log, state.meta.version);
  llm.assertConsumed();
  baseline = { data: comparable(state), log: logShape(log, sid) };
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await proxy?.close();
  for (const s of [nats, redis]) if (s?.proc && s.proc.exitCode === null && s.proc.signalCode === null) await kill(s);
  for (const s of [nats, redis]) if (s?.dir) rmSync(s.dir, { recursive: true, force: true });
});

describe("server restarts mid-session: the session completes, every transition once, same result as undisturbed", () => {
  test("NATS SIGKILLed while the researcher's model call runs, restarted on the same port and store", async () => {
    const sid = "natsrestart000000001";
    const llm = await proxy.script(sid, slowResearch(3000));
    await cluster.submit(QUESTION, sid);
    const call = await waitFor(
      "the researcher's model call",
      () => proxy.callsOf(sid).find((c) => c.role === "researcher"),
      30_000,
      20,
    );

    await kill(nats);
    const downAt = Date.now();
    const before = await cluster.store.load(sid);
    // The session is mid-way: planner and plan critic done, research awaited.
    expect(before?.state.meta.version).toBe(3);
    await sleep(2500);
    nats.proc = await startNats(nats.port, nats.dir);
    const upAt = Date.now();
    // Every service (and this test's own client) reconnects and answers again.
    const live = await waitAnswering(cluster, ALL);
    expect(live.get("coordinator")).toBe(2);

    const { state, log } = await cluster.waitDone(sid, 60_000);
    expect(state.meta.status, describeLog(log)).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    expect(comparable(state)).toEqual(baseline.data);
    expect(logShape(log, sid)).toEqual(baseline.log);
    // The research result reached the coordinators only after the outage (its call ended during it).
    const research = log.find(
      (l) =>
        l.input_id.startsWith("result:") && l.commands.some((c) => c.startsWith("dispatch critic.review_research")),
    );
    expect(research!.now).toBeGreaterThan(upAt);
    expect(call.at).toBeLessThan(downAt);
    if (process.env.E2E_DEBUG)
      console.log(
        `down ${downAt} up ${upAt} call ${call.at}-${call.endedAt}\n${describeLog(log)}\n${cluster.procs.map((p) => `--- ${p.name}\n${p.output().slice(-3000)}`).join("\n")}`,
      );
    for (const p of cluster.procs) expect(p.child.exitCode, `${p.name} exited\n${p.output().slice(-1500)}`).toBeNull();
    llm.assertConsumed();
  });

  test("Redis SIGKILLed while the researcher's model call runs, restarted from its AOF on the same port", async () => {
    const sid = "redisrestart00000001";
    const llm = await proxy.script(sid, slowResearch(1000));
    await cluster.submit(QUESTION, sid);
    const call = await waitFor(
      "the researcher's model call",
      () => proxy.callsOf(sid).find((c) => c.role === "researcher"),
      30_000,
      20,
    );

    await kill(redis);
    // Down for longer than the call: its result reaches a coordinator that cannot load the session.
    await sleep(3000);
    redis.proc = await startRedis(redis.port, redis.dir);
    const upAt = Date.now();

    const { state, log } = await cluster.waitDone(sid, 60_000);
    expect(state.meta.status, describeLog(log)).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    expect(comparable(state)).toEqual(baseline.data);
    expect(logShape(log, sid)).toEqual(baseline.log);
    // Versions 1-3 were written before the outage and survived it (AOF, appendfsync always).
    expect(log.slice(0, 3).every((l) => l.now < upAt - 3000)).toBe(true);
    const research = log.find(
      (l) =>
        l.input_id.startsWith("result:") && l.commands.some((c) => c.startsWith("dispatch critic.review_research")),
    );
    expect(research!.now).toBeGreaterThan(upAt);
    // The research answer came back while Redis was down: its result waited in the inbox.
    expect(call.endedAt).not.toBeNull();
    expect(call.endedAt!).toBeLessThan(upAt);
    if (process.env.E2E_DEBUG)
      console.log(
        `up ${upAt} call ${call.at}-${call.endedAt}\n${describeLog(log)}\n${cluster.procs.map((p) => `--- ${p.name}\n${p.output().slice(-3000)}`).join("\n")}`,
      );
    for (const p of cluster.procs) expect(p.child.exitCode, `${p.name} exited\n${p.output().slice(-1500)}`).toBeNull();
    llm.assertConsumed();
  });
});
