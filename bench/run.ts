// `pnpm bench`: throughput and orchestration overhead of a workflow (critic-chain, or the
// supervisor with --workflow supervisor) with instant (offline) agents, every service its own OS process, on real NATS (JetStream file store) and Redis (AOF).
// See bench/README.md for what is measured and how to read it.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { redactUrls } from "@agentmesh/contracts";
import { buildAll } from "../scripts/build.js";
import { resolveInfra, type Infra } from "../test/setup/infra.js";
import { uniquePrefix } from "../test/setup/prefix.js";
import { Cluster, SERVICE_NODE_OPTIONS, type ServiceName } from "../test/e2e/harness.js";
import { startOtlpReceiver, type OtlpReceiver } from "../test/e2e/otlp-receiver.js";
import { HELP, parseArgs, type BenchOptions } from "./args.js";
import { EventRouter } from "./events.js";
import { concurrentJson, renderConcurrent, runConcurrent } from "./concurrent.js";
import { compareGateway, startBenchGateway, type GatewayComparison } from "./gateway.js";
import { abandonLines, abandonStreams, type AbandonFigures } from "./gateway-abandon.js";
import { natsConnect, type BenchNats } from "./nats.js";
import { compareNatsTopologies, compareRedisTopologies } from "./nats-topology.js";
import { Floor } from "./floor/floor.js";
import { renderReport, summaryLine, toJson, type BenchReport } from "./report.js";
import { RoundTripLab } from "./roundtrips.js";
import { poolLevel, runRounds } from "./rounds.js";
import { runLevel, type LevelResult } from "./sessions.js";
import { measureStartup, renderStartup, type StartupReport } from "./startup.js";
import { findServerPid, rssKiB } from "./sysinfo.js";
import { headlineOf } from "./targets.js";
import { workloadFor } from "./workloads.js";

const root = join(import.meta.dirname, "..");
const log = (s: string) => process.stdout.write(`${s}\n`);

/** Cleanup steps, run last-registered first, once, on success, error and Ctrl-C alike. */
const cleanups: Array<{ what: string; run: () => Promise<unknown> }> = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c.run();
      } catch (err) {
        process.stderr.write(`bench: cleanup of ${c.what} failed: ${(err as Error).message}\n`);
      }
    }
  })();
  return cleaning;
}

let signals = 0;
function onSignal(signal: NodeJS.Signals, code: number): void {
  signals++;
  if (signals > 1) {
    process.stderr.write(`bench: second ${signal}, exiting without waiting for cleanup\n`);
    process.exit(code);
  }
  process.stderr.write(`\nbench: ${signal}: stopping every process and server the bench started…\n`);
  void cleanup().finally(() => process.exit(code));
}
process.on("SIGINT", () => onSignal("SIGINT", 130));
process.on("SIGTERM", () => onSignal("SIGTERM", 143));

/** The processes whose CPU counts with the runtime's and with the floor's alike. */
const SERVERS_AND_BENCH = ["nats-server", "redis-server", "bench (this process)"];

/** Process label → pid, for CPU and RSS readings. */
function processTable(cluster: Cluster, infra: Infra): Map<string, number> {
  const m = new Map<string, number>();
  let coord = 0;
  for (const p of cluster.procs) {
    if (p.child.pid === undefined) continue;
    m.set(p.name === "coordinator" ? `coordinator#${++coord}` : p.name, p.child.pid);
  }
  const auth = cluster.authServer;
  const natsPid = auth
    ? findServerPid("nats-server", join(auth.dir, "nats-server.conf"))
    : findServerPid("nats-server", Number(new URL(infra.natsUrl).port));
  const redisPid = findServerPid("redis-server", Number(new URL(infra.redisUrl).port));
  if (natsPid !== null) m.set("nats-server", natsPid);
  if (redisPid !== null) m.set("redis-server", redisPid);
  m.set("bench (this process)", process.pid);
  return m;
}

/** The commit measured, with "+dirty" when the work tree has changes (other people's included). */
function gitRevision(): string {
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    const dirty =
      execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root, encoding: "utf8" }).trim() !==
      "";
    return dirty ? `${sha}+dirty` : sha;
  } catch {
    return "unknown";
  }
}

async function redisDurability(redis: Redis): Promise<string> {
  try {
    const aof = (await redis.config("GET", "appendonly")) as string[];
    const fsync = (await redis.config("GET", "appendfsync")) as string[];
    const info = await redis.info("server");
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "?";
    return `redis ${version} appendonly=${aof[1] ?? "?"} appendfsync=${fsync[1] ?? "?"}`;
  } catch {
    return "redis (CONFIG unavailable)";
  }
}

/**
 * Deletes the run's streams and keys on servers the bench did not start (its own vanish with their
 * temp dirs). `nats` is null when the run's NATS was the bench's own (access control on).
 */
async function purgePrefix(nats: BenchNats | null, redisUrl: string, cluster: Cluster): Promise<void> {
  const nc = nats ? await natsConnect(nats, "bench-purge") : null;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  try {
    if (nc) {
      const jsm = await jetstreamManager(nc);
      for (const s of [...Object.values(cluster.naming.streams), `KV_${cluster.naming.kv.cancelled}`])
        await jsm.streams.delete(s).catch(() => undefined);
    }
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${cluster.naming.keyPrefix}:*`, "COUNT", 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    await nc?.close();
    redis.disconnect();
  }
}

/** waitReady, but fails at once when a service process exits instead of waiting out the timeout. */
async function ready(cluster: Cluster, want: Partial<Record<ServiceName, number>>): Promise<void> {
  let stop = false;
  const died = (async () => {
    for (;;) {
      const dead = cluster.procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
      if (dead)
        throw new Error(
          `${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) during start-up:\n${dead.output().slice(-2000)}`,
        );
      if (stop) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  try {
    await Promise.race([cluster.waitReady(want, 120_000), died]);
  } finally {
    stop = true;
    await died.catch(() => undefined);
  }
}

/** Lost or failed sessions of the gateway comparison, its warm-up included. */
function gatewayProblems(g: GatewayComparison | null): number {
  return g
    ? g.warmup.problems.length + g.levels.reduce((a, l) => a + l.direct.problems.length + l.gateway.problems.length, 0)
    : 0;
}

async function main(opts: BenchOptions): Promise<number> {
  const startedAt = new Date().toISOString();
  const loadavgStart = loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
  const workload = workloadFor(opts.workflow);
  log(`bench: workflow ${workload.workflow} (${workload.path}), roles ${workload.roles.join(", ")}`);
  log(
    `bench: NATS access control ${opts.accessControl ? "ON (own nats-server, generated config, one NKey per service)" : "OFF (--open)"}`,
  );
  // The services run compiled, as production runs them (AGENTMESH_SERVICE_RUNTIME=tsx: from source).
  if (process.env.AGENTMESH_SERVICE_RUNTIME !== "tsx") {
    const built = await buildAll();
    process.env.AGENTMESH_SERVICE_RUNTIME = "compiled";
    log(`bench: services compiled (${built.files} modules in ${built.ms} ms); they run as node …/dist/main.js`);
  } else log("bench: AGENTMESH_SERVICE_RUNTIME=tsx: services run from source under tsx");
  log(`bench: resolving NATS and Redis (NATS_URL/REDIS_URL, else testcontainers, else native binaries)…`);
  const infra = await resolveInfra();
  cleanups.push({ what: "NATS and Redis", run: () => infra.stop() });
  const prefix = uniquePrefix("bench");
  const tag = prefix.slice(5);
  if (opts.cpuProfDir) mkdirSync(resolve(root, opts.cpuProfDir), { recursive: true });
  let otlp: OtlpReceiver | null = null;
  if (opts.tracing) {
    const receiver = await startOtlpReceiver({ decode: false });
    otlp = receiver;
    cleanups.push({ what: "OTLP receiver", run: () => receiver.close() });
    log(`bench: tracing ON, spans exported to ${receiver.url}/v1/traces (counted, not decoded)`);
  }
  const extraEnv = {
    AGENTMESH_AGENT_CONCURRENCY: String(opts.agentConcurrency),
    AGENTMESH_COORDINATOR_CONCURRENCY: String(opts.coordinatorConcurrency),
    AGENTMESH_TASK_ACK_WAIT_MS: String(opts.ackWaitMs),
    AGENTMESH_INBOX_ACK_WAIT_MS: String(opts.ackWaitMs),
    LOG_LEVEL: "warn",
    ...(opts.modelLatencyMs > 0 ? { AGENTMESH_OFFLINE_LATENCY_MS: String(opts.modelLatencyMs) } : {}),
    ...(otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } : {}),
    ...(opts.cpuProfDir ? { BENCH_CPU_PROF_DIR: resolve(root, opts.cpuProfDir) } : {}),
    // the replica wait's cost: REDIS_URL names a primary with a replica (docs/redis-failover.md)
    ...Object.fromEntries(
      ["AGENTMESH_REDIS_WAIT_REPLICAS", "AGENTMESH_REDIS_WAIT_TIMEOUT_MS"].flatMap((k) => {
        const v = process.env[k];
        return v ? [[k, v]] : [];
      }),
    ),
  };
  const nodeOptions = [opts.cpuProfDir ? `--import=${join(root, "bench/cpu-prof.mjs")}` : null, opts.serviceNodeOptions]
    .filter((x) => x !== null)
    .join(" ");
  if (nodeOptions) Object.assign(extraEnv, { NODE_OPTIONS: nodeOptions });
  if (opts.natsCluster && opts.redisReplica)
    throw new Error("--nats-cluster and --redis-replica are two runs: give one");
  if (opts.redisReplica || opts.natsCluster) {
    const compare = opts.redisReplica ? compareRedisTopologies : compareNatsTopologies;
    return compare({
      opts: { ...opts, out: resolve(root, opts.out) },
      redisUrl: infra.redisUrl,
      extraEnv,
      log,
      cleanup: (what, run) => cleanups.push({ what, run }),
    });
  }
  // Under access control the cluster starts its own nats-server (startAuthNats) and infra's NATS stays idle.
  const cluster = new Cluster({
    natsUrl: infra.natsUrl,
    redisUrl: infra.redisUrl,
    prefix,
    extraEnv,
    accessControl: opts.accessControl,
    logLevel: extraEnv.LOG_LEVEL,
  });
  // Cleanups run last-registered first: this one runs after the services stopped, before the servers do.
  if (infra.source !== "native") {
    cleanups.push({
      what: "the run's streams and keys",
      run: () => purgePrefix(opts.accessControl ? null : { url: infra.natsUrl }, infra.redisUrl, cluster),
    });
  }
  await cluster.open();
  cleanups.push({ what: "service processes", run: () => cluster.close() });
  const adminSeed = cluster.authServer?.seedFile("admin");
  /** The bench's own connections: the cluster's NATS, as the config's admin user under access control. */
  const natsTarget: BenchNats = { url: cluster.natsUrl, ...(adminSeed ? { seedFile: adminSeed } : {}) };
  log(
    `bench: ${opts.accessControl ? "own access-controlled nats-server" : `${infra.source} nats-server`} ${redactUrls(cluster.natsUrl)}, ${infra.source} redis ${redactUrls(infra.redisUrl)}; prefix ${prefix}`,
  );
  if (opts.startup === "only") return startupOnly(opts, cluster, natsTarget);

  // Coordinators provision the streams and consumers the agents attach to, so they go first.
  const t0 = Date.now();
  for (let i = 0; i < opts.coordinators; i++) cluster.start("coordinator");
  await ready(cluster, { coordinator: opts.coordinators });
  for (const r of workload.roles) cluster.start(r);
  const want: Partial<Record<ServiceName, number>> = { coordinator: opts.coordinators };
  for (const r of workload.roles) want[r] = 1;
  // The gateway needs only NATS and Redis to answer /readyz, so it starts beside the agents.
  const [, gateway] = await Promise.all([
    ready(cluster, want),
    opts.gatewaySessions.size > 0 ? startBenchGateway(cluster) : null,
  ]);
  log(
    `bench: ${opts.coordinators} coordinators, ${workload.roles.length} agents${gateway ? " and a gateway" : ""} up in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  const pids = processTable(cluster, infra);
  /** Measured windows on CLOCK_MONOTONIC in µs (the clock V8 CPU profiles use), for bench/profile.ts. */
  const windows: Array<{ label: string; startUs: number; endUs: number }> = [];
  const monoUs = () => Number(process.hrtime.bigint() / 1000n);

  const nc = await natsConnect(natsTarget, "bench");
  const redis = new Redis(infra.redisUrl, { maxRetriesPerRequest: 3 });
  cleanups.push({
    what: "bench connections",
    run: async () => {
      await nc.close();
      redis.disconnect();
    },
  });
  const router = new EventRouter(nc, cluster.naming);
  cleanups.push({ what: "event subscription", run: async () => router.close() });
  const natsVersion = nc.info?.version ?? "?";
  const redisDesc = await redisDurability(redis);

  let warm: LevelResult | null = null;
  if (opts.warmup > 0) {
    log(`bench: ${opts.warmup} warm-up sessions (not measured)…`);
    warm = await runLevel({
      cluster,
      router,
      workload,
      concurrency: Math.min(4, opts.warmup),
      sessions: opts.warmup,
      firstIndex: 100_000,
      stem: `${tag}-w`,
      timeoutMs: opts.sessionTimeoutMs,
    });
  }

  if (opts.concurrent !== null) {
    const n = opts.concurrent;
    log(
      `bench: ${n} concurrent sessions, model latency ${opts.modelLatencyMs} ms, at most ${opts.submitWindow} submits in flight…`,
    );
    const r = await runConcurrent({
      cluster,
      router,
      workload,
      nc,
      redis,
      prefix,
      pids,
      sessions: n,
      submitWindow: opts.submitWindow,
      stem: `${tag}-n`,
      timeoutMs: opts.sessionTimeoutMs,
      rssBudgetKiB: opts.rssBudgetMiB * 1024,
      log,
    });
    const dead = cluster.procs
      .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      .map(
        (p) =>
          `${p.name} (pid ${p.child.pid}, exit ${p.child.exitCode ?? p.child.signalCode})\n${p.output().slice(-1500)}`,
      );
    const ok = r.ok && dead.length === 0 && (warm === null || warm.ok === warm.sessions);
    const l = r.level;
    const summary =
      `bench ${workload.workflow} --concurrent ${n}: ${l.ok}/${l.sessions} verified, peak live ${l.peakLive}, ${l.sessionsPerSecond.toFixed(1)} sessions/s, ` +
      `wall p50 ${(l.wallMs.p50 / 1000).toFixed(1)} s p99 ${(l.wallMs.p99 / 1000).toFixed(1)} s, Σ peak RSS ${(r.hwmTotalKiB / 1024).toFixed(0)} MiB, ` +
      r.checks
        .slice(3)
        .map((c) => `${c.what.split(" (")[0]} ${c.value}`)
        .join(", ");
    log("");
    log(
      `agentmesh bench --concurrent — ${workload.workflow} (${workload.path}), offline engine with ${opts.modelLatencyMs} ms per model answer, every service its own OS process`,
    );
    log(
      `  access    NATS access control ${opts.accessControl ? "ON" : "OFF (--open)"}; tracing ${otlp ? "on" : "off"}; nats-server ${natsVersion}; ${redisDesc}`,
    );
    log(
      `  settings  coordinators=${opts.coordinators} (one replica per role) AGENTMESH_AGENT_CONCURRENCY=${opts.agentConcurrency} AGENTMESH_COORDINATOR_CONCURRENCY=${opts.coordinatorConcurrency} ack_wait_ms=${opts.ackWaitMs} submit_window=${opts.submitWindow} NODE_OPTIONS="${[SERVICE_NODE_OPTIONS, opts.serviceNodeOptions].filter((x) => x).join(" ")}" warmup=${warm?.sessions ?? 0} (${warm?.ok ?? 0} ok)`,
    );
    log(`  host      ${cpus().length} CPUs, load avg ${loadavgStart} at start (shared machine); git ${gitRevision()}`);
    for (const line of renderConcurrent(r, cpus().length)) log(line);
    if (l.problems.length || dead.length) {
      log("\nPROBLEMS");
      for (const p of l.problems.slice(0, 50)) log(`  ${p.outcome.toUpperCase()} ${p.sessionId}: ${p.reason ?? ""}`);
      if (l.problems.length > 50) log(`  … and ${l.problems.length - 50} more (all in the JSON)`);
      for (const d of dead) log(`  PROCESS EXITED during the run: ${d}`);
    }
    log(`\n${summary}\n`);
    const out = resolve(root, opts.out);
    mkdirSync(dirname(out), { recursive: true });
    const json = `${JSON.stringify(
      {
        mode: "concurrent",
        workflow: workload.workflow,
        path: workload.path,
        startedAt,
        finishedAt: new Date().toISOString(),
        host: {
          cpus: cpus().length,
          node: process.version,
          git: gitRevision(),
          loadavgStart,
          loadavgEnd: loadavg()
            .map((x) => x.toFixed(2))
            .join(" "),
        },
        settings: {
          prefix,
          services: process.env.AGENTMESH_SERVICE_RUNTIME ?? "tsx",
          access_control: opts.accessControl,
          tracing: otlp !== null,
          coordinators: opts.coordinators,
          model_latency_ms: opts.modelLatencyMs,
          AGENTMESH_AGENT_CONCURRENCY: opts.agentConcurrency,
          AGENTMESH_COORDINATOR_CONCURRENCY: opts.coordinatorConcurrency,
          ack_wait_ms: opts.ackWaitMs,
          submit_window: opts.submitWindow,
          rss_budget_mib: opts.rssBudgetMiB,
          service_node_options: opts.serviceNodeOptions,
          default_node_options: SERVICE_NODE_OPTIONS,
          transition_clock: "bench_receipt",
        },
        warmup: { sessions: warm?.sessions ?? 0, ok: warm?.ok ?? 0, problems: warm?.problems ?? [] },
        ...(concurrentJson(r) as object),
        deadProcesses: dead,
        summary,
        ok,
      },
      null,
      2,
    )}\n`;
    writeFileSync(out, json);
    writeFileSync(join(dirname(out), `bench-concurrent-${startedAt.replace(/[:.]/g, "-")}.json`), json);
    log(`bench: wrote ${out}`);
    if (!ok) process.stderr.write(`bench: --concurrent ${n} missed a target (see Targets and PROBLEMS above)\n`);
    return ok ? 0 : 1;
  }

  const lab = new RoundTripLab(nc, redis, natsTarget, prefix);
  cleanups.push({ what: "round-trip stream and keys", run: () => lab.close() });
  await lab.open();
  log(`bench: round trips, ${opts.rttSamples} sequential samples each…`);
  const roundTrips = await lab.measure(opts.rttSamples);

  const floor = new Floor(
    { natsUrl: natsTarget.url, seedFile: natsTarget.seedFile ?? null, redisUrl: infra.redisUrl, prefix },
    opts.coordinators,
    new Map([...pids].filter(([k]) => SERVERS_AND_BENCH.includes(k))),
  );
  cleanups.push({ what: "the floor's processes, streams and keys", run: () => floor.close() });
  log(`bench: the floor: ${opts.coordinators} driver processes and a worker (bench/floor, raw clients)…`);
  await floor.open();
  const warmSteps = warm && warm.ok > 0 ? warm.stepsPerSession.p50 : null;
  // The floor's warm-up: its steps are cheap, so it gets 8× the runtime's warm-up sessions, at up to 16 in flight.
  if (opts.warmup > 0)
    await floor.run(Math.min(16, Math.max(...opts.levels)), opts.warmup * 8, warmSteps ?? 7, `${tag}-fw`);

  const { rounds, steps } = await runRounds({
    cluster,
    router,
    workload,
    nc,
    lab,
    floor,
    pids,
    prefix,
    tag,
    levels: opts.levels,
    sessions: opts.sessions,
    rounds: opts.rounds,
    timeoutMs: opts.sessionTimeoutMs,
    steps: warmSteps,
    log,
    onWindow: (label, startUs, endUs) => windows.push({ label, startUs, endUs }),
  });
  const levels = opts.levels.map((c) =>
    poolLevel(rounds.map((r) => r.runtime.find((l) => l.level.concurrency === c)!)),
  );
  const headline = headlineOf(rounds);
  const floorLevels = rounds.flatMap((r) => r.floor.map((l) => ({ ...l, round: r.round })));
  const firstIndex = opts.levels.reduce((a, c) => a + opts.sessions.get(c)!, 0) * opts.rounds;

  let gatewayRun: GatewayComparison | null = null;
  let abandoned: AbandonFigures | null = null;
  if (gateway) {
    const startUs = monoUs();
    gatewayRun = await compareGateway({
      cluster,
      router,
      workload,
      gateway,
      pids,
      sessions: opts.gatewaySessions,
      warmup: opts.warmup,
      firstIndex,
      stem: `${tag}-g`,
      timeoutMs: opts.sessionTimeoutMs,
      log,
    });
    windows.push({ label: "gateway", startUs, endUs: monoUs() });
    log(`bench: gateway comparison done in ${((monoUs() - startUs) / 1e6).toFixed(1)} s`);
    if (opts.gatewayAbandon > 0) {
      log(`bench: ${opts.gatewayAbandon} streams opened on the gateway and abandoned…`);
      abandoned = await abandonStreams({
        target: gateway,
        nc: cluster.natsConnection,
        naming: cluster.naming,
        sessionIds: gatewayRun.levels.flatMap((l) =>
          l.gateway.samples.flatMap((x) => (x.outcome === "ok" && x.sessionId ? [x.sessionId] : [])),
        ),
        streams: opts.gatewayAbandon,
      });
      for (const line of abandonLines(abandoned)) log(line);
    }
  }

  let startup: StartupReport | null = null;
  if (opts.startup === "also") {
    log(
      `bench: start-up timing, ${opts.startupRounds} starts each of a bare node (the baseline), a coordinator, a planner and a gateway…`,
    );
    startup = await measureStartup(cluster, nc, { rounds: opts.startupRounds, log });
  }

  if (opts.cpuProfDir) {
    const dir = resolve(root, opts.cpuProfDir);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "bench-window.json"),
      `${JSON.stringify({ processes: Object.fromEntries(pids), windows }, null, 2)}\n`,
    );
  }
  const rss: Record<string, number | null> = {};
  for (const [k, pid] of pids) rss[k] = rssKiB(pid);
  const dead = [
    ...cluster.procs
      .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      .map(
        (p) =>
          `${p.name} (pid ${p.child.pid}, exit ${p.child.exitCode ?? p.child.signalCode})\n${p.output().slice(-1500)}`,
      ),
    ...floor.dead(),
  ];

  const base = {
    workflow: workload.workflow,
    path: workload.path,
    startedAt,
    host: {
      cpus: cpus().length,
      node: process.version,
      git: gitRevision(),
      loadavgStart,
      loadavgEnd: loadavg()
        .map((x) => x.toFixed(2))
        .join(" "),
    },
    infra: {
      source: opts.accessControl ? `${infra.source} redis, own nats-server` : infra.source,
      accessControl: opts.accessControl,
      nats: `nats-server ${natsVersion} at ${redactUrls(cluster.natsUrl)} (JetStream, file storage; access control ${opts.accessControl ? "ON: generated config, one NKey user per service, bench as admin" : "OFF"})`,
      redis: `${redisDesc} at ${redactUrls(infra.redisUrl)}`,
    },
    settings: {
      prefix,
      services: process.env.AGENTMESH_SERVICE_RUNTIME ?? "tsx",
      access_control: opts.accessControl,
      coordinators: opts.coordinators,
      AGENTMESH_AGENT_CONCURRENCY: opts.agentConcurrency,
      AGENTMESH_COORDINATOR_CONCURRENCY: opts.coordinatorConcurrency,
      ack_wait_ms: opts.ackWaitMs,
      LOG_LEVEL: "warn",
      warmup: opts.warmup,
      rounds: opts.rounds,
      rtt_samples: opts.rttSamples,
      // how transitionMs and hopsMs were timed: when the bench received each transition's events, sub-ms
      // (before 3c3aa55: the events' `at`, the coordinators' clock in whole ms)
      transition_clock: "bench_receipt",
      tracing: otlp
        ? `on (OTLP/HTTP protobuf, ${otlp.counts.exports} exports, ${Math.round(otlp.counts.bytes / 1024)} KiB)`
        : "off",
      gateway: gateway
        ? `${[...opts.gatewaySessions].map(([c, n]) => `c=${c}:${n}`).join(",")} per path, ${opts.accessControl ? "NATS user gateway" : "open NATS"}, API key`
        : "skipped",
    },
    roundTrips,
    warmup: { sessions: warm?.sessions ?? 0, ok: warm?.ok ?? 0, problems: warm?.problems ?? [] },
    levels,
    headline,
    floor: { stepsPerSession: steps, levels: floorLevels },
    gateway: gatewayRun,
    gatewayAbandon: abandoned,
    rssKiB: rss,
    deadProcesses: dead,
    startup,
  };
  const bad =
    (warm ? warm.lost + warm.failed : 0) +
    levels.reduce((a, l) => a + l.level.lost + l.level.failed, 0) +
    gatewayProblems(gatewayRun) +
    floorLevels.reduce((a, l) => a + l.problems.length, 0);
  const report: BenchReport = {
    ...base,
    finishedAt: new Date().toISOString(),
    summary: summaryLine(base),
    ok: bad === 0 && dead.length === 0,
  };

  log(renderReport(report));
  const out = resolve(root, opts.out);
  mkdirSync(dirname(out), { recursive: true });
  const json = `${JSON.stringify(toJson(report), null, 2)}\n`;
  writeFileSync(out, json);
  writeFileSync(join(dirname(out), `bench-${startedAt.replace(/[:.]/g, "-")}.json`), json);
  log(`bench: wrote ${out}`);
  if (!report.ok)
    process.stderr.write(
      `bench: ${bad} session(s) lost or failed, ${dead.length} process(es) died — see PROBLEMS above\n`,
    );
  return report.ok ? 0 : 1;
}

/** `--startup-only`: times the services' start-up on the run's NATS and Redis, prints it and writes startup.json beside --out. */
async function startupOnly(opts: BenchOptions, cluster: Cluster, target: BenchNats): Promise<number> {
  const nc = await natsConnect(target, "bench");
  cleanups.push({ what: "bench connection", run: () => nc.close() });
  log(
    `bench: start-up timing, ${opts.startupRounds} starts each of a bare node (the baseline), a coordinator, a planner and a gateway…`,
  );
  const report = await measureStartup(cluster, nc, {
    rounds: opts.startupRounds,
    log,
    cpuProfDir: opts.cpuProfDir === null ? null : resolve(root, opts.cpuProfDir),
  });
  log(`\n${renderStartup(report)}\n`);
  const out = join(dirname(resolve(root, opts.out)), "startup.json");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ ...report, git: gitRevision(), node: process.version, cpus: cpus().length }, null, 2)}\n`,
  );
  log(`bench: wrote ${out}`);
  return 0;
}

let parsed: BenchOptions | "help";
try {
  parsed = parseArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(2);
}
if (parsed === "help") {
  log(HELP);
  process.exit(0);
}
let code = 1;
try {
  code = await main(parsed);
} catch (err) {
  process.stderr.write(`bench: failed: ${(err as Error).stack ?? String(err)}\n`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
