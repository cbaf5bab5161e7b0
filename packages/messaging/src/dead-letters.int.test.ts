import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublisher } from "./publisher.js";
import { listDeadLetters, redriveDeadLetter, startDeadLetterMover } from "./dead-letters.js";
import {
  connectTest,
  dropStreams,
  freshNaming,
  makeTask,
  recordingLog,
  sessionId,
  streamMessages,
  waitFor,
} from "./test-support.js";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectTest("dead-letters-test");
});
afterAll(async () => {
  await nc.close();
});

describe("dead letters", () => {
  it("a task that exhausts its deliveries moves to the dead-letter stream and can be re-driven", async () => {
    const { naming } = await freshNaming(nc, { taskAckWaitMs: 1000, taskMaxDeliver: 2 });
    const log = recordingLog();
    const mover = await startDeadLetterMover(nc, { naming, log });
    try {
      const task = makeTask(sessionId());
      // published as the coordinator does: its JetStream headers (expected stream) must not stick to the dead letter
      await createPublisher(nc, naming, log).publishTask(task);
      // An agent that takes the task and dies every time: fetch, never ack. The server emits the
      // advisory when a pull is waiting after the last delivery ran out.
      const consumer = await jetstream(nc).consumers.get(naming.streams.tasks, naming.consumers.role("planner"));
      const deadline = Date.now() + 15_000;
      let dead: Awaited<ReturnType<typeof listDeadLetters>> = [];
      while (Date.now() < deadline && dead.length === 0) {
        const batch = await consumer.fetch({ max_messages: 1, expires: 1000 });
        try {
          for await (const _m of batch) {
            /* dropped on the floor: the agent "crashed" */
          }
        } catch (err) {
          // a pull that missed its heartbeats on a busy machine just ends; the next one goes on
          if (!/heartbeats missed/.test((err as Error).message)) throw err;
        }
        dead = await listDeadLetters(nc, naming);
      }
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({
        originalSubject: naming.task("planner", "plan"),
        deliveries: 2,
        taskId: task.task_id,
      });
      await waitFor(
        async () => (await streamMessages(nc, naming.streams.tasks)).length === 0,
        5000,
        "task removed from the work queue",
      );

      const again = await redriveDeadLetter(nc, naming, dead[0]!.seq);
      expect(again?.taskId).toBe(task.task_id);
      expect(await listDeadLetters(nc, naming)).toEqual([]);
      const requeued = await streamMessages(nc, naming.streams.tasks);
      expect(requeued).toHaveLength(1);
      expect(JSON.parse(new TextDecoder().decode(requeued[0]!.data)).task_id).toBe(task.task_id);
      expect(await redriveDeadLetter(nc, naming, dead[0]!.seq)).toBeNull();
    } finally {
      await mover.stop();
      await dropStreams(nc, naming);
    }
  });

  it("an inbox input whose coordinator dies on every delivery moves to <p>.dead.inbox with its session id", async () => {
    const { naming } = await freshNaming(nc, { inboxAckWaitMs: 1000, inboxMaxDeliver: 2 });
    const mover = await startDeadLetterMover(nc, { naming, log: recordingLog() });
    try {
      const sid = sessionId();
      const input = { v: 1, kind: "cancel", session_id: sid, input_id: "cancel:x", reason: "r" };
      await jetstream(nc).publish(naming.inbox(sid, "client"), JSON.stringify(input), { msgID: input.input_id });
      const consumer = await jetstream(nc).consumers.get(naming.streams.inbox, naming.consumers.coordinator);
      const deadline = Date.now() + 15_000;
      let dead: Awaited<ReturnType<typeof listDeadLetters>> = [];
      while (Date.now() < deadline && dead.length === 0) {
        const batch = await consumer.fetch({ max_messages: 1, expires: 1000 });
        try {
          for await (const _m of batch) {
            /* the coordinator "crashed" before settling it */
          }
        } catch (err) {
          // a pull that missed its heartbeats on a busy machine just ends; the next one goes on
          if (!/heartbeats missed/.test((err as Error).message)) throw err;
        }
        dead = await listDeadLetters(nc, naming);
      }
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({
        kind: "inbox",
        subject: naming.deadLetter("inbox"),
        originalSubject: naming.inbox(sid, "client"),
        sessionId: sid,
        deliveries: 2,
      });
      await waitFor(
        async () => (await streamMessages(nc, naming.streams.inbox)).length === 0,
        5000,
        "input removed from the inbox",
      );
    } finally {
      await mover.stop();
      await dropStreams(nc, naming);
    }
  });
});
