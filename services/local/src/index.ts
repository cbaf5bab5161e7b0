export { localMain, startLocal } from "./local.js";
