import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

// Where the build finds what it compiles, and the V8 flags the services run with: shared by the
// ES module build (build.ts), the process bundles (build-process.ts) and the e2e harness.

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** One folder of sources and the folder its compiled files go to. */
export interface SourceRoot {
  readonly src: string;
  readonly out: string;
  /** Only the folder's own files (a role folder), or its whole tree (a package's src/). */
  readonly recursive: boolean;
}

/** Every package's src/ and every role folder (a services/ folder with a role.ts). */
export function sourceRoots(root = ROOT): SourceRoot[] {
  const roots: SourceRoot[] = [];
  for (const group of ["packages", "services"]) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = join(root, group, name);
      if (existsSync(join(dir, "src"))) roots.push({ src: join(dir, "src"), out: join(dir, "dist"), recursive: true });
      else if (existsSync(join(dir, "role.ts"))) roots.push({ src: dir, out: join(dir, "dist"), recursive: false });
    }
  }
  return roots;
}

/** The source root a file belongs to: a package's src/ tree, or a role folder's own files. */
export const rootOf = (roots: readonly SourceRoot[], file: string): SourceRoot | undefined =>
  roots.find((r) => (r.recursive ? file.startsWith(r.src + sep) : dirname(file) === r.src));

/**
 * The NODE_OPTIONS every service process starts with (V8 heap settings): deploy/node-options, the
 * file the image's entrypoint reads, without its comment lines.
 */
export function serviceNodeOptions(root = ROOT): string {
  return readFileSync(join(root, "deploy/node-options"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .join(" ")
    .trim();
}
