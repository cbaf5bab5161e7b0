import { afterEach, beforeAll, describe, expect, inject, test } from "vitest";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce, comparable, logShape, type ServiceName } from "./harness.js";
import { happyPath } from "./scripts.js";

const QUESTION = "What is CRISPR and who invented it?";
const open: Array<{ cluster: Cluster; llm: ScriptedServer }> = [];

async function newCluster(): Promise<{ cluster: Cluster; llm: ScriptedServer }> {
  const llm = await startScriptedOpenAIServer({ script: happyPath() });
  const cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("crash"), llmBaseUrl: llm.url });
  await cluster.open();
  const pair = { cluster, llm };
  open.push(pair);
  return pair;
}

afterEach(async () => {
  for (const { cluster, llm } of open.splice(0)) {
    await cluster.close();
    await llm.close();
  }
});

let baseline: { data: unknown; log: string[] };

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
  ...["after-load", "after-cas", "after-publish", "before-ack"].map((point) => ({ service: "coordinator" as const, point })),
  ...["after-fetch", "after-model", "after-result-publish", "before-ack"].map((point) => ({ service: "planner" as const, point })),
];

describe("crash points: a process killed at each named point loses nothing and applies nothing twice", () => {
  test.each(scenarios)("$service killed at $point", async ({ service, point }) => {
    const { cluster, llm } = await newCluster();
    const armed = { AGENTMESH_CRASH_AT: point };
    let victim;
    if (service === "coordinator") {
      // The armed coordinator runs alone first, so the crash certainly happens on this session.
      victim = cluster.start("coordinator", armed);
      for (const r of AGENT_ROLES) cluster.start(r);
      await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });
    } else {
      cluster.start("coordinator");
      cluster.start("coordinator");
      victim = cluster.start(service, armed);
      for (const r of AGENT_ROLES) if (r !== service) cluster.start(r);
      await cluster.waitReady({ coordinator: 2, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });
    }
    const sid = `crash${point.replaceAll("-", "")}${service}`.slice(0, 40).padEnd(20, "0");
    await cluster.submit(QUESTION, sid);

    const death = await Promise.race([victim.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
    expect(death, `${service} never reached ${point}\n${victim.output().slice(-1500)}`).not.toBeNull();
    expect(death?.signal).toBe("SIGKILL");
    expect(victim.output()).toContain(`dying at ${point}`);

    // Replacements come up (two coordinators in every scenario) and the session finishes.
    if (service === "coordinator") {
      cluster.start("coordinator");
      cluster.start("coordinator");
    } else {
      cluster.start(service);
    }
    const { state, log } = await cluster.waitDone(sid, 60_000);
    expect(state.meta.status).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    expect(comparable(state)).toEqual(baseline.data);
    expect(logShape(log, sid)).toEqual(baseline.log);
    if (point === "after-model") {
      // The model call ran before the crash and again after it (at least once), same task id.
      const planCalls = llm.calls.filter((c) => c.role === "planner" && c.taskId.startsWith(sid));
      expect(planCalls.length).toBeGreaterThanOrEqual(2);
      expect(new Set(planCalls.map((c) => c.taskId)).size).toBe(1);
    }
    llm.assertConsumed();
  });
});
