import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Redis } from "ioredis";
import {
  CancelNotice,
  ERROR_CODES,
  InboxInput,
  LIMITS,
  Provenance,
  ROLES,
  SCHEMA_VERSION,
  SessionEvent,
  SubmitReply,
  SubmitRequest,
  WireError,
  findOp,
  inputIds,
  listOps,
  naming as makeNaming,
  type Naming,
} from "@agentmesh/contracts";
import { connectNats, followEvents, type Log, type Worker } from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { createLogger, type Stoppable } from "@agentmesh/service-kit";
import { loadRoles } from "@agentmesh/agent";
import { loadAgentConfig, setUpRole, startAgentsInProcess, type AgentSetup } from "@agentmesh/agent-kit";
import { loadCoordinatorConfig, startCoordinatorFromConfig, type RunningCoordinator } from "@agentmesh/coordinator";
import { uniquePrefix } from "../setup/prefix.js";
import { arbitraryOf } from "./arbitrary.js";
import { FUZZ_HINTS } from "./hints.js";
import { countKinds, deepAtArb, fuzzInputsArb, mutatedArb, sampleInputs, type FuzzInput } from "./mutate.js";

/**
 * Every message schema fuzzed through its real subject on a real NATS,
 * against the real coordinator and every agent role in this process. Each input must end as a
 * typed error or a clean drop, nothing may be redelivered in a loop, every consumer must drain,
 * and sessions that are not fuzzed must complete as if nothing happened.
 */

const PER_SCHEMA = 1000;
/** Task inputs per (role, op): the TaskEnvelope fuzz spreads over every op of the registry. */
const PER_OP = 100;
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const BATCH = 50;
/** Generous: the machine may be busy; a publish that is merely slow is not what this test looks for. */
const PUB = { timeout: 30_000 };

const counts: Record<string, Record<string, number>> = {};
const enc = new TextEncoder();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A Log that counts warnings and debug lines (for followEvents: malformed events warn, events already delivered are debug). */
function countingLog(): Log & { warns: number; debugs: number } {
  const l = {
    warns: 0,
    debugs: 0,
    info: () => undefined,
    debug: () => void l.debugs++,
    error: () => undefined,
    warn: () => void l.warns++,
  };
  return l;
}

async function waitFor(what: string, ms: number, ok: () => Promise<boolean> | boolean, everyMs = 100): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Runs `f` over `items`, `BATCH` at a time. */
async function inBatches<T>(what: string, items: readonly T[], f: (t: T, i: number) => Promise<void>): Promise<void> {
  const t0 = Date.now();
  try {
    for (let i = 0; i < items.length; i += BATCH)
      await Promise.all(items.slice(i, i + BATCH).map((t, j) => f(t, i + j)));
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
  }
  phase(`${what} sent in ${Date.now() - t0} ms`);
}

const T0 = Date.now();
const phase = (what: string) => console.log(`[fuzz] +${Date.now() - T0} ms ${what}`);

/** Notes the inputs of one schema for the summary; at least 30 % must be valid values with one field mutated. */
function record(schema: string, inputs: readonly FuzzInput[], share = true): void {
  const kinds = countKinds(inputs);
  counts[schema] = { total: inputs.length, ...kinds } as Record<string, number>;
  // per op (100 inputs) the share only varies around the 40 % aimed at; it is checked per schema
  if (share)
    expect(
      (kinds.mutated ?? 0) / inputs.length,
      `${schema}: share of valid-then-mutated inputs`,
    ).toBeGreaterThanOrEqual(0.3);
}

/** The session id of a fuzz input, when it is JSON naming a well-formed one; else the fallback. */
function sessionOf(i: FuzzInput, fallback: string): string {
  try {
    const sid = (JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(i.bytes)) as { session_id?: unknown })
      .session_id;
    return typeof sid === "string" && /^[A-Za-z0-9_-]{8,64}$/.test(sid) ? sid : fallback;
  } catch {
    return fallback;
  }
}

/** The inbox sender an input of its kind would come from (a result: its role), so fuzzed inputs pass the sender check and reach the handlers. */
function senderOf(i: FuzzInput): string {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(i.bytes)) as {
      kind?: unknown;
      role?: unknown;
    };
    if (v.kind === "result" && typeof v.role === "string" && /^[a-z][a-z0-9_]{0,39}$/.test(v.role)) return v.role;
    if (v.kind === "start" || v.kind === "timer") return "coordinator";
    return "client";
  } catch {
    return "client";
  }
}

/** One coordinator and every role of the registry on one prefix, as `services/local` runs them. */
interface System {
  readonly naming: Naming;
  readonly store: SessionStore;
  readonly coordinator: RunningCoordinator;
  readonly workers: ReadonlyMap<string, Worker>;
  stop(): Promise<void>;
}

async function startSystem(nc: NatsConnection, redis: Redis, opts: { agents: boolean }): Promise<System> {
  const prefix = uniquePrefix("fz");
  const env = {
    NATS_URL: inject("natsUrl"),
    REDIS_URL: inject("redisUrl"),
    AGENTMESH_PREFIX: prefix,
    LOG_LEVEL: "silent",
    // leases long enough that a busy CI machine does not expire them: redelivery here should mean a poison input
    AGENTMESH_TASK_ACK_WAIT_MS: "15000",
    AGENTMESH_INBOX_ACK_WAIT_MS: "15000",
    AGENTMESH_AGENT_CONCURRENCY: "8",
    AGENTMESH_COORDINATOR_CONCURRENCY: "16",
    AGENTMESH_TASK_MAX_DELIVER: "5",
  };
  const log = createLogger({ service: "fuzz", level: "silent" });
  const coordinator = await startCoordinatorFromConfig(loadCoordinatorConfig(env), { nc, redis, log });
  const setups: AgentSetup[] = [];
  let agents: Stoppable | null = null;
  const workers = new Map<string, Worker>();
  if (opts.agents) {
    const roles = await loadRoles([]);
    for (const r of roles) setups.push(await setUpRole(r.module, env, log));
    const running = await startAgentsInProcess(
      setups.flatMap((s) => s.agents),
      loadAgentConfig(env),
      { nc, log, promptDirs: roles.map((r) => r.dir) },
    );
    agents = running;
    running.agents.forEach((a, i) => workers.set(setups.flatMap((s) => s.agents)[i]!.role, a.worker));
  }
  const naming = makeNaming(prefix);
  const store = createRedisSessionStore(redis, {
    keyPrefix: prefix,
    activeTtlMs: 3_600_000,
    finishedTtlMs: 3_600_000,
    idempotencyTtlMs: 3_600_000,
  });
  return {
    naming,
    store,
    coordinator,
    workers,
    async stop() {
      await agents?.stop(2000);
      await Promise.all(setups.map((x) => x.close?.()));
      await coordinator.stop(2000);
      const jsm = await jetstreamManager(nc);
      for (const s of Object.values(naming.streams)) await jsm.streams.delete(s).catch(() => false);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
    },
  };
}

/** Nesting depth of a parsed value, without recursion. */
function depthOf(root: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    max = Math.max(max, d + 1);
    for (const x of Object.values(v)) stack.push([x, d + 1]);
  }
  return max;
}

const decodeStrict = (b: Uint8Array): unknown => JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b));
const randomSid = (tag: string) => fc.stringMatching(/^[a-z0-9]{12}$/).map((r) => `${tag}${r}`);

async function submitQuery(nc: NatsConnection, sys: System, query: string, workflow = "critic-chain"): Promise<string> {
  const reply = SubmitReply.parse(
    (
      await nc.request(sys.naming.submit, enc.encode(JSON.stringify({ v: SCHEMA_VERSION, query, workflow })), {
        timeout: 15_000,
      })
    ).json(),
  );
  if (!reply.ok) throw new Error(`control submit rejected: ${reply.error.code} ${reply.error.message}`);
  return reply.session_id;
}

/** Waits for a session to end; returns its status. */
async function finalStatus(sys: System, sid: string, ms = 45_000): Promise<string> {
  let status = "missing";
  await waitFor(`session ${sid} to end`, ms, async () => {
    const s = await sys.store.load(sid);
    status = s?.state.meta.status ?? "missing";
    return ["completed", "failed", "cancelled", "budget_exceeded"].includes(status);
  });
  return status;
}

/** Consumers of a prefix with messages still pending or unacknowledged, and their redelivery counts. */
async function consumerStates(nc: NatsConnection, sys: System, roles: readonly string[]) {
  const jsm = await jetstreamManager(nc);
  const list = [
    { stream: sys.naming.streams.inbox, name: sys.naming.consumers.coordinator },
    ...roles.map((r) => ({ stream: sys.naming.streams.tasks, name: sys.naming.consumers.role(r) })),
  ];
  return Promise.all(
    list.map(async (c) => {
      const i = await jsm.consumers.info(c.stream, c.name);
      return {
        consumer: c.name,
        pending: i.num_pending,
        ack_pending: i.num_ack_pending,
        redelivered: i.num_redelivered,
        delivered: i.delivered.stream_seq,
      };
    }),
  );
}

async function drained(nc: NatsConnection, sys: System, roles: readonly string[], ms: number) {
  let last: Awaited<ReturnType<typeof consumerStates>> = [];
  await waitFor(
    "every consumer to drain",
    ms,
    async () => {
      last = await consumerStates(nc, sys, roles);
      return last.every((c) => c.pending === 0 && c.ack_pending === 0);
    },
    25,
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}: ${JSON.stringify(last)}`);
  });
  return last;
}

/**
 * Counts JetStream's max-deliveries advisories for a prefix's streams: the server sends one when it
 * gives up redelivering a message nobody acknowledged, which is what a poison loop ends in.
 */
function watchMaxDeliveries(nc: NatsConnection, sys: System): { seen(): string[]; stop(): void } {
  const seen: string[] = [];
  const streams = new Set([sys.naming.streams.inbox, sys.naming.streams.tasks]);
  const sub = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>", {
    callback: (err, m) => {
      if (err || !streams.has(m.subject.split(".")[5] ?? "")) return;
      const a = m.json<{ stream?: string; consumer?: string; stream_seq?: number; deliveries?: number }>();
      seen.push(`${a.stream}/${a.consumer} seq ${a.stream_seq} after ${a.deliveries} deliveries`);
    },
  });
  return { seen: () => seen, stop: () => sub.unsubscribe() };
}

let nc: NatsConnection;
let redis: Redis;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "fuzz-test" });
  redis = await connectRedis(inject("redisUrl"), { name: "fuzz-test" });
});
afterAll(async () => {
  console.log(`[fuzz] inputs per schema (seed ${SEED}):`);
  for (const [schema, c] of Object.entries(counts)) console.log(`[fuzz]   ${schema}: ${JSON.stringify(c)}`);
  await nc?.drain();
  await redis?.quit();
});

describe("schema fuzzing through the real subjects", () => {
  test(
    "submit, inbox, task, cancel and event subjects: typed errors or clean drops, no poison loop, sessions unaffected",
    { timeout: 120_000 },
    async () => {
      const sys = await startSystem(nc, redis, { agents: true });
      const roles = [...sys.workers.keys()];
      const poison = watchMaxDeliveries(nc, sys);
      try {
        expect(roles.sort()).toEqual([...Object.keys(ROLES)].sort());
        const before = await submitQuery(nc, sys, "What is CRISPR and who invented it?");
        expect(await finalStatus(sys, before)).toBe("completed");
        phase("control session before: completed");
        const targets = await Promise.all(
          ["fuzz target one", "fuzz target two", "fuzz target three"].map((q) => submitQuery(nc, sys, q)),
        );

        // every result an agent reports for a fuzzed task, checked as the coordinator would
        const outcomes: Record<string, number> = {};
        const sub = nc.subscribe(sys.naming.inboxAll, {
          callback: (err, m) => {
            if (err) return;
            try {
              const r = InboxInput.safeParse(decodeStrict(m.data));
              if (!r.success || r.data.kind !== "result" || !r.data.session_id.startsWith("tfuzz")) return;
              const key = r.data.outcome.ok ? "ok" : r.data.outcome.error.code;
              outcomes[key] = (outcomes[key] ?? 0) + 1;
            } catch {
              /* fuzz inputs of the inbox phase */
            }
          },
        });

        phase("targets submitted");
        const js = jetstream(nc);
        const submitArb = fc
          .tuple(
            arbitraryOf(SubmitRequest, FUZZ_HINTS),
            fc.string({ minLength: 3, maxLength: 60 }).filter((q) => q.trim().length >= 3),
          )
          .map(([r, query]) => ({ ...r, query, options: { ...r.options, budgets: { max_steps: 1 } } }));
        const submitInputs = sampleInputs(fuzzInputsArb(submitArb), PER_SCHEMA, SEED);
        const inboxArb = fc
          .tuple(arbitraryOf(InboxInput, FUZZ_HINTS), fc.option(fc.constantFrom(...targets)))
          .map(([i, sid]) => (sid ? { ...i, session_id: sid } : i));
        const inboxInputs = sampleInputs(fuzzInputsArb(inboxArb), PER_SCHEMA, SEED + 1);
        const taskSids: string[] = [];
        const taskInputs = listOps().flatMap(({ role, op }, k) => {
          const envelope = fc
            .tuple(arbitraryOf(findOp(role, op)!.request, FUZZ_HINTS), randomSid("tfuzz"), fc.nat(3))
            .map(([input, sid, attempt]) => {
              taskSids.push(sid);
              return {
                v: SCHEMA_VERSION,
                task_id: `${sid}.1.0.${attempt}`,
                session_id: sid,
                role,
                op,
                attempt,
                deadline_at: null,
                input,
              };
            });
          const inputs = sampleInputs(fuzzInputsArb(envelope), PER_OP, SEED + 10 + k);
          record(`TaskEnvelope ${role}.${op}`, inputs, false);
          return inputs.map((i) => ({ subject: sys.naming.task(role, op), input: i }));
        });
        const cancelArb = fc
          .tuple(arbitraryOf(CancelNotice, FUZZ_HINTS), fc.constantFrom(...taskSids))
          .map(([c, sid]) => ({ ...c, session_id: sid }));
        const cancelInputs = sampleInputs(fuzzInputsArb(cancelArb), PER_SCHEMA, SEED + 2);
        const eventSid = fc.sample(randomSid("efuzz"), { numRuns: 1, seed: SEED })[0]!;
        const eventInputs = sampleInputs(
          fuzzInputsArb(arbitraryOf(SessionEvent, FUZZ_HINTS).map((e) => ({ ...e, session_id: eventSid }))),
          PER_SCHEMA,
          SEED + 3,
        );
        record("SubmitRequest", submitInputs);
        record("InboxInput", inboxInputs);
        record(
          "TaskEnvelope (all ops)",
          taskInputs.map((t) => t.input),
        );
        record("CancelNotice", cancelInputs);
        record("SessionEvent", eventInputs);

        phase("inputs generated");
        const during = await submitQuery(nc, sys, "How many moons does Mars have?");
        const submitReplies: Record<string, number> = {};
        const problems: string[] = [];
        // one subject after another: all at once only measures how busy the machine is
        for (const send of [
          () =>
            inBatches("submitInputs", submitInputs, async (i) => {
              try {
                const m = await nc.request(sys.naming.submit, i.bytes, { timeout: 20_000 });
                const body = decodeStrict(m.data);
                // the endpoint's own refusals (not JSON, too large) come as a wire error in the service-error headers
                const parsed = m.headers?.get("Nats-Service-Error-Code")
                  ? WireError.safeParse(body)
                  : SubmitReply.safeParse(body);
                if (!parsed.success)
                  return void problems.push(
                    `submit ${i.kind} (${i.note}): untyped reply ${JSON.stringify(body).slice(0, 200)}`,
                  );
                const d = parsed.data;
                const key = "ok" in d ? (d.ok ? "created" : d.error.code) : d.code;
                submitReplies[key] = (submitReplies[key] ?? 0) + 1;
              } catch (err) {
                problems.push(`submit ${i.kind} (${i.note}): ${(err as Error).message}`);
              }
            }),
          () =>
            inBatches("inboxInputs", inboxInputs, async (i) => {
              await js.publish(sys.naming.inbox(sessionOf(i, "ifuzz0000000"), senderOf(i)), i.bytes, PUB);
            }),
          () =>
            inBatches("taskInputs", taskInputs, async (t) => {
              await js.publish(t.subject, t.input.bytes, PUB);
            }),
          () =>
            inBatches("cancelInputs", cancelInputs, async (i) => {
              nc.publish(sys.naming.cancel(sessionOf(i, taskSids[0]!)), i.bytes);
              await Promise.resolve();
            }),
          () =>
            inBatches("eventInputs", eventInputs, async (i) => {
              await js.publish(sys.naming.events(eventSid), i.bytes, PUB);
            }),
        ])
          await send();

        // events: the follower yields the valid ones once each (an event whose version and index it
        // already passed is skipped with a debug line) and skips every other one with a warning
        const followLog = countingLog();
        const ac = new AbortController();
        let yielded = 0;
        const highest = new Map<number, number>();
        const following = (async () => {
          for await (const e of followEvents(nc, sys.naming, eventSid, { signal: ac.signal, log: followLog })) {
            expect(SessionEvent.safeParse(e).success).toBe(true);
            expect(e.index).toBeGreaterThan(highest.get(e.version) ?? -1);
            highest.set(e.version, e.index);
            yielded++;
          }
        })();
        await waitFor(
          "the event follower to read every event",
          20_000,
          () => yielded + followLog.warns + followLog.debugs >= eventInputs.length,
        );
        ac.abort();
        await following;
        const validEvents = eventInputs.filter((i) => {
          if (i.bytes.byteLength > LIMITS.maxMessageBytes) return false;
          try {
            const value = decodeStrict(i.bytes);
            const e = SessionEvent.safeParse(value);
            return depthOf(value) <= 64 && e.success && e.data.session_id === eventSid;
          } catch {
            return false;
          }
        }).length;

        phase("events followed");
        const states = await drained(nc, sys, roles, 45_000);
        sub.unsubscribe();
        phase("drained");
        expect(await finalStatus(sys, during)).toBe("completed");
        const after = await submitQuery(nc, sys, "What is the boiling point of water at sea level?");
        expect(await finalStatus(sys, after)).toBe("completed");

        console.log(`[fuzz] submit replies: ${JSON.stringify(submitReplies)}`);
        console.log(`[fuzz] task outcomes reported: ${JSON.stringify(outcomes)}`);
        console.log(
          `[fuzz] events: ${yielded} yielded (${validEvents} valid sent, ${followLog.debugs} of them already delivered), ${followLog.warns} skipped`,
        );
        console.log(
          `[fuzz] inbox: ${JSON.stringify(sys.coordinator.inbox.stats)}; coordinator: ${JSON.stringify(sys.coordinator.core.stats)}`,
        );
        console.log(
          `[fuzz] workers: ${JSON.stringify(Object.fromEntries([...sys.workers].map(([r, w]) => [r, w.stats])))}`,
        );
        console.log(`[fuzz] consumers: ${JSON.stringify(states)}`);

        expect(problems).toEqual([]);
        expect(Object.values(submitReplies).reduce((a, b) => a + b, 0)).toBe(submitInputs.length);
        expect(Object.keys(submitReplies).filter((k) => k !== "created" && !(k in ERROR_CODES))).toEqual([]);
        // "internal" is our own bug: no fuzz input may reach one
        expect(submitReplies.internal ?? 0).toBe(0);
        expect(outcomes.internal ?? 0).toBe(0);
        expect(yielded + followLog.debugs).toBe(validEvents);
        expect(yielded + followLog.warns + followLog.debugs).toBe(eventInputs.length);
        // no message was redelivered until the server gave up on it, every consumer drained (above), every process still serves;
        // a handler may still fail on a busy machine (a publish timing out), so failures are only bounded by the drain
        expect(poison.seen()).toEqual([]);
        expect(sys.coordinator.inbox.alive()).toBe(true);
        for (const [role, w] of sys.workers) expect(w.alive(), role).toBe(true);
      } finally {
        poison.stop();
        await sys.stop();
      }
    },
  );

  test(
    "agent results for the tasks sessions await (every op's response, valid then mutated, deep, huge): sessions stay live",
    { timeout: 120_000 },
    async () => {
      // no agents: the test answers every task itself, so each result meets a session that awaits it
      const sys = await startSystem(nc, redis, { agents: false });
      const poison = watchMaxDeliveries(nc, sys);
      try {
        const js = jetstream(nc);
        const queries = ["What is CRISPR and who invented it?", "Compute 12 * 7 and explain the result."];
        let made = 0;
        const fresh = () => submitQuery(nc, sys, queries[made % 2]!, made++ % 2 === 0 ? "critic-chain" : "blackboard");
        const slots = await Promise.all(Array.from({ length: 40 }, fresh));
        const touched = new Set(slots);
        const inputs: FuzzInput[] = [];
        const perOp: Record<string, number> = {};
        const provenance = arbitraryOf(Provenance, FUZZ_HINTS);
        let round = 0;
        while (inputs.length < PER_SCHEMA) {
          round++;
          await Promise.all(
            slots.map(async (sid, k) => {
              let loaded = await sys.store.load(sid);
              // a session that ended (or has nothing to wait for) is replaced by a new one
              if (!loaded || loaded.state.meta.awaiting.length === 0) {
                slots[k] = sid = await fresh();
                touched.add(sid);
                await waitFor(
                  `session ${sid} to dispatch`,
                  15_000,
                  async () => ((loaded = await sys.store.load(sid)) ?? null)?.state.meta.awaiting.length !== 0,
                );
              }
              const task = loaded!.state.meta.awaiting[0]!;
              const valid = fc
                .tuple(arbitraryOf(findOp(task.role, task.op)!.response, FUZZ_HINTS), provenance)
                .map(([output, p]) => ({
                  v: SCHEMA_VERSION,
                  kind: "result",
                  session_id: sid,
                  input_id: inputIds.result(task.task_id),
                  task_id: task.task_id,
                  role: task.role,
                  op: task.op,
                  outcome: { ok: true, output, provenance: { ...p, role: task.role, op: task.op } },
                }));
              const arb = fc.oneof(
                {
                  weight: 3,
                  arbitrary: valid.map((v) => ({
                    kind: "valid" as const,
                    note: "valid",
                    bytes: enc.encode(JSON.stringify(v)),
                  })),
                },
                { weight: 5, arbitrary: mutatedArb(valid) },
                { weight: 2, arbitrary: fuzzInputsArb(valid) },
                // the poison input: a result whose output nests 100,000 levels
                { weight: 1, arbitrary: deepAtArb(valid, ["outcome", "output"]) },
              );
              const input = fc.sample(arb, { numRuns: 1, seed: SEED + round * 100 + k })[0]!;
              inputs.push(input);
              perOp[`${task.role}.${task.op}`] = (perOp[`${task.role}.${task.op}`] ?? 0) + 1;
              await js.publish(sys.naming.inbox(sid, task.role), input.bytes, PUB);
            }),
          );
          // one input per session at a time, so the next one meets the task the session then awaits
          await drained(nc, sys, [], 20_000);
        }
        record("TaskOutcome (results to awaited tasks)", inputs);
        console.log(`[fuzz] results per awaited op: ${JSON.stringify(perOp)}`);
        console.log(
          `[fuzz] inbox: ${JSON.stringify(sys.coordinator.inbox.stats)}; coordinator: ${JSON.stringify(sys.coordinator.core.stats)}`,
        );

        expect(poison.seen()).toEqual([]);
        // every session the fuzz touched still loads and still takes a transition
        for (const sid of touched) {
          const loaded = await sys.store.load(sid);
          expect(loaded, sid).not.toBeNull();
          if (["completed", "failed", "cancelled", "budget_exceeded"].includes(loaded!.state.meta.status)) continue;
          await js.publish(
            sys.naming.inbox(sid, "client"),
            enc.encode(
              JSON.stringify({
                v: SCHEMA_VERSION,
                kind: "cancel",
                session_id: sid,
                input_id: inputIds.cancel("fuzz-end"),
                reason: "end of fuzz",
              }),
            ),
            PUB,
          );
          expect(await finalStatus(sys, sid, 15_000), sid).toBe("cancelled");
        }
      } finally {
        poison.stop();
        await sys.stop();
      }
    },
  );
});
