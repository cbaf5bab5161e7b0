import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster } from "./harness.js";

let cluster: Cluster;

beforeAll(async () => {
  cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("live") });
  await cluster.open();
  cluster.start("coordinator"); // provisions the streams the executor pulls from
  cluster.start("executor", { AGENTMESH_TASK_ACK_WAIT_MS: "15000", AGENTMESH_RPC: "1" }); // direct calls are for debugging (on here); bounded by the lease
  await cluster.waitReady({ coordinator: 1, executor: 1 });
});

afterAll(async () => {
  await cluster?.close();
});

/** Round trip of one `$SRV.PING.executor` for this prefix, in ms (Infinity if unanswered in 2 s). */
async function pingMs(): Promise<number> {
  const t0 = performance.now();
  try {
    await cluster.natsConnection.request("$SRV.PING.executor", "", { timeout: 2000 });
    return performance.now() - t0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

describe("the executor agent stays responsive while a sandboxed runaway runs to its deadline", () => {
  test("a run_js infinite loop is killed at its limit; $SRV.PING answers throughout", async () => {
    const input = {
      question: "Run this code for me please",
      step_index: 0,
      step: {
        description: "Run the user's JavaScript",
        tool: "run_js",
        args: [{ name: "code", value: "let i = 0; while (true) { i++; }" }],
        expected_outcome: "its output",
      },
      strategy: "tool",
      query: null,
      limits: { max_attempts: 1, timeout_ms: 3000 },
      policy: { listed: ["run_js"], banned: [] },
      context: null,
    };
    const pings: number[] = [];
    let running = true;
    const pinger = (async () => {
      while (running) {
        pings.push(await pingMs());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const t0 = performance.now();
    const reply = await cluster.natsConnection.request(
      cluster.naming.rpc("executor", "execute"),
      JSON.stringify({ input }),
      { timeout: 20_000 },
    );
    const elapsed = performance.now() - t0;
    running = false;
    await pinger;
    const body = reply.json<{ ok: boolean; output?: { ok: boolean; error: { code: string } | null; tool: string } }>();
    // The step failed as a tool failure (the runaway was stopped), not as a hung or crashed agent.
    expect(body.ok).toBe(true);
    expect(body.output?.ok).toBe(false);
    expect(body.output?.tool).toBe("run_js");
    expect(["timeout", "resource_exhausted"]).toContain(body.output?.error?.code);
    expect(elapsed).toBeLessThan(3000 * 1.2 + 1500);
    // The agent answered every ping while the code ran, promptly.
    console.log(
      `run_js runaway stopped after ${Math.round(elapsed)} ms (${body.output?.error?.code}); ${pings.length} pings, max ${Math.round(Math.max(...pings))} ms`,
    );
    expect(pings.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...pings)).toBeLessThan(500);
  });
});
