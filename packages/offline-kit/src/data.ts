/** What a column holds: numbers only, some text, or nothing (every value missing). */
export type ColumnKind = "number" | "text" | "empty";

/** A column of inline data and what it holds. */
export interface DataColumn {
  readonly name: string;
  readonly kind: ColumnKind;
}

/**
 * A number as the data agent's offline script reads one (the same pattern in its Python): digits
 * with an optional sign, decimal point and exponent; no thousands separators, no "nan" or "inf".
 */
export const NUMBER_PATTERN = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

type ValueKind = "missing" | "number" | "text";

/** A value's kind: null and blank text are missing; a finite JSON number or number-like text is a number. */
function kindOf(v: unknown): ValueKind {
  if (v === null || v === undefined) return "missing";
  if (typeof v === "string") return v.trim() === "" ? "missing" : NUMBER_PATTERN.test(v.trim()) ? "number" : "text";
  return typeof v === "number" && Number.isFinite(v) ? "number" : "text";
}

/** CSV rows as Python's csv module reads them (excel dialect): quoted fields, doubled quotes, blank lines skipped. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  const endRow = () => {
    row.push(field);
    if (!(row.length === 1 && row[0] === "")) rows.push(row);
    row = [];
    field = "";
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      endRow();
    } else field += c;
  }
  if (field !== "" || row.length > 0) endRow();
  return rows;
}

/** The records of inline data: CSV rows under its header, or the objects of a JSON array (anything else: none). */
export function dataRecords(
  format: "csv" | "json",
  text: string,
): { columns: string[]; records: Array<Record<string, unknown>> } {
  if (format === "csv") {
    const [header = [], ...rows] = parseCsv(text.trim());
    const records = rows.map((r) => Object.fromEntries(header.map((name, i) => [name, r[i] ?? null])));
    return { columns: [...new Set(header)], records };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { columns: [], records: [] };
  }
  const records = Array.isArray(value)
    ? value.filter((x): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x))
    : [];
  return { columns: [...new Set(records.flatMap((r) => Object.keys(r)))], records };
}

/**
 * The columns of inline data in order and what each holds: a number column has only numbers
 * among its values, a text column at least one other value, an empty column none. The data
 * agent's offline script classifies them the same way, so its plan and its chart agree.
 */
export function dataColumns(format: "csv" | "json", text: string): DataColumn[] {
  const { columns, records } = dataRecords(format, text);
  return columns.map((name) => {
    const kinds = new Set(records.map((r) => kindOf(r[name])));
    return { name, kind: kinds.has("text") ? "text" : kinds.has("number") ? "number" : "empty" };
  });
}
