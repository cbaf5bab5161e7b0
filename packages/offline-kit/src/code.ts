import type { CodeLanguage } from "@agentmesh/contracts";

/** Code found in a request: what the code agent runs without a model. */
export interface FoundCode {
  readonly language: CodeLanguage;
  readonly code: string;
}

/** Fence tags the sandbox runs, by language; any other tag (csv, json, bash, ts…) is not code to run. */
const FENCE_TAGS: Readonly<Record<string, CodeLanguage>> = {
  python: "python",
  python3: "python",
  py: "python",
  js: "javascript",
  javascript: "javascript",
  node: "javascript",
};

// A fenced block: ``` or ~~~, an optional tag on the opening line, the body, the same fence closing it.
const FENCED = /^[ \t]*(```|~~~)[ \t]*([\w+-]*)[^\n]*\n([\s\S]*?)\n[ \t]*\1[ \t]*$/gm;

// Marks of JavaScript that Python never has at the start of a statement or as an operator.
const JS_MARKS = [
  /\bconsole\.\w+\s*\(/,
  /^\s*(?:const|let|var)\s+[\w${[]/m,
  /^\s*function\s*\*?\s*\w*\s*\(/m,
  /=>/,
  /===|!==/,
  /;\s*$/m,
  /\bdocument\.|\brequire\s*\(/,
];

/** The language of untagged code: JavaScript when it has a mark only JavaScript has, otherwise Python. */
export function guessLanguage(code: string): CodeLanguage {
  return JS_MARKS.some((re) => re.test(code)) ? "javascript" : "python";
}

/** True for an untagged block that is data, not code: a JSON object or array, or comma-separated lines of one width. */
function looksLikeData(block: string): boolean {
  try {
    const value: unknown = JSON.parse(block);
    if (typeof value === "object" && value !== null) return true;
  } catch {
    // not JSON: maybe CSV
  }
  const lines = block.split("\n").filter((l) => l.trim().length > 0);
  const commas = (l: string) => l.split(",").length - 1;
  return (
    lines.length >= 2 &&
    commas(lines[0] ?? "") > 0 &&
    lines.every((l) => commas(l) === commas(lines[0] ?? "") && !/[()=:;]/.test(l))
  );
}

/**
 * The first fenced block of a text that the sandbox can run: tagged python/py/python3 or
 * js/javascript/node, or untagged (its language guessed). Blocks of other tags and blank blocks
 * and untagged data (JSON, CSV) are skipped; null when there is none.
 */
export function findCode(text: string): FoundCode | null {
  for (const m of text.matchAll(FENCED)) {
    const tag = (m[2] ?? "").toLowerCase();
    const code = (m[3] ?? "").replace(/\s+$/, "");
    if (code.trim().length === 0) continue;
    if (tag === "") {
      if (looksLikeData(code)) continue;
      return { language: guessLanguage(code), code };
    }
    const language = Object.hasOwn(FENCE_TAGS, tag) ? FENCE_TAGS[tag] : undefined;
    if (language) return { language, code };
  }
  return null;
}
