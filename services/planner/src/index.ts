export { planner } from "./definition.js";
