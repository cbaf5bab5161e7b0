import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { ClarifyData, SessionEvent, SessionState, SessionStatus } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, serviceArgv, type Proc, type ServiceName } from "./harness.js";

const root = join(import.meta.dirname, "../..");

// The clarify workflow end to end: the coordinator and clarify's four roles each their
// own OS process over real NATS and Redis, the model scripted over HTTP (the real OpenAI adapter),
// the research agent searching the real corpus. Vague query → clarification → the person's reply
// (a durable pause that outlives its coordinator) → research → a cited synthesis.

const CLARIFY_ROLES = ["orchestrator", "clarifier", "researcher", "writer"] as const satisfies readonly ServiceName[];

const clarifyData = (state: SessionState): ClarifyData => {
  if (state.data.workflow !== "clarify") throw new Error(`expected a clarify session, got ${state.data.workflow}`);
  return state.data;
};
const ofType = <T extends SessionEvent["type"]>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);

const decides = (decision: string): HttpScriptEntry => ({
  role: "orchestrator",
  op: "decide",
  content: `Decision: ${decision}\nReasoning: scripted`,
});
const asks = (question: string): HttpScriptEntry => ({ role: "clarifier", op: "ask", content: question });
const writes = (answer: string): HttpScriptEntry => ({ role: "writer", op: "synthesize", content: answer });

const QUESTION = "Which part of Redis do you mean: persistence, replication or data types?";
const ANSWER = "Redis persists data with snapshots and the append-only file [1].";

/** Every session's model replies, in the order the tests run them (each (role, op) is its own queue). */
const SCRIPT: HttpScriptEntry[] = [
  // the crash test: one clarification, answered after the coordinator died
  decides("CLARIFICATION"),
  asks(QUESTION),
  writes(ANSWER),
  // the thread: two sessions, each clarifying once
  decides("CLARIFICATION"),
  asks("Which store do you mean?"),
  writes("The append-only file logs every write [1]."),
  decides("CLARIFICATION"),
  asks("Which file do you mean?"),
  writes("Snapshots are point-in-time copies [1]."),
];

describe("clarify with a scripted model: each role its own process", () => {
  let cluster: Cluster;
  let llm: ScriptedServer;
  let coordinator: Proc;

  beforeAll(async () => {
    llm = await startScriptedOpenAIServer({ script: SCRIPT, host: "127.0.0.1" });
    cluster = new Cluster({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      prefix: uniquePrefix("clar"),
      llmBaseUrl: llm.url,
    });
    await cluster.open();
    coordinator = cluster.start("coordinator");
    for (const role of CLARIFY_ROLES) cluster.start(role);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(CLARIFY_ROLES.map((r) => [r, 1])) }, 150_000);
  }, 200_000);

  afterAll(async () => {
    await cluster?.close();
    await llm?.close();
  });

  async function waitStatus(sid: string, status: SessionStatus, ms = 60_000): Promise<SessionState> {
    const end = Date.now() + ms;
    for (;;) {
      const s = (await cluster.store.load(sid))?.state;
      if (s?.meta.status === status) return s;
      if (Date.now() > end)
        throw new Error(
          `session ${sid} is ${s?.meta.status ?? "missing"}, not ${status}\n${cluster.procs.map((p) => `--- ${p.name}\n${p.output().slice(-1500)}`).join("\n")}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const orchestratorCalls = (sid: string) =>
    llm.calls.filter((c) => c.role === "orchestrator" && c.taskId.startsWith(sid)).length;

  test("vague → clarification → (the coordinator killed while it waits) → the reply → research → a cited synthesis", async () => {
    const sid = await cluster.submit("Tell me more about it", "clarcrash00000000001", { workflow: "clarify" });
    const paused = clarifyData(await waitStatus(sid, "awaiting_user", 90_000));
    expect(paused).toMatchObject({
      clarification_count: 1,
      last_agent: "clarification",
      clarification: { question: QUESTION, answer: null },
    });

    // The only coordinator dies while the session waits; the session is only in Redis now.
    coordinator.child.kill("SIGKILL");
    await coordinator.exited;
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("awaiting_user");
    coordinator = cluster.start("coordinator");
    await cluster.waitReady({ coordinator: 1 }, 90_000);

    const env = cluster.secrets.plant("cli", { ...process.env, ...cluster.env() });
    const cli = spawnSync(
      process.execPath,
      serviceArgv("cli", ["answer", sid, "Redis persistence with the append-only file"]),
      { cwd: root, env, encoding: "utf8" },
    );
    cluster.secrets.record("cli answer", cli.stdout + cli.stderr);
    expect(cli.status, cli.stderr).toBe(0);

    const { state, log, events } = await cluster.waitDone(sid, 90_000);
    assertAppliedOnce(log, state.meta.version);
    const data = clarifyData(state);
    expect(state.meta.status).toBe("completed");
    expect(state.meta.paused_ms).toBeGreaterThan(0);
    // Layer 3 once (the query), Layer 2 at the reply: one model call for the orchestrator
    expect(orchestratorCalls(sid)).toBe(1);
    expect(ofType(events, "orchestration").map((e) => [e.layer, e.next_agent, e.clarification_count])).toEqual([
      ["model", "clarification", 1],
      ["answered", "research", 1],
    ]);
    expect(
      data.research?.gaps,
      `${JSON.stringify(data.research)}\n${
        cluster.procs
          .find((p) => p.name === "researcher")
          ?.output()
          .slice(-3000) ?? ""
      }`,
    ).toEqual([]);
    expect(data.research?.query).toBe("redis persistence append-only file");
    expect(data.research?.passages[0]?.citation?.path).toContain("redis-persistence.md");
    const sources = ofType(events, "source");
    expect(sources[0]?.path).toContain("redis-persistence.md");
    const final = ofType(events, "complete")[0]?.final_answer ?? "";
    expect(final.startsWith(`${ANSWER}\n\nSources:\n[1] redis-persistence.md`)).toBe(true);
    // the synthesis agent was given the clarification and the cited passage
    const synth = llm.calls.find((c) => c.role === "writer" && c.taskId.startsWith(sid));
    expect(JSON.stringify(synth?.body)).toContain("The user answered: Redis persistence with the append-only file");
    expect(JSON.stringify(synth?.body)).toContain("[1] ");
  }, 240_000);

  test("in a thread, the next message answers the waiting session, and the count carries into the thread's next session", async () => {
    const thread = "clarthread0000000001";
    const first = await cluster.submit("Tell me more about it", "clarthreadsess000001", {
      workflow: "clarify",
      thread_id: thread,
    });
    await waitStatus(first, "awaiting_user", 90_000);
    expect(
      await cluster.submit("Redis and its append-only file", "clarthreadreply00001", {
        workflow: "clarify",
        thread_id: thread,
      }),
    ).toBe(first);
    const one = await cluster.waitDone(first, 90_000);
    expect(clarifyData(one.state)).toMatchObject({ clarification_count: 1 });

    const second = await cluster.submit("And what about that?", "clarthreadsess000002", {
      workflow: "clarify",
      thread_id: thread,
    });
    const waiting = clarifyData(await waitStatus(second, "awaiting_user", 90_000));
    // handed the first session's 1, its own clarification makes 2 of 2
    expect(waiting.clarification_count).toBe(2);
    expect(waiting.messages.slice(0, 2)).toEqual([
      { role: "user", content: "Tell me more about it" },
      { role: "assistant", content: clarifyData(one.state).final_answer },
    ]);
    expect(
      await cluster.submit("The snapshot file", "clarthreadreply00002", { workflow: "clarify", thread_id: thread }),
    ).toBe(second);
    const two = await cluster.waitDone(second, 90_000);
    assertAppliedOnce(two.log, two.state.meta.version);
    expect(two.state.meta.status).toBe("completed");
    // at the reply the cap (2 of 2) comes first: research forced, the count reset
    expect(ofType(two.events, "orchestration").map((e) => [e.layer, e.clarification_count])).toEqual([
      ["model", 2],
      ["cap", 0],
    ]);
    expect(clarifyData(two.state).clarification_count).toBe(0);
  }, 240_000);
});
