import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  AgentmeshError,
  SCHEMA_VERSION,
  redactUrls,
  submitEndpoint,
  newSessionId,
  newUserInputId,
  type SubmitReply,
  inputIds,
  isTerminal,
  naming as makeNaming,
  type Attachment,
  type Capability,
  type Naming,
  type SessionEvent,
  type SessionOptions,
  type SessionState,
  type StrategyProfile,
  type WorkflowName,
} from "@agentmesh/contracts";
import {
  connectNats,
  createPublisher,
  followEvents,
  followTokens,
  listDeadLetters,
  listServices,
  redriveDeadLetter,
  request,
  type DeadLetter,
} from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore } from "@agentmesh/session-store";
import { createLogger } from "@agentmesh/service-kit";
import type { CliConfig } from "./config.js";
import { createAskPrinter, type AskPrinter } from "./live.js";
import { renderEvent, renderFinal, renderInspect, type Out } from "./render.js";

const quietLog = createLogger({ service: "cli", level: "silent" });

async function withNats<T>(cfg: CliConfig, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connectNats({
    url: cfg.natsUrl,
    ...cfg.nats,
    name: `cli-${process.pid}`,
    waitOnFirstConnect: false,
  });
  try {
    return await fn(nc);
  } finally {
    await nc.close();
  }
}

export interface AskOptions {
  readonly workflow: WorkflowName;
  /** blackboard: the strategy profile (CONSERVATIVE, EXPLORATORY, FALLBACK). */
  readonly strategy?: StrategyProfile;
  /** critic-chain: rejections before the run ends. */
  readonly retryLimit?: number;
  /** halo: the specialists to ask instead of the planner's choice. */
  readonly capabilities?: readonly Capability[];
  /** supervisor: the agent (bypassing the router), the research depth and scenario. */
  readonly supervisor?: Pick<SessionOptions, "mode" | "depth" | "scenario">;
  /** supervisor: files sent with the question (`--attach`, already read and checked). */
  readonly attachments?: readonly Attachment[];
  readonly verbose: boolean;
  readonly json: boolean;
  /** Print the model's text live as the streaming ops write it (default on). */
  readonly tokens?: boolean;
  readonly timeoutMs: number;
  /** Resolves when the user asks to stop (Ctrl-C): the session is cancelled. */
  readonly interrupted?: Promise<void>;
}

/** The session options an `ask` carries. */
export const sessionOptions = (opts: AskOptions): SessionOptions => ({
  ...(opts.strategy ? { strategy_profile: opts.strategy } : {}),
  ...(opts.retryLimit === undefined ? {} : { retry_limit: opts.retryLimit }),
  ...(opts.capabilities ? { capabilities: [...opts.capabilities] } : {}),
  ...opts.supervisor,
  ...(opts.attachments?.length ? { attachments: [...opts.attachments] } : {}),
});

/**
 * `agentmesh ask`: follows the session's events (from its first event, so nothing is missed) and
 * its live tokens, submits, prints progress stage by stage, the model's text as the streaming ops
 * write it, and the final answer (the truth: live text is a preview). Exit code 0 only on completion.
 */
export async function ask(cfg: CliConfig, question: string, opts: AskOptions, out: Out): Promise<number> {
  const naming = makeNaming(cfg.prefix);
  const sessionId = newSessionId();
  return withNats(cfg, async (nc) => {
    const stop = new AbortController();
    const events = followEvents(nc, naming, sessionId, { signal: stop.signal });
    const print = createAskPrinter(out, { json: opts.json });
    // subscribed before the submit goes out on this connection, so no early delta is missed
    const untokens = opts.tokens === false ? () => {} : followTokens(nc, naming, sessionId, (t) => print.token(t));
    const reply = await submitQuestion(nc, cfg, naming, sessionId, question, opts);
    if (!reply.ok) {
      out.err(`agentmesh: ${reply.error.message} [${reply.error.code}]`);
      untokens();
      stop.abort();
      return 2;
    }
    if (!opts.json) print.line(`session ${reply.session_id} (${opts.workflow})`);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), opts.timeoutMs);
    });
    const interrupt = cancelWhenInterrupted(nc, naming, reply.session_id, opts.interrupted, out);
    const follow = printUntilComplete(events, print, opts, untokens);
    try {
      const done = await Promise.race([follow, timedOut]);
      untokens();
      print.end();
      if (done === "timeout") {
        out.err(
          `agentmesh: no answer within ${Math.round(opts.timeoutMs / 1000)} s; the session goes on. Inspect it: agentmesh inspect ${reply.session_id}`,
        );
        return 3;
      }
      if (!opts.json) out.line(renderFinal(done));
      if (interrupt.cancelled || done.status === "cancelled") return 130;
      return done.status === "completed" ? 0 : 1;
    } finally {
      clearTimeout(timer);
      untokens();
      stop.abort();
    }
  });
}

/** Submits the question as a new session; no coordinator answering is an `unavailable` that says how to start one. */
async function submitQuestion(
  nc: NatsConnection,
  cfg: CliConfig,
  naming: Naming,
  sessionId: string,
  question: string,
  opts: AskOptions,
): Promise<SubmitReply> {
  return request(
    nc,
    submitEndpoint(naming),
    {
      v: SCHEMA_VERSION,
      query: question,
      workflow: opts.workflow,
      session_id: sessionId,
      idempotency_key: sessionId,
      options: sessionOptions(opts),
    },
    15_000,
    { traceparent: cfg.traceparent },
  ).catch((e: unknown) => {
    if (e instanceof AgentmeshError && e.code === "unavailable") {
      throw new AgentmeshError(
        "unavailable",
        `no coordinator answers on ${naming.submit} at ${redactUrls(cfg.natsUrl)}. Start one: \`npm run ask\` starts everything locally, \`docker compose up -d\` runs the stack.`,
      );
    }
    throw e;
  });
}

/** On Ctrl-C (`interrupted`), cancels the session; `cancelled` tells whether it did. */
function cancelWhenInterrupted(
  nc: NatsConnection,
  naming: Naming,
  sessionId: string,
  interrupted: Promise<void> | undefined,
  out: Out,
): { readonly cancelled: boolean } {
  const state = { cancelled: false };
  void interrupted?.then(async () => {
    state.cancelled = true;
    out.err(`\ncancelling session ${sessionId} …`);
    const pub = createPublisher(nc, naming, quietLog, { client: true });
    await pub.publishInbox({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sessionId,
      input_id: inputIds.clientCancel(sessionId, "cli"),
      reason: "cancelled from the CLI (Ctrl-C)",
    });
  });
  return state;
}

/** Prints each event (as JSON or rendered) until `complete`, which it returns; the live tokens stop there. */
async function printUntilComplete(
  events: AsyncIterable<SessionEvent>,
  print: AskPrinter,
  opts: AskOptions,
  untokens: () => void,
): Promise<Extract<SessionEvent, { type: "complete" }>> {
  for await (const e of events) {
    if (e.type === "complete") untokens();
    if (opts.json) print.line(JSON.stringify(e));
    else {
      const line = renderEvent(e, opts.verbose);
      if (line) print.line(line);
    }
    if (e.type === "complete") return e;
  }
  throw new AgentmeshError("unavailable", "the event stream ended before the session completed");
}

/** `agentmesh services`: every running service replica, from `$SRV.INFO` and `$SRV.STATS`. */
export async function services(cfg: CliConfig, opts: { json: boolean }, out: Out): Promise<number> {
  return withNats(cfg, async (nc) => {
    const found = await listServices(nc, 1500);
    if (opts.json) {
      out.line(JSON.stringify(found, null, 2));
      return 0;
    }
    if (found.length === 0) {
      out.line(`no agentmesh services answer at ${redactUrls(cfg.natsUrl)}`);
      return 1;
    }
    const mine = found.filter((s) => s.info.metadata?.prefix === cfg.prefix);
    const byName = new Map<string, typeof mine>();
    for (const s of mine) byName.set(s.info.name, [...(byName.get(s.info.name) ?? []), s]);
    out.line(
      `${"service".padEnd(14)}${"replicas".padEnd(10)}${"endpoints".padEnd(44)}work (processed/failed/redelivered/in flight)`,
    );
    for (const [name, reps] of [...byName.entries()].sort()) {
      const eps = reps[0]?.info.endpoints.map((e) => e.name).join(",") ?? "";
      const work = reps.map((r) => {
        const d = (r.stats?.endpoints[0]?.data ?? {}) as Record<string, number>;
        return `${d.processed ?? d.applied ?? 0}/${d.failed ?? d.dropped ?? 0}/${d.redelivered ?? 0}/${d.in_flight ?? 0}`;
      });
      out.line(`${name.padEnd(14)}${String(reps.length).padEnd(10)}${eps.padEnd(44)}${work.join("  ")}`);
    }
    return 0;
  });
}

/** `agentmesh inspect <sid>`: the session's state and transition log, from Redis. */
export async function inspect(cfg: CliConfig, sessionId: string, opts: { json: boolean }, out: Out): Promise<number> {
  const redis = await connectRedis(cfg.redisUrl, {
    name: `cli-${process.pid}`,
    ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
    ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
  });
  try {
    const store = createRedisSessionStore(redis, {
      keyPrefix: cfg.prefix,
      activeTtlMs: cfg.activeTtlMs,
      finishedTtlMs: cfg.finishedTtlMs,
      idempotencyTtlMs: cfg.activeTtlMs,
    });
    const loaded = await store.load(sessionId);
    if (!loaded) {
      out.err(
        `agentmesh: no session ${sessionId} in ${redactUrls(cfg.redisUrl)} (prefix ${cfg.prefix}); finished sessions expire after AGENTMESH_FINISHED_TTL_MS`,
      );
      return 1;
    }
    const log = await store.transitionLog(sessionId);
    out.line(
      opts.json
        ? JSON.stringify({ state: loaded.state, transition_log: log }, null, 2)
        : renderInspect(loaded.state, log),
    );
    return 0;
  } finally {
    await redis.quit();
  }
}

/** `agentmesh cancel <sid>`: a cancel inbox message; the session ends as cancelled. */
export async function cancel(cfg: CliConfig, sessionId: string, out: Out): Promise<number> {
  const naming = makeNaming(cfg.prefix);
  return withNats(cfg, async (nc) => {
    await createPublisher(nc, naming, quietLog, { client: true }).publishInbox({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sessionId,
      input_id: inputIds.clientCancel(sessionId, "cli"),
      reason: "cancelled from the CLI",
    });
    out.line(`cancel sent to session ${sessionId}`);
    return 0;
  });
}

/**
 * `agentmesh health --service <name>`: exit 0 when a replica of `name` on this host answers
 * `$SRV.STATS` (so its NATS connection works) and reports itself alive: its consume loop runs
 * and, for a coordinator, Redis is reachable (a container/pod readiness probe).
 */
export async function health(cfg: CliConfig, opts: { service: string; anyHost: boolean }, out: Out): Promise<number> {
  return withNats(cfg, async (nc) => {
    // Asks only about this service: a role's probe runs with the role's own NATS user.
    const found = (await listServices(nc, 800, opts.service)).filter(
      (s) =>
        s.info.name === opts.service &&
        s.info.metadata?.prefix === cfg.prefix &&
        (opts.anyHost || s.info.metadata?.host === hostname()),
    );
    const alive = found.filter(
      (s) => (s.stats?.endpoints[0]?.data as { alive?: boolean } | undefined)?.alive !== false,
    );
    if (alive.length === 0) {
      out.err(
        `agentmesh: no live ${opts.service} replica${opts.anyHost ? "" : ` on ${hostname()}`} answers at ${redactUrls(cfg.natsUrl)}`,
      );
      return 1;
    }
    out.line(`${opts.service}: ${alive.length} live replica(s)`);
    return 0;
  });
}

/**
 * A live session is stuck when a deadline passed more than `graceMs` ago and nothing ended it,
 * or when an inbox input of its own was dead-lettered (`deadInbox`: their dead-letter sequences):
 * a lost start leaves it at version 0 forever, a lost cancel lets it spend, a lost reply strands it.
 */
export function stuckReason(
  state: SessionState,
  now: number,
  graceMs: number,
  deadInbox: readonly number[] = [],
): string | null {
  const m = state.meta;
  if (isTerminal(m.status)) return null;
  if (deadInbox.length > 0) return deadInboxReason(deadInbox);
  if (m.deadline_at !== null && now > m.deadline_at + graceMs)
    return `session deadline passed ${Math.round((now - m.deadline_at) / 1000)} s ago`;
  const expires = m.pause?.expires_at ?? null;
  if (expires !== null && now > expires + graceMs)
    return `waiting for a person ${Math.round((now - expires) / 1000)} s past the pause's expiry`;
  const late = m.awaiting.find((a) => a.deadline_at !== null && now > a.deadline_at + graceMs);
  if (late)
    return `task ${late.role}.${late.op} ${late.task_id} is ${Math.round((now - (late.deadline_at ?? now)) / 1000)} s past its deadline`;
  return null;
}

function deadInboxReason(seqs: readonly number[]): string {
  return `${seqs.length} inbox input(s) dead-lettered (re-drive: agentmesh dead-letters --redrive ${seqs.join(" ")})`;
}

/** Dead-lettered inbox inputs by session id (their dead-letter sequences). */
export function deadInboxBySession(list: readonly DeadLetter[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const d of list) {
    if (d.kind !== "inbox" || d.sessionId === null) continue;
    out.set(d.sessionId, [...(out.get(d.sessionId) ?? []), d.seq]);
  }
  return out;
}

/**
 * `agentmesh sessions [--stuck]`: the sessions in Redis (bounded scan), or only the live ones
 * past a deadline that nothing has ended or with a dead-lettered inbox input (the target is
 * always zero; exit 1 when there are any).
 */
export async function sessions(
  cfg: CliConfig,
  opts: { stuck: boolean; limit: number; graceMs: number; json: boolean },
  out: Out,
): Promise<number> {
  const deadInbox = opts.stuck
    ? deadInboxBySession(await withNats(cfg, (nc) => listDeadLetters(nc, makeNaming(cfg.prefix), 10_000)))
    : new Map<string, number[]>();
  const redis = await connectRedis(cfg.redisUrl, {
    name: `cli-${process.pid}`,
    ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
    ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
  });
  try {
    const store = createRedisSessionStore(redis, {
      keyPrefix: cfg.prefix,
      activeTtlMs: cfg.activeTtlMs,
      finishedTtlMs: cfg.finishedTtlMs,
      idempotencyTtlMs: cfg.activeTtlMs,
    });
    const now = Date.now();
    const rows: Array<{
      session_id: string;
      workflow: string;
      status: string;
      version: number;
      age_s: number;
      stuck: string | null;
    }> = [];
    const listed = await store.listSessions(opts.limit);
    // a session with a dead-lettered input is looked up even when the bounded scan missed it
    for (const sid of new Set([...listed, ...deadInbox.keys()])) {
      const loaded = await store.load(sid).catch(() => null);
      const dead = deadInbox.get(sid) ?? [];
      if (!loaded) {
        if (dead.length > 0)
          rows.push({
            session_id: sid,
            workflow: "?",
            status: "not in Redis",
            version: 0,
            age_s: 0,
            stuck: deadInboxReason(dead),
          });
        continue;
      }
      const m = loaded.state.meta;
      const stuck = stuckReason(loaded.state, now, opts.graceMs, dead);
      if (opts.stuck && !stuck) continue;
      rows.push({
        session_id: sid,
        workflow: m.workflow,
        status: m.status,
        version: m.version,
        age_s: Math.round((now - m.created_at) / 1000),
        stuck,
      });
    }
    rows.sort((a, b) => a.age_s - b.age_s);
    if (opts.json) out.line(JSON.stringify(rows, null, 2));
    else {
      out.line(`${rows.length} ${opts.stuck ? "stuck " : ""}session(s) under prefix ${cfg.prefix}`);
      for (const r of rows)
        out.line(
          `  ${r.session_id}  ${r.workflow.padEnd(13)} ${r.status.padEnd(16)} v${String(r.version).padEnd(4)} ${String(r.age_s).padStart(6)} s${r.stuck ? `  STUCK: ${r.stuck}` : ""}`,
        );
    }
    return opts.stuck && rows.length > 0 ? 1 : 0;
  } finally {
    await redis.quit();
  }
}

/** `agentmesh dead-letters [--redrive <seq>|--redrive-all]`: tasks no agent finished, inbox inputs no coordinator applied. */
export async function deadLetters(
  cfg: CliConfig,
  opts: { redrive: number[]; all: boolean; json: boolean },
  out: Out,
): Promise<number> {
  const naming = makeNaming(cfg.prefix);
  return withNats(cfg, async (nc) => {
    const list = await listDeadLetters(nc, naming, 1000);
    const targets = opts.all ? list.map((d) => d.seq) : opts.redrive;
    if (targets.length === 0) {
      if (opts.json) out.line(JSON.stringify(list, null, 2));
      else {
        out.line(`${list.length} dead letter(s) in ${naming.streams.dead}`);
        for (const d of list) {
          const what = d.kind === "inbox" ? `session ${d.sessionId ?? "?"}` : `task ${d.taskId ?? "?"}`;
          out.line(
            `  #${d.seq}  ${d.at}  ${d.originalSubject}  ${what}  after ${d.deliveries} deliveries${d.reason ? `: ${d.reason}` : ""}`,
          );
        }
      }
      return 0;
    }
    let missing = 0;
    for (const seq of targets) {
      const d = await redriveDeadLetter(nc, naming, seq);
      if (d)
        out.line(
          `re-driven #${seq} → ${d.originalSubject} (${d.kind === "inbox" ? `session ${d.sessionId ?? "?"}` : `task ${d.taskId ?? "?"}`})`,
        );
      else {
        missing++;
        out.err(`agentmesh: no dead letter #${seq}`);
      }
    }
    return missing ? 1 : 0;
  });
}

/** Why an answer to this session would go nowhere (gone, finished, not asking); null when it is waiting for one. */
export function answerRefusal(sessionId: string, state: SessionState | null): string | null {
  if (state === null)
    return `no session ${sessionId}: it never existed or has expired, so nobody is waiting for this answer`;
  const m = state.meta;
  if (isTerminal(m.status)) {
    return `session ${sessionId} has already finished (${m.status}${m.error ? `: ${m.error.message}` : ""}); the answer was not sent`;
  }
  if (m.status !== "awaiting_user")
    return `session ${sessionId} is ${m.status}, not waiting for an answer; the answer was not sent`;
  return null;
}

/** `agentmesh answer <sid> "<text>"`: a person's reply to a paused session (a `user_reply` inbox message). */
export async function answer(cfg: CliConfig, sessionId: string, text: string, out: Out): Promise<number> {
  const t = text.trim();
  if (t.length === 0 || t.length > 5000) {
    out.err("agentmesh: the answer must be 1-5000 characters");
    return 2;
  }
  // Checked first, so an answer to an expired or finished session is reported as not sent.
  const redis = await connectRedis(cfg.redisUrl, {
    name: `cli-${process.pid}`,
    ...(cfg.redisTlsCa === undefined ? {} : { tlsCaFile: cfg.redisTlsCa }),
    ...(cfg.redisSentinel === undefined ? {} : { sentinel: cfg.redisSentinel }),
  });
  let refusal: string | null;
  try {
    const store = createRedisSessionStore(redis, {
      keyPrefix: cfg.prefix,
      activeTtlMs: cfg.activeTtlMs,
      finishedTtlMs: cfg.finishedTtlMs,
      idempotencyTtlMs: cfg.activeTtlMs,
    });
    refusal = answerRefusal(sessionId, (await store.load(sessionId))?.state ?? null);
  } finally {
    await redis.quit();
  }
  if (refusal !== null) {
    out.err(`agentmesh: ${refusal}`);
    return 1;
  }
  const naming = makeNaming(cfg.prefix);
  return withNats(cfg, async (nc) => {
    await createPublisher(nc, naming, quietLog, { client: true }).publishInbox({
      v: SCHEMA_VERSION,
      kind: "user_reply",
      session_id: sessionId,
      input_id: newUserInputId(),
      text: t,
    });
    out.line(`answer sent to session ${sessionId}`);
    return 0;
  });
}
