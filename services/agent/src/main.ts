import { runAgentProcess } from "./process.js";

// Wiring only: see process.ts.
await runAgentProcess();
