import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort, waitForLine } from "./infra.js";

/** Polls an asynchronous condition every 50 ms until it holds; throws naming `what` after `ms`. */
async function waitUntil(what: string, ok: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One redis-server of a topology: its port, its process while it runs, its data directory. */
export interface RedisNode {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  process: ChildProcess | null;
}

/** Options of `startRedisTopology`. */
export interface RedisTopologyOptions {
  /** Replicas of the primary (default 1). */
  readonly replicas?: number;
  /** Sentinels watching it (default 3; 0 = none, promote by hand with `promote`). */
  readonly sentinels?: number;
  /** The primary's name in the sentinels' configuration (default `agentmesh`). */
  readonly masterName?: string;
  /** How long the sentinels wait before they call the primary down (default 1000 ms). */
  readonly downAfterMs?: number;
  /** The sentinels' own password (`requirepass`, which they also use among themselves); default none. */
  readonly sentinelPassword?: string;
}

/**
 * A Redis primary with replicas and sentinels, each a redis-server of its own on a free loopback
 * port (AOF, appendfsync always, like production), for failover tests and the chaos run. Nodes can
 * be killed, paused (SIGSTOP) and resumed, and started again on their port and data.
 */
export interface RedisTopology {
  readonly masterName: string;
  /** The data nodes: `nodes[0]` started as the primary, the rest as its replicas. */
  readonly nodes: readonly RedisNode[];
  readonly sentinelPorts: readonly number[];
  /** `REDIS_SENTINELS` for these sentinels. */
  readonly sentinelsEnv: string;
  /** `redis://127.0.0.1:<port>` of a node. */
  url(node: RedisNode): string;
  /** A plain client of one node (closed by `stop`). */
  client(node: RedisNode): Redis;
  /** A client of one sentinel, with the sentinels' password or the login given (closed by `stop`). */
  sentinelClient(port: number, login?: { username: string; password: string }): Redis;
  /** The node the sentinels name as primary now (they are asked; without sentinels, by `INFO replication`). */
  primary(): Promise<RedisNode>;
  /** Sends a signal to a node's process; SIGKILL waits for it to exit. */
  signal(node: RedisNode, sig: "SIGKILL" | "SIGSTOP" | "SIGCONT"): Promise<void>;
  /** Starts a killed node again on its port and data (`replicaOf`: as a replica of that node). */
  restart(node: RedisNode, replicaOf?: RedisNode): Promise<void>;
  /** Makes a node primary by hand (`REPLICAOF NO ONE`), for tests without sentinels. */
  promote(node: RedisNode): Promise<void>;
  /**
   * What the topology went through, for a failing test's message: every sentinel's failover events
   * (`+sdown`, `+odown`, `+switch-master`, …) and every node's replication lines, oldest first.
   */
  history(): string;
  /** Waits until the sentinels name another primary than `old`; returns it and how long it took. */
  awaitFailover(old: RedisNode, timeoutMs?: number): Promise<{ primary: RedisNode; ms: number }>;
  /** Waits until `replica` is connected to the current primary and has caught up with it. */
  awaitInSync(replica: RedisNode, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const DURABLE = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""];

/** Keeps the newest LOG_LINES lines a process of one topology prints, each prefixed with its name. */
const LOG_LINES = 4_000;
function capture(p: ChildProcess, name: string, into: string[]): void {
  const on = (b: Buffer) => {
    for (const line of b.toString().split("\n")) if (line.trim()) into.push(`${name}: ${line}`);
    if (into.length > LOG_LINES) into.splice(0, into.length - LOG_LINES);
  };
  p.stdout?.on("data", on);
  p.stderr?.on("data", on);
}

async function spawnNode(node: RedisNode, replicaOf: number | null, log: string[]): Promise<void> {
  const args = ["--port", String(node.port), "--bind", "127.0.0.1", "--dir", node.dir, ...DURABLE];
  if (replicaOf !== null) args.push("--replicaof", "127.0.0.1", String(replicaOf));
  const p = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  capture(p, node.name, log);
  await waitForLine(p, /Ready to accept connections/);
  node.process = p;
}

async function spawnSentinel(dir: string, port: number, conf: string, log: string[]): Promise<ChildProcess> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "sentinel.conf");
  writeFileSync(file, conf);
  const p = spawn("redis-server", [file, "--sentinel"], { stdio: ["ignore", "pipe", "pipe"] });
  capture(p, `sentinel:${port}`, log);
  await waitForLine(p, /Sentinel ID is|monitor master/);
  return p;
}

/** Starts the topology and waits until every replica is in sync and every sentinel knows them all. */
export async function startRedisTopology(opts: RedisTopologyOptions = {}): Promise<RedisTopology> {
  const masterName = opts.masterName ?? "agentmesh";
  const root = mkdtempSync(join(tmpdir(), "agentmesh-redis-topology-"));
  const nodes: RedisNode[] = [];
  const sentinels: ChildProcess[] = [];
  const clients: Redis[] = [];
  const sentinelPorts: number[] = [];
  const log: string[] = [];
  const byPort = (port: number) => nodes.find((n) => n.port === port);

  const client = (node: RedisNode) => {
    const c = new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 1, lazyConnect: false });
    c.on("error", () => {});
    clients.push(c);
    return c;
  };
  const sentinelClient = (port: number, login?: { username: string; password: string }) => {
    const c = new Redis(port, "127.0.0.1", {
      maxRetriesPerRequest: 1,
      ...(login ?? (opts.sentinelPassword === undefined ? {} : { password: opts.sentinelPassword })),
    });
    c.on("error", () => {});
    clients.push(c);
    return c;
  };

  const topology: RedisTopology = {
    masterName,
    nodes,
    sentinelPorts,
    get sentinelsEnv() {
      return sentinelPorts.map((p) => `127.0.0.1:${p}`).join(",");
    },
    url: (node) => `redis://127.0.0.1:${node.port}`,
    history: () =>
      log
        .filter((l) =>
          /[+-](sdown|odown|switch-master|failover|try-failover|elected-leader|selected-slave|promoted-slave|slave-reconf)|MASTER|REPLICA|role|sync|Connecting to/i.test(
            l,
          ),
        )
        .slice(-300)
        .join("\n"),
    client,
    sentinelClient,
    async primary() {
      if (sentinelPorts.length > 0) {
        for (const port of sentinelPorts) {
          const s = sentinelClient(port);
          const addr = (await s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName).catch(() => null)) as
            string[] | null;
          s.disconnect();
          const node = addr ? byPort(Number(addr[1])) : undefined;
          if (node) return node;
        }
        throw new Error("no sentinel names a primary");
      }
      for (const node of nodes) {
        if (!node.process) continue;
        const c = client(node);
        const info = await c.info("replication").catch(() => "");
        c.disconnect();
        if (/^role:master/m.test(info)) return node;
      }
      throw new Error("no node is primary");
    },
    async signal(node, sig) {
      const p = node.process;
      if (!p) throw new Error(`${node.name} is not running`);
      if (sig !== "SIGKILL") {
        p.kill(sig);
        return;
      }
      await new Promise((resolve) => {
        if (p.exitCode !== null || p.signalCode !== null) return resolve(null);
        p.once("exit", resolve);
        p.kill("SIGKILL");
      });
      node.process = null;
    },
    async restart(node, replicaOf) {
      if (node.process) throw new Error(`${node.name} is still running`);
      await spawnNode(node, replicaOf?.port ?? null, log);
    },
    async promote(node) {
      const c = client(node);
      await c.call("REPLICAOF", "NO", "ONE");
      c.disconnect();
    },
    async awaitFailover(old, timeoutMs = 30_000) {
      const t0 = Date.now();
      let now: RedisNode = old;
      await waitUntil(
        `the sentinels to promote a replica of ${old.name}`,
        async () => {
          now = await topology.primary().catch(() => old);
          if (now === old) return false;
          const c = client(now);
          const info = await c.info("replication").catch(() => "");
          c.disconnect();
          return /^role:master/m.test(info);
        },
        timeoutMs,
      );
      return { primary: now, ms: Date.now() - t0 };
    },
    async awaitInSync(replica, timeoutMs = 30_000) {
      await waitUntil(
        `${replica.name} to catch up with the primary`,
        async () => {
          const primary = await topology.primary();
          if (primary === replica) return false;
          const p = client(primary);
          const r = client(replica);
          const [pi, ri] = await Promise.all([p.info("replication"), r.info("replication")]).catch(() => ["", ""]);
          p.disconnect();
          r.disconnect();
          const offset = /^master_repl_offset:(\d+)/m.exec(pi)?.[1];
          const linked =
            new RegExp(`^master_port:${primary.port}\\s*$`, "m").test(ri) && /^master_link_status:up/m.test(ri);
          return linked && offset !== undefined && new RegExp(`^slave_repl_offset:${offset}\\s*$`, "m").test(ri);
        },
        timeoutMs,
      );
    },
    async stop() {
      for (const c of clients) c.disconnect();
      for (const s of sentinels) s.kill("SIGKILL");
      for (const n of nodes) {
        if (n.process) {
          n.process.kill("SIGCONT");
          n.process.kill("SIGKILL");
        }
      }
      rmSync(root, { recursive: true, force: true });
    },
  };

  try {
    for (let i = 0; i <= (opts.replicas ?? 1); i++) {
      const name = i === 0 ? "primary" : `replica${i}`;
      const dir = join(root, name);
      mkdirSync(dir);
      const node: RedisNode = { name, port: await freePort(), dir, process: null };
      nodes.push(node);
      await spawnNode(node, i === 0 ? null : (nodes[0]?.port ?? null), log);
    }
    for (const n of nodes.slice(1)) await topology.awaitInSync(n);
    const count = opts.sentinels ?? 3;
    const quorum = Math.max(1, Math.floor(count / 2) + 1);
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      sentinelPorts.push(port);
      const conf = [
        `port ${port}`,
        "bind 127.0.0.1",
        `dir ${join(root, `sentinel${i}`)}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${nodes[0]?.port} ${quorum}`,
        `sentinel down-after-milliseconds ${masterName} ${opts.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${masterName} 5000`,
        `sentinel parallel-syncs ${masterName} 1`,
        ...(opts.sentinelPassword === undefined
          ? []
          : [`requirepass ${opts.sentinelPassword}`, `sentinel sentinel-pass ${opts.sentinelPassword}`]),
        "",
      ].join("\n");
      sentinels.push(await spawnSentinel(join(root, `sentinel${i}`), port, conf, log));
    }
    // every sentinel must know the replicas and the other sentinels before a failover can be voted
    for (const port of sentinelPorts) {
      const s = sentinelClient(port);
      await waitUntil(`sentinel ${port} to discover the topology`, async () => {
        const replicas = (await s.call("SENTINEL", "REPLICAS", masterName).catch(() => [])) as unknown[];
        const others = (await s.call("SENTINEL", "SENTINELS", masterName).catch(() => [])) as unknown[];
        return replicas.length === nodes.length - 1 && others.length === sentinelPorts.length - 1;
      });
      s.disconnect();
    }
  } catch (err) {
    await topology.stop();
    throw err;
  }
  return topology;
}
