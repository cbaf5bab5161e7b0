// The floor's worker process (the agents' part): takes tasks from the work-queue stream, answers
// at once, and publishes each result durably (with a msg id, awaiting the stream's ack) to the
// results stream before it acks the task. A task redelivered after a lost ack is answered again
// with the same msg id, which the stream drops. Started by bench/floor/floor.ts; imports nothing
// of @agentmesh.
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { floorConnect, floorEnv, floorNames, type FloorResult, type FloorTask } from "./proto.js";

const env = floorEnv();
const names = floorNames(env.prefix);
const nc = await floorConnect(env, "floor-worker");
const js = jetstream(nc);
const enc = new TextEncoder();

async function handle(m: JsMsg): Promise<void> {
  try {
    const t = m.json<FloorTask>();
    const result: FloorResult = {
      sid: t.sid,
      step: t.step,
      version: t.version,
      output: `step ${t.step} of ${t.sid}: ${t.input.length} bytes in`,
    };
    await js.publish(t.reply, enc.encode(JSON.stringify(result)), { msgID: `${t.sid}:${t.step}:r` });
    m.ack();
  } catch (err) {
    process.stderr.write(`floor worker: ${(err as Error).message}\n`);
    m.nak(200);
  }
}

const consumer = await js.consumers.get(names.tasksStream, names.workerConsumer);
const messages = await consumer.consume({ max_messages: 256 });
process.send?.({ type: "ready" });
process.on("disconnect", () => void nc.close().finally(() => process.exit(0)));
for await (const m of messages) void handle(m);
