import { clipText as clip } from "@agentmesh/tools";

// Just enough text handling to rank retrieved passages: words, a crude stem, term coverage.

const STOP = new Set(
  (
    "a an the and or but if then so of to in on at by for with from into about as is are was were be been do does did " +
    "have has had can could would should will may might must not no this that these those there here what which who " +
    "whom whose where when why how all any each some such than too very just also only please tell show give explain " +
    "describe find list name use using get make know want need it its they them their i me my we us our you your"
  ).split(" "),
);

/** Content words of a text, lowercase, no stop words, no repeats. */
export function contentWords(text: string): string[] {
  const out: string[] = [];
  for (const w of text.toLowerCase().match(/[a-z0-9_]+(?:-[a-z0-9_]+)*/g) ?? [])
    if (w.length > 1 && !STOP.has(w) && !out.includes(w)) out.push(w);
  return out;
}

function stem(w: string): string {
  for (const suffix of ["ations", "ation", "ences", "ence", "ings", "ing", "ies", "es", "ed", "s"]) {
    if (w.length - suffix.length >= 4 && w.endsWith(suffix)) return w.slice(0, -suffix.length);
  }
  return w;
}

/** Share (0..1) of `terms` found among `words` (a word starting with the term's stem counts). */
export function coverage(terms: readonly string[], words: readonly string[]): number {
  if (terms.length === 0) return 0;
  const hit = terms.filter((t) => {
    const s = stem(t);
    return words.some((w) => w === t || (s.length >= 3 && w.startsWith(s)));
  });
  return hit.length / terms.length;
}

/** The first sentence of a text (or its first `max` characters). */
export function firstSentence(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const m = /^(.+?[.!?])(?:\s|$)/.exec(flat);
  return clip(m?.[1] ?? flat, max);
}
