import type { HaloCitation, SpecialistOutput } from "@agentmesh/contracts";
import type { Judgement } from "./halo-judge.js";
import { citationKey, stripAgentTags } from "./halo-outputs.js";

/** The answer when no specialist answered. */
export const NO_PRIMARY_ANSWER = "No primary answer available.";

/** The final fields of a halo session (`response_str`, `citations`, `judge_response`). */
export interface Synthesis {
  readonly response_str: string;
  /** Merged and de-duplicated; `[n]` in `response_str` is the n-th (1-based). */
  readonly citations: readonly HaloCitation[];
  readonly judge_response: string;
}

/**
 * Merges the outputs' citations into one list, numbered in the order the outputs come (so the
 * primary answer's sources are the first numbers), each source once (by URL, else path; the
 * first title and snippet win). `markers[i]` are the numbers of output i's sources, ascending.
 */
export function mergeCitations(outputs: readonly SpecialistOutput[]): {
  citations: HaloCitation[];
  markers: number[][];
} {
  const citations: HaloCitation[] = [];
  const index = new Map<string, number>();
  const markers = outputs.map((o) => {
    const own = new Set<number>();
    for (const c of o.citations) {
      const key = citationKey(c);
      let n = index.get(key);
      if (n === undefined) {
        citations.push(c);
        n = citations.length;
        index.set(key, n);
      }
      own.add(n);
    }
    return [...own].sort((a, b) => a - b);
  });
  return { citations, markers };
}

/** A fragment with its inline marker (`… therapy [1,3].`): before the closing punctuation, if any. */
function withMarker(text: string, numbers: readonly number[]): string {
  if (numbers.length === 0) return text;
  const marker = ` [${numbers.join(",")}]`;
  const end = /[.!?…]+$/.exec(text)?.[0] ?? "";
  return `${text.slice(0, text.length - end.length)}${marker}${end}`;
}

/** One supplementary fragment as a list item; its further lines indented under it. */
const bullet = (fragment: string): string => `\n- ${fragment.replace(/\n/g, "\n  ")}`;

/**
 * halo's synthesis, pure code: `[HALO] ` + the primary answer (or "No primary answer
 * available."), then "Additional insights:" with the others in rank order (unavailable ones
 * last), each fragment (one specialist's whole answer, agent tags stripped) marked with the
 * merged numbers of the sources its specialist gave, then the `Sources:` list, and, when the
 * biomcp specialist is primary, the judge's summary as a closing guidance note.
 */
export function synthesize(judgement: Judgement): Synthesis {
  const outputs = judgement.ranked.map((j) => j.output);
  const { citations, markers } = mergeCitations(outputs);
  const fragments = outputs.map((o, i) => withMarker(stripAgentTags(o.response_str), markers[i] ?? []));
  const primary = judgement.primary;
  // The primary output is ranked first whenever there is one.
  const [head, rest] = primary
    ? [fragments[0] ?? NO_PRIMARY_ANSWER, fragments.slice(1)]
    : [NO_PRIMARY_ANSWER, fragments];
  let text = `[HALO] ${head}`;
  if (rest.length > 0) text += `\n\nAdditional insights:${rest.map(bullet).join("")}`;
  if (citations.length > 0)
    text += `\n\nSources:\n${citations.map((c, i) => `${i + 1}) ${citationKey(c)}`).join("\n")}`;
  if (primary?.capability === "biomcp") text += `\n\nGuidance from the judge:\n${judgement.judge_response}`;
  return { response_str: text, citations, judge_response: judgement.judge_response };
}
