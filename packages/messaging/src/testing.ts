// Test helpers of @agentmesh/messaging: never imported by production code.
export { runBusConformance, type BusFactory } from "./bus-conformance.js";
