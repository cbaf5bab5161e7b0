import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from "vitest";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { startRedisTopology, type RedisTopology } from "../setup/redis-topology.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce, comparable, logShape, type ServiceName } from "./harness.js";
import { happyPath } from "./scripts.js";

const QUESTION = "What is CRISPR and who invented it?";
const open: Array<{ cluster: Cluster; llm: ScriptedServer }> = [];

async function newCluster(
  script = happyPath(),
  redis?: RedisTopology,
): Promise<{ cluster: Cluster; llm: ScriptedServer }> {
  const llm = await startScriptedOpenAIServer({ script });
  const cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: redis ? "redis://127.0.0.1:6379" : inject("redisUrl"),
    prefix: uniquePrefix("crash"),
    llmBaseUrl: llm.url,
    ...(redis
      ? {
          redisSentinels: redis.sentinelsEnv,
          // every commit confirmed by one of the two replicas before its outbox goes out
          extraEnv: { AGENTMESH_REDIS_WAIT_REPLICAS: "1", AGENTMESH_REDIS_WAIT_TIMEOUT_MS: "1000" },
        }
      : {}),
  });
  await cluster.open();
  const pair = { cluster, llm };
  open.push(pair);
  return pair;
}

const topologies: RedisTopology[] = [];

afterEach(async () => {
  for (const { cluster, llm } of open.splice(0)) {
    await cluster.close();
    await llm.close();
  }
  for (const t of topologies.splice(0)) await t.stop();
});

let baseline: { data: unknown; log: string[] };
let scenariosPassed = 0;

afterAll(() => {
  // The matrix says how much of it ran.
  console.log(
    `crash-point matrix: ${scenariosPassed} of ${scenarios.length} scenarios passed (${scenarios.map((s) => `${s.service}@${s.point}`).join(", ")})`,
  );
});

beforeAll(async () => {
  const { cluster } = await newCluster();
  cluster.startAll(2);
  await cluster.waitReady({ coordinator: 2, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });
  const sid = await cluster.submit(QUESTION, "crashbaseline0000001");
  const { state, log } = await cluster.waitDone(sid);
  expect(state.meta.status).toBe("completed");
  baseline = { data: comparable(state), log: logShape(log, sid) };
  for (const { cluster: c, llm } of open.splice(0)) {
    await c.close();
    await llm.close();
  }
});

const scenarios: Array<{ service: ServiceName; point: string }> = [
  ...["after-load", "after-cas", "after-publish", "before-ack"].map((point) => ({
    service: "coordinator" as const,
    point,
  })),
  ...["after-fetch", "after-model", "after-result-publish", "before-ack"].map((point) => ({
    service: "planner" as const,
    point,
  })),
];

describe("crash points: a process killed at each named point loses nothing and applies nothing twice", () => {
  test.each(scenarios)("$service killed at $point", async ({ service, point }) => {
    const { cluster, llm } = await newCluster([...happyPath(), ...happyPath(), ...happyPath()]);
    const armed = { AGENTMESH_CRASH_AT: point };
    // Two coordinators throughout: the armed one beside a healthy one (and a replacement after
    // the crash); for an agent point, the armed replica is the only one of its role.
    const victim = service === "coordinator" ? cluster.start("coordinator", armed) : cluster.start(service, armed);
    cluster.start("coordinator");
    if (service !== "coordinator") cluster.start("coordinator");
    for (const r of AGENT_ROLES) if (r !== service) cluster.start(r);
    await cluster.waitReady({
      coordinator: 2,
      ...Object.fromEntries(AGENT_ROLES.filter((r) => r !== service).map((r) => [r, 1])),
    });
    if (service !== "coordinator") await cluster.waitReady({ [service]: 1 });

    // Sessions one after another until the armed process reaches its point (the healthy
    // coordinator may take every message of a session: then the next session tries again).
    const sessions: string[] = [];
    let death: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    for (let i = 0; i < 3 && !death; i++) {
      const sid = `crash${point.replaceAll("-", "")}${service}${i}`.slice(0, 40).padEnd(20, "0");
      sessions.push(sid);
      await cluster.submit(QUESTION, sid);
      const done = cluster.waitDone(sid, 60_000).then(() => null);
      death = await Promise.race([victim.exited, done]);
      if (!death) continue;
      expect(death.signal).toBe("SIGKILL");
      expect(victim.output()).toContain(`dying at ${point}`);
      cluster.start(service); // the replacement: two coordinators again, or the role back
    }
    expect(death, `${service} never reached ${point} in ${sessions.length} sessions`).not.toBeNull();

    for (const sid of sessions) {
      const { state, log } = await cluster.waitDone(sid, 60_000);
      expect(state.meta.status).toBe("completed");
      assertAppliedOnce(log, state.meta.version);
      expect(comparable(state)).toEqual(baseline.data);
      expect(logShape(log, sid)).toEqual(baseline.log);
    }
    if (point === "after-model") {
      // The model call ran before the crash and again after it (at least once), same task id.
      const last = sessions.at(-1)!;
      const planCalls = llm.calls.filter((c) => c.role === "planner" && c.taskId.startsWith(last));
      expect(planCalls.length).toBeGreaterThanOrEqual(2);
      expect(new Set(planCalls.map((c) => c.taskId)).size).toBe(1);
    }
    scenariosPassed++;
  });
});

/**
 * The crash points around the replica wait, each with a Redis failover at that point: the
 * coordinator dies there, and at that moment the primary is killed too; the sentinels promote a
 * replica, the services follow it, the old primary comes back as a replica. Redis is a primary
 * with two replicas behind three sentinels, so one replica can still confirm each commit after
 * the failover.
 */
const failoverPoints = ["after-cas-before-wait", "after-wait-before-publish"] as const;

describe("crash points around the replica wait, with a Redis failover at the point", () => {
  test.each(failoverPoints)("coordinator killed at %s, the Redis primary with it", async (point) => {
    const redis = await startRedisTopology({ replicas: 2, sentinels: 3 });
    topologies.push(redis);
    const { cluster } = await newCluster([...happyPath(), ...happyPath(), ...happyPath()], redis);
    const victim = cluster.start("coordinator", { AGENTMESH_CRASH_AT: point });
    for (const r of AGENT_ROLES) cluster.start(r);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });

    // the armed coordinator is the only one: its first commit reaches the point
    const sid = `failover${point.replaceAll("-", "")}`.slice(0, 40).padEnd(20, "0");
    await cluster.submit(QUESTION, sid);
    const death = await victim.exited;
    expect(death.signal).toBe("SIGKILL");
    expect(victim.output()).toContain(`dying at ${point}`);
    const old = await redis.primary();
    await redis.signal(old, "SIGKILL");
    const t0 = Date.now();
    const { primary, ms: promotedMs } = await redis.awaitFailover(old);
    // the replacements start once the sentinels name the new primary (one that starts before gives
    // up connecting and is restarted, as Kubernetes would). The old primary comes back as a
    // replica of the new one, as the charts' pods do: restarted as a primary it would serve its
    // old data to a client that asks a sentinel not yet told of the failover, until demoted (the
    // services' commits are safe from it, as the replica wait fails there; the harness's reads are
    // not). The session's state is read once it is in sync, from whichever node the harness is on.
    cluster.start("coordinator");
    cluster.start("coordinator");
    await redis.restart(old, primary);

    const first = await cluster.waitDone(sid, 90_000);
    const doneMs = Date.now() - t0;
    await redis.awaitInSync(old);
    const { state, log } = await cluster.waitDone(sid, 10_000);
    expect(
      state.meta.status,
      `status when the complete event was read: ${first.state.meta.status}; now (${(await redis.primary()).name} primary):\n${redis.history()}\n${cluster.recentOutput()}`,
    ).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    expect(comparable(state)).toEqual(baseline.data);
    expect(logShape(log, sid)).toEqual(baseline.log);
    console.log(
      `[failover] ${point}: replica promoted ${promotedMs} ms after the primary was killed; the session completed ${doneMs} ms after it`,
    );
  });
});
