export { localMain } from "./local.js";
