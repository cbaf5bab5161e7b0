import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { BlackboardData, SessionEvent, SessionState, StrategyProfile } from "@agentmesh/contracts";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, serviceArgv, type Proc, type ServiceName } from "./harness.js";

// The blackboard workflow end to end: two coordinators and every blackboard agent as separate OS
// processes over real NATS and Redis, with the offline engine (no model endpoint) and the sample
// corpus in corpus/. The executor also registers the test-only tools test_flaky and test_slow
// (AGENTMESH_TEST_TOOLS=1).

const root = join(import.meta.dirname, "../..");
const AGENTS = [
  "perception",
  "memory",
  "retriever",
  "decision",
  "executor",
  "critic",
] as const satisfies readonly ServiceName[];
const READY = { coordinator: 2, ...Object.fromEntries(AGENTS.map((r) => [r, 1])) };
const PROFILES: readonly StrategyProfile[] = ["CONSERVATIVE", "EXPLORATORY", "FALLBACK"];

const ARITHMETIC = "What is 123456789 * 987654321?";
const PRODUCT = "121932631112635269";
const CORPUS = "How does Redis persist data with the append-only file?";

let cluster: Cluster;
let coordinators: Proc[] = [];

beforeAll(async () => {
  cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("store") });
  await cluster.open();
  // Coordinators first: they provision the streams and consumers the agents attach to.
  coordinators = [cluster.start("coordinator"), cluster.start("coordinator")];
  await cluster.waitReady({ coordinator: 2 }, 90_000);
  for (const role of AGENTS) cluster.start(role, role === "executor" ? { AGENTMESH_TEST_TOOLS: "1" } : {});
  await cluster.waitReady(READY, 120_000);
}, 240_000);

afterAll(async () => {
  await cluster?.close();
});

type Done = { state: SessionState; data: BlackboardData; events: SessionEvent[] };

function blackboard(state: SessionState): BlackboardData {
  if (state.data.workflow !== "blackboard")
    throw new Error(`expected a blackboard session, got ${state.data.workflow}`);
  return state.data;
}

async function submit(query: string, sid: string, profile: StrategyProfile): Promise<string> {
  return cluster.submit(query, sid, { workflow: "blackboard", options: { strategy_profile: profile } });
}

async function finished(sid: string, ms = 150_000): Promise<Done> {
  const { state, log, events } = await cluster.waitDone(sid, ms);
  assertAppliedOnce(log, state.meta.version);
  return { state, data: blackboard(state), events };
}

/** The strategies that ran for a plan step, in arrival order, with their outcome. */
const strategiesOf = (data: BlackboardData, step: number) =>
  data.step_results
    .filter((r) => r.plan_version === 1 && r.step_index === step)
    .map((r) => `${r.result.strategy}:${r.result.ok ? "ok" : r.result.error?.code}${r.chosen ? "*" : ""}`);

/** The tool performance log of one tool as `attempt:outcome` lines. */
const attemptsOf = (data: BlackboardData, tool: string) =>
  data.tool_performance_log.filter((e) => e.record.tool === tool).map((e) => `${e.record.attempt}:${e.record.outcome}`);

async function waitStatus(sid: string, status: string, ms: number): Promise<SessionState> {
  const end = Date.now() + ms;
  for (;;) {
    const loaded = await cluster.store.load(sid);
    if (loaded?.state.meta.status === status) return loaded.state;
    if (Date.now() > end)
      throw new Error(
        `session ${sid} is ${loaded?.state.meta.status ?? "missing"}, not ${status}\n${cluster.procs.map((p) => `--- ${p.name}\n${p.output().slice(-1500)}`).join("\n")}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("blackboard over real NATS and Redis, every agent its own process, offline engine", () => {
  test("arithmetic is exact and corpus answers carry citations, under every strategy profile", async () => {
    const runs = PROFILES.flatMap((profile, i) => [
      { profile, kind: "arithmetic" as const, sid: `bbarith${i}00000000001` },
      { profile, kind: "corpus" as const, sid: `bbcorpus${i}0000000001` },
    ]);
    await Promise.all(runs.map((r) => submit(r.kind === "arithmetic" ? ARITHMETIC : CORPUS, r.sid, r.profile)));
    const done = await Promise.all(runs.map(async (r) => ({ ...r, ...(await finished(r.sid)) })));

    for (const r of done) {
      const what = `${r.profile} ${r.kind}`;
      expect(r.state.meta.status, what).toBe("completed");
      expect(r.data.strategy_profile, what).toBe(r.profile);
      expect(
        r.data.tools?.map((t) => t.name),
        what,
      ).toEqual(expect.arrayContaining(["calculator", "corpus_search", "web_search", "test_flaky", "test_slow"]));
      const steps = r.events.flatMap((e) => (e.type === "step" ? [e.provenance] : []));
      expect(steps.find((p) => p.role === "perception")?.prompt_version, what).toBe("perception.perceive/v1");
      expect(steps.find((p) => p.role === "memory")?.model, what).toBe("none");
      expect(r.data.plan_versions).toHaveLength(1);
      const plan = r.data.plan_versions[0]?.steps.map((s) => s.tool);
      if (r.kind === "arithmetic") {
        expect(r.data.final_answer, what).toBe(`123456789 * 987654321 = ${PRODUCT}`);
        expect(plan, what).toEqual(["calculator", "summarize"]);
        expect(r.data.retrieval_bundles, what).toHaveLength(0); // arithmetic skips retrieval
      } else {
        expect(plan, what).toEqual(["corpus_search", "summarize"]);
        expect(r.data.retrieval_bundles[0]?.bundle.items[0]?.citation?.path, what).toBe("redis-persistence.md");
        expect(r.data.citations[0]?.path, what).toBe("redis-persistence.md");
        const answer = r.data.final_answer ?? "";
        expect(answer, what).toMatch(/According to redis-persistence\.md: “[^”]*append-only file[^”]*” \[1\]/);
        expect(answer, what).toContain('\n\nSources:\n[1] redis-persistence.md: "');
        expect(answer, what).toContain("Redis logs every write command to a file");
      }
      // How step 1 ran: the tool alone, all three at once (web has no provider here), or the tool first and it worked.
      const expected = {
        CONSERVATIVE: ["tool:ok*"],
        EXPLORATORY: ["tool:ok*", "rag:ok", "web:tool_unavailable"],
        FALLBACK: ["tool:ok*"],
      }[r.profile];
      expect([...strategiesOf(r.data, 0)].sort(), what).toEqual([...expected].sort());
    }
  }, 200_000);

  test("a flaky tool is retried inside the executor; a tool that times out fails its step, retried by the profile, visibly", async () => {
    const flaky = await submit("Use test_flaky to echo 'hello mesh'", "bbflaky0000000000001", "CONSERVATIVE");
    const slow = await submit("Use test_slow to echo 'ping'", "bbslow00000000000001", "CONSERVATIVE");
    const [f, s] = await Promise.all([finished(flaky), finished(slow)]);

    expect(f.state.meta.status).toBe("completed");
    expect(f.data.final_answer).toContain('test_flaky returned: {"echo":"hello mesh"}');
    expect(attemptsOf(f.data, "test_flaky")).toEqual(["1:tool_error", "2:tool_error", "3:ok"]);
    expect(f.data.memory.successful_tools.map((t) => t.tool)).toEqual(["test_flaky"]);

    // CONSERVATIVE: the step runs 1 + 2 retries, 3 timed-out attempts each; the rewrite after it
    // gets advice naming no tool, which the offline planner cannot follow: a clear failure.
    expect(s.state.meta.status).toBe("failed");
    expect(attemptsOf(s.data, "test_slow")).toEqual(
      Array.from({ length: 3 }, () => ["1:timeout", "2:timeout", "3:timeout"]).flat(),
    );
    expect(s.data.step_results.map((r) => r.retry)).toEqual([0, 1, 2]);
    expect(s.data.rewrite_count).toBe(1);
    expect(s.data.error_component).toBe("decision");
    expect(s.data.final_answer).toMatch(
      /^The question could not be answered\. The plan could not be rewritten \(needs_model/,
    );
    for (const e of s.data.tool_performance_log) expect(e.record.latency_ms).toBeGreaterThanOrEqual(250);
  }, 150_000);

  test("requires_human_input pauses the session durably, across a coordinator restart, until `agentmesh answer`", async () => {
    const sid = await submit(
      "Where does the handbook say to store samples at 4 degrees?",
      "bbhuman0000000000001",
      "CONSERVATIVE",
    );
    const paused = blackboard(await waitStatus(sid, "awaiting_user", 90_000));
    expect(paused.question_for_human).toBe(
      "Your question mentions 4 degrees without a scale: is that Celsius or Fahrenheit?",
    );
    expect(paused.critic_reports[0]?.report).toMatchObject({ requires_human_input: true, is_acceptable: true });

    // Every coordinator dies while the session waits; the session is only in Redis now.
    for (const c of coordinators) c.child.kill("SIGKILL");
    await Promise.all(coordinators.map((c) => c.exited));
    await new Promise((r) => setTimeout(r, 500));
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("awaiting_user");
    coordinators = [cluster.start("coordinator")];
    await cluster.waitReady({ coordinator: 1 }, 90_000);

    const env = cluster.secrets.plant("cli", { ...process.env, ...cluster.env() });
    const cli = spawnSync(process.execPath, serviceArgv("cli", ["answer", sid, "Celsius"]), {
      cwd: root,
      env,
      encoding: "utf8",
    });
    cluster.secrets.record("cli answer", cli.stdout + cli.stderr);
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`answer sent to session ${sid}`);

    const { state, data } = await finished(sid);
    expect(state.meta.status).toBe("completed");
    expect(data.user_replies).toEqual(["Celsius"]);
    expect(data.memory.short_term.some((m) => m.kind === "user" && m.content.includes('"Celsius"'))).toBe(true);
    expect(data.final_answer).toContain("According to handbook/lab-safety.md:");
    expect(data.final_answer).toContain("cold room B12 at 4 °C");
    expect(data.final_answer).toContain("You clarified: “Celsius”.");
    expect(data.final_answer).toContain("[1] handbook/lab-safety.md:");
    expect(state.meta.paused_ms).toBeGreaterThan(0);
  }, 180_000);
});
