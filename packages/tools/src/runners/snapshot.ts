import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { lstat, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { killSandbox } from "./sandbox-process.js";

/** What a snapshot depends on: a different Node, Pyodide or child script makes a different file. */
export interface SnapshotKey {
  readonly nodeVersion: string;
  readonly pyodideDir: string;
  readonly childScript: string;
}

function keyOf(k: SnapshotKey): string {
  const h = createHash("sha256").update(k.nodeVersion);
  for (const f of [join(k.pyodideDir, "package.json"), join(k.pyodideDir, "pyodide.asm.wasm"), k.childScript])
    h.update(readFileSync(f));
  return h.digest("hex").slice(0, 24);
}

// A cache directory is trusted only if it is ours and nobody else can write into it: a
// snapshot planted by another user would become the interpreter every call starts from.
async function privateDir(dir: string): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await lstat(dir);
  const uid = process.getuid?.();
  return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o077) === 0;
}

async function trustedFile(file: string): Promise<boolean> {
  try {
    const st = await lstat(file);
    const uid = process.getuid?.();
    return st.isFile() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0 && st.size > 0;
  } catch {
    return false;
  }
}

/**
 * The path of a memory snapshot of a freshly started interpreter (no user code has run in it),
 * made once by `make` (a sandboxed process writing `snapshot.bin` into the directory it is
 * given) and kept in a private cache under `scratchDir`, so that later runners and processes
 * skip the ~4 s it takes. Null when no snapshot could be made: interpreters then start cold.
 */
export async function ensureSnapshot(
  scratchDir: string,
  key: SnapshotKey,
  make: (outDir: string) => Promise<ChildProcessWithoutNullStreams>,
  timeoutMs: number,
): Promise<string | null> {
  const uid = process.getuid?.() ?? "user";
  const cache = join(scratchDir, `agentmesh-pyodide-${uid}`);
  if (!(await privateDir(cache))) return null;
  const file = join(cache, `snapshot-${keyOf(key)}.bin`);
  if (await trustedFile(file)) return file;
  const work = await mkdtemp(join(cache, "make-"));
  try {
    const child = await make(work);
    child.stdout.resume();
    child.stderr.resume();
    const timer = setTimeout(() => killSandbox(child), timeoutMs);
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearTimeout(timer);
    const made = join(work, "snapshot.bin");
    if (code !== 0 || !(await trustedFile(made))) return null;
    // rename is atomic: a runner making the same snapshot at the same time just replaces it
    await rename(made, file);
    return file;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
