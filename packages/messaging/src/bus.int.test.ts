import { afterAll, beforeAll } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { createNatsBus } from "./bus.js";
import { runBusConformance } from "./bus-conformance.js";
import { connectTest, dropStreams, freshNaming, recordingLog } from "./test-support.js";

let nc: NatsConnection;
beforeAll(async () => { nc = await connectTest("bus-conformance"); });
afterAll(async () => { await nc.close(); });

runBusConformance("NATS JetStream", async ({ maxDeliver }) => {
  const { naming } = await freshNaming(nc, { taskMaxDeliver: maxDeliver, taskAckWaitMs: 5000, inboxAckWaitMs: 5000 });
  return { bus: createNatsBus(nc, naming, recordingLog()), close: () => dropStreams(nc, naming) };
});
