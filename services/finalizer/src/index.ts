export { finalizer } from "./definition.js";
