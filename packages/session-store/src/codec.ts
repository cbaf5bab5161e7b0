import { formatZodError, Outbox, SessionState, TransitionLogLine } from "@agentmesh/contracts";
import type { z } from "zod";

/** Parses and validates one stored JSON value; a corrupt value is an error naming where it was. */
function decode<S extends z.ZodType>(schema: S, raw: string, what: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw new Error(`corrupt ${what}: not JSON (${(e as Error).message})`);
  }
  const r = schema.safeParse(json);
  if (!r.success) throw new Error(`corrupt ${what}: ${formatZodError(r.error)}`);
  return r.data;
}

/** Decodes a stored state and checks it agrees with the stored version counter. */
export function decodeState(sessionId: string, raw: string, version: string | null): SessionState {
  const state = decode(SessionState, raw, `state of session ${sessionId}`);
  if (version === null || Number(version) !== state.meta.version || state.meta.session_id !== sessionId) {
    throw new Error(
      `corrupt state of session ${sessionId}: stored version ${String(version)}, state says version ${state.meta.version} of ${state.meta.session_id}`,
    );
  }
  return state;
}

/** Decodes a stored outbox; null when there is none. */
export function decodeOutbox(sessionId: string, raw: string | null): Outbox | null {
  return raw === null ? null : decode(Outbox, raw, `outbox of session ${sessionId}`);
}

/** Decodes the transition log, oldest first. */
export function decodeLog(sessionId: string, lines: readonly string[]): TransitionLogLine[] {
  return lines.map((l, i) => decode(TransitionLogLine, l, `transition log line ${i} of session ${sessionId}`));
}

/**
 * Validates a value before it is written, so a bad state, outbox or log line fails at its
 * writer (the coordinator's bug) and never becomes a corrupt record for every later reader.
 */
export function encode<S extends z.ZodType>(schema: S, value: z.infer<S>, what: string): string {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`refusing to store invalid ${what}: ${formatZodError(r.error)}`);
  return JSON.stringify(value);
}

/** Encodes the three JSON values of a commit. */
export function encodeCommit(state: SessionState, outbox: Outbox, log: TransitionLogLine): { state: string; outbox: string; log: string } {
  const sid = state.meta.session_id;
  return {
    state: encode(SessionState, state, `state of session ${sid}`),
    outbox: encode(Outbox, outbox, `outbox of session ${sid}`),
    log: encode(TransitionLogLine, log, `transition log line of session ${sid}`),
  };
}
