import { SCHEMA_VERSION, inputIds } from "@agentmesh/contracts";
import type { Log, Publisher } from "@agentmesh/messaging";

/**
 * Cancels a session whose client left before it ended (`cancel_on_disconnect` on `/api`, the
 * default on `/v1`). One input id per session, so clients that leave twice cancel once; a failure
 * is only logged (the session then runs to its end).
 */
export async function cancelAfterDisconnect(
  d: { readonly publisher: Pick<Publisher, "publishInbox">; readonly log: Log },
  sessionId: string,
  why: string,
): Promise<void> {
  await d.publisher
    .publishInbox({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: sessionId,
      input_id: inputIds.clientCancel(sessionId, "gateway"),
      reason: `the client disconnected (${why})`,
    })
    .catch((err: unknown) =>
      d.log.warn({ session_id: sessionId, err: (err as Error).message }, "cancel on disconnect failed"),
    );
}

/**
 * The `/v1` answers open on this replica. On drain each goes on (its session may end within the
 * grace period) until the drain's deadline, then ends with an error chunk (or a 503) that says the
 * replica is shutting down; its session runs on.
 */
export interface OpenAnswers {
  /** One controller per open answer; aborting it ends the answer as drained. */
  readonly open: Set<AbortController>;
  draining: boolean;
}

export const openAnswers = (): OpenAnswers => ({ open: new Set(), draining: false });

/** Starts a drain: the open answers end at `deadlineMs` from now unless they finish first. */
export function drainAnswers(a: OpenAnswers, deadlineMs: number): void {
  a.draining = true;
  setTimeout(() => {
    for (const ac of a.open) ac.abort();
  }, deadlineMs).unref();
}
