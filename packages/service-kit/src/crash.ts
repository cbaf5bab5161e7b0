import type { Logger } from "pino";

/** The named crash points a process can be told to die at (AGENTMESH_CRASH_AT). */
export const CRASH_POINTS = {
  coordinator: [
    "after-load",
    "after-cas",
    "after-cas-before-wait",
    "after-wait-before-publish",
    "after-publish",
    "before-ack",
  ],
  agent: ["after-fetch", "after-model", "after-result-publish", "before-ack"],
} as const;
export type CrashPoint = (typeof CRASH_POINTS)[keyof typeof CRASH_POINTS][number];

/**
 * Returns a hook that kills this process with SIGKILL when it reaches `point` — no cleanup,
 * no flush, exactly like a pod dying there. A no-op when `point` is unset.
 */
export function crashHook(
  point: string | undefined,
  kind: keyof typeof CRASH_POINTS,
  log: Logger,
): (at: string) => void {
  if (!point) return () => {};
  const known: readonly string[] = CRASH_POINTS[kind];
  if (!known.includes(point))
    throw new Error(`AGENTMESH_CRASH_AT=${point} is not a ${kind} crash point (${known.join(", ")})`);
  log.warn({ crashAt: point }, "fault injection armed");
  return (at) => {
    if (at !== point) return;
    process.stderr.write(`[crash] ${kind} ${process.pid} dying at ${at}\n`);
    process.kill(process.pid, "SIGKILL");
  };
}
