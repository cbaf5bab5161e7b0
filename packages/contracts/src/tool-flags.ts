import { z } from "zod";

/**
 * The dangerous-pattern list. Every tool call's arguments are scanned and the names that
 * match are recorded (tool performance records, `tool_call` and `tool_result` events); nothing is
 * allowed or refused because of them. A keyword list cannot be a boundary (`globalThis["ev"+"al"]`,
 * `getattr(__builtins__, "op"+"en")` pass it), so isolation comes from the sandboxes, the role
 * allow-lists and the session's tool policy, never from here. It lives in the contracts because
 * both the workflows (for `tool_call` events) and the executor compute it.
 */
export const DANGEROUS_PATTERNS = [
  { name: "import", re: /\bimport\b|\bfrom\s+[\w.]+\s+import\b/ },
  { name: "__import__", re: /__import__/ },
  { name: "open", re: /\bopen\s*\(/ },
  { name: "file", re: /\bfile\s*\(/ },
  { name: "exec", re: /\bexec\s*\(/ },
  { name: "eval", re: /\beval\s*\(/ },
  { name: "compile", re: /\bcompile\s*\(/ },
  { name: "input", re: /\b(?:raw_)?input\s*\(/ },
  { name: "require", re: /\brequire\s*\(/ },
  { name: "process", re: /\bprocess\s*\./ },
  { name: "subprocess", re: /\bsubprocess\b|\bos\.(?:system|popen|exec\w*|spawn\w*)\b/ },
  { name: "path_traversal", re: /(?:^|[\\/])\.\.(?:[\\/]|$)/ },
  { name: "rm_rf", re: /\brm\s+-[a-z]*r[a-z]*f|\brm\s+-[a-z]*f[a-z]*r/i },
  { name: "format_disk", re: /\bformat\s+[a-z]:|\bmkfs(?:\.\w+)?\b/i },
] as const;

/** The name of one dangerous pattern. */
export const ToolFlag = z.enum(
  DANGEROUS_PATTERNS.map((p) => p.name) as [
    (typeof DANGEROUS_PATTERNS)[number]["name"],
    ...Array<(typeof DANGEROUS_PATTERNS)[number]["name"]>,
  ],
);
export type ToolFlag = z.infer<typeof ToolFlag>;
/** The dangerous patterns seen in one call's arguments, each once, sorted. */
export const ToolFlags = z.array(ToolFlag).max(DANGEROUS_PATTERNS.length);
export type ToolFlags = z.infer<typeof ToolFlags>;

/** Names of the dangerous patterns found in any string (or key) inside `args`, walked to a bounded depth. */
export function scanDangerous(args: unknown): ToolFlag[] {
  const found = new Set<ToolFlag>();
  const strings: string[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 50 || strings.length > 10_000) return;
    if (typeof v === "string") strings.push(v);
    else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        strings.push(k);
        walk(x, depth + 1);
      }
    }
  };
  walk(args, 0);
  for (const s of strings) {
    // a bounded prefix keeps the scan linear in practice on pathological multi-megabyte inputs
    const text = s.length > 200_000 ? s.slice(0, 200_000) : s;
    for (const p of DANGEROUS_PATTERNS) if (!found.has(p.name) && p.re.test(text)) found.add(p.name);
  }
  return [...found].sort();
}
