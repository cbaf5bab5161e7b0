// The gateway figure of `pnpm bench`: the same sessions of the bench's workload through POST /api/v1/query
// (read as SSE to `complete`) and directly over NATS, in interleaved rounds. See bench/README.md.
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { performance } from "node:perf_hooks";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { SessionEvent } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import type { Cluster } from "../test/e2e/harness.js";
import type { EventRouter, Tracked } from "./events.js";
import { checkSession, runLevel, type SessionResult } from "./sessions.js";
import { summarize, type Summary } from "./stats.js";
import { cpuMs } from "./sysinfo.js";
import type { SeenCodeRun, Workload } from "./workloads.js";

/** The API key's name: every gateway session is recorded with this owner. */
const OWNER = "bench";

/** A gateway process in front of the cluster's coordinators and agents, and the key the bench uses. */
export interface BenchGateway {
  readonly url: string;
  readonly key: string;
  /** Its Prometheus endpoint (`/metrics`), and its process id. */
  readonly metricsUrl: string;
  readonly pid: number;
}

/**
 * Starts the gateway as its own process (NATS user `gateway` under access control) with one API
 * key. Its per-key limits are raised far above what the bench sends, so they are checked on every
 * request (the Redis round trips count) but never refuse one.
 */
export async function startBenchGateway(cluster: Cluster): Promise<BenchGateway> {
  const key = generateApiKey();
  const { url, proc } = await cluster.startGateway({
    AGENTMESH_API_KEYS: apiKeyEntry(OWNER, key),
    AGENTMESH_METRICS_HOST: "127.0.0.1",
    AGENTMESH_METRICS_PORT: "0",
    AGENTMESH_RATE_LIMIT: "1000000",
    AGENTMESH_MAX_CONCURRENT_SESSIONS: "100000",
    // one key drives the whole load: its stream bounds are a person's, far below it
    AGENTMESH_MAX_STREAMS_PER_KEY: "100000",
    AGENTMESH_STREAM_OPEN_RATE: "1000000",
  });
  const metricsUrl = /"metrics_url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(proc.output())?.[1];
  if (!metricsUrl || proc.child.pid === undefined)
    throw new Error("the bench gateway did not say where its metrics are");
  return { url, key, metricsUrl, pid: proc.child.pid };
}

/** One session through the gateway, as the bench saw it. */
interface GatewaySession {
  readonly index: number;
  readonly sessionId: string | null;
  /** POST sent → response headers (the gateway answers once a coordinator accepted the submit). */
  readonly acceptedMs: number | null;
  /** POST sent → the first session event (the first SSE event with an `id:`). */
  readonly firstEventMs: number | null;
  /** POST sent → the `complete` event. */
  readonly wallMs: number | null;
  /** The `complete` event on SSE − the same event on the bench's core subscription. */
  readonly completeLagMs: number | null;
  readonly complete: Extract<SessionEvent, { type: "complete" }> | null;
  /** `role.op` of each step event, in stream order (the stream's ids increase, so version order). */
  readonly stepNames: readonly string[];
  readonly codeRuns: readonly SeenCodeRun[];
  /** A broken stream or refusal (then the session failed), null when the stream was well formed. */
  readonly error: string | null;
}

/** The body of `POST /api/v1/query` for session `index`: the query, the workflow, and its options as top-level fields. */
export function queryBody(workload: Workload, index: number): Record<string, unknown> {
  return { query: workload.query(index), workflow: workload.submit.workflow, ...workload.submit.options };
}

/** Posts one query and reads its SSE stream to the end, checking its shape on the way. */
async function viaGateway(
  gw: BenchGateway,
  router: EventRouter,
  workload: Workload,
  index: number,
  timeoutMs: number,
): Promise<GatewaySession> {
  let sessionId: string | null = null;
  let acceptedMs: number | null = null;
  let firstEventMs: number | null = null;
  let wallMs: number | null = null;
  let completeLagMs: number | null = null;
  let tracked: Tracked | null = null;
  let complete: GatewaySession["complete"] = null;
  const stepNames: string[] = [];
  const codeRuns: SeenCodeRun[] = [];
  let error: string | null = null;
  let last: [number, number] | null = null;
  let seen = 0;
  const t0 = performance.now();

  const onEvent = (m: EventSourceMessage) => {
    const now = performance.now();
    seen++;
    if (m.event === "session") {
      const head = JSON.parse(m.data) as { session_id?: unknown };
      if (seen !== 1 || head.session_id !== sessionId)
        error ??= `the 'session' event came at position ${seen} with session_id ${JSON.stringify(head.session_id)}`;
      return;
    }
    if (m.id === undefined) {
      if (m.event !== "token") error ??= `an event without an id: ${m.event ?? "message"} ${m.data.slice(0, 200)}`;
      return;
    }
    firstEventMs ??= now - t0;
    // `<seq>:<version>:<index>`: ordered by version, then index (the stream sequence leads only for resuming)
    const id = /^\d+:(\d+):(\d+)$/.exec(m.id);
    const cursor: [number, number] = id ? [Number(id[1]), Number(id[2])] : [Number.NaN, Number.NaN];
    if (!id || (last !== null && (cursor[0] < last[0] || (cursor[0] === last[0] && cursor[1] <= last[1]))))
      error ??= `event id ${m.id} after ${last?.join(":") ?? "none"}`;
    last = cursor;
    // The bench's core subscription already validates every event with zod; here only `complete`
    // is, so the bench does not spend twice the CPU on the gateway's sessions.
    const data = JSON.parse(m.data) as {
      type?: unknown;
      session_id?: unknown;
      provenance?: { role?: unknown; op?: unknown };
      exit_code?: unknown;
      stdout?: unknown;
      stderr?: unknown;
    };
    if (data.type !== m.event || data.session_id !== sessionId) {
      error ??= `event ${m.id} is not a ${m.event ?? "message"} event of ${sessionId ?? "?"}`;
      return;
    }
    if (data.type === "step") stepNames.push(`${String(data.provenance?.role)}.${String(data.provenance?.op)}`);
    if (data.type === "code_result")
      codeRuns.push({
        exitCode: typeof data.exit_code === "number" ? data.exit_code : null,
        stdout: typeof data.stdout === "string" ? data.stdout : "",
        stderr: typeof data.stderr === "string" ? data.stderr : "",
      });
    if (data.type !== "complete") return;
    const parsed = SessionEvent.safeParse(data);
    if (!parsed.success || parsed.data.type !== "complete") {
      error ??= `event ${m.id} is not a valid 'complete' event`;
      return;
    }
    complete = parsed.data;
    wallMs = now - t0;
    if (tracked?.completeAt != null) completeLagMs = now - tracked.completeAt;
  };

  const parser = createParser({ onEvent, onError: (err) => (error ??= `unreadable SSE: ${err.message}`) });
  let refused: string | null = null;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    await post(
      `${gw.url}/api/v1/query`,
      gw.key,
      JSON.stringify(queryBody(workload, index)),
      timeout,
      (status, head) => {
        acceptedMs = performance.now() - t0;
        sessionId = typeof head["x-agentmesh-session"] === "string" ? head["x-agentmesh-session"] : null;
        if (status !== 200 || sessionId === null) refused = `POST /api/v1/query answered ${status}: `;
        // Core delivery misses what came before this, but `complete` comes at least three agent hops later.
        else tracked = router.track(sessionId);
        return (text) => {
          if (refused === null) parser.feed(text);
          else if (refused.length < 300) refused += text;
        };
      },
    );
    if (refused !== null) error = refused;
    else if (complete === null && !timeout.aborted) error ??= "the stream ended without a 'complete' event";
  } catch (err) {
    // a timeout leaves `complete` null: the session counts as lost, with what Redis has of it
    if (!timeout.aborted) error ??= `request failed: ${(err as Error).message}`;
  }
  if (sessionId !== null) router.forget(sessionId);
  return { index, sessionId, acceptedMs, firstEventMs, wallMs, completeLagMs, complete, stepNames, codeRuns, error };
}

/** Kept-alive connections to the gateway, as a long-lived client holds them. */
const agent = new Agent({ keepAlive: true });

/**
 * POSTs JSON with the API key and streams the answer's text to the handler `onHead` returns; resolves
 * when the answer ends (the gateway closes an SSE stream after `complete`). node:http rather than
 * fetch: fetch's web streams cost the bench ~2 ms more CPU per session at c=64, on the cores it
 * shares with the services, which would count against the gateway.
 */
function post(
  url: string,
  key: string,
  body: string,
  signal: AbortSignal,
  onHead: (status: number, head: IncomingHttpHeaders) => (text: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream" };
    const req = request(url, { method: "POST", agent, headers, signal }, (res) => {
      const onText = onHead(res.statusCode ?? 0, res.headers);
      res.setEncoding("utf8");
      res.on("data", onText);
      // after the end, or when the connection broke off (the caller then has no `complete`)
      res.on("close", resolve);
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Runs `fn(0..n-1)` with at most `concurrency` in flight; returns the elapsed ms. */
async function pool(concurrency: number, n: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return performance.now() - start;
}

/** One measured session of either path, reduced to what the comparison needs. */
interface Sample {
  readonly sessionId: string;
  readonly outcome: SessionResult["outcome"];
  readonly reason: string | null;
  readonly acceptedMs: number | null;
  readonly firstEventMs: number | null;
  readonly wallMs: number | null;
  readonly completeLagMs: number | null;
}

/** Runs `n` sessions through the gateway at `concurrency`, then verifies each against Redis. */
async function gatewayRound(
  cluster: Cluster,
  router: EventRouter,
  workload: Workload,
  gw: BenchGateway,
  concurrency: number,
  n: number,
  firstIndex: number,
  timeoutMs: number,
): Promise<{ samples: Sample[]; elapsedMs: number }> {
  const seen: GatewaySession[] = [];
  const elapsedMs = await pool(
    concurrency,
    n,
    async (i) => void seen.push(await viaGateway(gw, router, workload, firstIndex + i, timeoutMs)),
  );
  const samples: Sample[] = [];
  for (const s of seen) {
    const problem =
      s.error !== null || s.sessionId === null
        ? { outcome: "failed" as const, reason: s.error ?? "no X-Agentmesh-Session header" }
        : await checkSession(cluster, workload, {
            sessionId: s.sessionId,
            index: s.index,
            complete: s.complete,
            stepNames: s.stepNames,
            codeRuns: s.codeRuns,
            owner: OWNER,
          });
    samples.push({
      sessionId: s.sessionId ?? `(question ${s.index})`,
      outcome: problem?.outcome ?? "ok",
      reason: problem?.reason ?? null,
      acceptedMs: s.acceptedMs,
      firstEventMs: s.firstEventMs,
      wallMs: s.wallMs,
      completeLagMs: s.completeLagMs,
    });
  }
  return { samples, elapsedMs };
}

/** One path's figures at one concurrency, over all its rounds. */
export interface PathFigures {
  readonly sessions: number;
  readonly ok: number;
  readonly lost: number;
  readonly failed: number;
  /** Verified sessions ÷ the summed wall time of this path's rounds. */
  readonly sessionsPerSecond: number;
  /** Direct: submit request → reply. Gateway: POST → response headers. */
  readonly acceptedMs: Summary;
  /** → the session's first event (direct: on the bench's core subscription; gateway: the first SSE event with an id). */
  readonly firstEventMs: Summary;
  /** → its `complete` event. */
  readonly wallMs: Summary;
  /** Gateway only: how long after the bench's core subscription the SSE stream delivered `complete`. */
  readonly completeLagMs: Summary;
  /** CPU ms per verified session, by process, during this path's rounds. */
  readonly cpuMsPerSession: Record<string, number>;
  readonly problems: ReadonlyArray<Pick<Sample, "sessionId" | "outcome" | "reason">>;
  readonly samples: readonly Sample[];
}

export interface GatewayLevel {
  readonly concurrency: number;
  /** The rounds in the order they ran, each with its verified sessions per second (a view of the machine's noise). */
  readonly rounds: ReadonlyArray<{
    readonly path: "direct" | "gateway";
    readonly sessions: number;
    readonly sessionsPerSecond: number;
  }>;
  readonly direct: PathFigures;
  readonly gateway: PathFigures;
}

export interface GatewayComparison {
  readonly warmup: { readonly sessions: number; readonly problems: PathFigures["problems"] };
  readonly levels: readonly GatewayLevel[];
}

export interface CompareOptions {
  readonly cluster: Cluster;
  readonly router: EventRouter;
  /** The sessions both paths run. */
  readonly workload: Workload;
  readonly gateway: BenchGateway;
  /** Concurrency → sessions per path. */
  readonly sessions: ReadonlyMap<number, number>;
  readonly warmup: number;
  /** Question indexes start here (after the main levels' ones). */
  readonly firstIndex: number;
  readonly stem: string;
  readonly timeoutMs: number;
  /** Process label → pid, for CPU per session. */
  readonly pids: ReadonlyMap<string, number>;
  readonly log: (s: string) => void;
}

/**
 * Round sizes: 5 sessions at c=1, else 2c. Rounds run D G G D D G G D …, so both paths sample the
 * same stretch of a noisy machine and a steady drift weighs on both alike.
 */
export function schedule(
  concurrency: number,
  perPath: number,
): Array<{ path: "direct" | "gateway"; sessions: number }> {
  const size = concurrency === 1 ? 5 : 2 * concurrency;
  const rounds: Array<{ path: "direct" | "gateway"; sessions: number }> = [];
  const left = { direct: perPath, gateway: perPath };
  for (let r = 0; left.direct > 0 || left.gateway > 0; r++) {
    const first = r % 2 === 0 ? "direct" : "gateway";
    for (const path of [first, first === "direct" ? "gateway" : "direct"] as const) {
      const n = Math.min(size, left[path]);
      if (n > 0) rounds.push({ path, sessions: n });
      left[path] -= n;
    }
  }
  return rounds;
}

/** Runs the interleaved comparison at every concurrency of `o.sessions`, after an untimed gateway warm-up. */
export async function compareGateway(o: CompareOptions): Promise<GatewayComparison> {
  let index = o.firstIndex;
  const warm =
    o.warmup > 0
      ? (
          await gatewayRound(
            o.cluster,
            o.router,
            o.workload,
            o.gateway,
            Math.min(4, o.warmup),
            o.warmup,
            index,
            o.timeoutMs,
          )
        ).samples
      : [];
  index += o.warmup;
  const levels: GatewayLevel[] = [];
  for (const [c, perPath] of o.sessions) {
    const rounds = schedule(c, perPath);
    o.log(
      `bench: gateway vs direct at concurrency ${c}, ${perPath} sessions each, ${rounds.length} interleaved rounds…`,
    );
    const ran: Array<GatewayLevel["rounds"][number]> = [];
    const acc = {
      direct: { samples: [] as Sample[], elapsedMs: 0, cpu: new Map<string, number>() },
      gateway: { samples: [] as Sample[], elapsedMs: 0, cpu: new Map<string, number>() },
    };
    for (const [r, round] of rounds.entries()) {
      const before = new Map([...o.pids].map(([k, pid]) => [k, cpuMs(pid)]));
      const result =
        round.path === "gateway"
          ? await gatewayRound(o.cluster, o.router, o.workload, o.gateway, c, round.sessions, index, o.timeoutMs)
          : fromLevel(
              await runLevel({
                cluster: o.cluster,
                router: o.router,
                workload: o.workload,
                concurrency: c,
                sessions: round.sessions,
                firstIndex: index,
                stem: `${o.stem}-c${c}-r${r}`,
                timeoutMs: o.timeoutMs,
              }),
            );
      const a = acc[round.path];
      for (const [k, pid] of o.pids) {
        const b = before.get(k);
        const now = cpuMs(pid);
        if (b != null && now != null) a.cpu.set(k, (a.cpu.get(k) ?? 0) + now - b);
      }
      a.samples.push(...result.samples);
      a.elapsedMs += result.elapsedMs;
      index += round.sessions;
      ran.push({
        ...round,
        sessionsPerSecond: result.samples.filter((x) => x.outcome === "ok").length / (result.elapsedMs / 1000),
      });
    }
    levels.push({ concurrency: c, rounds: ran, direct: figures(acc.direct), gateway: figures(acc.gateway) });
  }
  return { warmup: { sessions: warm.length, problems: problemsOf(warm) }, levels };
}

/** A direct round's results (runLevel verified them) as samples; the CPU it spent verifying is not in its elapsed time, as for the gateway's. */
function fromLevel(l: Awaited<ReturnType<typeof runLevel>>): { samples: Sample[]; elapsedMs: number } {
  return {
    samples: l.results.map((r) => ({
      sessionId: r.sessionId,
      outcome: r.outcome,
      reason: r.reason,
      acceptedMs: r.submitMs,
      firstEventMs: r.firstEventMs,
      wallMs: r.wallMs,
      completeLagMs: null,
    })),
    elapsedMs: l.elapsedMs,
  };
}

const problemsOf = (samples: readonly Sample[]) =>
  samples.filter((s) => s.outcome !== "ok").map(({ sessionId, outcome, reason }) => ({ sessionId, outcome, reason }));

function figures(a: { samples: Sample[]; elapsedMs: number; cpu: Map<string, number> }): PathFigures {
  const ok = a.samples.filter((s) => s.outcome === "ok");
  const of = (pick: (s: Sample) => number | null) => summarize(ok.map(pick).filter((x): x is number => x !== null));
  return {
    sessions: a.samples.length,
    ok: ok.length,
    lost: a.samples.filter((s) => s.outcome === "lost").length,
    failed: a.samples.filter((s) => s.outcome === "failed").length,
    sessionsPerSecond: ok.length / (a.elapsedMs / 1000),
    acceptedMs: of((s) => s.acceptedMs),
    firstEventMs: of((s) => s.firstEventMs),
    wallMs: of((s) => s.wallMs),
    completeLagMs: of((s) => s.completeLagMs),
    cpuMsPerSession: Object.fromEntries([...a.cpu].map(([k, v]) => [k, ok.length === 0 ? Number.NaN : v / ok.length])),
    problems: problemsOf(a.samples),
    samples: a.samples,
  };
}
