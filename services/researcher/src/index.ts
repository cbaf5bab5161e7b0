export { researcher } from "./definition.js";
