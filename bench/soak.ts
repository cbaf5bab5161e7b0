// `pnpm bench:soak`: continuous critic-chain sessions at a fixed rate for a while, every service
// its own OS process (offline engine), on real NATS and Redis. Prints completed/lost sessions and
// each process's memory growth after warm-up. Exit 1 when any session is lost or failed.
//   pnpm bench:soak [--minutes 5] [--rate 2] [--warmup-s 60]
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { resolveInfra } from "../test/setup/infra.js";
import { uniquePrefix } from "../test/setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce } from "../test/e2e/harness.js";
import { EventRouter } from "./events.js";
import { natsConnect } from "./nats.js";
import { questionFor } from "./workloads.js";
import { summarize } from "./stats.js";
import { findServerPid, rssKiB } from "./sysinfo.js";

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}

const minutes = flag("minutes", 5);
const rate = flag("rate", 2);
const warmupS = flag("warmup-s", Math.min(60, minutes * 12));
const log = (s: string) => process.stdout.write(`${s}\n`);

const infra = await resolveInfra();
const cluster = new Cluster({
  natsUrl: infra.natsUrl,
  redisUrl: infra.redisUrl,
  prefix: uniquePrefix("soak"),
  logLevel: "warn",
  extraEnv: {
    LOG_LEVEL: "warn",
    AGENTMESH_TASK_ACK_WAIT_MS: "30000",
    AGENTMESH_INBOX_ACK_WAIT_MS: "30000",
    AGENTMESH_AGENT_CONCURRENCY: "16",
    AGENTMESH_COORDINATOR_CONCURRENCY: "16",
  },
});
let stopping = false;
async function shutdown(code: number): Promise<never> {
  stopping = true;
  await cluster.close().catch(() => undefined);
  await infra.stop().catch(() => undefined);
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(130));

try {
  await cluster.open();
  for (let i = 0; i < 2; i++) cluster.start("coordinator");
  for (const r of AGENT_ROLES) cluster.start(r);
  await cluster.waitReady({ coordinator: 2, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) }, 120_000);
  // the cluster runs its own access-controlled nats-server: watch it as the config's admin user
  const auth = cluster.authServer;
  const nc = await natsConnect(
    { url: cluster.natsUrl, ...(auth ? { seedFile: auth.seedFile("admin") } : {}) },
    "soak-events",
  );
  const router = new EventRouter(nc, cluster.naming);

  const pids = new Map<string, number>();
  let c = 0;
  for (const p of cluster.procs)
    if (p.child.pid) pids.set(p.name === "coordinator" ? `coordinator#${++c}` : p.name, p.child.pid);
  const nats = auth
    ? findServerPid("nats-server", join(auth.dir, "nats-server.conf"))
    : findServerPid("nats-server", Number(new URL(infra.natsUrl).port));
  const redis = findServerPid("redis-server", Number(new URL(infra.redisUrl).port));
  if (nats) pids.set("nats-server", nats);
  if (redis) pids.set("redis-server", redis);
  const sample = () => new Map([...pids].map(([k, pid]) => [k, rssKiB(pid)]));

  log(`soak: ${minutes} min at ${rate} sessions/s, warm-up ${warmupS} s, infra ${infra.source}`);
  const durationMs = minutes * 60_000;
  const started = performance.now();
  const sessions: Array<{ id: string; expected: string; t0: number; done: Promise<void>; wall: () => number | null }> =
    [];
  let warm: Map<string, number | null> | null = null;
  let submitErrors = 0;
  for (let i = 0; performance.now() - started < durationMs && !stopping; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (!warm && performance.now() - started >= warmupS * 1000) warm = sample();
    const id = `soak-${String(i).padStart(6, "0")}`;
    const { question, expected } = questionFor(i);
    const tracked = router.track(id);
    const t0 = performance.now();
    sessions.push({
      id,
      expected,
      t0,
      done: tracked.done,
      wall: () => (tracked.completeAt === null ? null : tracked.completeAt - t0),
    });
    cluster.submit(question, id).catch(() => {
      submitErrors++;
    });
    if (i % Math.max(1, Math.round(rate * 30)) === 0)
      log(`  ${Math.round((performance.now() - started) / 1000)} s: ${i + 1} submitted`);
  }
  await Promise.race([Promise.all(sessions.map((s) => s.done)), new Promise((r) => setTimeout(r, 60_000))]);
  const end = sample();

  let ok = 0;
  const problems: string[] = [];
  for (const s of sessions) {
    const loaded = await cluster.store.load(s.id);
    const answer = loaded?.state.data.workflow === "critic-chain" ? loaded.state.data.final_answer : null;
    if (!loaded || loaded.state.meta.status !== "completed") {
      problems.push(`${s.id}: ${loaded ? loaded.state.meta.status : "missing"}`);
      continue;
    }
    if (answer !== s.expected) {
      problems.push(`${s.id}: wrong answer ${answer}`);
      continue;
    }
    try {
      assertAppliedOnce(await cluster.store.transitionLog(s.id), loaded.state.meta.version);
    } catch (e) {
      problems.push(`${s.id}: ${(e as Error).message}`);
      continue;
    }
    ok++;
  }
  const walls = summarize(sessions.map((s) => s.wall()).filter((x): x is number => x !== null));
  log(
    `\nsessions: ${sessions.length} submitted, ${ok} completed and verified, ${sessions.length - ok} lost or failed, ${submitErrors} submit errors`,
  );
  log(`wall time p50 ${walls.p50.toFixed(0)} ms, p99 ${walls.p99.toFixed(0)} ms`);
  log(`\nmemory (RSS MiB)       after warm-up     at end    growth`);
  for (const [k, v] of end) {
    const w = warm?.get(k) ?? null;
    const growth = w && v ? `${(((v - w) / w) * 100).toFixed(1)} %` : "-";
    log(
      `  ${k.padEnd(20)} ${w ? (w / 1024).toFixed(1).padStart(12) : "-".padStart(12)} ${v ? (v / 1024).toFixed(1).padStart(10) : "-".padStart(10)} ${growth.padStart(9)}`,
    );
  }
  for (const p of problems.slice(0, 20)) log(`  problem: ${p}`);
  router.close();
  await nc.close();
  log(
    `\nsoak ${problems.length === 0 && submitErrors === 0 ? "passed" : "FAILED"}: ${ok}/${sessions.length} sessions, 0 lost is the target`,
  );
  await shutdown(problems.length === 0 && submitErrors === 0 ? 0 : 1);
} catch (err) {
  process.stderr.write(`soak: ${(err as Error).message}\n`);
  await shutdown(1);
}
