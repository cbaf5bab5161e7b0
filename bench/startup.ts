// Start-up timing of one process per service kind: spawn → `/readyz` 200 on its ops port and
// spawn → its first `$SRV.PING` answer, with the CPU it used and its RSS when ready. The command
// is the harness's serviceCommand(), so switching that to compiled output switches this too.
import { spawn, type ChildProcess } from "node:child_process";
import { basename, join } from "node:path";
import { loadavg } from "node:os";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import type { RoleName } from "@agentmesh/contracts";
import { freePort } from "../test/setup/infra.js";
import {
  SERVICE_NODE_OPTIONS,
  serviceCommand,
  serviceRuntime,
  type Cluster,
  type ServiceName,
  type ServiceRuntime,
} from "../test/e2e/harness.js";
import { median } from "./stats.js";
import { cpuMs, rssKiB } from "./sysinfo.js";

const root = join(import.meta.dirname, "..");

/** The target the issue sets: a service ready this soon after its process starts. */
export const READY_TARGET_MS = 300;
/** How often the probes are polled while a process starts. */
const POLL_MS = 5;

/** One start of one service process. */
export interface StartupSample {
  /** spawn → the first `/readyz` answered 200. */
  readonly readyMs: number;
  /** spawn → the first `$SRV.PING` answer from this process; null for a service without `$SRV` (the gateway). */
  readonly pingMs: number | null;
  /** CPU (user + system) the process used up to ready. */
  readonly cpuMs: number | null;
  /** Resident memory when ready. */
  readonly rssMiB: number | null;
}

/**
 * The baseline row: a bare `node` with the services' NODE_OPTIONS that answers `/readyz` as soon
 * as it listens, timed the same way. What Node itself costs on this machine, so a service's own
 * share of its start-up is its figure minus this one.
 */
export const BASELINE = "node itself";

/** Every start of one service kind, and their medians. */
export interface StartupResult {
  readonly service: ServiceName | typeof BASELINE;
  readonly samples: readonly StartupSample[];
  readonly median: {
    readonly readyMs: number;
    readonly pingMs: number | null;
    readonly cpuMs: number | null;
    readonly rssMiB: number | null;
  };
}

/** What `pnpm bench` reports about start-up. */
export interface StartupReport {
  /** How the processes were run, e.g. `node --import tsx`. */
  readonly command: string;
  readonly rounds: number;
  readonly targetMs: number;
  readonly loadavgStart: string;
  readonly loadavgEnd: string;
  readonly results: readonly StartupResult[];
}

export interface StartupOptions {
  /** Starts per service kind, interleaved (coordinator, agent, gateway, coordinator, …); default 3. */
  readonly rounds?: number;
  /** The agent role whose process is timed; default planner. */
  readonly role?: RoleName;
  /** Give one start up after this long; default 120 s. */
  readonly timeoutMs?: number;
  /** Each started process writes a V8 CPU profile of its whole life here (Node's `--cpu-prof`). */
  readonly cpuProfDir?: string | null;
  readonly log?: (line: string) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const loads = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

/** `node --import tsx` for `node --import tsx /…/main.ts planner`: the command up to the entry file. */
export function describeCommand(name: ServiceName, runtime: ServiceRuntime = serviceRuntime()): string {
  const { command, args } = serviceCommand(name, runtime);
  const entry = args.findIndex((a) => a.startsWith("/"));
  return [basename(command), ...(entry < 0 ? args : args.slice(0, entry))].join(" ");
}

/**
 * Ids of the instances of `name` that answer `$SRV.PING.<name>` for this prefix, every `POLL_MS`,
 * from the moment it is called; `first(except)` resolves with the time of the first answer by an
 * instance not in `except` (the bench's own long-running replica of the same role answers too).
 */
function pingWatch(nc: NatsConnection, name: string, prefix: string) {
  const inbox = createInbox();
  const seen = new Map<string, number>();
  const sub = nc.subscribe(inbox, {
    callback: (err, m) => {
      // nobody subscribed yet: the server's "no responders" status, an empty message
      if (err || m.data.length === 0) return;
      let r: { id?: string; metadata?: Record<string, string> };
      try {
        r = m.json();
      } catch {
        return;
      }
      if (r.id && r.metadata?.prefix === prefix && !seen.has(r.id)) seen.set(r.id, performance.now());
    },
  });
  const timer = setInterval(() => nc.publish(`$SRV.PING.${name}`, "", { reply: inbox }), POLL_MS);
  nc.publish(`$SRV.PING.${name}`, "", { reply: inbox });
  return {
    ids: () => new Set(seen.keys()),
    firstNew: (except: ReadonlySet<string>) =>
      [...seen]
        .filter(([id]) => !except.has(id))
        .map(([, t]) => t)
        .sort((a, b) => a - b)[0],
    stop: () => {
      clearInterval(timer);
      sub.unsubscribe();
    },
  };
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const done = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!done) {
    child.kill("SIGKILL");
    await exited;
  }
}

/** Env a service needs to start here beyond the cluster's: its ops port, and the gateway its own listener. */
function envFor(name: ServiceName, opsPort: number): Record<string, string> {
  const ops = { AGENTMESH_METRICS_PORT: String(opsPort), AGENTMESH_METRICS_HOST: "127.0.0.1" };
  return name === "gateway"
    ? { ...ops, AGENTMESH_GATEWAY_HOST: "127.0.0.1", AGENTMESH_GATEWAY_PORT: "0", AGENTMESH_GATEWAY_ANONYMOUS: "1" }
    : ops;
}

/**
 * Polls `child`'s `GET /readyz` on `port` every POLL_MS, and `pinged` (its first `$SRV.PING`
 * answer, when it has one) until both have answered; the times are from `t0`, and CPU and memory
 * are read the moment it answers ready.
 */
async function timeToReady(
  what: string,
  child: ChildProcess,
  port: number,
  t0: number,
  timeoutMs: number,
  output: () => string,
  pinged: (() => number | null) | null,
): Promise<StartupSample> {
  const end = t0 + timeoutMs;
  let ready: { at: number; cpu: number | null; rss: number | null } | null = null;
  let ping: number | null = null;
  const done = () => ready !== null && (pinged === null || ping !== null);
  while (!done()) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `${what} exited (${child.exitCode ?? child.signalCode}) while starting:\n${output().slice(-2000)}`,
      );
    if (performance.now() > end) throw new Error(`${what} not ready within ${timeoutMs} ms:\n${output().slice(-2000)}`);
    if (ready === null) {
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok)
        ready = {
          at: performance.now(),
          cpu: child.pid === undefined ? null : cpuMs(child.pid),
          rss: child.pid === undefined ? null : rssKiB(child.pid),
        };
    }
    if (pinged !== null) ping ??= pinged();
    if (!done()) await sleep(POLL_MS);
  }
  const r = ready!;
  return {
    readyMs: r.at - t0,
    pingMs: ping === null ? null : ping - t0,
    cpuMs: r.cpu,
    rssMiB: r.rss === null ? null : r.rss / 1024,
  };
}

/** Starts one process of `name`, times it to ready and to its first `$SRV.PING` answer, then stops it. */
async function startOnce(
  cluster: Cluster,
  nc: NatsConnection,
  name: ServiceName,
  timeoutMs: number,
  cpuProfDir: string | null,
): Promise<StartupSample> {
  const watch = name === "gateway" ? null : pingWatch(nc, name, cluster.opts.prefix);
  // instances already up (the bench's own replica) answer within a few polls
  await sleep(watch ? 300 : 0);
  const before = watch?.ids() ?? new Set<string>();
  const opsPort = await freePort();
  const { command, args: serviceArgs } = serviceCommand(name);
  // on the command line: Node 20 refuses --cpu-prof in NODE_OPTIONS
  const args =
    cpuProfDir === null
      ? serviceArgs
      : [
          `--cpu-prof`,
          `--cpu-prof-dir=${cpuProfDir}`,
          `--cpu-prof-name=${name}.${process.hrtime.bigint()}.cpuprofile`,
          "--cpu-prof-interval=100",
          ...serviceArgs,
        ];
  const t0 = performance.now();
  const env = cluster.env(envFor(name, opsPort), name);
  // a start is timed as deployed: the services' NODE_OPTIONS (deploy/node-options) without the CPU
  // profiler `--cpu-prof` preloads into the run's services
  env.NODE_OPTIONS = SERVICE_NODE_OPTIONS;
  delete env.BENCH_CPU_PROF_DIR;
  const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise((r) => child.once("exit", r));
  try {
    return await timeToReady(
      name,
      child,
      opsPort,
      t0,
      timeoutMs,
      () => out,
      watch ? () => watch.firstNew(before) ?? null : null,
    );
  } finally {
    watch?.stop();
    await stopChild(child, exited);
  }
}

const BARE_NODE = `require("node:http").createServer((q, s) => s.end("ok")).listen(Number(process.env.PORT), "127.0.0.1")`;

/** Starts a bare node that answers `/readyz` once it listens; times it to that answer. */
export async function baselineOnce(timeoutMs: number): Promise<StartupSample> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, ["-e", BARE_NODE], {
    cwd: root,
    env: { PATH: process.env.PATH, PORT: String(port), NODE_OPTIONS: SERVICE_NODE_OPTIONS },
    stdio: "ignore",
  });
  const exited = new Promise((r) => child.once("exit", r));
  try {
    return await timeToReady("bare node", child, port, t0, timeoutMs, () => "", null);
  } finally {
    await stopChild(child, exited);
  }
}

/** The median of the figures there are (with 3 starts, the middle one); null with none. */
function medianOf(xs: readonly (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  return v.length ? median(v) : null;
}

/**
 * Times `rounds` starts of a bare node (the baseline row), a coordinator, one agent role's process
 * and a gateway, interleaved, on
 * the cluster's NATS and Redis (the first coordinator provisions the streams the others need).
 * Every process is its own, started and stopped here; the cluster's own processes are untouched.
 */
export async function measureStartup(
  cluster: Cluster,
  nc: NatsConnection,
  opts: StartupOptions = {},
): Promise<StartupReport> {
  const rounds = opts.rounds ?? 3;
  const kinds: Array<ServiceName | typeof BASELINE> = [BASELINE, "coordinator", opts.role ?? "planner", "gateway"];
  const samples = new Map<ServiceName | typeof BASELINE, StartupSample[]>(kinds.map((k) => [k, []]));
  const loadavgStart = loads();
  for (let round = 1; round <= rounds; round++) {
    for (const kind of kinds) {
      const timeoutMs = opts.timeoutMs ?? 120_000;
      const s =
        kind === BASELINE
          ? await baselineOnce(timeoutMs)
          : await startOnce(cluster, nc, kind, timeoutMs, opts.cpuProfDir ?? null);
      samples.get(kind)?.push(s);
      opts.log?.(
        `  start-up ${round}/${rounds} ${kind}: ready ${s.readyMs.toFixed(0)} ms${s.pingMs === null ? "" : `, $SRV.PING ${s.pingMs.toFixed(0)} ms`}, CPU ${s.cpuMs ?? "?"} ms, RSS ${s.rssMiB?.toFixed(0) ?? "?"} MiB`,
      );
    }
  }
  const results = kinds.map((service) => {
    const xs = samples.get(service) ?? [];
    return {
      service,
      samples: xs,
      median: {
        readyMs: medianOf(xs.map((s) => s.readyMs)) ?? Number.NaN,
        pingMs: medianOf(xs.map((s) => s.pingMs)),
        cpuMs: medianOf(xs.map((s) => s.cpuMs)),
        rssMiB: medianOf(xs.map((s) => s.rssMiB)),
      },
    };
  });
  return {
    command: describeCommand("coordinator"),
    rounds,
    targetMs: READY_TARGET_MS,
    loadavgStart,
    loadavgEnd: loads(),
    results,
  };
}

/** The start-up table of the bench report. */
export function renderStartup(r: StartupReport): string {
  const ms = (x: number | null) => (x === null ? "—" : `${x.toFixed(0)} ms`);
  const rows = r.results.map((x) => [
    x.service,
    ms(x.median.readyMs),
    ms(x.median.pingMs),
    ms(x.median.cpuMs),
    x.median.rssMiB === null ? "—" : `${x.median.rssMiB.toFixed(0)} MiB`,
    x.service === BASELINE ? "—" : x.median.readyMs <= r.targetMs ? "yes" : "no",
  ]);
  const head = [
    "service",
    "spawn → /readyz 200",
    "spawn → $SRV.PING",
    "CPU to ready",
    "RSS at ready",
    `≤ ${r.targetMs} ms`,
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [
    `START-UP (${r.command}; median of ${r.rounds} starts each, interleaved; load ${r.loadavgStart} → ${r.loadavgEnd})`,
    line(head),
    ...rows.map(line),
    `(${BASELINE}: a bare node with the same NODE_OPTIONS answering /readyz once it listens, timed the same way: what this machine's Node start costs before any agentmesh code)`,
  ].join("\n");
}
