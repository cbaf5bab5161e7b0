// `pnpm bench:startup`: how long a service takes from its process's start to ready, under tsx and
// compiled (`pnpm build`). Ready is what a client can see: the coordinator and an agent answer
// `$SRV.PING` (registered once their consume loops run), the gateway answers GET /readyz. Per
// start: wall ms (spawn → ready), the process's CPU ms and RSS at that moment. See bench/README.md.
//
//   pnpm bench:startup [--rounds N] [--runtime tsx,compiled] [--service coordinator,gateway,planner] [--cpu-prof DIR]
//
// --cpu-prof DIR: each start writes a V8 CPU profile into DIR, with bench-window.json marking
// spawn → ready per start; `pnpm tsx bench/profile.ts DIR --window "planner compiled 1"` splits it.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { ROLE_NAMES } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import { resolveInfra, freePort } from "../test/setup/infra.js";
import { uniquePrefix } from "../test/setup/prefix.js";
import { Cluster, serviceArgv, type ServiceRuntime } from "../test/e2e/harness.js";
import { summarize } from "./stats.js";
import { cpuMs, rssKiB } from "./sysinfo.js";

const root = join(import.meta.dirname, "..");
const log = (s: string) => process.stdout.write(`${s}\n`);

type Kind = "coordinator" | "gateway" | (typeof ROLE_NAMES)[number];

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (i >= 0 && (v === undefined || v.startsWith("--"))) throw new Error(`--${name} needs a value`);
  return v ?? fallback;
}

interface Options {
  readonly rounds: number;
  readonly runtimes: ServiceRuntime[];
  readonly kinds: Kind[];
  readonly cpuProfDir: string | null;
}

function parseOptions(): Options {
  const rounds = Number(option("rounds", "3"));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: expected a whole number ≥ 1, got ${option("rounds", "3")}`);
  const runtimes = option("runtime", "tsx,compiled").split(",");
  const badRuntime = runtimes.filter((r) => r !== "tsx" && r !== "compiled");
  if (badRuntime.length) throw new Error(`--runtime: ${badRuntime.join(", ")} is not tsx or compiled`);
  const kinds = option("service", "coordinator,gateway,planner").split(",");
  const known: readonly string[] = ["coordinator", "gateway", ...ROLE_NAMES];
  const badKind = kinds.filter((k) => !known.includes(k));
  if (badKind.length) throw new Error(`--service: ${badKind.join(", ")} is not coordinator, gateway or a role`);
  const cpuProf = option("cpu-prof", "");
  return { rounds, runtimes: runtimes as ServiceRuntime[], kinds: kinds as Kind[], cpuProfDir: cpuProf ? resolve(cpuProf) : null };
}

/** One start, as measured. */
interface Start {
  readonly pid: number;
  /** spawn and ready on CLOCK_MONOTONIC, µs (the clock of a V8 CPU profile's sample times) */
  readonly window: { readonly startUs: number; readonly endUs: number };
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly rssMiB: number;
}

/** The ids of the service instances of this prefix that answer `$SRV.PING` now. */
async function instanceIds(cluster: Cluster, prefix: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const inbox = cluster.natsConnection.subscribe(`_INBOX.startup.${Math.random().toString(36).slice(2)}`, {
    callback: (_err, m) => {
      const r = m.json<{ id: string; metadata?: Record<string, string> }>();
      if (r.metadata?.prefix === prefix) ids.add(r.id);
    },
  });
  cluster.natsConnection.publish("$SRV.PING", "", { reply: inbox.getSubject() });
  await new Promise((r) => setTimeout(r, 300));
  inbox.unsubscribe();
  return ids;
}

/**
 * Resolves when `$SRV.PING` gets an answer from an instance of `name` of this prefix that is not
 * in `before` (asked every 5 ms).
 */
function pingedReady(cluster: Cluster, name: string, prefix: string, before: ReadonlySet<string>, child: ChildProcess): Promise<void> {
  const nc = cluster.natsConnection;
  return new Promise((resolve, reject) => {
    const inbox = nc.subscribe(`_INBOX.startup.${Math.random().toString(36).slice(2)}`, {
      callback: (_err, m) => {
        const r = m.json<{ id: string; name: string; metadata?: Record<string, string> }>();
        if (r.name === name && r.metadata?.prefix === prefix && !before.has(r.id)) done();
      },
    });
    const timer = setInterval(() => nc.publish("$SRV.PING", "", { reply: inbox.getSubject() }), 5);
    const onExit = (code: number | null) => done(new Error(`${name} exited (${code}) before it was ready`));
    child.once("exit", onExit);
    function done(err?: Error): void {
      clearInterval(timer);
      inbox.unsubscribe();
      child.off("exit", onExit);
      if (err) reject(err);
      else resolve();
    }
  });
}

/** Resolves when GET <url>/readyz answers 200 (asked every 5 ms). */
async function httpReady(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}) before it was ready`);
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Starts one service process, waits until it is ready, reads its CPU and RSS, stops it. */
async function measure(cluster: Cluster, prefix: string, kind: Kind, runtime: ServiceRuntime, cpuProfDir: string | null): Promise<Start> {
  const gatewayEnv: Record<string, string> = {};
  let url = "";
  if (kind === "gateway") {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    Object.assign(gatewayEnv, { AGENTMESH_GATEWAY_HOST: "127.0.0.1", AGENTMESH_GATEWAY_PORT: String(port), AGENTMESH_API_KEYS: apiKeyEntry("startup", generateApiKey()) });
  }
  const argv = kind === "coordinator" || kind === "gateway" ? serviceArgv(kind, [], runtime) : serviceArgv("agent", [kind], runtime);
  if (cpuProfDir) argv.unshift("--cpu-prof", "--cpu-prof-dir", cpuProfDir);
  const before = await instanceIds(cluster, prefix);
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const t0 = performance.now();
  const child = spawn(process.execPath, argv, { cwd: root, env: cluster.env(gatewayEnv, kind), stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr?.on("data", (b: Buffer) => { err += b.toString(); });
  const exited = new Promise((r) => child.once("exit", r));
  try {
    if (kind === "gateway") await httpReady(url, child);
    else await pingedReady(cluster, kind, prefix, before, child);
    const wallMs = performance.now() - t0;
    const endUs = Number(process.hrtime.bigint() / 1000n);
    const pid = child.pid ?? 0;
    return { pid, window: { startUs, endUs }, wallMs, cpuMs: cpuMs(pid) ?? NaN, rssMiB: (rssKiB(pid) ?? NaN) / 1024 };
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${err.slice(-2000)}`);
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

async function main(): Promise<void> {
  const opts = parseOptions();
  if (opts.runtimes.includes("compiled") && !existsSync(join(root, "services/agent/dist/main.js"))) {
    throw new Error("no compiled services: run pnpm build first");
  }
  if (opts.cpuProfDir) mkdirSync(opts.cpuProfDir, { recursive: true });
  const infra = await resolveInfra();
  const prefix = uniquePrefix("startup");
  const cluster = new Cluster({ natsUrl: infra.natsUrl, redisUrl: infra.redisUrl, prefix });
  try {
    await cluster.open();
    // a coordinator provisions the streams and consumers an agent and the gateway start on
    cluster.start("coordinator");
    await cluster.waitReady({ coordinator: 1 });
    const results = new Map<string, Start[]>();
    const profiled: { processes: Record<string, number>; windows: Array<{ label: string; startUs: number; endUs: number }> } = { processes: {}, windows: [] };
    // interleaved: every kind and runtime once per round, so machine load spreads over all of them
    for (let round = 0; round < opts.rounds; round++) {
      for (const kind of opts.kinds) {
        for (const runtime of opts.runtimes) {
          const s = await measure(cluster, prefix, kind, runtime, opts.cpuProfDir);
          const key = `${kind} ${runtime}`;
          profiled.processes[`${key} ${round + 1}`] = s.pid;
          profiled.windows.push({ label: `${key} ${round + 1}`, ...s.window });
          results.set(key, [...(results.get(key) ?? []), s]);
          log(`round ${round + 1}: ${key.padEnd(24)} wall ${s.wallMs.toFixed(0).padStart(5)} ms  cpu ${s.cpuMs.toFixed(0).padStart(5)} ms  rss ${s.rssMiB.toFixed(0).padStart(4)} MiB`);
        }
      }
    }
    if (opts.cpuProfDir) writeFileSync(join(opts.cpuProfDir, "bench-window.json"), `${JSON.stringify(profiled, null, 2)}\n`);
    const [l1, l5] = loadavg();
    log(`\nmedians of ${opts.rounds} starts (${cpus().length} cores, load ${l1?.toFixed(2)} / ${l5?.toFixed(2)} at the end)`);
    log("| service | runtime | wall ms | CPU ms | RSS MiB |");
    log("| --- | --- | ---: | ---: | ---: |");
    for (const [key, starts] of results) {
      const [kind, runtime] = key.split(" ");
      const med = (f: (s: Start) => number) => summarize(starts.map(f)).p50.toFixed(0);
      log(`| ${kind} | ${runtime} | ${med((s) => s.wallMs)} | ${med((s) => s.cpuMs)} | ${med((s) => s.rssMiB)} |`);
    }
  } finally {
    await cluster.close();
    await infra.stop();
  }
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench:startup: ${(err as Error).message}\n`);
  process.exitCode = 1;
}
