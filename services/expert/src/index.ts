export { expert } from "./definition.js";
