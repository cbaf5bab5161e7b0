import { clipText } from "@agentmesh/tools";

/** Clips to `max` characters (no whitespace folding), marking a cut with an ellipsis. */
export const clip = (s: string, max: number): string => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

/** A short quotation of user text: whitespace folded, at most 200 characters, in double quotes. */
export const quote = (s: string): string => `"${clip(s.trim().replace(/\s+/g, " "), 200)}"`;

/** "1 step", "2 steps". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Numbers written in a text, thousands separators removed ("18,446,744" → 18446744). */
export function numbersIn(text: string): string[] {
  return text.replace(/(\d),(?=\d{3}(?!\d))/g, "$1").match(/-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi) ?? [];
}

/** Lowercase words of a text, space-separated and space-padded, so a phrase matches only whole words. */
export const padded = (text: string): string => ` ${(text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).join(" ")} `;

export { clipText };
