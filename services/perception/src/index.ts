export { perception } from "./definition.js";
