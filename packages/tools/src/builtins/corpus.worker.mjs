// Worker entry of `corpus_search` (plain JS: no TypeScript loader in workers). Reading, chunking
// and BM25 indexing a corpus is synchronous CPU work, so it lives here, off the agent's event
// loop; the pool terminates the worker at the call's deadline. The index is kept between calls
// and rebuilt when a file's size or mtime changes.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { parentPort } from "node:worker_threads";
import MiniSearch from "minisearch";

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
  const fingerprint = files.map((f) => `${f.path}:${f.size}:${f.mtime}`).join("|");
  const hit = cache.get(dir);
  if (hit && hit.fingerprint === fingerprint) return hit.index;
  const index = new MiniSearch({
    fields: ["text", "title"],
    storeFields: ["path", "text"],
    searchOptions: { boost: { title: 2 }, prefix: (t) => t.length > 3, fuzzy: (t) => (t.length > 5 ? 0.1 : 0) },
  });
  let id = 0;
  const docs = [];
  for (const f of files) {
    let text;
    try {
      text = readFileSync(f.full, "utf8");
    } catch {
      continue;
    }
    const title = f.path.replace(/\.[^.]+$/, "").replace(/[_\-/]+/g, " ");
    for (const passage of chunk(text, opts.passageChars)) docs.push({ id: id++, path: f.path, title, text: passage });
  }
  index.addAll(docs);
  cache.set(dir, { fingerprint, index });
  return index;
}

parentPort.on("message", ({ id, payload }) => {
  try {
    const { dir, query, limit, ...opts } = payload;
    const hits = indexFor(dir, opts).search(query, { combineWith: "OR" }).slice(0, limit);
    const results = hits.map((h) => ({ path: h.path, passage: h.text, score: Math.round(h.score * 1000) / 1000 }));
    parentPort.postMessage({ id, ok: true, value: { results } });
  } catch (err) {
    parentPort.postMessage({ id, ok: false, code: "tool_error", message: String(err?.message ?? err).slice(0, 1000) });
  }
});
