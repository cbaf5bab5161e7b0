import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { inputIds, taskId } from "@agentmesh/contracts";
import type { HttpScriptEntry } from "@agentmesh/llm/testing";
import { mintedId } from "@agentmesh/workflows/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, type Proc, type ServiceName } from "./harness.js";
import { happyPath } from "./scripts.js";
import { alive, describeLog, dispatched, startModelProxy, stopProc, waitFor, type ModelProxy } from "./fault-kit.js";

// Tasks whose result never comes: the message is lost by the broker, the agent dies on every
// delivery, or the model fails on every request. One cluster for the file; each test starts or
// stops the agents it needs. Short timings: ack wait 2 s, 2 deliveries per task, 8 s task deadline.
const QUESTION = "What is CRISPR and who invented it?";
const COULD_NOT_ANSWER = "The question could not be answered.";
const TASK_DEADLINE_MS = 8000;
const MAX_DELIVER = 2;
const LLM_MAX_ATTEMPTS = 3;
/** Timer poll (500 ms) plus a step on a loaded machine. */
const TIMER_SLACK_MS = 2000;
/** The planner task a session's start dispatches: version 1, made by the start. */
const first = (sid: string) => taskId(sid, 1, 0, 0, inputIds.start(sid));

let proxy: ModelProxy;
let cluster: Cluster;

beforeAll(async () => {
  proxy = await startModelProxy();
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("tf"),
    llmBaseUrl: proxy.url,
    extraEnv: {
      AGENTMESH_TASK_DEADLINE_MS: String(TASK_DEADLINE_MS),
      AGENTMESH_TASK_MAX_DELIVER: String(MAX_DELIVER),
      AGENTMESH_LLM_MAX_ATTEMPTS: String(LLM_MAX_ATTEMPTS),
    },
  });
  await cluster.open();
  cluster.start("coordinator");
  cluster.start("coordinator");
  await cluster.waitReady({ coordinator: 2 }, 45_000);
  // The planner and the researcher are started by the tests that need them.
  for (const r of ["critic", "expert", "finalizer"] as const) cluster.start(r);
  await cluster.waitReady({ coordinator: 2, critic: 1, expert: 1, finalizer: 1 }, 45_000);
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await proxy?.close();
});

const healthy = (name: ServiceName) =>
  cluster.procs.filter((p) => p.name === name && alive(p) && !p.output().includes("fault injection armed"));

/** Starts one healthy replica of `name` unless one runs; waits until it answers. */
async function ensureRunning(name: ServiceName): Promise<void> {
  if (healthy(name).length === 0) cluster.start(name);
  await cluster.waitReady({ [name]: 1 }, 45_000);
}

/** Stops every replica of `name`. */
async function ensureStopped(name: ServiceName): Promise<void> {
  await Promise.all(cluster.procs.filter((p) => p.name === name && alive(p)).map((p) => stopProc(p)));
}

/**
 * Runs `replicas` researchers armed to die right after fetching a task
 * (AGENTMESH_CRASH_AT=after-fetch), starting each again, still armed, every time it dies, until
 * `maxDeaths` deaths in all (then the others are stopped) or stop(). `ready()` waits until
 * every first replica answers.
 */
function armedResearchers(replicas: number, maxDeaths = Infinity) {
  const deaths: Array<{ proc: Proc; at: number }> = [];
  const timeline: string[] = [];
  const current = new Set<Proc>();
  let stopped = false;
  const slot = async () => {
    while (!stopped && deaths.length < maxDeaths) {
      const p = cluster.start("researcher", { AGENTMESH_CRASH_AT: "after-fetch" });
      current.add(p);
      timeline.push(`${Date.now()} started pid ${p.child.pid}`);
      const exit = await p.exited;
      current.delete(p);
      timeline.push(`${Date.now()} pid ${p.child.pid} exited ${JSON.stringify(exit)}`);
      if (exit.signal === "SIGKILL" && p.output().includes("dying at after-fetch")) {
        deaths.push({ proc: p, at: Date.now() });
        if (deaths.length >= maxDeaths) {
          // Enough: the other armed replicas go too (stopped, not crashed), none is restarted.
          stopped = true;
          for (const other of current) other.child.kill("SIGTERM");
        }
      } else if (!stopped)
        throw new Error(`armed researcher exited otherwise (${JSON.stringify(exit)}):\n${p.output().slice(-1500)}`);
    }
  };
  const done = Promise.all(Array.from({ length: replicas }, slot));
  done.catch(() => undefined); // surfaced by stop()
  return {
    deaths,
    /** Resolves once `maxDeaths` deaths happened. */
    done,
    ready: () => cluster.waitReady({ researcher: replicas }, 45_000),
    describe: () => timeline.join("\n"),
    async stop() {
      stopped = true;
      await Promise.all([...current].map((p) => stopProc(p)));
      await done;
    },
  };
}

describe("a task whose result never comes is re-dispatched or failed by the workflow's rules: never stranded", () => {
  test("a planner task deleted from the TASKS stream: the task deadline fires, attempt 1 is dispatched, the session completes", async () => {
    await ensureStopped("planner");
    await ensureRunning("researcher");
    const sid = "tfdeleted00000000001";
    const llm = await proxy.script(sid, happyPath());
    await cluster.submit(QUESTION, sid);

    // The coordinator dispatched the plan task; no planner runs, so it waits in the stream. Delete it.
    const jsm = await jetstreamManager(cluster.natsConnection);
    const stream = cluster.naming.streams.tasks;
    const subject = cluster.naming.task("planner", "plan");
    const stored = await waitFor("the plan task in the TASKS stream", async () => {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
      return m && m.json<{ task_id: string }>().task_id === first(sid) ? m : undefined;
    });
    expect(await jsm.streams.deleteMessage(stream, stored.seq)).toBe(true);
    expect(await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null)).toBeNull();
    await ensureRunning("planner");

    const { state, log } = await cluster.waitDone(sid, 60_000);
    const why = describeLog(log);
    expect(state.meta.status, why).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    // v1 dispatched attempt 0; its deadline timer is v2 and dispatches attempt 1; then the happy path.
    const retry = taskId(sid, 2, 0, 1, inputIds.timer(first(sid)));
    expect(dispatched(log[0], "planner", "plan"), why).toBe(first(sid));
    expect(log[1]?.input_id, why).toBe(inputIds.timer(first(sid)));
    expect(dispatched(log[1], "planner", "plan"), why).toBe(retry);
    expect(log[2]?.input_id, why).toBe(inputIds.result(retry));
    expect(state.meta.version).toBe(11); // the happy path's 10 transitions + the timer
    const firedAfter = log[1]!.now - log[0]!.now;
    expect(firedAfter).toBeGreaterThanOrEqual(TASK_DEADLINE_MS);
    expect(firedAfter).toBeLessThan(TASK_DEADLINE_MS + TIMER_SLACK_MS);
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    expect(state.data.retry_count).toBe(1); // the deadline counts one retry
    expect(state.data.final_answer).toBe((happyPath().at(-1)!.output as { final_answer: string }).final_answer);
    // The lost attempt never reached the model; attempt 1 did, once.
    expect(
      proxy
        .callsOf(sid)
        .filter((c) => c.role === "planner")
        .map((c) => c.taskId),
    ).toEqual([retry]);
    llm.assertConsumed();
  });

  test(`a model failing every request with HTTP 500 costs exactly ${LLM_MAX_ATTEMPTS} requests × ${MAX_DELIVER} deliveries per task attempt; the retry limit ends the session`, async () => {
    await ensureRunning("planner");
    const sid = "tfhttp50000000000001";
    // More 500s than the bound could ever use: the count below is the code's, not the script's.
    const script: HttpScriptEntry[] = Array.from({ length: 40 }, () => ({ role: "planner", op: "plan", status: 500 }));
    await proxy.script(sid, script);
    await cluster.submit(QUESTION, sid, { options: { retry_limit: 2 } });

    const { state, log, events } = await cluster.waitDone(sid, 60_000);
    const why = describeLog(log);
    const again = taskId(sid, 2, 0, 1, inputIds.result(first(sid)));
    // Both attempts failed on their last delivery with a typed, retryable model_error; each
    // counted one retry; the second brought retry_count to the limit, which ends the run.
    expect(
      log.map((l) => `${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`),
      why,
    ).toEqual([
      `start:${sid} -> running [dispatch planner.plan ${first(sid)}]`,
      `result:${first(sid)} -> running [dispatch planner.plan ${again}]`,
      `result:${again} -> completed [complete]`,
    ]);
    assertAppliedOnce(log, state.meta.version);
    expect(state.meta.status).toBe("completed");
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    expect(state.data.retry_count).toBe(2);
    expect(state.data.final_answer).toBe(COULD_NOT_ANSWER);
    expect(state.data.final_reasoning_trace).toBe(COULD_NOT_ANSWER);
    const failures = events.filter((e) => e.type === "stage" && e.status === "failed" && e.name === "planner");
    expect(failures).toHaveLength(2);
    for (const f of failures)
      expect(f.type === "stage" && f.description).toMatch(/failed \(model_error: the model endpoint failed/);

    // The bound: every HTTP request of each task attempt, counted at the model endpoint.
    const calls = proxy.callsOf(sid);
    const perTask = new Map<string, number>();
    for (const c of calls) perTask.set(c.taskId, (perTask.get(c.taskId) ?? 0) + 1);
    expect(Object.fromEntries(perTask)).toEqual({
      [first(sid)]: LLM_MAX_ATTEMPTS * MAX_DELIVER,
      [again]: LLM_MAX_ATTEMPTS * MAX_DELIVER,
    });
    expect(calls.every((c) => c.status === 500)).toBe(true);
    // Nothing was charged for failed requests (no usage came back).
    expect(state.meta.usage).toMatchObject({ model_calls: 0, prompt_tokens: 0, completion_tokens: 0 });
  });

  test("a planner slower than its task deadline is stopped at the deadline and retried as attempt 1, like a dead one", async () => {
    await ensureRunning("planner");
    await ensureRunning("researcher");
    const sid = "tfslowplanner0000001";
    const [plan, ...rest] = happyPath();
    const llm = await proxy.script(sid, [{ ...plan!, delayMs: TASK_DEADLINE_MS + 5000 }, plan!, ...rest]);
    await cluster.submit(QUESTION, sid);
    const { state, log, events } = await cluster.waitDone(sid, 60_000);
    const why = describeLog(log);
    expect(state.meta.status, why).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    // Whichever notices the deadline first — the agent (it aborts its call and reports
    // deadline_exceeded) or the coordinator's deadline timer — the step runs again as attempt 1;
    // the other notice is dropped (the task is no longer awaited).
    expect([inputIds.result(first(sid)), inputIds.timer(first(sid))], why).toContain(log[1]?.input_id);
    const again = taskId(sid, 2, 0, 1, log[1]?.input_id);
    expect(dispatched(log[1], "planner", "plan"), why).toBe(again);
    expect(log[1]!.now - log[0]!.now, why).toBeLessThan(TASK_DEADLINE_MS + TIMER_SLACK_MS);
    expect(state.meta.version).toBe(11);
    if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
    expect(state.data.retry_count).toBe(1);
    expect(state.data.error).toBeNull();
    expect(state.data.final_answer).toContain("Doudna");
    const failed = events.find((e) => e.type === "stage" && e.name === "planner" && e.status === "failed");
    expect(failed?.type === "stage" && failed.description).toMatch(/^failed \(deadline_exceeded: /);
    // The slow call was abandoned at the deadline, not waited out.
    const [slow, retry] = proxy.callsOf(sid).filter((c) => c.role === "planner");
    expect(slow?.taskId).toBe(first(sid));
    const abortedAt = await waitFor("the slow call to be aborted", () => slow?.abortedAt ?? undefined, 5000, 20);
    expect(abortedAt - log[0]!.now).toBeGreaterThanOrEqual(TASK_DEADLINE_MS - 100);
    expect(abortedAt - log[0]!.now).toBeLessThan(TASK_DEADLINE_MS + 1000);
    expect(retry?.taskId).toBe(again);
    llm.assertConsumed();
  });

  test("a researcher killed on every delivery of its task: each attempt is ended by its deadline, re-dispatched once, then the retry limit ends the session", async () => {
    await ensureRunning("planner");
    await ensureStopped("researcher");
    const sid = "tfkilledevery0000001";
    const llm = await proxy.script(sid, happyPath().slice(0, 2)); // plan and its approval; research never reaches the model
    // Two armed replicas, both up before the task exists: its first delivery kills one, its
    // redelivery (after the 2 s ack wait) the other. Each is restarted, still armed.
    const armed = armedResearchers(2);
    try {
      await armed.ready();
      await cluster.submit(QUESTION, sid, { options: { retry_limit: 2 } });
      const { state, log } = await cluster.waitDone(sid, 60_000);
      const why = `${describeLog(log)}\n${armed.describe()}`;
      // each task id carries the digest of the input that made its version
      const t1 = first(sid);
      const t2 = taskId(sid, 2, 0, 0, inputIds.result(t1));
      const t3 = taskId(sid, 3, 0, 0, inputIds.result(t2));
      const t4 = taskId(sid, 4, 0, 1, inputIds.timer(t3));
      expect(
        log.map((l) => `${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`),
        why,
      ).toEqual([
        `start:${sid} -> running [dispatch planner.plan ${t1}]`,
        `result:${t1} -> running [dispatch critic.review_plan ${t2}]`,
        `result:${t2} -> running [dispatch researcher.research ${t3}]`,
        `timer:${t3} -> running [dispatch researcher.research ${t4}]`,
        `timer:${t4} -> completed [complete]`,
      ]);
      assertAppliedOnce(log, state.meta.version);
      if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
      expect(state.data.retry_count).toBe(2);
      expect(state.data.final_answer).toBe(COULD_NOT_ANSWER);
      // Each attempt ended at its deadline (dispatch + 8 s), not later.
      for (const [dispatchedAt, timer] of [
        [log[2]!, log[3]!],
        [log[3]!, log[4]!],
      ] as const) {
        const after = timer.now - dispatchedAt.now;
        expect(after, why).toBeGreaterThanOrEqual(TASK_DEADLINE_MS);
        expect(after, why).toBeLessThan(TASK_DEADLINE_MS + TIMER_SLACK_MS);
      }
      // Attempt 0 killed a researcher on each of its MAX_DELIVER deliveries. (Attempt 1's
      // deliveries kill the restarted ones, or reach one after the deadline and are refused
      // unworked; how many depends on how fast this machine restarts a process.)
      await armed.stop(); // throws if an armed researcher ever exited other than at its crash point
      expect(
        armed.deaths.filter((d) => d.at >= log[2]!.now && d.at < log[3]!.now),
        why,
      ).toHaveLength(MAX_DELIVER);
      // Nothing reached the model: every delivery died before it.
      expect(proxy.callsOf(sid).filter((c) => c.role === "researcher")).toEqual([]);
      llm.assertConsumed();
      if (process.env.E2E_DEBUG) console.log(why);
    } finally {
      await armed.stop().catch(() => undefined);
    }
  });

  test("a researcher killed on both deliveries of attempt 0, then replaced by a healthy one: a re-dispatched attempt completes the session", async () => {
    await ensureRunning("planner");
    await ensureStopped("researcher");
    const sid = "tfkilledthenok000001";
    const llm = await proxy.script(sid, happyPath());
    const armed = armedResearchers(2, MAX_DELIVER);
    try {
      await armed.ready();
      // A high retry limit: how many deadlines pass before the replacement is up depends on
      // how fast this machine starts a process, and must not end the session here.
      await cluster.submit(QUESTION, sid, { options: { retry_limit: 20 } });
      await armed.done; // attempt 0 killed a researcher on every delivery JetStream made of it
      const replacedAt = Date.now();
      cluster.start("researcher");
      await cluster.waitReady({ researcher: 1 }, 45_000);
      const readyAt = Date.now();
      const { state, log } = await cluster.waitDone(sid, 60_000);
      const why = `${describeLog(log)}\n${armed.describe()}\nreplacement started ${replacedAt}, ready ${readyAt}`;
      expect(state.meta.status, why).toBe("completed");
      assertAppliedOnce(log, state.meta.version);
      // After the plan was approved (v3 dispatched attempt 0), each research deadline that passed
      // re-dispatched the next attempt; the first research result applied is the last attempt's.
      const research = dispatched(log[2], "researcher", "research");
      expect(research, why).toMatch(mintedId("", 3, 0, 0, sid));
      const timers = log.filter((l) => l.input_id.startsWith(`timer:${sid}.`));
      expect(timers.length, why).toBeGreaterThanOrEqual(1);
      timers.forEach((t, k) => {
        expect(t.version, why).toBe(4 + k);
        expect(t.input_id, why).toBe(`timer:${dispatched(log[2 + k], "researcher", "research")}`);
        expect(dispatched(t, "researcher", "research"), why).toMatch(mintedId("", 4 + k, 0, k + 1, sid));
      });
      const last = timers.at(-1)!;
      expect(log[last.version]?.input_id, why).toBe(`result:${dispatched(last, "researcher", "research")}`);
      expect(
        log.filter((l) => l.input_id === `result:${research}`),
        why,
      ).toEqual([]);
      // No deadline passed after the replacement was up for a whole task deadline.
      expect(last.now, why).toBeLessThan(readyAt + TASK_DEADLINE_MS + TIMER_SLACK_MS);
      expect(state.meta.version).toBe(10 + timers.length);
      if (state.data.workflow !== "critic-chain") throw new Error("wrong workflow");
      expect(state.data.retry_count).toBe(timers.length);
      expect(state.data.research_results).toHaveLength(2);
      expect(state.data.final_answer).toContain("Doudna");
      expect(
        armed.deaths.filter((d) => d.at >= log[2]!.now && d.at < log[3]!.now),
        why,
      ).toHaveLength(MAX_DELIVER);
      // Only the healthy replacement reached the model, for the attempt that completed.
      expect(proxy.callsOf(sid).find((c) => c.role === "researcher")?.taskId).toBe(
        dispatched(last, "researcher", "research"),
      );
      llm.assertConsumed();
    } finally {
      await armed.stop().catch(() => undefined);
    }
  });
});
