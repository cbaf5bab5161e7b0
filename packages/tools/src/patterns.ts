// The dangerous-pattern scanner lives in the contracts (the workflows flag `tool_call` events with
// it too); the executor and the escape suite reach it through this module.
export { scanDangerous } from "@agentmesh/contracts";
