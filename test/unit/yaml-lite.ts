/**
 * A small YAML reader for the repository's own deployment files (docker-compose.yml, deploy/),
 * used by test/unit/deploy.test.ts. The `yaml` package is only a transitive dependency here and
 * is not importable from the root, and the root takes no new dependencies.
 *
 * Supported: `---` documents, comments, block mappings and sequences (including `- key: v`
 * items), plain scalars (also folded over lines), single/double-quoted scalars on one line,
 * one-line flow collections (`[a, "b"]`,
 * `{ k: v }`), and block scalars (`|`, `|-`, `>`, `>-`). Anything else (anchors, aliases, tags,
 * multi-line flow collections) throws, so a file outside the subset fails loudly, never quietly.
 */

/** A parsed YAML value. */
export type Yaml = string | number | boolean | null | Yaml[] | { [key: string]: Yaml };

interface Line {
  readonly indent: number;
  readonly text: string;
  readonly n: number;
}

class YamlLiteError extends Error {
  constructor(message: string, line?: number) {
    super(line === undefined ? `yaml-lite: ${message}` : `yaml-lite: line ${line}: ${message}`);
    this.name = "YamlLiteError";
  }
}

/** Index of the first `#` that starts a comment (outside quotes, after a space or at 0), or -1. */
function commentStart(s: string): number {
  let quote: string | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      if (i === 0 || /[\s[{,:-]/.test(s[i - 1] ?? "")) quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(s[i - 1] ?? ""))) {
      return i;
    }
  }
  return -1;
}

function stripComment(s: string): string {
  const at = commentStart(s);
  return (at < 0 ? s : s.slice(0, at)).trimEnd();
}

/** Index of the `:` that separates a mapping key from its value (outside quotes/brackets), or -1. */
function keyColon(s: string): number {
  let quote: string | null = null;
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s[{,]/.test(s[i - 1] ?? ""))) {
      quote = c;
    } else if (c === "[" || c === "{") {
      depth++;
    } else if (c === "]" || c === "}") {
      depth--;
    } else if (c === ":" && depth === 0 && (i + 1 === s.length || s[i + 1] === " ")) {
      return i;
    }
  }
  return -1;
}

function plainScalar(s: string, n?: number): Yaml {
  if (/^[&*!]/.test(s)) throw new YamlLiteError(`anchors, aliases and tags are not supported: ${s}`, n);
  if (s === "" || s === "~" || s === "null") return null;
  if (s === "true") return true;
  if (s === "false") return false;
  if (/^-?\d+(?:\.\d+)?$/.test(s)) return Number(s);
  return s;
}

function unquote(s: string, n?: number): string {
  if (s.startsWith("'")) {
    if (!s.endsWith("'") || s.length < 2) throw new YamlLiteError(`unterminated string ${s}`, n);
    return s.slice(1, -1).replaceAll("''", "'");
  }
  if (!s.endsWith('"') || s.length < 2) throw new YamlLiteError(`unterminated string ${s}`, n);
  return JSON.parse(s) as string;
}

/** Parses a one-line flow collection or scalar. */
function flow(src: string, n: number): Yaml {
  let i = 0;
  const ws = () => {
    while (src[i] === " ") i++;
  };
  const fail = (what: string): never => {
    throw new YamlLiteError(`${what} at column ${i + 1} in ${src}`, n);
  };
  const scalar = (stops: string): Yaml => {
    ws();
    const q = src[i];
    if (q === '"' || q === "'") {
      let j = i + 1;
      for (; j < src.length; j++) {
        if (q === '"' && src[j] === "\\") j++;
        else if (q === "'" && src[j] === "'" && src[j + 1] === "'") j++;
        else if (src[j] === q) break;
      }
      const text = src.slice(i, j + 1);
      i = j + 1;
      return unquote(text, n);
    }
    const start = i;
    while (i < src.length && !stops.includes(src[i] ?? "")) i++;
    return plainScalar(src.slice(start, i).trim(), n);
  };
  const value = (stops: string): Yaml => {
    ws();
    if (src[i] === "[") {
      i++;
      const out: Yaml[] = [];
      ws();
      if (src[i] === "]") {
        i++;
        return out;
      }
      for (;;) {
        out.push(value(",]"));
        ws();
        if (src[i] === ",") i++;
        else if (src[i] === "]") {
          i++;
          return out;
        } else fail("expected , or ]");
      }
    }
    if (src[i] === "{") {
      i++;
      const out: { [key: string]: Yaml } = {};
      ws();
      if (src[i] === "}") {
        i++;
        return out;
      }
      for (;;) {
        const key = scalar(":,}");
        if (src[i] !== ":") fail("expected :");
        i++;
        out[String(key)] = value(",}");
        ws();
        if (src[i] === ",") i++;
        else if (src[i] === "}") {
          i++;
          return out;
        } else fail("expected , or }");
      }
    }
    return scalar(stops);
  };
  const v = value("");
  ws();
  if (i < src.length) fail("unexpected text");
  return v;
}

class Parser {
  private pos = 0;

  constructor(private readonly raw: readonly string[], private readonly offset: number) {}

  /** The next line with content, or null. */
  private peek(): Line | null {
    while (this.pos < this.raw.length) {
      const rawLine = this.raw[this.pos] ?? "";
      if (rawLine.includes("\t") && /^\s*\t/.test(rawLine)) throw new YamlLiteError("tab indentation", this.offset + this.pos + 1);
      const text = stripComment(rawLine);
      if (text.trim() !== "") {
        const indent = text.length - text.trimStart().length;
        return { indent, text: text.trimStart(), n: this.offset + this.pos + 1 };
      }
      this.pos++;
    }
    return null;
  }

  document(): Yaml {
    const v = this.block(0);
    const rest = this.peek();
    if (rest) throw new YamlLiteError(`unexpected indentation`, rest.n);
    return v;
  }

  private block(minIndent: number): Yaml {
    const line = this.peek();
    if (!line || line.indent < minIndent) return null;
    return this.isItem(line.text) ? this.sequence(line.indent) : this.mapping(line.indent, null);
  }

  private isItem(text: string): boolean {
    return text === "-" || text.startsWith("- ");
  }

  /** A mapping at `indent`; `first` is an already-consumed first line (from a `- key: v` item). */
  private mapping(indent: number, first: Line | null): Yaml {
    const out: { [key: string]: Yaml } = {};
    let line: Line | null = first;
    for (;;) {
      if (!line) {
        const next = this.peek();
        if (!next || next.indent !== indent || this.isItem(next.text)) break;
        line = next;
        this.pos++;
      }
      const at = keyColon(line.text);
      if (at < 0) throw new YamlLiteError(`expected "key: value", got ${line.text}`, line.n);
      const rawKey = line.text.slice(0, at).trim();
      const key = rawKey.startsWith('"') || rawKey.startsWith("'") ? unquote(rawKey, line.n) : rawKey;
      if (key === "<<") throw new YamlLiteError("merge keys are not supported", line.n);
      if (Object.hasOwn(out, key)) throw new YamlLiteError(`duplicate key ${key}`, line.n);
      out[key] = this.value(line.text.slice(at + 1).trim(), indent, line.n);
      line = null;
    }
    return out;
  }

  private sequence(indent: number): Yaml[] {
    const out: Yaml[] = [];
    for (;;) {
      const line = this.peek();
      if (!line || line.indent !== indent || !this.isItem(line.text)) return out;
      this.pos++;
      const rest = line.text.slice(1).trimStart();
      if (rest === "") {
        out.push(this.block(indent + 1));
      } else if (keyColon(rest) >= 0 && !rest.startsWith("[") && !rest.startsWith("{")) {
        const inner = indent + (line.text.length - rest.length);
        out.push(this.mapping(inner, { indent: inner, text: rest, n: line.n }));
      } else {
        out.push(this.value(rest, indent, line.n));
      }
    }
  }

  /** The value after `key:` or `- `, whose owner sits at `indent`. */
  private value(rest: string, indent: number, n: number): Yaml {
    if (rest === "") {
      const next = this.peek();
      if (next && next.indent > indent) return this.block(indent + 1);
      if (next && next.indent === indent && this.isItem(next.text)) return this.sequence(indent);
      return null;
    }
    if (/^[|>][-+]?$/.test(rest)) return this.blockScalar(rest, indent);
    if (rest.startsWith('"') || rest.startsWith("'") || rest.startsWith("[") || rest.startsWith("{")) return flow(rest, n);
    // A plain scalar continues on more-indented lines, folded with spaces.
    const parts = [rest];
    for (let next = this.peek(); next && next.indent > indent; next = this.peek()) {
      parts.push(next.text);
      this.pos++;
    }
    return plainScalar(parts.join(" "), n);
  }

  private blockScalar(header: string, indent: number): string {
    const lines: string[] = [];
    let contentIndent = -1;
    while (this.pos < this.raw.length) {
      const rawLine = this.raw[this.pos] ?? "";
      const lineIndent = rawLine.length - rawLine.trimStart().length;
      if (rawLine.trim() !== "") {
        if (lineIndent <= indent) break;
        if (contentIndent < 0) contentIndent = lineIndent;
        if (lineIndent < contentIndent) break;
      }
      lines.push(rawLine.trim() === "" ? "" : rawLine.slice(contentIndent));
      this.pos++;
    }
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    const body = header.startsWith(">") ? lines.join(" ").replace(/ {2,}/g, " ") : lines.join("\n");
    if (header.endsWith("-")) return body;
    return `${body}\n`;
  }
}

/** Parses every document in a YAML stream. */
export function parseYamlDocuments(source: string): Yaml[] {
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  const docs: Yaml[] = [];
  let start = 0;
  const flush = (end: number) => {
    const chunk = lines.slice(start, end);
    if (chunk.some((l) => stripComment(l).trim() !== "")) docs.push(new Parser(chunk, start).document());
  };
  lines.forEach((l, i) => {
    if (/^---\s*(?:#.*)?$/.test(l)) {
      flush(i);
      start = i + 1;
    } else if (l.startsWith("---") || l.startsWith("...")) {
      throw new YamlLiteError("document markers with content are not supported", i + 1);
    }
  });
  flush(lines.length);
  return docs;
}

/** Parses a single-document YAML file. */
export function parseYaml(source: string): Yaml {
  const docs = parseYamlDocuments(source);
  if (docs.length !== 1) throw new YamlLiteError(`expected one document, found ${docs.length}`);
  return docs[0] ?? null;
}
