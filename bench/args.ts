import { BENCH_WORKFLOWS, type BenchWorkflow } from "./workloads.js";

/** Command-line options of `pnpm bench`. */
export interface BenchOptions {
  /** The workflow every session runs (default critic-chain); see bench/workloads.ts. */
  readonly workflow: BenchWorkflow;
  /** Concurrency levels to run, in order (default 1 and 64). */
  readonly levels: readonly number[];
  /** Sessions per level, keyed by concurrency. */
  readonly sessions: ReadonlyMap<number, number>;
  /** Rounds: in each, every level of the runtime and of the floor, alternating R F / F R (default 3). */
  readonly rounds: number;
  /** Untimed sessions run first, so JIT warm-up does not count. */
  readonly warmup: number;
  /** Sequential samples per round-trip measurement. */
  readonly rttSamples: number;
  /** Give a session up as lost after this long without its `complete` event. */
  readonly sessionTimeoutMs: number;
  readonly coordinators: number;
  readonly agentConcurrency: number;
  readonly coordinatorConcurrency: number;
  /** Task and inbox ack wait given to the services (the harness's 2 s is for crash tests). */
  readonly ackWaitMs: number;
  readonly out: string;
  readonly quick: boolean;
  /** When set, every service process writes a V8 CPU profile into this folder when it exits. */
  readonly cpuProfDir: string | null;
  /**
   * NATS access control (default on): the bench runs its own nats-server with the generated config
   * for its prefix and every service its own NKey; `--open` runs the old way (no auth, NATS_URL or
   * the bench's own open server).
   */
  readonly accessControl: boolean;
  /**
   * The gateway comparison: concurrency → sessions per path (direct and through the gateway);
   * empty with `--no-gateway`, and then no gateway process is started.
   */
  readonly gatewaySessions: ReadonlyMap<number, number>;
  /** Streams opened and abandoned after the gateway comparison (bench/gateway-abandon.ts); 0: none. */
  readonly gatewayAbandon: number;
  /** Tracing on: every service exports its spans (OTLP/HTTP protobuf) to a receiver the bench starts. */
  readonly tracing: boolean;
  /** Start-up timing (bench/startup.ts): after the sessions (default), alone (`--startup-only`) or off (`--no-startup`). */
  readonly startup: "also" | "only" | "off";
  /** Starts per service kind of the start-up timing. */
  readonly startupRounds: number;
  /**
   * The many-sessions mode (`--concurrent N`): N sessions in flight at once instead of the levels,
   * the round trips and the gateway; null = the ordinary bench.
   */
  readonly concurrent: number | null;
  /** How long every offline-engine answer takes (AGENTMESH_OFFLINE_LATENCY_MS); 0 = instant agents. */
  readonly modelLatencyMs: number;
  /** --concurrent: submit requests in flight at most. */
  readonly submitWindow: number;
  /** --concurrent: the Σ VmHWM budget of services and servers, MiB. */
  readonly rssBudgetMiB: number;
  /** NODE_OPTIONS added after deploy/node-options for every service process (e.g. V8 heap flags), or null. */
  readonly serviceNodeOptions: string | null;
  /**
   * The NATS topology comparison (`--nats-cluster`): the runtime's levels on a single nats-server
   * at R1 and on a 3-node cluster at R3, both up at once, in alternating rounds, with the ratios;
   * instead of the floor, the round trips and the gateway.
   */
  readonly natsCluster: boolean;
  /**
   * The replica wait's cost (`--redis-replica`): the levels on one Redis node and on a primary with
   * a replica whose every commit waits for it, both up at once, in alternating rounds, with the
   * ratios; instead of the floor, the round trips and the gateway.
   */
  readonly redisReplica: boolean;
}

const HELP = `usage: pnpm bench [options]

  --workflow NAME         the load (bench/workloads.ts, bench/README.md): critic-chain (default);
                          supervisor (router → coder → executor, JavaScript in QuickJS);
                          blackboard (arithmetic under CONSERVATIVE, 12 steps); halo (graph and
                          rag in parallel on a handbook question); clarify (a clear handbook
                          question: orchestrator → researcher → writer, nobody asked)
  --quick                 small run (3 rounds of 5 sessions at c=1 and 64 at c=64, 200 round-trip samples)
  --rounds N              rounds; in each the runtime and the floor run every level back to back,
                          R F in odd rounds, F R in even ones; headline figures are the rounds'
                          medians                              (default 3)
  --sessions-1 N          sessions per round at concurrency 1  (default 40)
  --sessions-64 N         sessions per round at concurrency 64 (default 400)
  --levels 1,64           concurrency levels to run            (default 1,64; other levels use --sessions-<c>)
  --sessions-<c> N        sessions per round at concurrency c  (default 40 for c=1, else 400)
  --warmup N              untimed warm-up sessions             (default 10)
  --rtt N                 sequential samples per round trip    (default 2000)
  --timeout-ms MS         a session without 'complete' by then is lost (default 120000)
  --coordinators N        coordinator processes                (default 2)
  --agent-concurrency N   AGENTMESH_AGENT_CONCURRENCY          (default 32)
  --coordinator-concurrency N  AGENTMESH_COORDINATOR_CONCURRENCY (default 32)
  --ack-wait-ms MS        AGENTMESH_TASK_ACK_WAIT_MS and AGENTMESH_INBOX_ACK_WAIT_MS (default 30000)
  --open                  NATS without access control, for comparison;
                          default: access control on (see below)
  --no-gateway            skip the gateway comparison (no gateway process is started)
  --tracing               tracing on: every service exports its spans (OTLP/HTTP protobuf) to a
                          local receiver the bench starts (default off: the no-op tracer)
  --gateway-levels 1,64   concurrency levels of the gateway comparison (default 1,64)
  --gateway-abandon N     streams opened and abandoned after the comparison (a third during set-up,
                          a third after the first event, a third mid-stream), with the
                          gateway's open streams, consumers, RSS and heap before/after (default 1000; 0: none)
  --gateway-sessions-<c> N  sessions per path (direct and gateway) at concurrency c
                          (default 30 at c=1, else 4c; --quick: 10 at c=1, else 2c)
  --startup-only          only time service start-up (spawn → /readyz 200 and → first $SRV.PING,
                          CPU and RSS at ready) for a coordinator, a planner and a gateway;
                          writes startup.json beside --out
  --no-startup            skip the start-up timing a full run ends with
  --startup-rounds N      starts per service kind, interleaved  (default 3; the median is shown)
  --model-latency-ms MS   every offline answer takes MS (AGENTMESH_OFFLINE_LATENCY_MS, a timer in
                          the agent; default 0: instant agents)
  --concurrent N          the many-sessions mode: N sessions in flight at once on one coordinator
                          and one replica per role, instead of the levels, round trips and gateway;
                          defaults there: --coordinators 1, --model-latency-ms 1000,
                          --agent-concurrency 1000, --coordinator-concurrency 64, --timeout-ms 900000,
                          --warmup 4 (see bench/README.md, "Many concurrent sessions")
  --submit-window N       --concurrent: submit requests in flight at most (default 64)
  --rss-budget-mib N      --concurrent: Σ peak RSS of services and servers must stay below (default 1024)
  --service-node-options S  NODE_OPTIONS added after deploy/node-options's (e.g. --max-semi-space-size=2)
  --nats-cluster          the NATS topology comparison: the levels on one nats-server at R1 and on a
                          3-node cluster (AGENTMESH_STREAM_REPLICAS=3, NATS_URL with every node), both
                          with access control and both up at once, in alternating rounds; prints
                          each figure of both and their ratio (no floor, round trips or gateway;
                          see bench/README.md, "A NATS cluster at R3")
  --redis-replica         the replica wait's cost: the levels on one Redis node and on a primary
                          with a replica, every commit waiting for it (AGENTMESH_REDIS_WAIT_REPLICAS=1),
                          both up at once, in alternating rounds; prints each figure of both and
                          their ratio (see bench/README.md, "The replica wait")
  --out PATH              JSON report                          (default .bench/latest.json)
  --cpu-prof DIR          services write V8 CPU profiles to DIR (a preload, bench/cpu-prof.mjs);
                          summarise them with: pnpm tsx bench/profile.ts DIR; with --startup-only,
                          each process started is profiled from its first instruction (Node's --cpu-prof)

By default NATS access control is on: the bench starts its own nats-server (JetStream file store in
a temp dir) with the config generated for its prefix, gives every service process its own NKey seed
and connects itself as the config's unrestricted admin user, as the e2e harness does; NATS_URL is then
not used for the services. REDIS_URL (loopback only) selects an existing Redis, else the bench starts
redis-server (AOF, appendfsync always) on a free port. With --open, NATS_URL selects an existing NATS
as well, else the bench starts an open nats-server (JetStream file store) on a free port.

Every round also runs the floor at each level (bench/floor: a minimal durable step on the raw
NATS and Redis clients, drivers as many as --coordinators and one worker process, on the same
servers) and the report sets the runtime per transition and per agent step beside it, with
its two ratio targets (PASS/MISS).

The gateway comparison starts one gateway process (NATS user gateway, one API key) in front of the
same coordinators and agents, and runs the same sessions through POST /api/v1/query (read as SSE to
'complete') and directly over NATS, in interleaved rounds.`;

function positiveInt(flag: string, raw: string | undefined): number {
  const n = Number(raw);
  if (raw === undefined || !Number.isInteger(n) || n < 1)
    throw new Error(`${flag} needs a positive integer, got ${raw ?? "nothing"}`);
  return n;
}

/** Parses argv (without node and script); throws with a usage hint on anything unknown. */
export function parseArgs(argv: readonly string[]): BenchOptions | "help" {
  const quick = argv.includes("--quick");
  let workflow: BenchWorkflow = "critic-chain";
  let levels = [1, 64];
  const explicit = new Map<number, number>();
  let rounds = 3;
  let warmup = quick ? 3 : 10;
  let rttSamples = quick ? 200 : 2000;
  let sessionTimeoutMs = 120_000;
  let coordinators = 2;
  let agentConcurrency = 32;
  let coordinatorConcurrency = 32;
  let ackWaitMs = 30_000;
  let out = ".bench/latest.json";
  let cpuProfDir: string | null = null;
  let accessControl = true;
  let natsCluster = false;
  let redisReplica = false;
  let gateway = true;
  let tracing = false;
  let gatewayLevels = [1, 64];
  let gatewayAbandon = 1000;
  let startup: BenchOptions["startup"] = "also";
  let startupRounds = 3;
  let concurrent: number | null = null;
  let submitWindow = 64;
  let rssBudgetMiB = 1024;
  let serviceNodeOptions: string | null = null;
  const given = new Map<string, number>();
  const gatewayExplicit = new Map<number, number>();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const perLevel = /^--(gateway-)?sessions-(\d+)$/.exec(flag);
    if (perLevel) {
      (perLevel[1] ? gatewayExplicit : explicit).set(Number(perLevel[2]), positiveInt(flag, value()));
      continue;
    }
    switch (flag) {
      case "--quick":
        break;
      case "--help":
      case "-h":
        return "help";
      case "--workflow": {
        const name = value();
        const known = BENCH_WORKFLOWS.find((w) => w === name);
        if (known === undefined)
          throw new Error(`--workflow must be one of ${BENCH_WORKFLOWS.join(", ")}, got ${name}`);
        workflow = known;
        break;
      }
      case "--levels":
        levels = value()
          .split(",")
          .map((s) => positiveInt("--levels", s.trim()));
        break;
      case "--warmup":
        warmup = Number(value());
        if (!Number.isInteger(warmup) || warmup < 0) throw new Error("--warmup needs a non-negative integer");
        given.set(flag, warmup);
        break;
      case "--rounds":
        rounds = positiveInt(flag, value());
        break;
      case "--rtt":
        rttSamples = positiveInt(flag, value());
        break;
      case "--timeout-ms":
        sessionTimeoutMs = positiveInt(flag, value());
        given.set(flag, sessionTimeoutMs);
        break;
      case "--coordinators":
        coordinators = positiveInt(flag, value());
        given.set(flag, coordinators);
        break;
      case "--agent-concurrency":
        agentConcurrency = positiveInt(flag, value());
        given.set(flag, agentConcurrency);
        break;
      case "--coordinator-concurrency":
        coordinatorConcurrency = positiveInt(flag, value());
        given.set(flag, coordinatorConcurrency);
        break;
      case "--ack-wait-ms":
        ackWaitMs = positiveInt(flag, value());
        break;
      case "--out":
        out = value();
        break;
      case "--open":
        accessControl = false;
        break;
      case "--nats-cluster":
        natsCluster = true;
        break;
      case "--redis-replica":
        redisReplica = true;
        break;
      case "--no-gateway":
        gateway = false;
        break;
      case "--tracing":
        tracing = true;
        break;
      case "--gateway-abandon":
        gatewayAbandon = Number(value());
        if (!Number.isInteger(gatewayAbandon) || gatewayAbandon < 0)
          throw new Error("--gateway-abandon needs a whole number of streams (0: none)");
        break;
      case "--gateway-levels":
        gatewayLevels = value()
          .split(",")
          .map((s) => positiveInt("--gateway-levels", s.trim()));
        break;
      case "--cpu-prof":
        cpuProfDir = value();
        break;
      case "--startup-only":
        startup = "only";
        break;
      case "--no-startup":
        startup = "off";
        break;
      case "--startup-rounds":
        startupRounds = positiveInt(flag, value());
        break;
      case "--concurrent":
        concurrent = positiveInt(flag, value());
        break;
      case "--model-latency-ms": {
        const v = Number(value());
        if (!Number.isInteger(v) || v < 0 || v > 600_000)
          throw new Error(`--model-latency-ms needs an integer from 0 to 600000, got ${argv[i]}`);
        given.set(flag, v);
        break;
      }
      case "--submit-window":
        submitWindow = positiveInt(flag, value());
        break;
      case "--service-node-options":
        serviceNodeOptions = value();
        break;
      case "--rss-budget-mib":
        rssBudgetMiB = positiveInt(flag, value());
        break;
      default:
        throw new Error(`unknown option ${flag}\n\n${HELP}`);
    }
  }
  const sessions = new Map<number, number>();
  for (const c of levels)
    sessions.set(c, explicit.get(c) ?? (quick ? (c === 1 ? 5 : Math.max(c, 16)) : c === 1 ? 40 : 400));
  const gatewaySessions = new Map<number, number>();
  if (gateway)
    for (const c of gatewayLevels)
      gatewaySessions.set(c, gatewayExplicit.get(c) ?? (c === 1 ? (quick ? 10 : 30) : (quick ? 2 : 4) * c));
  if (argv.includes("--startup-only") && argv.includes("--no-startup"))
    throw new Error("--startup-only and --no-startup contradict each other");
  let modelLatencyMs = given.get("--model-latency-ms") ?? 0;
  if (concurrent !== null) {
    // the mode's own defaults, each overridden by its flag
    const or = (f: string, d: number) => given.get(f) ?? d;
    coordinators = or("--coordinators", 1);
    agentConcurrency = or("--agent-concurrency", 1000);
    coordinatorConcurrency = or("--coordinator-concurrency", 64);
    sessionTimeoutMs = or("--timeout-ms", 900_000);
    warmup = or("--warmup", 4);
    modelLatencyMs = or("--model-latency-ms", 1000);
    gatewaySessions.clear();
    if (!argv.includes("--startup-only")) startup = "off";
  }
  return {
    workflow,
    levels,
    sessions,
    rounds,
    warmup,
    rttSamples,
    sessionTimeoutMs,
    coordinators,
    agentConcurrency,
    coordinatorConcurrency,
    ackWaitMs,
    out,
    quick,
    cpuProfDir,
    accessControl,
    gatewaySessions,
    gatewayAbandon,
    tracing,
    startup,
    startupRounds,
    concurrent,
    modelLatencyMs,
    submitWindow,
    rssBudgetMiB,
    serviceNodeOptions,
    natsCluster,
    redisReplica,
  };
}

export { HELP };
