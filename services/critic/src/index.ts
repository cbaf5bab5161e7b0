export { critic } from "./definition.js";
