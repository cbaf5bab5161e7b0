import { naming } from "@agentmesh/contracts";
import { createMemoryBus } from "./bus.js";
import { runBusConformance } from "./bus-conformance.js";

runBusConformance("in-memory twin", async ({ maxDeliver }) => ({ bus: createMemoryBus({ naming: naming("memtwin"), maxDeliver }), async close() {} }));
