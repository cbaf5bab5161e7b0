// A floor driver process (the coordinators' part). One durable step of a session:
//   1. read the session record from Redis (HMGET version, state);
//   2. publish a task to the work-queue stream (msg id = session:step), awaiting the stream's ack;
//   3. wait for the worker's result on this driver's results consumer;
//   4. compare-and-set in Redis (one Lua script: the version still the one read → new state and
//      version + 1), fsync'd like every write under appendfsync always;
//   5. ack the result.
// A redelivered result finds no step waiting for it and is acked; its CAS could not pass anyway,
// since the version moved. Started by bench/floor/floor.ts; imports nothing of @agentmesh.
import { performance } from "node:perf_hooks";
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import {
  FLOOR_ENV,
  floorConnect,
  floorEnv,
  floorNames,
  type FloorDone,
  type FloorResult,
  type FloorRun,
  type FloorTask,
} from "./proto.js";

const CAS = `
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'state', ARGV[3])
return 1`;
/** A session's first state: a small record, about the size of a short session's control fields. */
const PAD = "x".repeat(256);
const RESULT_TIMEOUT_MS = 30_000;

const env = floorEnv();
const driver = Number(process.env[FLOOR_ENV.driver] ?? "1");
const names = floorNames(env.prefix);
const nc = await floorConnect(env, `floor-driver-${driver}`);
const js = jetstream(nc);
const redis = new Redis(env.redisUrl, { maxRetriesPerRequest: 3 });
const casSha = (await redis.script("LOAD", CAS)) as string;
const enc = new TextEncoder();
const reply = names.resultsOf(driver);

/** Steps waiting for their result, by `sid:step`. */
const waiting = new Map<string, (m: JsMsg) => void>();
let strays = 0;
const consumer = await js.consumers.get(names.resultsStream, names.driverConsumer(driver));
const messages = await consumer.consume({ max_messages: 256 });
void (async () => {
  for await (const m of messages) {
    const r = m.json<FloorResult>();
    const key = `${r.sid}:${r.step}`;
    const w = waiting.get(key);
    if (w) {
      waiting.delete(key);
      w(m);
    } else {
      strays++;
      m.ack();
    }
  }
})();

function resultOf(key: string): Promise<JsMsg> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(key);
      reject(new Error(`no result for ${key} within ${RESULT_TIMEOUT_MS} ms`));
    }, RESULT_TIMEOUT_MS);
    waiting.set(key, (m) => {
      clearTimeout(timer);
      resolve(m);
    });
  });
}

/** One session: create its record (not timed), then `steps` durable steps, each timed. */
async function session(sid: string, steps: number, stepMs: number[]): Promise<void> {
  const key = `${names.keyPrefix}${sid}`;
  await redis.hset(key, "version", "1", "state", JSON.stringify({ sid, step: 0, last: "", pad: PAD }));
  await redis.pexpire(key, 3_600_000);
  for (let step = 1; step <= steps; step++) {
    const t0 = performance.now();
    const [version, state] = await redis.hmget(key, "version", "state");
    if (version == null || state == null) throw new Error(`${sid}: the record is gone at step ${step}`);
    const v = Number(version);
    const result = resultOf(`${sid}:${step}`);
    const task: FloorTask = { sid, step, version: v, input: state, reply };
    await js.publish(names.tasksSubject, enc.encode(JSON.stringify(task)), { msgID: `${sid}:${step}` });
    const m = await result;
    const r = m.json<FloorResult>();
    const next = JSON.stringify({ sid, step, last: r.output, pad: PAD });
    const ok = await redis.evalsha(casSha, 1, key, version, String(v + 1), next);
    if (ok !== 1) throw new Error(`${sid}: CAS conflict at step ${step} (version ${version} moved)`);
    m.ack();
    stepMs.push(performance.now() - t0);
  }
  const final = await redis.hget(key, "version");
  if (final !== String(steps + 1))
    throw new Error(`${sid}: version ${final} after ${steps} steps, expected ${steps + 1}`);
}

async function run(r: FloorRun): Promise<FloorDone> {
  const stepMs: number[] = [];
  const problems: string[] = [];
  const strays0 = strays;
  let next = 0;
  let ok = 0;
  const lane = async () => {
    while (next < r.sessions) {
      const sid = `${r.stem}-${String(next++).padStart(5, "0")}`;
      try {
        await session(sid, r.steps, stepMs);
        ok++;
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(r.concurrency, r.sessions) }, lane));
  return { type: "done", runId: r.runId, stepMs, sessionsOk: ok, problems, strays: strays - strays0 };
}

process.on("message", (msg: FloorRun) => {
  if (msg.type !== "run") return;
  void run(msg).then((done) => process.send?.(done));
});
process.on("disconnect", () => {
  redis.disconnect();
  void nc.close().finally(() => process.exit(0));
});
process.send?.({ type: "ready" });
