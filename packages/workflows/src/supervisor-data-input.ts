import { LIMITS, type Attachment, type ChatMessage, type DataInput } from "@agentmesh/contracts";
import { isRecord } from "./events.js";

/** The most data text the data agent takes (the DataInput contract's bound). */
const MAX_DATA_CHARS = LIMITS.maxDataChars;
const MAX_COLUMNS = 50;

/** JSON data: an array (of records or values) or an object; its columns are the first record's keys. */
function jsonData(text: string, origin: DataInput["origin"]): DataInput | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(value) && !isRecord(value)) return null;
  const first: unknown = Array.isArray(value) ? value[0] : value;
  const columns = isRecord(first)
    ? Object.keys(first)
        .slice(0, MAX_COLUMNS)
        .map((c) => c.slice(0, 200))
    : [];
  return { format: "json", text, origin, columns, rows: Array.isArray(value) ? value.length : 1 };
}

/** CSV data: at least a header and one row, every line with the same number (≥ 1) of commas. */
function csvData(text: string, origin: DataInput["origin"]): DataInput | null {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  if (lines.length < 2) return null;
  const commas = (l: string) => (l.match(/,/g) ?? []).length;
  const n = commas(lines[0] ?? "");
  if (n < 1 || !lines.every((l) => commas(l) === n)) return null;
  const columns = (lines[0] ?? "")
    .split(",")
    .slice(0, MAX_COLUMNS)
    .map((c) => c.trim().slice(0, 200));
  return { format: "csv", text: lines.join("\n"), origin, columns, rows: lines.length - 1 };
}

/** A fenced block's body when `text` has one marked csv or json (the first such). */
function fenced(text: string): { lang: "csv" | "json"; body: string } | null {
  const m = /```(csv|json)[^\n]*\n([\s\S]*?)```/i.exec(text);
  if (!m) return null;
  return { lang: m[1]?.toLowerCase() === "json" ? "json" : "csv", body: (m[2] ?? "").trim() };
}

/** The JSON array or object in `text`: from its first `[` or `{` to its last `]` or `}`, when that parses. */
function embeddedJson(text: string, origin: DataInput["origin"]): DataInput | null {
  const start = text.search(/[[{]/);
  const end = Math.max(text.lastIndexOf("]"), text.lastIndexOf("}"));
  return start >= 0 && end > start ? jsonData(text.slice(start, end + 1), origin) : null;
}

/** The longest run of consecutive lines that have the same number (≥ 1) of commas, at least 2 lines (kept as bounds, so a long text is one pass). */
function csvRun(text: string, origin: DataInput["origin"]): DataInput | null {
  const lines = text.split(/\r?\n/);
  let best = { start: 0, length: 0 };
  let start = 0;
  let commas = -1;
  lines.forEach((line, i) => {
    const n = (line.match(/,/g) ?? []).length;
    if (n < 1 || n !== commas) {
      start = n >= 1 ? i : i + 1;
      commas = n >= 1 ? n : -1;
    }
    if (i + 1 - start > best.length) best = { start, length: i + 1 - start };
  });
  return best.length >= 2 ? csvData(lines.slice(best.start, best.start + best.length).join("\n"), origin) : null;
}

/** Data in one text: a fenced ```csv or ```json block first, else a JSON array or object, else CSV lines. */
function dataIn(text: string, origin: DataInput["origin"]): DataInput | null {
  const block = fenced(text);
  const found = block
    ? block.lang === "json"
      ? jsonData(block.body, origin)
      : csvData(block.body, origin)
    : (embeddedJson(text, origin) ?? csvRun(text, origin));
  return found !== null && found.text.length <= MAX_DATA_CHARS ? found : null;
}

/** An attachment's data: a CSV or JSON file's whole content by its type, a text file's like inline text; null when it has none. */
function attachmentDataOf(a: Attachment): DataInput | null {
  const text = a.content.trim();
  const found =
    a.content_type === "text/csv"
      ? csvData(text, "attachment")
      : a.content_type === "application/json"
        ? jsonData(text, "attachment")
        : dataIn(text, "attachment");
  return found !== null && found.text.length <= MAX_DATA_CHARS ? { ...found, name: a.name } : null;
}

/**
 * The data in a session's attachments: the first CSV or JSON attachment that holds data, else the
 * first text attachment that does (read as inline text is); null when none does. An attachment
 * that is empty or does not parse is passed over.
 */
export function attachmentData(attachments: readonly Attachment[]): DataInput | null {
  const typed = attachments.filter((a) => a.content_type !== "text/plain");
  const plain = attachments.filter((a) => a.content_type === "text/plain");
  for (const a of [...typed, ...plain]) {
    const found = attachmentDataOf(a);
    if (found) return found;
  }
  return null;
}

/**
 * The data the data agent works on: an attachment's (`attached`, from `attachmentData`) when there
 * is one, else inline CSV or JSON in the task (or the query, when the task is another text), else
 * in the thread's earlier messages, latest first; null when there is none. A fenced ```csv /
 * ```json block wins; then a JSON array or object; then at least two lines with the same number
 * (≥ 1) of commas. Data over 100,000 characters is not taken.
 */
export function findDataInput(
  texts: readonly string[],
  messages: readonly ChatMessage[],
  attached: DataInput | null = null,
): DataInput | null {
  if (attached) return attached;
  for (const text of texts) {
    const found = dataIn(text, "query");
    if (found) return found;
  }
  for (let i = messages.length - 1; i >= 0; i--) {
    const found = dataIn(messages[i]?.content ?? "", "thread");
    if (found) return found;
  }
  return null;
}
