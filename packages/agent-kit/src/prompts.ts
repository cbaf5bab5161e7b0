import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { formatZodError } from "@agentmesh/contracts";
import { z } from "zod";

/**
 * A prompt contract: one component's instructions as a versioned JSON file
 * (`<role>.<op>.v<N>.json`), so they can be read, reviewed and replaced without touching code.
 */
export const PromptContract = z.object({
  /** `<role>.<op>`, e.g. `perception.perceive`. */
  id: z.string().regex(/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/),
  version: z.number().int().min(1),
  /** The component's responsibility in one line (the "prompt focus"). */
  focus: z.string().min(1).max(500),
  /** The instructions, as one string or a list of lines. */
  system: z
    .union([z.string().min(1), z.array(z.string()).min(1)])
    .transform((s) => (Array.isArray(s) ? s.join("\n") : s)),
});
export type PromptContract = z.infer<typeof PromptContract>;

const FILE = /^([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\.v(\d+)\.json$/;

/** A prompt contract with the file it came from. */
export interface LoadedContract extends PromptContract {
  readonly file: string;
}

/** Every contract of one folder, the highest version per id. Throws listing every bad file. */
function loadFolder(dir: string): Map<string, LoadedContract> {
  const found = new Map<string, LoadedContract>();
  const problems: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = FILE.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    let parsed: PromptContract;
    try {
      parsed = PromptContract.parse(JSON.parse(readFileSync(file, "utf8")));
    } catch (err) {
      problems.push(`${file}: ${err instanceof z.ZodError ? formatZodError(err) : (err as Error).message}`);
      continue;
    }
    if (parsed.id !== m[1] || parsed.version !== Number(m[2])) {
      problems.push(`${file}: the file name says ${m[1]} v${m[2]} but the file says ${parsed.id} v${parsed.version}`);
      continue;
    }
    const have = found.get(parsed.id);
    if (!have || have.version < parsed.version) found.set(parsed.id, { ...parsed, file });
  }
  if (problems.length) throw new Error(`invalid prompt contracts:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  return found;
}

/**
 * Loads the prompt contracts: the built-in folders (each role's own folder), then the override
 * folder (configuration), whose contract for an id replaces the built-in one whatever the
 * versions. Read once at start-up.
 */
export function loadPromptContracts(opts: {
  builtinDirs: readonly string[];
  overrideDir?: string | undefined;
}): ReadonlyMap<string, LoadedContract> {
  const all = new Map<string, LoadedContract>();
  for (const dir of opts.builtinDirs) for (const [id, c] of loadFolder(dir)) all.set(id, c);
  if (opts.overrideDir !== undefined) {
    if (!existsSync(opts.overrideDir)) throw new Error(`the prompt override folder ${opts.overrideDir} does not exist`);
    for (const [id, c] of loadFolder(opts.overrideDir)) all.set(id, c);
  }
  return all;
}

/** The recorded prompt version of a contract: `<id>/v<N>`. */
export const contractVersion = (c: PromptContract): string => `${c.id}/v${c.version}`.slice(0, 40);
