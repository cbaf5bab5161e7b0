import {
  NOTE_PRIORITY,
  NoteField,
  SUPERVISOR_LIMITS,
  type HaloCitation,
  type SharedAgentMemory,
} from "@agentmesh/contracts";

/** Ends a field cut to its allowance; it counts inside the allowance. */
export const TRUNCATION_MARKER = "[...truncated]";
const CUT_SUFFIX = `\n${TRUNCATION_MARKER}`;

/** Between two fields' blocks. Counted in the budget. */
const BLOCK_SEPARATOR = "\n\n";

/** A field's label line, its name verbatim. Counted in the budget. */
const label = (field: NoteField): string => `## ${field}\n`;

/** The last position `≤ limit` at which each of `pattern`'s matches ends (or starts, with `atStart`); -1 when none. */
function lastCut(text: string, pattern: RegExp, limit: number, atStart = false): number {
  let best = -1;
  for (const m of text.matchAll(pattern)) {
    const p = atStart ? m.index : m.index + m[0].length;
    if (p > limit) break;
    best = p;
  }
  return best;
}

/**
 * The natural boundaries of a cut, tried in order, each with the share of the allowance a cut there
 * must keep (strictly more than, in percent). A paragraph ends before a blank line; a sentence after `.`, `!`
 * or `?` (and any closing quotes or brackets) followed by white space, or at a line's end (so a
 * list, one item a line, or code is cut between lines); a word before white space.
 */
const BOUNDARIES: ReadonlyArray<{
  readonly keepsPercent: number;
  readonly cut: (text: string, limit: number) => number;
}> = [
  { keepsPercent: 60, cut: (t, n) => lastCut(t, /\n[ \t]*\n/g, n, true) },
  { keepsPercent: 50, cut: (t, n) => Math.max(lastCut(t, /[.!?]["'”’)\]]*(?=\s)/g, n), lastCut(t, /\n/g, n, true)) },
  { keepsPercent: 40, cut: (t, n) => lastCut(t, /\S(?=\s)/g, n) },
];

/** The first `n` UTF-16 units of `text`, one fewer when the n-th would split a surrogate pair. */
function hardCut(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/**
 * `text` in at most `allowance` characters: whole when it fits; otherwise cut at a paragraph
 * boundary if that keeps more than 60 % of the allowance, else a sentence boundary if more than
 * 50 %, else a word boundary if more than 40 %, else a hard cut, and marked `[...truncated]` on a
 * line of its own (the marker counts inside the allowance).
 */
export function truncateAtBoundary(text: string, allowance: number): string {
  if (text.length <= allowance) return text;
  const room = allowance - CUT_SUFFIX.length;
  if (room < 1) return allowance >= TRUNCATION_MARKER.length ? TRUNCATION_MARKER : "";
  for (const { keepsPercent, cut } of BOUNDARIES) {
    const kept = text.slice(0, Math.max(0, cut(text, room))).trimEnd();
    // In whole numbers, so "more than 60 %" never rests on how 0.6 rounds.
    if (kept.length * 100 > keepsPercent * allowance) return kept + CUT_SUFFIX;
  }
  return hardCut(text, room).trimEnd() + CUT_SUFFIX;
}

const fold = (s: string): string => s.replace(/\s+/g, " ").trim();

/** One research source on one line: title, where it is, and its snippet when it has one. */
const sourceLine = (s: HaloCitation): string =>
  fold(`${s.title} — ${s.url ?? s.path ?? ""}${s.snippet.trim() ? `: ${s.snippet}` : ""}`);

/** A field's text: strings trimmed, lists one item per line; null when empty. */
function fieldText(notes: SharedAgentMemory, field: NoteField): string | null {
  const text =
    field === "research_sources"
      ? (notes.research_sources ?? []).map(sourceLine).join("\n")
      : field === "data_visualizations"
        ? (notes.data_visualizations ?? []).map((spec) => JSON.stringify(spec)).join("\n")
        : (notes[field]?.trim() ?? "");
  return text.length > 0 ? text : null;
}

/** A non-empty field and the length of its text. */
export interface NoteFieldLength {
  readonly field: NoteField;
  readonly length: number;
}

/**
 * Each field's allowance out of `budget` characters: every field first gets up to
 * 200 (its whole text if shorter), then what is left goes to priority 3 fields, then 2, then 1,
 * each taking all it still needs in the field order (the order of `fields`). Never more in
 * all than `budget`, never more for a field than its length.
 */
export function allocateNotesBudget(fields: readonly NoteFieldLength[], budget: number): Map<NoteField, number> {
  const allowance = new Map<NoteField, number>();
  let left = Math.max(0, budget);
  for (const { field, length } of fields) {
    const first = Math.min(length, SUPERVISOR_LIMITS.notesMinFieldChars, left);
    allowance.set(field, first);
    left -= first;
  }
  for (const priority of [3, 2, 1] as const) {
    for (const { field, length } of fields) {
      if (NOTE_PRIORITY[field] !== priority) continue;
      const had = allowance.get(field) ?? 0;
      const more = Math.min(length - had, left);
      allowance.set(field, had + more);
      left -= more;
    }
  }
  return allowance;
}

/**
 * The shared notes as the text handed to the next specialist, at most
 * `SUPERVISOR_LIMITS.notesBudgetChars` characters in all: one block per non-empty field, in
 * the field order, a `## <field>` label line and the field's text, blocks a blank line
 * apart. The labels and blank lines are taken off the budget first (at most ~300 characters for
 * all ten fields), so the 8000 bounds the whole rendered text; the rest is shared out by
 * `allocateNotesBudget` and each field cut to its share by `truncateAtBoundary`. Empty notes
 * render as "".
 */
export function renderSharedNotes(notes: SharedAgentMemory): string {
  const blocks = NoteField.options.flatMap((field) => {
    const text = fieldText(notes, field);
    return text === null ? [] : [{ field, text }];
  });
  const framing =
    blocks.reduce((n, b) => n + label(b.field).length, 0) + BLOCK_SEPARATOR.length * Math.max(0, blocks.length - 1);
  const allowance = allocateNotesBudget(
    blocks.map((b) => ({ field: b.field, length: b.text.length })),
    SUPERVISOR_LIMITS.notesBudgetChars - framing,
  );
  return blocks
    .map((b) => label(b.field) + truncateAtBoundary(b.text, allowance.get(b.field) ?? 0))
    .join(BLOCK_SEPARATOR);
}
