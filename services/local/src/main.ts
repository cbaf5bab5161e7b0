import { localMain } from "./local.js";

await localMain(process.env);
