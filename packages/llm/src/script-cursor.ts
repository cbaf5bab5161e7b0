/** An entry of a script, addressed to one role and op. */
export interface Addressed {
  readonly role: string;
  readonly op: string;
}

/** What a cursor hands out: the entry and its index in the whole script. */
export interface Taken<E> {
  readonly index: number;
  readonly entry: E;
}

/** Reads a script for many (role, op) pairs at once. */
export interface ScriptCursor<E> {
  /** The entry for this call, or null when none is left for (role, op). */
  take(role: string, op: string, key: string): Taken<E> | null;
  /** Entries never handed out, in script order. */
  unconsumed(): Array<Taken<E>>;
}

/**
 * The consumption rule shared by the scripted model and the scripted HTTP server.
 *
 * Per (role, op) the entries form a queue. The n-th distinct `key` (a task id) gets the n-th
 * entry, and a key seen before gets the same entry again, so a task that is redelivered after a
 * crash replays identically. Entries for which `transient(entry)` is true (HTTP error responses)
 * are the exception: each is consumed by the next request with a new key and is never bound to
 * it, so "429, then an answer" is two requests of one task.
 */
export function createScriptCursor<E extends Addressed>(
  script: readonly E[],
  transient: (entry: E) => boolean = () => false,
): ScriptCursor<E> {
  const queues = new Map<string, number[]>();
  script.forEach((entry, index) => {
    const k = pairKey(entry.role, entry.op);
    const q = queues.get(k) ?? [];
    q.push(index);
    queues.set(k, q);
  });
  const next = new Map<string, number>();
  const bound = new Map<string, number>();
  const used = new Set<number>();

  return {
    take(role, op, key) {
      const k = pairKey(role, op);
      const replay = bound.get(`${k}\u0000${key}`);
      if (replay !== undefined) return { index: replay, entry: script[replay]! };
      const queue = queues.get(k) ?? [];
      const position = next.get(k) ?? 0;
      const index = queue[position];
      if (index === undefined) return null;
      next.set(k, position + 1);
      used.add(index);
      const entry = script[index]!;
      if (!transient(entry)) bound.set(`${k}\u0000${key}`, index);
      return { index, entry };
    },
    unconsumed() {
      return script.flatMap((entry, index) => (used.has(index) ? [] : [{ index, entry }]));
    },
  };
}

function pairKey(role: string, op: string): string {
  return `${role}\u0000${op}`;
}

/** One line per entry, for assertion messages. */
export function describeEntries<E extends Addressed>(entries: ReadonlyArray<Taken<E>>): string {
  return entries.map(({ index, entry }) => `  #${index} ${entry.role}.${entry.op}`).join("\n");
}

/** Characters per streamed delta: fixed, so a stream is deterministic yet still needs reassembly. */
const PIECE_CHARS = 16;

/** How both twins cut a reply into streamed deltas. */
export function streamPieces(content: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < content.length; i += PIECE_CHARS) pieces.push(content.slice(i, i + PIECE_CHARS));
  return pieces;
}
