// Worker entry of `corpus_search` (plain JS: no TypeScript loader in workers). Reading, chunking
// and BM25 indexing a corpus, and the exact cosine over its passage vectors, are synchronous CPU
// work, so they live here, off the agent's event loop; the pool terminates the worker at the
// call's deadline. The index is kept between calls and rebuilt when a file's size or mtime
// changes; the corpus version is a hash of the chunking settings and every file's path and
// content, so a touched but unchanged file keeps its version (and its cached vectors).
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { parentPort } from "node:worker_threads";
import MiniSearch from "minisearch";
import { FUSION_DEPTH, cosineTop, fuseRankings } from "./hybrid.mjs";

const cache = new Map();

// Files under `dir`, links skipped (never followed), bounded in count and size.
function listFiles(dir, opts) {
  const files = [];
  const walk = (d, depth) => {
    if (depth > 20) return;
    let names;
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (files.length >= opts.maxFiles || name.startsWith(".")) continue;
      const p = join(d, name);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink()) continue;
      if (st.isDirectory()) walk(p, depth + 1);
      else if (st.isFile() && opts.extensions.includes(extname(name).toLowerCase()) && st.size <= opts.maxFileBytes) {
        files.push({ path: relative(dir, p), full: p, size: st.size, mtime: st.mtimeMs });
      }
    }
  };
  walk(dir, 0);
  return files;
}

// Passages of about `size` characters made of whole paragraphs; a paragraph longer than that
// is cut at sentence ends, and a sentence longer than that at the size itself.
export function chunk(text, size) {
  const pieces = [];
  for (const para of text.split(/\n\s*\n/)) {
    const p = para.replace(/\s+/g, " ").trim();
    if (!p) continue;
    if (p.length <= size) pieces.push(p);
    else {
      for (const s of p.match(/[^.!?]+[.!?]*\s*/g) ?? [p]) {
        for (let i = 0; i < s.length; i += size) pieces.push(s.slice(i, i + size).trim());
      }
    }
  }
  const passages = [];
  let cur = "";
  for (const piece of pieces) {
    // paragraphs stay apart, so a reader can tell a heading from the prose under it
    if (cur && cur.length + 2 + piece.length > size) {
      passages.push(cur);
      cur = piece;
    } else cur = cur ? `${cur}\n\n${piece}` : piece;
  }
  if (cur) passages.push(cur);
  return passages;
}

function indexFor(dir, opts) {
  const files = listFiles(dir, opts);
  const fingerprint = `${opts.passageChars}|${files.map((f) => `${f.path}:${f.size}:${f.mtime}`).join("|")}`;
  const hit = cache.get(dir);
  if (hit && hit.fingerprint === fingerprint) return hit;
  const index = new MiniSearch({
    fields: ["text", "title"],
    storeFields: ["path", "text", "passage_id"],
    searchOptions: { boost: { title: 2 }, prefix: (t) => t.length > 3, fuzzy: (t) => (t.length > 5 ? 0.1 : 0) },
  });
  const hash = createHash("sha256").update(`passage-chars:${opts.passageChars}\0`);
  const docs = [];
  for (const f of files) {
    let text;
    try {
      text = readFileSync(f.full, "utf8");
    } catch {
      continue;
    }
    hash.update(`${f.path}\0${text}\0`);
    const title = f.path.replace(/\.[^.]+$/, "").replace(/[_\-/]+/g, " ");
    chunk(text, opts.passageChars).forEach((passage, n) =>
      docs.push({ id: docs.length, passage_id: `${f.path}#${n + 1}`, path: f.path, title, text: passage }),
    );
  }
  index.addAll(docs);
  const entry = { fingerprint, index, docs, version: hash.digest("hex").slice(0, 32) };
  cache.set(dir, entry);
  return entry;
}

const round = (n, places) => Math.round(n * 10 ** places) / 10 ** places;

// BM25 alone: minisearch's ranking, its score rounded to 3 places.
function bm25(entry, query, limit) {
  return entry.index
    .search(query, { combineWith: "OR" })
    .slice(0, limit)
    .map((h, i) => ({
      id: h.passage_id,
      path: h.path,
      passage: h.text,
      score: round(h.score, 3),
      bm25_rank: i + 1,
      vector_rank: null,
      cosine: null,
    }));
}

// BM25 and exact cosine, each cut to its best FUSION_DEPTH, fused by reciprocal rank
// (hybrid.mjs); the score is the fused one. Vectors of another version are refused as stale.
function hybrid(entry, query, limit, vectors, queryVector) {
  if (vectors.version !== entry.version || vectors.count !== entry.docs.length) return null;
  const lexical = entry.index.search(query, { combineWith: "OR" }).slice(0, FUSION_DEPTH);
  const semantic = cosineTop(new Float32Array(vectors.data), vectors.dim, queryVector, FUSION_DEPTH);
  const cosineOf = new Map(semantic.map((h) => [h.row, h.cosine]));
  const fused = fuseRankings([lexical.map((h) => h.id), semantic.map((h) => h.row)]);
  return fused.slice(0, limit).map((f) => {
    const doc = entry.docs[f.id];
    const cosine = cosineOf.get(f.id);
    return {
      id: doc.passage_id,
      path: doc.path,
      passage: doc.text,
      score: round(f.score, 6),
      bm25_rank: f.ranks[0],
      vector_rank: f.ranks[1],
      cosine: cosine === undefined ? null : round(cosine, 4),
    };
  });
}

// Messages: `search` (BM25), `version` (the corpus version), `passages` (the version and the
// text each passage is embedded from), `hybrid` (BM25 and cosine fused; `stale: true` when the vectors are of another version).
function answer(payload) {
  const { op = "search", dir, query, limit, vectors, queryVector, ...opts } = payload;
  const entry = indexFor(dir, opts);
  if (op === "version") return { version: entry.version, count: entry.docs.length };
  if (op === "passages") return { version: entry.version, passages: entry.docs.map((d) => `${d.title}\n\n${d.text}`) };
  if (op === "hybrid") {
    const results = hybrid(entry, query, limit, vectors, queryVector);
    return results === null ? { version: entry.version, stale: true } : { version: entry.version, results };
  }
  return { version: entry.version, results: bm25(entry, query, limit) };
}

parentPort.on("message", ({ id, payload }) => {
  try {
    parentPort.postMessage({ id, ok: true, value: answer(payload) });
  } catch (err) {
    parentPort.postMessage({ id, ok: false, code: "tool_error", message: String(err?.message ?? err).slice(0, 1000) });
  }
});
