import {
  AgentmeshError,
  compiled,
  handoffSummary,
  type HandoffInfo,
  LIMITS,
  STATE_SCHEMA_VERSION,
  formatZodError,
  Outbox,
  SessionState,
  TransitionLogLine,
} from "@agentmesh/contracts";
import type { z } from "zod";
import type { LoadedSession } from "./types.js";

function parseJson(raw: string, what: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw new Error(`corrupt ${what}: not JSON (${(e as Error).message})`);
  }
}

function validate<S extends z.ZodType>(schema: S, json: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(json);
  if (!r.success) throw new Error(`corrupt ${what}: ${formatZodError(r.error)}`);
  return r.data;
}

/** Parses and validates one stored JSON value; a corrupt value is an error naming where it was. */
function decode<S extends z.ZodType>(schema: S, raw: string, what: string): z.infer<S> {
  return validate(schema, parseJson(raw, what), what);
}

/**
 * Upgrades a stored state of an older layout (by STATE_SCHEMA_VERSION) to the current one, step by
 * step. Each step is explicit, so an old layout never passes through the schema by accident.
 */
const MIGRATIONS: Readonly<Record<number, (json: unknown) => unknown>> = {
  // 1 -> 2: a pause gained `expires_at`; a pause written before it never expires on its own.
  1: (json) => {
    const pause = (json as { meta?: { pause?: Record<string, unknown> | null } } | null)?.meta?.pause;
    if (pause && typeof pause === "object" && !("expires_at" in pause)) pause.expires_at = null;
    return json;
  },
  // 2 -> 3: a session gained its owner and thread; one written before has neither.
  2: (json) => {
    const meta = (json as { meta?: Record<string, unknown> } | null)?.meta;
    if (meta && typeof meta === "object") {
      if (!("owner" in meta)) meta.owner = null;
      if (!("thread_id" in meta)) meta.thread_id = null;
    }
    return json;
  },
  // 3 -> 4: a session gained its trace context; one written before has none (its spans start a trace per transition).
  3: (json) => {
    const meta = (json as { meta?: Record<string, unknown> } | null)?.meta;
    if (meta && typeof meta === "object" && !("trace" in meta)) meta.trace = null;
    return json;
  },
  // 4 -> 5: a supervisor session gained the agents it visited, its handoff summary and the request's
  // metadata: rebuilt from its routing and handoffs, its owner; the client named no model or images then.
  4: (json) => {
    const s = json as { meta?: { owner?: unknown }; data?: Record<string, unknown> } | null;
    const d = s?.data;
    if (!d || typeof d !== "object" || d.workflow !== "supervisor") return json;
    const history = Array.isArray(d.handoff_history) ? (d.handoff_history as HandoffInfo[]) : [];
    d.visited_agents ??= d.selected_agent ? [d.selected_agent, ...history.map((h) => h.target_agent)] : [];
    d.handoff_summary ??= handoffSummary(history);
    d.user_id ??= s.meta?.owner ?? null;
    for (const k of ["provider", "model", "tier"]) d[k] ??= null;
    d.image_attachments ??= [];
    return json;
  },
  // 5 -> 6: task ids gained a fifth part (the digest of the input that made their version); the
  // four-part ids a layout-5 state holds are still valid ids, so its data stays as it is.
  5: (json) => json,
  // 6 -> 7: the blackboard memory gained its behavioural patterns; a memory written before has none.
  // Its retrieval bundles also gained `corpus_ranking`, which the schema defaults to null (unknown)
  // for a bundle written before.
  6: (json) => {
    const d = (json as { data?: { workflow?: unknown; memory?: Record<string, unknown> } } | null)?.data;
    if (d?.workflow === "blackboard" && d.memory && typeof d.memory === "object") d.memory.patterns ??= [];
    return json;
  },
};

/**
 * The stored layout version of a state: the `schema` field beside it, absent (1) for states
 * written before it was stored. A newer version than ours is refused: reading it through our
 * schema would silently drop the fields we do not know, and the next write would lose them.
 */
export function checkStateSchema(sessionId: string, stored: string | null): number {
  if (stored === null) return 1;
  const n = Number(stored);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`corrupt state of session ${sessionId}: schema version ${JSON.stringify(stored)}`);
  if (n > STATE_SCHEMA_VERSION) {
    throw new AgentmeshError(
      "unsupported_version",
      `state of session ${sessionId} has layout version ${n}, newer than this service's ${STATE_SCHEMA_VERSION}: it was written by a newer agentmesh; upgrade this service before it touches the session`,
      { component: "session-store" },
    );
  }
  return n;
}

/**
 * Decodes a stored state (migrating an older layout) and checks it agrees with the stored version counter.
 *
 * A state of the current layout is not run through the schema again: every state is validated
 * before it is written (`encodeState`), the coordinator is the only writer (and Redis's ACL lets
 * no other service write a session key), and the layout version beside it says which schema
 * checked it. Validating it again on each of a transition's reads cost a busy coordinator about a
 * tenth of its CPU. A migrated state is validated: a migration is code that could miss a field.
 */
export function decodeState(
  sessionId: string,
  raw: string,
  version: string | null,
  schema: string | null = String(STATE_SCHEMA_VERSION),
): SessionState {
  const what = `state of session ${sessionId}`;
  let from = checkStateSchema(sessionId, schema);
  const migrated = from < STATE_SCHEMA_VERSION;
  let json = parseJson(raw, what);
  for (; from < STATE_SCHEMA_VERSION; from++) {
    const migrate = MIGRATIONS[from];
    if (!migrate)
      throw new AgentmeshError(
        "unsupported_version",
        `${what} has layout version ${from}, which this service cannot migrate`,
        { component: "session-store" },
      );
    json = migrate(json);
  }
  const state = migrated ? validate(SessionState, json, what) : (json as SessionState);
  const meta = (state as { meta?: Partial<SessionState["meta"]> } | null)?.meta;
  if (
    typeof meta !== "object" ||
    meta === null ||
    typeof (state as { data?: unknown }).data !== "object" ||
    version === null ||
    Number(version) !== meta.version ||
    meta.session_id !== sessionId
  ) {
    throw new Error(
      `corrupt state of session ${sessionId}: stored version ${String(version)}, state says version ${String(meta?.version)} of ${String(meta?.session_id)}`,
    );
  }
  return state;
}

/** Decodes a stored outbox (validated when written, like the state); null when there is none. */
export function decodeOutbox(sessionId: string, raw: string | null): Outbox | null {
  if (raw === null) return null;
  const what = `outbox of session ${sessionId}`;
  const outbox = parseJson(raw, what) as Outbox | null;
  if (
    typeof outbox !== "object" ||
    outbox === null ||
    !Array.isArray(outbox.entries) ||
    !Number.isSafeInteger(outbox.version)
  ) {
    throw new Error(`corrupt ${what}: not an outbox`);
  }
  return outbox;
}

/** The state hash's fields as stored (null where absent). */
export interface StoredFields {
  readonly state: string;
  readonly version: string | null;
  readonly outbox: string | null;
  readonly schema: string | null;
}

/** A loaded session from its state hash's fields: what `load` returns, in every adapter. */
export function decodeLoaded(sessionId: string, f: StoredFields): LoadedSession {
  return { state: decodeState(sessionId, f.state, f.version, f.schema), outbox: decodeOutbox(sessionId, f.outbox) };
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
  const r = compiled(schema).safeParse(value);
  if (!r.success) throw new Error(`refusing to store invalid ${what}: ${formatZodError(r.error)}`);
  // What the schema made of it (defaults filled, unknown keys dropped): a current-layout read is
  // not parsed again, so the stored JSON must already be the parsed value.
  return JSON.stringify(r.data);
}

/** UTF-8 bytes of a string, as Redis counts them (`STRLEN`, Lua `string.len`). */
export const utf8Bytes = (s: string): number => Buffer.byteLength(s, "utf8");

/**
 * Encodes a state, refusing one over `LIMITS.maxStateBytes`: the runtime fails a session before
 * its state grows that far, so reaching this is a bug, and the store must not grow past it.
 */
export function encodeState(state: SessionState): string {
  const sid = state.meta.session_id;
  const json = encode(SessionState, state, `state of session ${sid}`);
  const bytes = utf8Bytes(json);
  if (bytes > LIMITS.maxStateBytes) {
    throw new AgentmeshError(
      "payload_too_large",
      `refusing to store state of session ${sid}: ${bytes} bytes, over ${LIMITS.maxStateBytes}`,
      { component: "session-store" },
    );
  }
  return json;
}

/** Encodes the three JSON values of a commit. */
export function encodeCommit(
  state: SessionState,
  outbox: Outbox,
  log: TransitionLogLine,
): { state: string; outbox: string; log: string } {
  const sid = state.meta.session_id;
  return {
    state: encodeState(state),
    outbox: encode(Outbox, outbox, `outbox of session ${sid}`),
    log: encode(TransitionLogLine, log, `transition log line of session ${sid}`),
  };
}
