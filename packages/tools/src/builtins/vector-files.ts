import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CorpusVectors } from "./corpus-vectors.js";

// The corpus vectors on disk, so a restarted process (or another on the same volume) does not
// embed an unchanged corpus again. One file per embeddings model and corpus version: a JSON
// header line, then the vectors as float32 in the platform's byte order (the header names it).

/** Vectors saved and loaded by embeddings model and corpus version. */
export interface VectorFiles {
  /** The saved vectors of this model and version, or null when there are none (or they do not check out). */
  load(model: string, version: string): Promise<CorpusVectors | null>;
  /** Saves the vectors (written to a temporary file, then renamed into place). */
  save(vectors: CorpusVectors): Promise<void>;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const ORDER = LITTLE_ENDIAN ? "le" : "be";

interface Header {
  readonly format: 1;
  readonly model: string;
  readonly version: string;
  readonly dim: number;
  readonly count: number;
  readonly order: "le" | "be";
}

const fileOf = (dir: string, model: string, version: string) =>
  join(dir, `${createHash("sha256").update(`${model}\u0000${version}`).digest("hex").slice(0, 32)}.vectors`);

function headerOf(bytes: Buffer): { header: Header; at: number } | null {
  const at = bytes.indexOf(10);
  if (at < 0 || at > 4096) return null;
  try {
    return { header: JSON.parse(bytes.subarray(0, at).toString("utf8")) as Header, at: at + 1 };
  } catch {
    return null;
  }
}

/** The vector files of a folder (created on the first save). */
export function createVectorFiles(dir: string): VectorFiles {
  return {
    async load(model, version) {
      let bytes: Buffer;
      try {
        bytes = await readFile(fileOf(dir, model, version));
      } catch {
        return null;
      }
      const parsed = headerOf(bytes);
      if (!parsed) return null;
      const { header: h, at } = parsed;
      const size = h.count * h.dim * Float32Array.BYTES_PER_ELEMENT;
      const fits = Number.isInteger(h.count) && Number.isInteger(h.dim) && h.count >= 0 && h.dim >= 0;
      if (h.format !== 1 || h.model !== model || h.version !== version || h.order !== ORDER || !fits) return null;
      if (bytes.length - at !== size) return null;
      const data = new SharedArrayBuffer(size);
      new Uint8Array(data).set(bytes.subarray(at));
      return { version, model, dim: h.dim, count: h.count, data };
    },
    async save(v) {
      const header: Header = {
        format: 1,
        model: v.model,
        version: v.version,
        dim: v.dim,
        count: v.count,
        order: ORDER,
      };
      const file = fileOf(dir, v.model, v.version);
      const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
      await mkdir(dir, { recursive: true });
      try {
        await writeFile(
          tmp,
          Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), Buffer.from(new Uint8Array(v.data))]),
        );
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },
  };
}
