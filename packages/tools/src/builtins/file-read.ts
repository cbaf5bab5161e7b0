import { AgentmeshError, type RoleName } from "@agentmesh/contracts";
import { constants, realpathSync, type Stats } from "node:fs";
import { lstat, open, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../registry.js";

/** Options of the `file_read` tool. */
export interface FileReadOptions {
  /** Directories that may be read; resolved once at start-up. A relative path means the first one. */
  readonly roots: readonly string[];
  readonly allowedRoles: readonly RoleName[];
  /** Bytes returned at most; a larger file is cut and flagged (default 256 KiB). */
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
}

const Input = z.object({
  path: z
    .string()
    .min(1)
    .max(4096)
    .refine((p) => !p.includes("\0"), "path contains a NUL byte"),
});
const Output = z.object({
  path: z.string(),
  content: z.string(),
  bytes: z.number().int().nonnegative(),
  truncated: z.boolean(),
});

/** Test seam: runs between the path checks and the open, where a swap would happen. */
export interface OpenHooks {
  readonly afterCheck?: () => Promise<void>;
}

const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
const denied = (why: string) => new AgentmeshError("permission_denied", why);

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/**
 * Opens `requested` for reading only if it is a regular file inside one of `roots`, reached
 * without any symbolic link. The path is checked first (no `..`, no link on the way), then the
 * file is opened with O_NOFOLLOW, and then the OPENED file is checked again: the real path of
 * what was opened must lie inside the root and name the same device and inode as the handle.
 * So a file or directory swapped for a link after the first check is still refused.
 */
export async function readConfined(
  roots: readonly string[],
  requested: string,
  maxBytes: number,
  hooks: OpenHooks = {},
): Promise<{ path: string; content: string; bytes: number; truncated: boolean }> {
  const parts = requested.split(/[\\/]+/);
  if (parts.includes("..")) throw denied("paths may not contain '..'");
  const root = isAbsolute(requested) ? roots.find((r) => inside(r, requested)) : roots[0];
  if (root === undefined) throw denied("the path is outside the readable roots");
  const full = isAbsolute(requested) ? requested : join(root, requested);
  if (!inside(root, full) || full === root) throw denied("the path is outside the readable roots");

  // walk every component below the root with lstat: a link anywhere is refused, not followed
  let at = root;
  for (const part of relative(root, full).split(sep)) {
    at = join(at, part);
    let st: Stats;
    try {
      st = await lstat(at);
    } catch (err) {
      if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR")
        throw new AgentmeshError("invalid_tool_input", `no such file: ${requested}`);
      throw denied(`cannot inspect the path (${errno(err) ?? "error"})`);
    }
    if (st.isSymbolicLink()) throw denied("the path goes through a symbolic link, which is not followed");
  }
  await hooks.afterCheck?.();

  let fh;
  try {
    // O_NONBLOCK: opening a FIFO must not hang the call; it is then refused as not a regular file
    fh = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    if (errno(err) === "ELOOP") throw denied("the file is a symbolic link, which is not followed");
    if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR")
      throw new AgentmeshError("invalid_tool_input", `no such file: ${requested}`);
    throw denied(`cannot open the file (${errno(err) ?? "error"})`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new AgentmeshError("invalid_tool_input", "not a regular file");
    // the check that matters: where is the file we actually hold?
    let real: string;
    let again: Stats;
    try {
      real = await realpath(full);
      again = await stat(real);
    } catch {
      throw denied("the file changed while it was being opened");
    }
    if (!inside(root, real) || again.dev !== st.dev || again.ino !== st.ino)
      throw denied("the opened file is not inside the readable roots");
    const want = Math.min(st.size, maxBytes);
    const buf = Buffer.alloc(want + 1);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const truncated = got > maxBytes;
    const bytes = Math.min(got, maxBytes);
    return { path: relative(root, real) || ".", content: buf.subarray(0, bytes).toString("utf8"), bytes, truncated };
  } finally {
    await fh.close();
  }
}

/** The `file_read` tool over the given roots. Throws at creation if a root does not exist. */
export function createFileReadTool(opts: FileReadOptions): ToolDefinition<typeof Input, typeof Output> {
  if (opts.roots.length === 0) throw new Error("file_read needs at least one root");
  // roots are resolved once, so a root that is itself a link is fixed at start-up, not per call
  const roots = opts.roots.map((r) => realpathSync(r));
  const maxBytes = opts.maxBytes ?? 256 * 1024;
  return defineTool({
    name: "file_read",
    description:
      "Read a text file from the configured document folders. `path` is relative to the first folder (or absolute inside one). Links are not followed.",
    input: Input,
    output: Output,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 3000,
    async execute(input) {
      return readConfined(roots, input.path, maxBytes);
    },
  });
}
