export { decision } from "./definition.js";
