import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, serviceArgv } from "./harness.js";
import { happyPath, rejectTwice } from "./scripts.js";

const root = join(import.meta.dirname, "../..");
let llm: ScriptedServer;
let cluster: Cluster;

beforeAll(async () => {
  // Tests in this file run in order; the script is consumed in that order per role+op.
  llm = await startScriptedOpenAIServer({ script: [...happyPath(), ...rejectTwice()] });
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("e2e"),
    llmBaseUrl: llm.url,
  });
  await cluster.open();
  cluster.startAll(2);
  await cluster.waitReady(
    { coordinator: 2, planner: 1, critic: 1, researcher: 1, expert: 1, finalizer: 1, executor: 1 },
    180_000,
  );
}, 240_000); // seven processes start at once: slow on a shared machine

afterAll(async () => {
  await cluster?.close();
  await llm?.close();
});

async function keyCount(): Promise<number> {
  return (await cluster.redisClient.keys(`${cluster.opts.prefix}:*`)).length;
}

describe("critic-chain over real NATS and Redis, every service its own process", () => {
  test("a question is answered end to end with two coordinators and five agents (and the executor, idle: no tool is called)", async () => {
    const sid = await cluster.submit("What is CRISPR and who invented it?", "happy0000000000000001");
    const { state, log, events } = await cluster.waitDone(sid);

    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    expect(state.data.final_answer).toBe(
      "CRISPR is a gene-editing technology developed by Jennifer Doudna and Emmanuelle Charpentier.",
    );
    expect(state.data.research_results).toHaveLength(2);
    expect(state.data.current_research_index).toBe(1);
    expect(state.data.retry_count).toBe(0);
    // 1 start + 9 agent results: planner, critic, 2×(researcher, critic), expert, critic, finalizer
    expect(state.meta.version).toBe(10);
    assertAppliedOnce(log, state.meta.version);

    const stages = events
      .filter((e) => e.type === "stage" && e.status === "completed")
      .map((e) => (e.type === "stage" ? e.name : ""));
    expect(stages).toEqual([
      "planner",
      "critic_planner",
      "researcher",
      "critic_researcher",
      "researcher",
      "critic_researcher",
      "expert",
      "critic_expert",
      "finalizer",
    ]);
    const steps = events.filter((e) => e.type === "step");
    expect(steps).toHaveLength(9);
    for (const s of steps) if (s.type === "step") expect(s.provenance.model).toBe("scripted");
    const complete = events.at(-1);
    expect(complete?.type).toBe("complete");
    // The agents really went through the OpenAI-compatible HTTP path: one request per task.
    expect(llm.calls.filter((c) => c.taskId.startsWith(sid))).toHaveLength(9);
  });

  test("bad queries get a typed error from submit and create no session", async () => {
    const before = await keyCount();
    const cases: Array<[unknown, string]> = [
      ["x".repeat(5001), "invalid_query"],
      ["   ", "invalid_query"],
      ["", "invalid_query"],
      [42, "invalid_query"],
      [{ text: "What is CRISPR?" }, "invalid_query"],
    ];
    for (const [query, code] of cases) {
      const r = await cluster.submitRaw({ v: 1, query, session_id: "bad00000000000000001" });
      expect(r.ok, JSON.stringify(query).slice(0, 40)).toBe(false);
      if (!r.ok) expect(r.error.code).toBe(code);
    }
    // two characters are a question for every workflow but the blackboard's (at least 3)
    const short = await cluster.submitRaw({
      v: 1,
      query: "hi",
      workflow: "blackboard",
      session_id: "bad00000000000000001",
    });
    expect(short.ok ? "ok" : short.error).toMatchObject({
      code: "invalid_query",
      message: "the query is shorter than 3 characters (the blackboard workflow's minimum)",
      retryable: false,
    });
    const wrongVersion = await cluster.submitRaw({ v: 2, query: "What is CRISPR?" });
    expect(wrongVersion.ok ? "ok" : wrongVersion.error.code).toBe("unsupported_version");
    const notAnObject = await cluster.submitRaw("What is CRISPR?");
    expect(notAnObject.ok ? "ok" : notAnObject.error.code).toBe("invalid_message");
    const badWorkflow = await cluster.submitRaw({ v: 1, query: "What is CRISPR?", workflow: "nope" });
    expect(badWorkflow.ok ? "ok" : badWorkflow.error.code).toBe("invalid_message");
    expect(await keyCount()).toBe(before);
  });

  test("malformed, oversized, wrong-version and unknown-session messages are dropped; nothing breaks", async () => {
    const js = jetstream(cluster.natsConnection);
    const n = cluster.naming;
    const before = await keyCount();
    const h = headers();
    h.set("x-schema-v", "1");
    await js.publish(n.inbox("ghost000000000000001", "client"), "{not json");
    await js.publish(
      n.inbox("ghost000000000000001", "client"),
      JSON.stringify({ v: 1, kind: "cancel", session_id: "ghost000000000000001", input_id: "cancel:x", reason: "r" }),
    );
    await js.publish(
      n.inbox("ghost000000000000001", "client"),
      JSON.stringify({ v: 9, kind: "cancel", session_id: "ghost000000000000001", input_id: "cancel:y", reason: "r" }),
    );
    await js.publish(
      n.inbox("ghost000000000000001", "planner"),
      JSON.stringify({
        v: 1,
        kind: "result",
        session_id: "ghost000000000000001",
        input_id: "result:ghost000000000000001.3.0.0",
        task_id: "ghost000000000000001.3.0.0",
        role: "planner",
        op: "plan",
        outcome: { ok: true, output: {}, provenance: null },
      }),
    );
    await js.publish(n.task("planner", "plan"), "[1,2,3]", { headers: h });
    await js.publish(
      n.task("planner", "plan"),
      JSON.stringify({
        v: 1,
        task_id: "ghost000000000000001.1.0.0",
        session_id: "ghost000000000000001",
        role: "planner",
        op: "plan",
        attempt: 0,
        deadline_at: null,
        input: { nonsense: true },
      }),
    );
    await js.publish(n.task("critic", "review_plan"), "y".repeat(300 * 1024)).catch(() => undefined); // may exceed server max_payload? 300 KB is under 1 MiB
    await new Promise((r) => setTimeout(r, 1500));
    // Every service is still up and answering.
    const live = await cluster.ping();
    expect(live.get("coordinator")).toBe(2);
    for (const role of ["planner", "critic", "researcher", "expert", "finalizer"]) expect(live.get(role)).toBe(1);
    for (const p of cluster.procs) expect(p.child.exitCode).toBeNull();
    expect(await keyCount()).toBe(before);
    // The streams are empty again: nothing stuck in a redelivery loop.
    const jsm = await (await import("@nats-io/jetstream")).jetstreamManager(cluster.natsConnection);
    await new Promise((r) => setTimeout(r, 500));
    expect((await jsm.streams.info(n.streams.inbox)).state.messages).toBe(0);
    expect((await jsm.streams.info(n.streams.tasks)).state.messages).toBe(0);
  });

  test("a critic rejecting the plan twice before approving ends with retry_count 2", async () => {
    const sid = await cluster.submit("What is CRISPR and who invented it?", "reject00000000000002");
    const { state, log, events } = await cluster.waitDone(sid);
    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    expect(state.data.retry_count).toBe(2);
    expect(state.data.critic_planner_decision).toBe("approve");
    expect(state.data.final_answer).toContain("Doudna");
    assertAppliedOnce(log, state.meta.version);
    expect(state.meta.version).toBe(14); // 10 of the happy path + 2 × (planner, critic)
    const planStages = events.filter((e) => e.type === "stage" && e.status === "running" && e.name === "planner");
    expect(planStages).toHaveLength(3);
    llm.assertConsumed();
  });

  test("agentmesh services lists every role and replica; inspect prints state and transition log", () => {
    const env = cluster.secrets.plant("cli", { ...process.env, ...cluster.env() });
    const cli = (...args: string[]) => {
      const r = spawnSync(process.execPath, serviceArgv("cli", args), { cwd: root, env, encoding: "utf8" });
      cluster.secrets.record(`cli ${args[0] ?? ""}`, r.stdout + r.stderr);
      return r;
    };
    const services = cli("services");
    expect(services.status, services.stderr).toBe(0);
    expect(services.stdout).toMatch(/coordinator\s+2\s/);
    for (const role of ["planner", "critic", "researcher", "expert", "finalizer"])
      expect(services.stdout).toMatch(new RegExp(`${role}\\s+1\\s`));
    const inspect = cli("inspect", "happy0000000000000001");
    expect(inspect.status, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("status    completed");
    expect(inspect.stdout).toContain("transition log (10)");
    const missing = cli("inspect", "nosuchsession0000001");
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("no session nosuchsession0000001");
    expect(missing.stderr).not.toMatch(/\n\s+at /); // never a stack trace
  });
});
