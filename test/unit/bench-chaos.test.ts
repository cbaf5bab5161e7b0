import { describe, expect, test } from "vitest";
import type { TransitionLogLine } from "@agentmesh/contracts";
import {
  attemptOf,
  faultRows,
  isRetry,
  longestStall,
  tally,
  type FaultWindow,
  type SessionOutcome,
} from "../../bench/chaos/report.js";
import { natsClusterPlan, redisSentinelPlan, type FaultContext } from "../../bench/chaos/faults.js";
import { parseArgs } from "../../bench/args.js";
import { renderTopologies, type TopologyLevel } from "../../bench/nats-topology.js";

const line = (version: number, now: number, input_id: string, commands: string[] = []): TransitionLogLine => ({
  version,
  now,
  input_id,
  input: null,
  commands,
  status: "running",
});

const session = (id: string, log: TransitionLogLine[], kind: SessionOutcome["kind"] = "ok"): SessionOutcome => ({
  id,
  kind,
  problem: kind === "ok" ? null : kind,
  log,
});

const window = (kind: string, start: number, end: number, redeliveries = 0): FaultWindow => ({
  kind,
  name: kind,
  start,
  healed: end,
  end,
  redeliveries,
});

describe("the chaos run's table", () => {
  test("the longest stall counts the window's edges: no progress at all is the whole window", () => {
    expect(longestStall([], 1000, 5000)).toBe(4000);
    expect(longestStall([1500, 2000, 4800], 1000, 5000)).toBe(2800);
    // progress outside the window does not shorten a stall inside it
    expect(longestStall([500, 900, 5200], 1000, 5000)).toBe(4000);
    expect(longestStall([1000, 2000, 3000, 4000, 5000], 1000, 5000)).toBe(1000);
  });

  test("a retry is a timer input or a task dispatched again as a later attempt; a first attempt is none", () => {
    expect(attemptOf("session01.3.0.2")).toBe(2);
    // the last part of a minted id is the digest of the input that made its version, digits or not
    expect(attemptOf("session01.3.0.2.k3x9a")).toBe(2);
    expect(attemptOf("session01.3.0.2.12345")).toBe(2);
    expect(attemptOf("not a task id")).toBeNull();
    expect(isRetry(line(4, 0, "timer:session01.3.0.0"))).toBe(true);
    expect(isRetry(line(4, 0, "result:session01.3.0.0", ["dispatch planner.plan session01.4.0.1.a1b2c"]))).toBe(true);
    expect(isRetry(line(4, 0, "result:session01.3.0.0", ["dispatch critic.review_plan session01.4.0.0.a1b2c"]))).toBe(
      false,
    );
    expect(isRetry(line(1, 0, "submit:s1", []))).toBe(false);
  });

  test("rows per fault kind over all its windows: longest stall, sessions that retried inside, redeliveries", () => {
    const sessions = [
      session("a", [line(1, 100, "submit:a"), line(2, 1100, "result:a.1.0.0"), line(3, 4100, "timer:a.2.0.0")]),
      session("b", [line(1, 150, "submit:b"), line(2, 9000, "result:b.1.0.0", ["dispatch x.y sessionb1.2.0.1"])]),
      session("c", [line(1, 8000, "submit:c")]),
    ];
    const rows = faultRows(
      [window("kill", 1000, 5000, 3), window("pause", 6000, 9500, 1), window("kill", 9600, 9700, 2)],
      sessions,
    );
    expect(rows.map((r) => r.kind)).toEqual(["kill", "pause"]);
    const [kill, pause] = rows;
    expect(kill).toMatchObject({ runs: 2, sessionsRetried: 1, redeliveries: 5, transitions: 2 });
    // kill window 1: 1000 → 1100 → 4100 → 5000: 3000; window 2 has no progress: 100
    expect(kill!.longestStallMs).toBe(3000);
    expect(pause).toMatchObject({ runs: 1, sessionsRetried: 1, transitions: 2, longestStallMs: 2000 });
    expect(tally([...sessions, session("d", [], "lost"), session("e", [], "stuck")])).toEqual({
      ok: 3,
      lost: 1,
      stuck: 1,
      wrong: 0,
    });
  });

  test("the plan: every node killed in turn, then a pause, a partition and a kill during a restart; the short plan kills one", () => {
    const full = natsClusterPlan({ short: false, nodes: 3, pauseMs: 50_000, partitionMs: 45_000 });
    expect(full.map((s) => s.kind)).toEqual([
      "NATS node SIGKILL + restart",
      "NATS node SIGKILL + restart",
      "NATS node SIGKILL + restart",
      "NATS node SIGSTOP past the heartbeat",
      "NATS node partitioned (TCP relay) + healed",
      "coordinator + agent SIGKILL during a node's restart",
    ]);
    expect(new Set(full.slice(0, 3).map((s) => s.name)).size).toBe(3);
    const shortPlan = natsClusterPlan({ short: true, nodes: 3, pauseMs: 25_000, partitionMs: 20_000 });
    expect(shortPlan).toHaveLength(4);
  });

  test("Redis's plan: a failover with a coordinator killed during it, then the old primary's rejoin; both need Sentinel", async () => {
    const plan = redisSentinelPlan();
    expect(plan.map((s) => s.kind)).toEqual([
      "Redis primary SIGKILL + failover, a coordinator killed during it",
      "old Redis primary rejoins as a replica",
    ]);
    // with one Redis server (`--redis single`) a Redis step refuses to run instead of doing nothing
    const ctx = { redis: null, nats: null } as unknown as FaultContext;
    for (const step of plan) await expect(step.run(ctx)).rejects.toThrow(/needs Redis behind Sentinel/);
  });
});

describe("pnpm bench --nats-cluster", () => {
  test("the flag selects the topology comparison; without it the bench is as before", () => {
    const on = parseArgs(["--nats-cluster", "--rounds", "1"]);
    const redis = parseArgs(["--redis-replica"]);
    const off = parseArgs([]);
    expect(on !== "help" && on.natsCluster).toBe(true);
    expect(redis !== "help" && redis.redisReplica && !redis.natsCluster).toBe(true);
    expect(off !== "help" && (off.natsCluster || off.redisReplica)).toBe(false);
  });

  test("the replica-wait table names its two topologies", () => {
    const level: TopologyLevel = {
      sessions: 4,
      ok: 4,
      sessionsPerSecond: 8,
      wallP50: 50,
      wallP99: 90,
      transitionP50: 3,
    };
    const lines = renderTopologies(
      [{ c: 1, a: level, b: { ...level, sessionsPerSecond: 6 } }],
      ["1 Redis node", "wait for a replica"],
    );
    expect(lines[0]).toMatch(/1 Redis node\s+wait for a replica\s+B \/ A/);
    expect(lines.find((l) => l.includes("throughput"))).toMatch(/8\.0 s\/s\s+6\.0 s\/s\s+0\.75×/);
  });

  test("the table sets each figure of R3 beside R1 with the ratio R3 / R1", () => {
    const level = (sps: number, p50: number): TopologyLevel => ({
      sessions: 10,
      ok: 10,
      sessionsPerSecond: sps,
      wallP50: p50,
      wallP99: p50 * 2,
      transitionP50: p50 / 10,
    });
    const lines = renderTopologies([{ c: 8, a: level(20, 100), b: level(10, 150) }]);
    expect(lines[0]).toContain("c=8: 10/10 and 10/10 sessions verified");
    expect(lines[0]).toMatch(/R1 \(1 node\)\s+R3 \(3 nodes\)\s+B \/ A/);
    expect(lines.find((l) => l.includes("throughput"))).toMatch(/20\.0 s\/s\s+10\.0 s\/s\s+0\.50×/);
    expect(lines.find((l) => l.includes("session wall p50"))).toMatch(/100 ms\s+150 ms\s+1\.50×/);
  });
});
