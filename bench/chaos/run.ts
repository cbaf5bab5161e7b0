// `pnpm bench:chaos`: a steady load of critic-chain and supervisor sessions on a 3-node NATS
// cluster (access control on, every stream at R3, every node behind cuttable TCP relays), Redis
// behind Sentinel (a primary, two replicas, three sentinels, commits waiting for one replica; or
// one Redis server with `--redis single`), 2 coordinators and every role of both workflows as its
// own process, all on 127.0.0.1, while faults run one after another (bench/chaos/faults.ts). Then every session is checked in Redis:
// complete, the exact answer, every transition applied once. Prints the chaos table (per fault
// kind: the longest stall of progress, sessions that retried, redeliveries). Exit 1 when a session
// is lost, stuck or wrong. See bench/README.md ("Chaos run").
//   pnpm bench:chaos [--short] [--redis sentinel|single] [--rate 1] [--settle-s 10] [--pause-s 50] [--partition-s 45] [--out .bench/chaos.json] [--logs .bench/chaos-logs]
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { ChildProcess } from "node:child_process";
import { isTerminal } from "@agentmesh/contracts";
import { buildAll } from "../../scripts/build.js";
import { freePort, startRedis } from "../../test/setup/infra.js";
import { startNatsCluster, type NatsCluster } from "../../test/setup/nats-cluster.js";
import { uniquePrefix } from "../../test/setup/prefix.js";
import {
  AGENT_ROLES,
  Cluster,
  assertAppliedOnce,
  serviceArgv,
  type Proc,
  type ServiceName,
} from "../../test/e2e/harness.js";
import { serviceStats } from "../services.js";
import { CRITIC_CHAIN, SUPERVISOR, questionFor, supervisorValue, type Workload } from "../workloads.js";
import { startRedisChaos, type RedisChaos } from "../../test/setup/redis-chaos.js";
import {
  awaitReplicasCurrent,
  rollingRestart,
  natsClusterPlan,
  redisSentinelPlan,
  type FaultContext,
  type FaultStep,
} from "./faults.js";
import {
  faultRows,
  longestStall,
  progressOf,
  renderRows,
  tally,
  type FaultWindow,
  type SessionOutcome,
} from "./report.js";

const root = join(import.meta.dirname, "../..");
const log = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function num(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}
const str = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};

const short = process.argv.includes("--short");
const redisMode = str("redis", "sentinel");
if (redisMode !== "sentinel" && redisMode !== "single") throw new Error("--redis is sentinel or single");
const opts = {
  short,
  redis: redisMode,
  rate: num("rate", 1),
  settleMs: num("settle-s", short ? 8 : 10) * 1000,
  warmupMs: num("warmup-s", short ? 8 : 15) * 1000,
  pauseMs: num("pause-s", short ? 25 : 50) * 1000,
  partitionMs: num("partition-s", short ? 20 : 45) * 1000,
  drainMs: num("drain-s", 120) * 1000,
  taskDeadlineMs: num("task-deadline-s", 60) * 1000,
  out: str("out", short ? ".bench/chaos-short.json" : ".bench/chaos.json"),
  logs: str("logs", ".bench/chaos-logs"),
};

/** Every role of critic-chain and of the supervisor, each its own process. */
const ROLES: readonly ServiceName[] = [
  ...new Set<ServiceName>([...AGENT_ROLES, "router", "chat", "researcher", "coder", "writer", "analyst", "executor"]),
];
const WORKLOADS: readonly Workload[] = [CRITIC_CHAIN, SUPERVISOR];

/** Whether session `i`'s stored answer is exactly what its workload computes; null when it is. */
function answerProblem(i: number, w: Workload, answer: string | null): string | null {
  if (answer === null) return "no answer of its workflow";
  if (w === CRITIC_CHAIN)
    return answer === questionFor(i).expected ? null : `answer ${JSON.stringify(answer)} ≠ ${questionFor(i).expected}`;
  const value = supervisorValue(i);
  return answer.split("\n").some((l) => l.trim() === value) ? null : `answer has no line ${value}`;
}

/** Σ redeliveries per live service instance (task deliveries > 1 at agents, inbox deliveries > 1 at coordinators). */
async function redeliveries(services: Cluster): Promise<Map<string, number>> {
  const stats = await serviceStats(services.natsConnection, services.opts.prefix, 1500).catch(() => []);
  return new Map(
    stats.map((s) => [
      s.id,
      Object.entries(s.counters)
        .filter(([k]) => k === "redelivered" || k === "inbox.redelivered")
        .reduce((a, [, v]) => a + v, 0),
    ]),
  );
}
const grew = (before: Map<string, number>, after: Map<string, number>) =>
  [...after].reduce((a, [id, v]) => a + Math.max(0, v - (before.get(id) ?? 0)), 0);

interface Tracked {
  readonly i: number;
  readonly id: string;
  readonly workload: Workload;
  readonly submittedAt: number;
  submitted: boolean;
  submitError: string | null;
  finished: boolean;
}

let nats: NatsCluster | null = null;
let redis: ChildProcess | null = null;
let redisDir: string | null = null;
let redisChaos: RedisChaos | null = null;
let services: Cluster | null = null;
/** Set once every session checked out: a run that did not pass also names the NATS nodes' resets. */
let passed = false;
/** Every service's output (warnings and errors) to `--logs`, however the run ends. */
function saveLogs(): void {
  if (!services) return;
  const logs = resolve(root, opts.logs);
  rmSync(logs, { recursive: true, force: true });
  mkdirSync(logs, { recursive: true });
  for (const p of services.procs) writeFileSync(join(logs, `${p.name}-${p.child.pid ?? "x"}.log`), p.output());
  for (const n of nats?.nodes ?? []) writeFileSync(join(logs, `nats-${n.name}.log`), n.output);
  log(`chaos: the services' and NATS nodes' output (warnings and errors) in ${logs}`);
  if (!passed) for (const line of serverResets()) log(`chaos: NATS reported: ${line}`);
}

/**
 * The lines where a NATS node reset a stream's or consumer's replicated state (its store found
 * damaged after a kill, a catch-up that stalled). nats-server 2.9 does so after most kills and
 * recovers; when a run fails, they say whether the server's recovery was under way at the time.
 */
function serverResets(): string[] {
  const resets = /Resetting stream cluster state|stream store.*(EOF|corrupt)|Catchup for stream .* (stalled|failed)/i;
  return (nats?.nodes ?? [])
    .flatMap((n) =>
      n.output
        .split("\n")
        .filter((l) => resets.test(l))
        .map((l) => `${n.name} ${l.trim()}`),
    )
    .slice(-10);
}

async function cleanup(): Promise<void> {
  saveLogs();
  await services?.close().catch((e: unknown) => log(`chaos: closing services: ${(e as Error).message.split("\n")[0]}`));
  await nats?.stop().catch(() => undefined);
  redis?.kill("SIGTERM");
  await redisChaos?.stop().catch(() => undefined);
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
}
process.on("SIGINT", () => void cleanup().finally(() => process.exit(130)));

async function main(): Promise<number> {
  const startedAt = new Date().toISOString();
  // compiled, as production runs them; AGENTMESH_SERVICE_RUNTIME=compiled uses the dist/ a build
  // before left (CI's test phase builds), =tsx runs the sources
  const runtime = process.env.AGENTMESH_SERVICE_RUNTIME;
  if (runtime !== "tsx" && runtime !== "compiled") {
    const built = await buildAll();
    process.env.AGENTMESH_SERVICE_RUNTIME = "compiled";
    log(`chaos: services compiled (${built.files} modules in ${built.ms} ms)`);
  } else log(`chaos: services run ${runtime === "tsx" ? "from source (tsx)" : "from the existing build (dist/)"}`);
  const missing = (["coordinator", "agent"] as const).map((s) => serviceArgv(s)[0]!).filter((f) => !existsSync(f));
  if (runtime === "compiled" && missing.length > 0) {
    log(
      `chaos: AGENTMESH_SERVICE_RUNTIME=compiled, but the build is missing (${missing.join(", ")}): run pnpm build first`,
    );
    return 2;
  }
  const prefix = uniquePrefix("chaos");
  let redisAt: { redisUrl: string; redisSentinels?: string; env: Readonly<Record<string, string>> };
  if (opts.redis === "sentinel") {
    redisChaos = await startRedisChaos({ replicas: 2, waitReplicas: 1 });
    const { REDIS_URL: redisUrl, ...env } = redisChaos.serviceEnv;
    redisAt = { redisUrl: redisUrl ?? "", redisSentinels: redisChaos.topology.sentinelsEnv, env };
    log(
      `chaos: Redis primary, 2 replicas, 3 sentinels (${redisChaos.topology.sentinelsEnv}); commits wait for 1 replica`,
    );
  } else {
    redisDir = mkdtempSync(join(tmpdir(), "agentmesh-chaos-redis-"));
    const redisPort = await freePort();
    redis = await startRedis(redisPort, redisDir);
    redisAt = { redisUrl: `redis://127.0.0.1:${redisPort}`, env: {} };
  }
  nats = await startNatsCluster({ accessPrefix: prefix, proxied: true });
  log(`chaos: 3-node NATS cluster (access control, relays in front of clients and routes): ${nats.url}`);
  services = new Cluster({
    natsUrl: nats.url,
    redisUrl: redisAt.redisUrl,
    ...(redisAt.redisSentinels ? { redisSentinels: redisAt.redisSentinels } : {}),
    prefix,
    externalNats: nats,
    logLevel: "warn",
    extraEnv: {
      ...redisAt.env,
      AGENTMESH_STREAM_REPLICAS: "3",
      AGENTMESH_TASK_ACK_WAIT_MS: "10000",
      AGENTMESH_INBOX_ACK_WAIT_MS: "10000",
      AGENTMESH_AGENT_CONCURRENCY: "8",
      // the safety net for a task whose result never comes (a timer re-dispatches it) acts within the run
      AGENTMESH_TASK_DEADLINE_MS: String(opts.taskDeadlineMs),
    },
  });
  await services.open();
  const svc = services;
  for (let i = 0; i < 2; i++) svc.start("coordinator");
  await svc.waitReady({ coordinator: 2 }, 120_000);
  for (const r of ROLES) svc.start(r);
  await svc.waitReady({ coordinator: 2, ...Object.fromEntries(ROLES.map((r) => [r, 1])) }, 180_000);
  log(`chaos: 2 coordinators and ${ROLES.length} roles up (${ROLES.join(", ")}); streams at R3`);

  const running = (name: ServiceName) =>
    svc.procs.filter((p) => p.name === name && p.child.exitCode === null && p.child.signalCode === null);
  const ctx: FaultContext = {
    services: svc,
    nats,
    redis: redisChaos,
    progress: () => sessions.filter((s) => s.finished).length,
    nc: svc.natsConnection,
    naming: svc.naming,
    running,
    log,
    async replace(p: Proc) {
      const exited = p.exited;
      p.child.kill("SIGKILL");
      await exited;
      const want = running(p.name).length + 1;
      const fresh = svc.start(p.name);
      await svc.waitReady({ [p.name]: want }, 120_000).catch((err: unknown) => {
        throw new Error(
          `${(err as Error).message.split("\n")[0]}; the new ${p.name} (${fresh.child.exitCode === null ? "running" : `exited ${fresh.child.exitCode}`}):\n${fresh.output().slice(-3000)}`,
        );
      });
      return fresh;
    },
  };

  // the steady load: one session every 1/rate s, critic-chain and supervisor in turn
  const sessions: Tracked[] = [];
  let loading = true;
  const load = (async () => {
    const t0 = Date.now();
    for (let i = 0; loading; i++) {
      const wait = t0 + (i * 1000) / opts.rate - Date.now();
      if (wait > 0) await sleep(wait);
      const workload = WORKLOADS[i % WORKLOADS.length]!;
      const s: Tracked = {
        i,
        id: `${prefix.slice(5)}-${String(i).padStart(5, "0")}`,
        workload,
        submittedAt: Date.now(),
        submitted: false,
        submitError: null,
        finished: false,
      };
      sessions.push(s);
      // a submit that fails (its node died under it) is sent again with the same idempotency key
      void (async () => {
        for (let attempt = 0; !s.submitted; attempt++) {
          try {
            await svc.submit(workload.query(i), s.id, workload.submit);
            s.submitted = true;
          } catch (err) {
            s.submitError = (err as Error).message;
            if (Date.now() - s.submittedAt > 90_000) return;
            await sleep(500);
          }
        }
      })();
    }
  })();
  // completion, from Redis (the system of record; the run's own NATS connection may be mid-fault)
  let polling = true;
  const poller = (async () => {
    while (polling) {
      for (const s of sessions.filter((x) => x.submitted && !x.finished)) {
        const st = await svc.store.load(s.id).catch(() => null);
        if (st && isTerminal(st.state.meta.status)) s.finished = true;
      }
      await sleep(500);
    }
  })();

  const quietStart = Date.now();
  await sleep(opts.warmupMs);
  const quietEnd = Date.now();
  const plan: FaultStep[] = [
    ...natsClusterPlan({
      short: opts.short,
      nodes: nats.nodes.length,
      pauseMs: opts.pauseMs,
      partitionMs: opts.partitionMs,
    }),
    ...(redisChaos ? redisSentinelPlan() : []),
  ];
  const windows: FaultWindow[] = [];
  /** The steps after which the cluster needed its nodes restarted to come whole again. */
  const remedies: string[] = [];
  for (const step of plan) {
    const before = await redeliveries(svc);
    const start = Date.now();
    log(`chaos: ${step.name} (${step.kind})`);
    await step.run(ctx);
    const healed = Date.now();
    // a cluster stuck longer than a task's deadline (60 s) would end sessions by their workflows'
    // timeout rules, so the remedy comes well before that
    let current = await awaitReplicasCurrent(ctx, 20_000);
    if (current === null && ctx.nats) {
      log("    the streams' replicas were still not all current after 20 s: the nodes restart one by one");
      remedies.push(step.name);
      await rollingRestart(ctx);
      current = await awaitReplicasCurrent(ctx, 60_000);
    }
    log(
      current === null
        ? "    the streams' replicas were still not all current after 60 s"
        : `    every stream's replicas current ${(current / 1000).toFixed(1)} s after`,
    );
    await sleep(opts.settleMs);
    const end = Date.now();
    const r = grew(before, await redeliveries(svc));
    windows.push({ kind: step.kind, name: step.name, start, healed, end, redeliveries: r });
    const done = sessions.filter((s) => s.finished).length;
    log(
      `  healed after ${((healed - start) / 1000).toFixed(1)} s; ${done}/${sessions.length} sessions finished so far`,
    );
  }
  loading = false;
  await load;
  log(`chaos: load stopped at ${sessions.length} sessions; draining…`);
  const drainEnd = Date.now() + opts.drainMs;
  while (Date.now() < drainEnd && sessions.some((s) => !s.finished)) await sleep(500);
  polling = false;
  await poller;

  const outcomes: SessionOutcome[] = [];
  for (const s of sessions) {
    const loaded = await svc.store.load(s.id);
    const logLines = await svc.store.transitionLog(s.id).catch(() => []);
    let kind: SessionOutcome["kind"] = "ok";
    let problem: string | null = null;
    if (!loaded) [kind, problem] = ["lost", `no state (submit: ${s.submitted ? "ok" : (s.submitError ?? "pending")})`];
    else if (!isTerminal(loaded.state.meta.status)) [kind, problem] = ["stuck", `status ${loaded.state.meta.status}`];
    else if (loaded.state.meta.status !== "completed")
      [kind, problem] = ["wrong", `status ${loaded.state.meta.status}`];
    else {
      try {
        assertAppliedOnce(logLines, loaded.state.meta.version);
        problem = answerProblem(s.i, s.workload, s.workload.storedAnswer(loaded.state.data));
      } catch (err) {
        problem = (err as Error).message;
      }
      if (problem) kind = "wrong";
    }
    if (problem && loaded) {
      const m = loaded.state.meta;
      const answer = s.workload.storedAnswer(loaded.state.data);
      problem += ` [v${m.version}, awaiting ${m.awaiting.map((a) => a.task_id).join(",") || "nothing"}, answer ${JSON.stringify((answer ?? "").slice(0, 160))}; log: ${logLines.map((l) => `v${l.version}@${l.now} ${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`).join(" | ")}]`;
    }
    outcomes.push({ id: s.id, kind, problem, log: logLines });
  }
  const rows = faultRows(windows, outcomes);
  const counts = tally(outcomes);
  const quietStall = longestStall(progressOf(outcomes), quietStart, quietEnd);
  const allRetried = outcomes.filter((o) => o.log.some((l) => l.input_id.startsWith("timer:"))).length;
  log("");
  log(
    `agentmesh chaos run${opts.short ? " (short)" : ""}: 3 nats-server nodes (R3, access control), ${redisChaos ? "Redis primary + 2 replicas + 3 sentinels (replica wait 1)" : "one Redis server"}, 2 coordinators, ${ROLES.length} roles; ${opts.rate} sessions/s of critic-chain and supervisor`,
  );
  for (const line of renderRows(rows, quietStall)) log(`  ${line}`);
  for (const w of windows)
    log(`  · ${w.name}: healed in ${((w.healed - w.start) / 1000).toFixed(1)} s, ${w.redeliveries} redeliveries`);
  for (const name of remedies) log(`  · after "${name}" the NATS nodes were restarted one by one (stuck replicas)`);
  log(
    `\nsessions: ${sessions.length} submitted, ${counts.ok} complete with the exact answer and every transition applied once, ${counts.lost} lost, ${counts.stuck} stuck, ${counts.wrong} wrong; ${allRetried} had a timer fire`,
  );
  for (const o of outcomes.filter((x) => x.problem).slice(0, 20))
    log(`  ${o.kind.toUpperCase()} ${o.id}: ${o.problem}`);
  const ok = counts.lost + counts.stuck + counts.wrong === 0 && sessions.length > 0;
  const out = resolve(root, opts.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        startedAt,
        finishedAt: new Date().toISOString(),
        settings: { ...opts, roles: ROLES, prefix },
        quietStallMs: quietStall,
        rows,
        windows,
        remedies,
        sessions: { submitted: sessions.length, ...counts, timersFired: allRetried },
        problems: outcomes.filter((x) => x.problem).map((x) => ({ id: x.id, kind: x.kind, problem: x.problem })),
        ok,
      },
      null,
      2,
    )}\n`,
  );
  log(`chaos: wrote ${out}`);
  log(`chaos ${ok ? "passed" : "FAILED"}: 0 lost, 0 stuck, 0 wrong is the bar`);
  return ok ? 0 : 1;
}

let code = 1;
try {
  code = await main();
  passed = code === 0;
} catch (err) {
  process.stderr.write(`chaos: failed: ${(err as Error).stack ?? String(err)}\n`);
  for (const p of (services as Cluster | null)?.procs ?? [])
    if (p.child.exitCode !== null) process.stderr.write(`--- ${p.name} exited\n${p.output().slice(-1500)}\n`);
} finally {
  await cleanup();
}
process.exit(code);
