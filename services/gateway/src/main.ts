import { gatewayMain } from "./main-wiring.js";

// Wiring only: see main-wiring.ts.
await gatewayMain(process.env);
