export { loadCoordinatorConfig, type CoordinatorConfig } from "./config.js";
export {
  createCoordinatorCore,
  type CoordinatorCore,
  type CoordinatorStats,
  type CoordinatorPublisher,
} from "./core.js";
export { startCoordinator, type RunningCoordinator, type CoordinatorServiceOptions } from "./service.js";
export { startCoordinatorFromConfig, coordinatorMain, assertDurable } from "./main-wiring.js";
