// The floor, as `pnpm bench` runs it: provisions its two streams and three consumers under the
// run's prefix, starts one worker process and one driver process per coordinator, and runs levels
// of sessions on them, timing every step. See bench/README.md, "The floor".
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AckPolicy, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { summarize, type Summary } from "../stats.js";
import { busyPercent, cpuMs, machineCpu } from "../sysinfo.js";
import {
  FLOOR_ENV,
  floorConnect,
  floorNames,
  type FloorDone,
  type FloorEnv,
  type FloorNames,
  type FloorReport,
  type FloorRun,
} from "./proto.js";

const NS_PER_MS = 1_000_000;

/** One floor level as measured. */
export interface FloorLevel {
  readonly concurrency: number;
  readonly sessions: number;
  readonly sessionsOk: number;
  /** Durable steps per session (the workload's agent steps). */
  readonly stepsPerSession: number;
  /** Steps completed (of every session, failed ones' earlier steps included). */
  readonly steps: number;
  /** First run sent → last driver done, ms. */
  readonly elapsedMs: number;
  readonly stepsPerSecond: number;
  /** Redis read → ack, per step. */
  readonly stepMs: Summary;
  /** CPU ms per process (floor processes, servers, the bench) over the level. */
  readonly cpuMsByProcess: Record<string, number>;
  /** Σ cpuMsByProcess ÷ steps. */
  readonly cpuMsPerStep: number;
  readonly machineBusyPct: number;
  /** Context switches machine-wide during the level ÷ steps. */
  readonly ctxSwitchesPerStep: number;
  /** Results that found no waiting step: duplicates or redeliveries (expected 0). */
  readonly strays: number;
  readonly problems: readonly string[];
}

interface Child {
  readonly label: string;
  readonly child: ChildProcess;
  output: string;
}

/** The floor's processes and streams; `open()` before `run()`, `close()` at the end. */
export class Floor {
  private readonly names: FloorNames;
  private readonly children: Child[] = [];
  private readonly pending = new Map<number, { left: number; done: FloorDone[]; resolve(d: FloorDone[]): void }>();
  private runs = 0;

  /**
   * `drivers` driver processes (as many as the runtime's coordinators); `others` are the
   * processes whose CPU counts with the floor's (nats-server, redis-server, the bench).
   */
  constructor(
    private readonly env: FloorEnv,
    private readonly drivers: number,
    private readonly others: ReadonlyMap<string, number>,
  ) {
    this.names = floorNames(env.prefix);
  }

  async open(): Promise<void> {
    const nc = await floorConnect(this.env, "floor-setup");
    try {
      const jsm = await jetstreamManager(nc);
      const stream = {
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        duplicate_window: 120_000 * NS_PER_MS,
        max_msgs: 1_000_000,
      };
      await jsm.streams.add({ ...stream, name: this.names.tasksStream, subjects: [this.names.tasksSubject] });
      await jsm.streams.add({ ...stream, name: this.names.resultsStream, subjects: [this.names.resultsAll] });
      const consumer = { ack_policy: AckPolicy.Explicit, ack_wait: 30_000 * NS_PER_MS, max_ack_pending: 20_000 };
      await jsm.consumers.add(this.names.tasksStream, { ...consumer, durable_name: this.names.workerConsumer });
      for (let d = 1; d <= this.drivers; d++) {
        await jsm.consumers.add(this.names.resultsStream, {
          ...consumer,
          durable_name: this.names.driverConsumer(d),
          filter_subject: this.names.resultsOf(d),
        });
      }
    } finally {
      await nc.close();
    }
    const ready = [this.start("floor worker", "worker.ts", {})];
    for (let d = 1; d <= this.drivers; d++)
      ready.push(this.start(`floor driver#${d}`, "driver.ts", { [FLOOR_ENV.driver]: String(d) }));
    await Promise.all(ready);
  }

  private start(label: string, file: string, extra: Record<string, string>): Promise<void> {
    const child = fork(join(import.meta.dirname, file), [], {
      cwd: join(import.meta.dirname, "../.."),
      execArgv: ["--import", "tsx"],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        [FLOOR_ENV.nats]: this.env.natsUrl,
        [FLOOR_ENV.redis]: this.env.redisUrl,
        [FLOOR_ENV.prefix]: this.env.prefix,
        ...(this.env.seedFile ? { [FLOOR_ENV.seed]: this.env.seedFile } : {}),
        ...extra,
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const c: Child = { label, child, output: "" };
    child.stdout?.on("data", (b: Buffer) => {
      c.output += b.toString();
    });
    child.stderr?.on("data", (b: Buffer) => {
      c.output += b.toString();
    });
    this.children.push(c);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${label} did not start within 60 s:\n${c.output.slice(-2000)}`)),
        60_000,
      );
      child.once("exit", (code, signal) =>
        reject(new Error(`${label} exited (${code ?? signal}) during start-up:\n${c.output.slice(-2000)}`)),
      );
      child.on("message", (m: FloorReport) => {
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else this.finished(m);
      });
    });
  }

  private finished(d: FloorDone): void {
    const p = this.pending.get(d.runId);
    if (!p) return;
    p.done.push(d);
    if (--p.left === 0) {
      this.pending.delete(d.runId);
      p.resolve(p.done);
    }
  }

  /** Process label → pid of the floor's own processes. */
  pids(): Map<string, number> {
    return new Map(this.children.flatMap((c) => (c.child.pid === undefined ? [] : [[c.label, c.child.pid] as const])));
  }

  /** Floor processes that have exited, with their last output. */
  dead(): string[] {
    return this.children
      .filter((c) => c.child.exitCode !== null || c.child.signalCode !== null)
      .map((c) => `${c.label} (exit ${c.child.exitCode ?? c.child.signalCode})\n${c.output.slice(-1500)}`);
  }

  /**
   * `sessions` sessions of `steps` steps with at most `concurrency` in flight: at c=1 on the first
   * driver, above that split evenly over the drivers (as sessions spread over coordinators).
   */
  async run(concurrency: number, sessions: number, steps: number, stem: string): Promise<FloorLevel> {
    const lanes = concurrency === 1 ? 1 : Math.min(this.drivers, concurrency, sessions);
    const runId = ++this.runs;
    const procs = new Map([...this.pids(), ...this.others]);
    const before = new Map([...procs].map(([k, pid]) => [k, cpuMs(pid)]));
    const machineBefore = machineCpu();
    const t0 = performance.now();
    const finished = new Promise<FloorDone[]>((resolve) => this.pending.set(runId, { left: lanes, done: [], resolve }));
    const drivers = this.children.filter((c) => c.label.startsWith("floor driver"));
    for (let i = 0; i < lanes; i++) {
      const share = (total: number) => Math.floor(total / lanes) + (i < total % lanes ? 1 : 0);
      const msg: FloorRun = {
        type: "run",
        runId,
        stem: `${stem}d${i + 1}`,
        sessions: share(sessions),
        concurrency: Math.max(1, share(concurrency)),
        steps,
      };
      drivers[i]!.child.send(msg);
    }
    const watch = { stop: false };
    const done = await Promise.race([finished, this.watchDeath(watch)]).finally(() => (watch.stop = true));
    const elapsedMs = performance.now() - t0;
    const machineAfter = machineCpu();
    const machineBusyPct = busyPercent(machineBefore, machineAfter);
    const cpuMsByProcess: Record<string, number> = {};
    for (const [k, pid] of procs) {
      const a = before.get(k);
      const b = cpuMs(pid);
      if (a != null && b != null) cpuMsByProcess[k] = b - a;
    }
    const stepMs = done.flatMap((d) => d.stepMs);
    const cpu = Object.values(cpuMsByProcess).reduce((a, b) => a + b, 0);
    return {
      concurrency,
      sessions,
      sessionsOk: done.reduce((a, d) => a + d.sessionsOk, 0),
      stepsPerSession: steps,
      steps: stepMs.length,
      elapsedMs,
      stepsPerSecond: stepMs.length / (elapsedMs / 1000),
      stepMs: summarize(stepMs),
      cpuMsByProcess,
      cpuMsPerStep: stepMs.length === 0 ? Number.NaN : cpu / stepMs.length,
      machineBusyPct,
      ctxSwitchesPerStep: stepMs.length === 0 ? Number.NaN : (machineAfter.ctxt - machineBefore.ctxt) / stepMs.length,
      strays: done.reduce((a, d) => a + d.strays, 0),
      problems: done.flatMap((d) => d.problems),
    };
  }

  /** Rejects when a floor process exits while a run waits for it. */
  private async watchDeath(watch: { stop: boolean }): Promise<never> {
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      if (watch.stop) return new Promise<never>(() => undefined);
      const dead = this.dead();
      if (dead.length) throw new Error(`a floor process exited during a run:\n${dead.join("\n")}`);
    }
  }

  /** Stops the processes (they exit when their IPC channel closes) and removes the streams and keys. */
  async close(): Promise<void> {
    await Promise.all(
      this.children.map(async (c) => {
        if (c.child.exitCode !== null || c.child.signalCode !== null) return;
        const exited = new Promise((r) => c.child.once("exit", r));
        c.child.disconnect();
        const timer = setTimeout(() => c.child.kill("SIGKILL"), 3000);
        await exited;
        clearTimeout(timer);
      }),
    );
    const nc = await floorConnect(this.env, "floor-cleanup");
    const redis = new Redis(this.env.redisUrl, { maxRetriesPerRequest: 3 });
    try {
      const jsm = await jetstreamManager(nc);
      for (const s of [this.names.tasksStream, this.names.resultsStream])
        await jsm.streams.delete(s).catch(() => undefined);
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${this.names.keyPrefix}*`, "COUNT", 1000);
        if (keys.length) await redis.unlink(...keys);
        cursor = next;
      } while (cursor !== "0");
    } finally {
      await nc.close();
      redis.disconnect();
    }
  }
}
