import { buildAll } from "../../scripts/build.js";

/**
 * The e2e project's first global setup: compiles the services once (`pnpm build`) so every
 * process the tests spawn runs the JavaScript production runs, and starts in a fraction of a tsx
 * start's CPU. AGENTMESH_SERVICE_RUNTIME=tsx skips the build and runs the sources instead.
 */
export default async function setup(): Promise<void> {
  if (process.env.AGENTMESH_SERVICE_RUNTIME === "tsx") {
    console.log("[build] AGENTMESH_SERVICE_RUNTIME=tsx: services run from source");
    return;
  }
  const r = await buildAll();
  // the workers the tests run in inherit this: the harness spawns node dist/… (serviceArgv)
  process.env.AGENTMESH_SERVICE_RUNTIME = "compiled";
  console.log(
    `[build] ${r.files} files, ${r.vendored} vendored npm imports and ${r.processes} process bundles (code cache primed) compiled in ${r.ms} ms: services run compiled`,
  );
}
