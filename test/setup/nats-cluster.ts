import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROLE_NAMES, naming } from "@agentmesh/contracts";
import { natsRouteUrl, natsServerConfig, newUserKey, SERVICE_USERS } from "@agentmesh/messaging";
import { freePort, NATS_SERVER_ENV, natsServerBinary, natsServerVersion, waitForLine } from "./infra.js";
import { startTcpProxy, type CutMode, type TcpProxy } from "./tcp-proxy.js";

/** One node of a test cluster, as the test sees it. */
export interface ClusterNode {
  readonly index: number;
  /** The server name (`n0`, `n1`, …): JetStream's peer name. */
  readonly name: string;
  /** The URL clients reach this node at (its proxy when the cluster is proxied). */
  readonly url: string;
  /** The port the server itself listens on for clients. */
  readonly serverPort: number;
  readonly clusterPort: number;
  /** Monitoring port (`/healthz`, `/jsz`). */
  readonly httpPort: number;
  readonly dir: string;
  /** The running process, or null while the node is down. */
  readonly proc: ChildProcess | null;
  /** True while the node is stopped with SIGSTOP. */
  readonly paused: boolean;
  /** The last of the node's log output (all its runs). */
  readonly output: string;
}

export interface NatsClusterOptions {
  /** Nodes (default 3). */
  readonly size?: number;
  /**
   * Runs every node with the access-control config `natsServerConfig` generates for this prefix
   * (the same accounts and users on every node, one NKey per service and an `admin` user for the
   * test itself); unset: no access control.
   */
  readonly accessPrefix?: string;
  /** Roles that get a user (default every role). */
  readonly roles?: readonly string[];
  /**
   * Puts a cuttable relay in front of every node's client port and of every route between two
   * nodes, so `partition(i)` cuts one node off (clients and routes alike). Nodes then tell
   * neither clients nor each other addresses around the relays.
   */
  readonly proxied?: boolean;
  /** Route credentials (the generated production config has them); default a random password. */
  readonly routePassword?: string;
}

/** A cluster of nats-server processes on loopback, for tests and the chaos run. */
export interface NatsCluster {
  /** Every node's client URL, comma-separated (NATS_URL). */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** Seed file of a user of the generated config (a role, a service user, or `admin`); throws without access control. */
  seedFile(user: string): string;
  /** SIGKILLs (or `signal`s) node `i` and waits for it to exit. */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts node `i` again on its ports and store; resolves when it is ready for clients. */
  start(i: number): Promise<void>;
  /** SIGSTOP / SIGCONT. */
  pause(i: number): void;
  resume(i: number): void;
  /** Cuts node `i` off from clients and the other nodes (needs `proxied`). */
  partition(i: number, mode?: CutMode): void;
  heal(i: number): void;
  /** Waits until every running node routes to the other running ones and knows the JetStream meta leader. */
  waitHealthy(ms?: number): Promise<void>;
  /** Node `i`'s `/jsz` (JetStream) report. */
  jsz(i: number, query?: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

interface NodeState {
  index: number;
  name: string;
  serverPort: number;
  clusterPort: number;
  httpPort: number;
  dir: string;
  conf: string;
  proc: ChildProcess | null;
  paused: boolean;
  clientProxy: TcpProxy | null;
  output: string;
}

async function freePorts(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const p = await freePort();
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * Starts `size` clustered nats-server nodes on free loopback ports (JetStream, file store, one
 * temp dir each) and waits until the cluster has a JetStream leader. The helper other tests and
 * the chaos run share.
 */
export async function startNatsCluster(o: NatsClusterOptions = {}): Promise<NatsCluster> {
  const bin = natsServerBinary();
  if (!bin) throw new Error("a NATS cluster needs the nats-server binary (apt-get install nats-server)");
  const [major = 0, minor = 0] = natsServerVersion(bin) ?? [];
  if (major < 2 || (major === 2 && minor < 10)) {
    // 2.9 leaves replicated streams stuck (and can drop acknowledged messages) after a paused or
    // partitioned leader, so a cluster test on it fails for the server's reasons, not ours
    throw new Error(
      `a NATS cluster needs nats-server 2.10 or newer, and ${bin} is ${major}.${minor}: set NATS_SERVER_BIN=$(node scripts/ensure-deps.mjs test-nats), which fetches one (docs/preflight.md); npm test does it itself`,
    );
  }
  const size = o.size ?? 3;
  const root = mkdtempSync(join(tmpdir(), "agentmesh-natscluster-"));
  const ports = await freePorts(size * 3);
  const routeAuth = { user: "route", password: o.routePassword ?? `r${Math.random().toString(36).slice(2)}` };
  const nodes: NodeState[] = Array.from({ length: size }, (_, i) => ({
    index: i,
    name: `n${i}`,
    serverPort: ports[i * 3]!,
    clusterPort: ports[i * 3 + 1]!,
    httpPort: ports[i * 3 + 2]!,
    dir: join(root, `n${i}`),
    conf: join(root, `n${i}.conf`),
    proc: null,
    paused: false,
    clientProxy: null,
    output: "",
  }));
  // routeProxies[a][b]: the relay node a dials node b through (null when not proxied)
  const routeProxies: Array<Array<TcpProxy | null>> = nodes.map(() => nodes.map(() => null));
  if (o.proxied) {
    for (const a of nodes) {
      a.clientProxy = await startTcpProxy(a.serverPort);
      for (const b of nodes) if (a !== b) routeProxies[a.index]![b.index] = await startTcpProxy(b.clusterPort);
    }
  }
  const keys: Record<string, { seed: string; publicKey: string }> = {};
  if (o.accessPrefix) {
    for (const user of [...(o.roles ?? ROLE_NAMES), ...SERVICE_USERS, "admin"]) {
      const k = newUserKey();
      keys[user] = k;
      const file = join(root, `${user}.nk`);
      writeFileSync(file, `${k.seed}\n`, { mode: 0o600 });
      chmodSync(file, 0o600);
    }
  }
  for (const n of nodes) {
    mkdirSync(n.dir, { recursive: true });
    const routes = nodes
      .filter((b) => b !== n)
      .map((b) => natsRouteUrl(`127.0.0.1:${routeProxies[n.index]![b.index]?.port ?? b.clusterPort}`, routeAuth));
    const cluster = {
      name: "agentmesh-test",
      listen: `127.0.0.1:${n.clusterPort}`,
      routes,
      authorization: routeAuth,
      // behind relays, nothing may learn an address around them: implicit routes to an
      // unreachable address fail, and clients keep to the URLs they were given
      ...(o.proxied ? { advertise: "127.0.0.1:1", noAdvertise: true } : {}),
    };
    const listen = `127.0.0.1:${n.serverPort}`;
    const storeDir = join(n.dir, "js");
    const conf = o.accessPrefix
      ? JSON.parse(
          natsServerConfig({
            naming: naming(o.accessPrefix),
            roles: o.roles ?? ROLE_NAMES,
            keys: Object.fromEntries(Object.entries(keys).map(([u, k]) => [u, k.publicKey])),
            admin: keys.admin?.publicKey,
            listen,
            storeDir,
            httpPort: n.httpPort,
            serverName: n.name,
            cluster,
          }),
        )
      : {
          server_name: n.name,
          listen,
          http: `127.0.0.1:${n.httpPort}`,
          jetstream: { store_dir: storeDir },
          cluster: {
            name: cluster.name,
            listen: cluster.listen,
            routes: cluster.routes,
            authorization: routeAuth,
            ...(o.proxied ? { advertise: "127.0.0.1:1", no_advertise: true } : {}),
          },
        };
    // the monitoring port listens on loopback only
    delete conf.http_port;
    conf.http = `127.0.0.1:${n.httpPort}`;
    writeFileSync(n.conf, `${JSON.stringify(conf, null, 2)}\n`);
  }

  const launch = async (n: NodeState, waitReady: boolean) => {
    const proc = spawn(bin, ["-c", n.conf], {
      env: { ...process.env, ...NATS_SERVER_ENV },
      stdio: ["ignore", "pipe", "pipe"],
    });
    n.proc = proc;
    n.paused = false;
    proc.once("exit", () => {
      if (n.proc === proc) n.proc = null;
    });
    // the last lines of output are kept for failure messages (and the pipes drained: a full pipe blocks the server)
    const keep = (b: Buffer) => {
      n.output = (n.output + b.toString()).slice(-20_000);
    };
    proc.stdout?.on("data", keep);
    proc.stderr?.on("data", keep);
    if (waitReady) await waitForLine(proc, /Server is ready/, 30_000);
  };
  const nodeUrl = (n: NodeState) => `nats://127.0.0.1:${n.clientProxy?.port ?? n.serverPort}`;
  const get = (i: number) => {
    const n = nodes[i];
    if (!n) throw new Error(`no node ${i}`);
    return n;
  };
  /**
   * Whether a node is back in the cluster: it routes to every other running node and knows the
   * JetStream meta leader. (Its `/healthz` is no measure on 2.9: a restarted node reports idle
   * consumers "not current" until they next see traffic.)
   */
  const joined = async (n: NodeState, others: number): Promise<boolean> => {
    try {
      const get = async (path: string) =>
        (await (
          await fetch(`http://127.0.0.1:${n.httpPort}${path}`, { signal: AbortSignal.timeout(1000) })
        ).json()) as Record<string, unknown>;
      const routes = Number((await get("/routez")).num_routes ?? 0);
      const meta = (await get("/jsz")).meta_cluster as { leader?: string } | undefined;
      return routes >= others && Boolean(meta?.leader);
    } catch {
      return false;
    }
  };
  const cluster: NatsCluster = {
    url: nodes.map(nodeUrl).join(","),
    get nodes() {
      return nodes.map((n) => ({
        index: n.index,
        name: n.name,
        url: nodeUrl(n),
        serverPort: n.serverPort,
        clusterPort: n.clusterPort,
        httpPort: n.httpPort,
        dir: n.dir,
        proc: n.proc,
        paused: n.paused,
        output: n.output,
      }));
    },
    seedFile(user) {
      if (!keys[user]) throw new Error(`no NATS user ${user} (access control ${o.accessPrefix ? "on" : "off"})`);
      return join(root, `${user}.nk`);
    },
    async kill(i, signal = "SIGKILL") {
      const n = get(i);
      const proc = n.proc;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      if (n.paused) proc.kill("SIGCONT");
      proc.kill(signal);
      await exited;
      n.proc = null;
      n.paused = false;
    },
    async start(i) {
      const n = get(i);
      if (n.proc) throw new Error(`node ${n.name} is running`);
      await launch(n, true);
    },
    pause(i) {
      const n = get(i);
      n.proc?.kill("SIGSTOP");
      n.paused = true;
    },
    resume(i) {
      const n = get(i);
      n.proc?.kill("SIGCONT");
      n.paused = false;
    },
    partition(i, mode = "blackhole") {
      const n = get(i);
      if (!o.proxied) throw new Error("partition needs a proxied cluster");
      n.clientProxy?.cut(mode);
      for (const b of nodes) {
        routeProxies[i]![b.index]?.cut(mode);
        routeProxies[b.index]![i]?.cut(mode);
      }
    },
    heal(i) {
      const n = get(i);
      n.clientProxy?.heal();
      for (const b of nodes) {
        routeProxies[i]![b.index]?.heal();
        routeProxies[b.index]![i]?.heal();
      }
    },
    async waitHealthy(ms = 60_000) {
      const end = Date.now() + ms;
      for (;;) {
        const live = nodes.filter((n) => n.proc && !n.paused);
        const ok = await Promise.all(live.map((n) => joined(n, live.length - 1)));
        if (live.length > 0 && ok.every(Boolean)) return;
        if (Date.now() > end) {
          const bad = live.filter((_, j) => !ok[j]);
          throw new Error(
            `NATS cluster not healthy within ${ms} ms: ${bad.map((n) => n.name).join(", ")}\n${bad.map((n) => `--- ${n.name}\n${n.output.slice(-3000)}`).join("\n")}`,
          );
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    async jsz(i, query = "") {
      const r = await fetch(`http://127.0.0.1:${get(i).httpPort}/jsz${query ? `?${query}` : ""}`);
      return (await r.json()) as Record<string, unknown>;
    },
    async stop() {
      await Promise.all(nodes.map((n) => cluster.kill(n.index, "SIGTERM").catch(() => undefined)));
      for (const n of nodes) {
        n.clientProxy?.close().catch(() => undefined);
        for (const p of routeProxies[n.index] ?? []) p?.close().catch(() => undefined);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => launch(n, true)));
    await cluster.waitHealthy(60_000);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
