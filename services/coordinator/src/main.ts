import { coordinatorMain } from "./main-wiring.js";

// Wiring only: see main-wiring.ts.
await coordinatorMain(process.env);
