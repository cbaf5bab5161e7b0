import { AgentmeshError, formatZodError } from "@agentmesh/contracts";
import type { Dirent } from "node:fs";
import { lstat, readdir, realpath } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { z } from "zod";
import { readConfined } from "../builtins/file-read.js";

// Reading a graph of triples (JSON lines) from a file or a folder, bounded in every dimension:
// a graph file is data a deployment mounts, so a bad or oversized one must cost a log line, not
// the role's start-up or its memory.

/** `.jsonl` files read from a folder at most. */
export const GRAPH_MAX_FILES = 256;
/** Bytes read from all files together at most. */
export const GRAPH_MAX_BYTES = 8 * 1024 * 1024;
/** Characters of one line at most; a longer line is a bad line. */
export const GRAPH_MAX_LINE_CHARS = 4096;
/**
 * Triples kept at most. Queries run on the caller's event loop, and their cost grows with the
 * triples a common word matches: at this size the worst question (words found in every triple)
 * took 20-180 ms on a shared machine (`knowledge-graph.test.ts` holds it under 400 ms). A larger
 * graph would want the index in a worker thread, as corpus_search has it.
 */
export const GRAPH_MAX_TRIPLES = 10_000;
/** Folder levels walked below the graph folder. */
const MAX_DEPTH = 8;
/** Problems listed one by one; beyond these only the count grows. */
const MAX_LISTED_ISSUES = 100;
/** Lines parsed between two yields to the event loop. */
const LINES_PER_SLICE = 1000;
/** A triple's `source` as a path (`file:line`) and as a URL: the lengths a citation may carry. */
const MAX_PATH_SOURCE_CHARS = 300;
const MAX_URL_SOURCE_CHARS = 2000;

/** The bounds of one load; each defaults to its `GRAPH_MAX_*` constant and may only be lowered. */
export interface GraphLimits {
  readonly maxFiles: number;
  readonly maxBytes: number;
  readonly maxLineChars: number;
  readonly maxTriples: number;
}

/** One fact of the graph, with where it comes from. */
export interface GraphTriple {
  readonly subject: string;
  readonly predicate: string;
  readonly object: string;
  /** The triple's own `source` (a URL or `file:line`), or `<graph file>:<line>` when it has none. */
  readonly source: string;
}

/** A line, file or limit problem met while loading: `where` is `<file>:<line>`, `<file>` or the graph path. */
export interface GraphIssue {
  readonly where: string;
  readonly message: string;
}

/** What a load produced: the triples in file and line order, and what was skipped. */
export interface LoadedTriples {
  readonly triples: readonly GraphTriple[];
  /** The first problems, in the order met (at most 100). */
  readonly issues: readonly GraphIssue[];
  /** Every problem, listed or not. */
  readonly issueCount: number;
}

const Field = z.string().trim().min(1);
const RawTriple = z.object({ subject: Field, predicate: Field, object: Field, source: z.string().trim().nullish() });

const DEFAULT_LIMITS: GraphLimits = {
  maxFiles: GRAPH_MAX_FILES,
  maxBytes: GRAPH_MAX_BYTES,
  maxLineChars: GRAPH_MAX_LINE_CHARS,
  maxTriples: GRAPH_MAX_TRIPLES,
};

/** True when `source` is an http(s) URL, which a citation carries as `url` rather than `path`. */
export function isUrlSource(source: string): boolean {
  return /^https?:\/\//i.test(source) && URL.canParse(source);
}

class Collector {
  readonly triples: GraphTriple[] = [];
  readonly issues: GraphIssue[] = [];
  issueCount = 0;
  bytes = 0;
  full = false;

  constructor(readonly limits: GraphLimits) {}

  report(where: string, message: string): void {
    this.issueCount++;
    if (this.issues.length < MAX_LISTED_ISSUES) this.issues.push({ where, message });
  }
}

/**
 * Reads the triples of a `.jsonl` file, or of every `.jsonl` file below a folder (sorted by
 * path, hidden entries skipped). Each non-blank line is one JSON object `{subject, predicate,
 * object, source?}`; a line that is not is reported with its `<file>:<line>` and skipped. Links
 * are never followed (as `file_read`: the path itself is resolved once, anything below it that is
 * a link is skipped). Past a limit the rest is not read and one issue says so. Yields to the event
 * loop between slices of lines, so a large graph does not stall the process that loads it.
 * Throws `invalid_config` only when `path` names no readable file or folder.
 */
export async function loadTriples(path: string, limits: Partial<GraphLimits> = {}): Promise<LoadedTriples> {
  const out = new Collector(lowered(limits));
  const { root, files } = await listGraphFiles(path, out);
  for (const file of files) {
    if (out.full) break;
    await readGraphFile(root, file, out);
  }
  return { triples: out.triples, issues: out.issues, issueCount: out.issueCount };
}

function lowered(limits: Partial<GraphLimits>): GraphLimits {
  const pick = (k: keyof GraphLimits): number =>
    Math.max(0, Math.min(DEFAULT_LIMITS[k], limits[k] ?? DEFAULT_LIMITS[k]));
  return {
    maxFiles: pick("maxFiles"),
    maxBytes: pick("maxBytes"),
    maxLineChars: pick("maxLineChars"),
    maxTriples: pick("maxTriples"),
  };
}

/** The graph's root folder (real path) and its files relative to it, in the order they are read. */
async function listGraphFiles(path: string, out: Collector): Promise<{ root: string; files: string[] }> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    throw new AgentmeshError("invalid_config", `the knowledge graph path ${path} does not exist or cannot be read`);
  }
  const st = await lstat(real);
  if (st.isFile()) return { root: dirname(real), files: [basename(real)] };
  if (!st.isDirectory())
    throw new AgentmeshError("invalid_config", `the knowledge graph path ${path} is neither a file nor a folder`);
  const files: string[] = [];
  await walk(real, real, 0, files, out);
  if (files.length > out.limits.maxFiles) {
    out.report(
      path,
      `more than ${out.limits.maxFiles} .jsonl files; only the first ${out.limits.maxFiles} (by path) were read`,
    );
  }
  return { root: real, files: files.slice(0, out.limits.maxFiles) };
}

async function walk(root: string, dir: string, depth: number, files: string[], out: Collector): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    out.report(relative(root, dir) || ".", "the folder cannot be read; skipped");
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    // one past the limit is enough to know that files were left out
    if (files.length > out.limits.maxFiles || e.name.startsWith(".")) continue;
    const full = join(dir, e.name);
    const rel = relative(root, full).split(sep).join("/");
    if (e.isSymbolicLink()) out.report(rel, "a symbolic link, which is not followed; skipped");
    else if (e.isDirectory()) {
      if (depth < MAX_DEPTH) await walk(root, full, depth + 1, files, out);
      else out.report(rel, `deeper than ${MAX_DEPTH} folders; skipped`);
    } else if (e.isFile() && e.name.endsWith(".jsonl")) files.push(rel);
  }
}

async function readGraphFile(root: string, rel: string, out: Collector): Promise<void> {
  const budget = out.limits.maxBytes - out.bytes;
  let read: Awaited<ReturnType<typeof readConfined>>;
  try {
    read = await readConfined([root], rel, budget);
  } catch (err) {
    out.report(rel, `${err instanceof Error ? err.message : String(err)}; skipped`);
    return;
  }
  if (read.truncated) {
    out.report(
      rel,
      `reading it would pass the ${out.limits.maxBytes}-byte budget of the graph; it and the files after it were not read`,
    );
    out.full = true;
    return;
  }
  out.bytes += read.bytes;
  const lines = read.content.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (i > 0 && i % LINES_PER_SLICE === 0) await yieldToLoop();
    const line = (lines[i] ?? "").replace(/\r$/, "");
    if (line.trim() === "") continue;
    if (out.triples.length >= out.limits.maxTriples) {
      out.report(`${rel}:${i + 1}`, `more than ${out.limits.maxTriples} triples; the rest of the graph was not read`);
      out.full = true;
      return;
    }
    parseLine(line, `${rel}:${i + 1}`, out);
  }
}

function parseLine(line: string, where: string, out: Collector): void {
  if (line.length > out.limits.maxLineChars)
    return out.report(where, `the line is longer than ${out.limits.maxLineChars} characters; skipped`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return out.report(where, "not a JSON value; skipped");
  }
  const parsed = RawTriple.safeParse(value);
  if (!parsed.success) return out.report(where, `not a triple: ${formatZodError(parsed.error, 300)}; skipped`);
  const { subject, predicate, object } = parsed.data;
  const source = parsed.data.source || where;
  const max = isUrlSource(source) ? MAX_URL_SOURCE_CHARS : MAX_PATH_SOURCE_CHARS;
  if (source.length > max) return out.report(where, `the source is longer than ${max} characters; skipped`);
  out.triples.push({ subject, predicate, object, source });
}
