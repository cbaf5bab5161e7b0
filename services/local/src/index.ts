export { localMain, ALL_AGENTS } from "./local.js";
