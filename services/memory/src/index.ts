export { memory } from "./definition.js";
