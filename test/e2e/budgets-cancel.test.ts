import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { SCHEMA_VERSION, inputIds, taskId, type SessionEvent, type TransitionLogLine } from "@agentmesh/contracts";
import { createPublisher } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { mintedId } from "@agentmesh/workflows/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce } from "./harness.js";
import { happyPath } from "./scripts.js";
import { alive, describeLog, runCli, sleep, startModelProxy, waitFor, type ModelProxy } from "./fault-kit.js";

// Budgets (steps, tokens, cost, wall clock) and cancel, over two coordinators and five agents.
// Prices: the scripted model costs 1000 USD per million prompt tokens, 2000 per million
// completion tokens, so 300 + 100 tokens cost exactly 0.5 USD.
const QUESTION = "What is CRISPR and who invented it?";
const COULD_NOT_ANSWER = "The question could not be answered.";
const INBOX_ACK_WAIT_MS = 18_000;
const [PLAN, APPROVE_PLAN, RESEARCH] = happyPath();

let proxy: ModelProxy;
let cluster: Cluster;

beforeAll(async () => {
  proxy = await startModelProxy();
  cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix("bc"),
    llmBaseUrl: proxy.url,
    extraEnv: {
      AGENTMESH_LLM_PRICES: "scripted=1000/2000",
      // Long enough that an inbox message held by a dead coordinator comes back only after the
      // replacements are up (cancel-before-start), short enough to wait for.
      AGENTMESH_INBOX_ACK_WAIT_MS: String(INBOX_ACK_WAIT_MS),
    },
  });
  await cluster.open();
});

afterAll(async () => {
  await cluster?.close();
  await proxy?.close();
});

const ALL = { coordinator: 2, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) };
const healthyCoordinators = () =>
  cluster.procs.filter((p) => p.name === "coordinator" && alive(p) && !p.output().includes("fault injection armed"));

/** Two healthy coordinators and one replica of every agent, started where missing. */
async function ensureCluster(): Promise<void> {
  const missing = 2 - healthyCoordinators().length;
  for (let i = 0; i < missing; i++) cluster.start("coordinator");
  if (missing > 0) await cluster.waitReady({ coordinator: 2 }, 45_000);
  for (const r of AGENT_ROLES) if (!cluster.procs.some((p) => p.name === r && alive(p))) cluster.start(r);
  await cluster.waitReady(ALL, 45_000);
}

const terminal = (log: readonly TransitionLogLine[]) => log.at(-1)!;
const errorEvent = (events: readonly SessionEvent[]) => events.find((e) => e.type === "error");
const completeEvent = (events: readonly SessionEvent[]) => events.find((e) => e.type === "complete");

/** Asserts the session ended as budget_exceeded, saying so in its error and complete events. */
function expectBudgetEnd(r: Awaited<ReturnType<Cluster["waitDone"]>>, message: RegExp): void {
  const why = describeLog(r.log);
  expect(r.state.meta.status, why).toBe("budget_exceeded");
  assertAppliedOnce(r.log, r.state.meta.version);
  expect(terminal(r.log).status).toBe("budget_exceeded");
  expect(terminal(r.log).commands).toEqual(["budget_exceeded budget_exceeded"]);
  expect(r.state.meta.error?.code).toBe("budget_exceeded");
  expect(r.state.meta.error?.message).toMatch(message);
  expect(errorEvent(r.events)).toMatchObject({ code: "budget_exceeded", message: expect.stringMatching(message) });
  expect(completeEvent(r.events)).toMatchObject({ status: "budget_exceeded", final_answer: COULD_NOT_ANSWER });
  expect(r.state.meta.awaiting).toEqual([]);
}

describe("cancel", () => {
  test("a cancel that reaches the inbox before the session's start was processed ends it; the start is then dropped", async () => {
    // The only coordinator dies right after loading the first inbox input it takes: the start.
    // (No agent runs yet: the transition log shows that nothing is ever dispatched.)
    const c0 = cluster.start("coordinator", { AGENTMESH_CRASH_AT: "after-load" });
    await cluster.waitReady({ coordinator: 1 }, 45_000);

    const sid = "bccancelbeforestart1";
    await proxy.script(sid, [PLAN!]);
    // Its reply may or may not leave before the coordinator dies; the session exists either way.
    const submitted = cluster.submit(QUESTION, sid).catch((e: unknown) => e);
    const death = await Promise.race([c0.exited, sleep(30_000).then(() => null)]);
    expect(death?.signal, c0.output().slice(-1500)).toBe("SIGKILL");
    expect(c0.output()).toContain("dying at after-load");
    expect((await cluster.store.load(sid))?.state.meta.version).toBe(0); // created, start not applied

    // Replacements come up while the dead coordinator's lease on the start has not run out.
    const startedAt = Date.now();
    cluster.start("coordinator");
    cluster.start("coordinator");
    await cluster.waitReady({ coordinator: 2 }, 45_000);
    const ready = Date.now() - startedAt;
    expect(
      (await cluster.store.load(sid))?.state.meta.version,
      `replacements took ${ready} ms, the start came back first`,
    ).toBe(0);
    // The cancel reaches the inbox, behind the start, before the start was processed.
    const publisher = createPublisher(
      cluster.natsConnection,
      cluster.naming,
      createLogger({ service: "e2e", level: "silent" }),
      { client: true },
    );
    await publisher.publishInbox({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sid,
      input_id: inputIds.cancel(`${sid}-test`),
      reason: "cancelled before it started",
    });

    const { state, log, events } = await cluster.waitDone(sid, 60_000);
    const why = `${describeLog(log)}\nreplacement coordinators ready after ${ready} ms`;
    expect(
      log.map((l) => `${l.version} ${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`),
      why,
    ).toEqual([`1 cancel:${sid}-test -> cancelled [cancel]`]);
    expect(state.meta.status).toBe("cancelled");
    expect(errorEvent(events)).toMatchObject({ code: "cancelled", message: "cancelled before it started" });
    expect(completeEvent(events)).toMatchObject({ status: "cancelled", final_answer: COULD_NOT_ANSWER });

    // The start is still in the (work-queue) inbox stream, unacknowledged: the dead coordinator's
    // lease on it has not run out. When it does, the start is redelivered, dropped (the session is
    // cancelled) and acked, which removes it from the stream.
    for (const r of AGENT_ROLES) cluster.start(r); // meanwhile, for the tests that follow
    const jsm = await jetstreamManager(cluster.natsConnection);
    const inboxMessages = async () => (await jsm.streams.info(cluster.naming.streams.inbox)).state.messages;
    expect(await inboxMessages()).toBe(1);
    await waitFor(
      "the start input to be redelivered, dropped and acked",
      async () => (await inboxMessages()) === 0,
      INBOX_ACK_WAIT_MS + 15_000,
      250,
    );
    const after = await cluster.store.transitionLog(sid);
    expect(after).toHaveLength(1);
    expect((await cluster.store.load(sid))?.state.meta.version).toBe(1);
    const reply = await submitted;
    if (!(reply instanceof Error)) expect(reply).toBe(sid);
  }, 120_000);

  test("`agentmesh cancel` during a model call: cancelled within 1 s, the agent's HTTP request aborted, its late result dropped", async () => {
    await ensureCluster();
    const sid = "bccancelmidcall00001";
    await proxy.script(sid, [{ ...PLAN!, delayMs: 60_000 }]);
    const inbox: Array<{ at: number; input_id: string; body: unknown }> = [];
    const sub = cluster.natsConnection.subscribe(`${cluster.naming.prefix}.inbox.${sid}.*`, {
      callback: (_err, m) => {
        const body = m.json<{ input_id: string }>();
        inbox.push({ at: Date.now(), input_id: body.input_id, body });
      },
    });
    try {
      await cluster.submit(QUESTION, sid);
      const call = await waitFor(
        "the planner's model call",
        () => proxy.callsOf(sid).find((c) => c.role === "planner"),
        30_000,
        20,
      );

      const cli = await runCli(cluster, ["cancel", sid]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toContain(`cancel sent to session ${sid}`);
      const cancel = inbox.find((m) => m.input_id === inputIds.cancel(`${sid}-cli`));
      expect(cancel).toBeDefined();

      const { state, log, events } = await cluster.waitDone(sid, 30_000);
      const why = describeLog(log);
      expect(
        log.map((l) => `${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`),
        why,
      ).toEqual([
        `start:${sid} -> running [dispatch planner.plan ${taskId(sid, 1, 0, 0, inputIds.start(sid))}]`,
        `cancel:${sid}-cli -> cancelled [cancel]`,
      ]);
      expect(state.meta.status).toBe("cancelled");
      expect(errorEvent(events)).toMatchObject({ code: "cancelled", message: "cancelled from the CLI" });
      expect(completeEvent(events)).toMatchObject({ status: "cancelled", final_answer: COULD_NOT_ANSWER });
      // Cancelled within 1 s of the cancel reaching the inbox.
      const cancelToEnd = terminal(log).now - cancel!.at;
      expect(cancelToEnd, why).toBeLessThan(1000);

      // The agent hung up on the model within 1 s of the cancel, long before the 60 s answer.
      const aborted = await waitFor(
        "the planner's HTTP request to be aborted",
        () => call.abortedAt ?? undefined,
        5000,
        20,
      );
      expect(aborted - cancel!.at).toBeLessThan(1000);
      expect(call.endedAt).toBeNull();
      expect(call.status).toBeNull();

      // The agent still reports the task (as cancelled); that late result is dropped, not applied.
      const late = await waitFor(
        "the planner's late result",
        () => inbox.find((m) => mintedId("result:", 1, 0, 0, sid).test(m.input_id)),
        10_000,
        50,
      );
      expect(late.at).toBeGreaterThan(cancel!.at);
      expect(late.body).toMatchObject({ outcome: { ok: false, error: { code: "cancelled" } } });
      await sleep(1500);
      expect(await cluster.store.transitionLog(sid)).toHaveLength(2);
      expect((await cluster.store.load(sid))?.state.meta.version).toBe(2);
      expect(proxy.callsOf(sid)).toHaveLength(1); // not retried either
      if (process.env.E2E_DEBUG) console.log(`cancel→end ${cancelToEnd} ms, cancel→abort ${aborted - cancel!.at} ms`);
    } finally {
      sub.unsubscribe();
    }
  });
});

describe("budgets: each ends the session as budget_exceeded with a clear message, at once", () => {
  test("steps: max_steps 3 ends the session at the result that would need a 4th step", async () => {
    await ensureCluster();
    const sid = "bcbudgetsteps0000001";
    const llm = await proxy.script(sid, [PLAN!, APPROVE_PLAN!, RESEARCH!]);
    await cluster.submit(QUESTION, sid, { options: { budgets: { max_steps: 3 } } });
    const r = await cluster.waitDone(sid, 30_000);
    expectBudgetEnd(r, /^step budget exhausted: 3 of max_steps 3 used, 1 more needed$/);
    // v3 dispatched the 3rd step (the research); its result is the terminal transition, v4.
    expect(r.log).toHaveLength(4);
    expect(r.log[2]!.commands).toEqual([
      expect.stringMatching(mintedId("dispatch researcher.research ", 3, 0, 0, sid)),
    ]);
    expect(terminal(r.log).input_id).toMatch(mintedId("result:", 3, 0, 0, sid));
    expect(r.state.meta.usage.steps).toBe(3);
    llm.assertConsumed();
  });

  test("tokens: max_tokens 900 ends the session at the result that brings usage to 1000", async () => {
    await ensureCluster();
    const sid = "bcbudgettokens000001";
    const usage = { prompt_tokens: 400, completion_tokens: 100 };
    const llm = await proxy.script(sid, [
      { ...PLAN!, usage },
      { ...APPROVE_PLAN!, usage },
    ]);
    await cluster.submit(QUESTION, sid, { options: { budgets: { max_tokens: 900 } } });
    const r = await cluster.waitDone(sid, 30_000);
    expectBudgetEnd(r, /^token budget exhausted: 1000 tokens used, max_tokens 900$/);
    // The critic's result (500 + 500 = 1000 tokens) is the exhausting one and the terminal one.
    expect(r.log).toHaveLength(3);
    expect(terminal(r.log).input_id).toMatch(mintedId("result:", 2, 0, 0, sid));
    expect(r.state.meta.usage).toMatchObject({ prompt_tokens: 800, completion_tokens: 200, model_calls: 2 });
    llm.assertConsumed();
  });

  test("cost: max_cost_usd 0.9 ends the session at the result that brings spend to 1 USD", async () => {
    await ensureCluster();
    const sid = "bcbudgetcost00000001";
    const usage = { prompt_tokens: 300, completion_tokens: 100 }; // 0.5 USD a call
    const llm = await proxy.script(sid, [
      { ...PLAN!, usage },
      { ...APPROVE_PLAN!, usage },
    ]);
    await cluster.submit(QUESTION, sid, { options: { budgets: { max_cost_usd: 0.9 } } });
    const r = await cluster.waitDone(sid, 30_000);
    expectBudgetEnd(r, /^cost budget exhausted: 1 USD spent, max_cost_usd 0\.9$/);
    expect(r.log).toHaveLength(3);
    expect(terminal(r.log).input_id).toMatch(mintedId("result:", 2, 0, 0, sid));
    expect(r.state.meta.usage.cost_usd).toBe(1);
    const steps = r.events.filter((e) => e.type === "step");
    expect(steps.map((e) => e.type === "step" && e.provenance.usage.cost_usd)).toEqual([0.5, 0.5]);
    llm.assertConsumed();
  });

  test("wall clock: max_wall_ms 2500 with a slow planner ends the session within 1 s of created_at + 2500; the call is aborted", async () => {
    await ensureCluster();
    const sid = "bcbudgetwall00000001";
    await proxy.script(sid, [{ ...PLAN!, delayMs: 30_000 }]);
    await cluster.submit(QUESTION, sid, { options: { budgets: { max_wall_ms: 2500 } } });
    const r = await cluster.waitDone(sid, 30_000);
    expectBudgetEnd(r, /^wall-clock budget exhausted: \d+ ms elapsed, max_wall_ms 2500$/);
    expect(r.log.map((l) => l.input_id)).toEqual([`start:${sid}`, `timer:session.${sid}`]);
    const exhaustedAt = r.state.meta.created_at + 2500;
    const late = terminal(r.log).now - exhaustedAt;
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(1000);
    // The slow call was told to stop (cancel notice) and hung up; its late result is dropped.
    const call = proxy.callsOf(sid)[0]!;
    const aborted = await waitFor(
      "the planner's HTTP request to be aborted",
      () => call.abortedAt ?? undefined,
      5000,
      20,
    );
    expect(aborted - terminal(r.log).now).toBeLessThan(1000);
    await sleep(1500);
    expect(await cluster.store.transitionLog(sid)).toHaveLength(2);
    if (process.env.E2E_DEBUG)
      console.log(`wall: ended ${late} ms after exhaustion, aborted ${aborted - terminal(r.log).now} ms after the end`);
  });
});
