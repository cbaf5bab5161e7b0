import type { RoutingResult, SupervisorAgent } from "@agentmesh/contracts";
import { isGreeting } from "./classify.js";
import { findCode } from "./code.js";
import { padded } from "./words.js";

type Specialist = Exclude<SupervisorAgent, "chat">;

/**
 * The offline router's cue words per specialist, lowercase, matched as whole words or phrases.
 * The order is the precedence when a query cues several ("write a Python script" is code).
 */
const CUES: ReadonlyArray<readonly [Specialist, readonly string[]]> = [
  [
    "code",
    [
      "code",
      "coding",
      "function",
      "script",
      "program",
      "programming",
      "debug",
      "debugging",
      "bug",
      "bugs",
      "compile",
      "compiler",
      "python",
      "javascript",
      "typescript",
      "regex",
      "implement",
      "refactor",
      "traceback",
      "stack trace",
      "syntax error",
      "algorithm",
      "snippet",
      "unit test",
    ],
  ],
  [
    "data",
    [
      "data",
      "dataset",
      "datasets",
      "csv",
      "json",
      "tsv",
      "spreadsheet",
      "chart",
      "charts",
      "plot",
      "plots",
      "histogram",
      "visualize",
      "visualise",
      "visualization",
      "visualisation",
      "statistics",
      "correlation",
    ],
  ],
  [
    "writing",
    [
      "write",
      "writing",
      "article",
      "articles",
      "essay",
      "essays",
      "blog",
      "draft",
      "rewrite",
      "story",
      "poem",
      "letter",
      "cover letter",
      "documentation",
      "proofread",
    ],
  ],
  [
    "research",
    [
      "research",
      "report",
      "reports",
      "compare",
      "comparison",
      "versus",
      "latest",
      "news",
      "recent",
      "sources",
      "survey",
      "investigate",
      "state of the art",
      "pros and cons",
      "in depth",
      "literature review",
    ],
  ],
];

/** How sure a keyword match is: one specialist cued, several (the first wins), none (chat, flagged low). */
const CONFIDENCE = { greeting: 0.9, single: 0.7, several: 0.55, none: 0.4 } as const;

/** A fenced block of data (```csv, ```tsv, ```json): a data cue, not code to run. */
const DATA_FENCE = /```[ \t]*(?:csv|tsv|json)\b/i;

/** The cue a fenced block gives: runnable code cues code, a block of data cues data. */
function fencedCue(agent: Specialist, query: string): string | undefined {
  if (agent === "code" && findCode(query) !== null) return "a code block";
  if (agent === "data" && DATA_FENCE.test(query)) return "a block of data";
  return undefined;
}

/**
 * The offline engine's routing (no model): the first specialist, in the order code, data,
 * writing, research, whose cue words the query has (a fenced block of code is a code cue, one of
 * CSV, TSV or JSON a data cue); a
 * greeting or a query with no cue goes to chat, the latter with a confidence under 0.5. The
 * reason names the cue it went by.
 */
export function routeByKeywords(query: string): RoutingResult {
  if (isGreeting(query)) return { agent: "chat", confidence: CONFIDENCE.greeting, reason: "a greeting: chat answers" };
  const text = padded(query);
  const hits = CUES.flatMap(([agent, cues]) => {
    const fenced = fencedCue(agent, query);
    const cue = fenced ?? cues.find((c) => text.includes(padded(c)));
    return cue === undefined ? [] : [{ agent, cue: fenced ?? `"${cue}"` }];
  });
  const [first, ...others] = hits;
  if (first === undefined)
    return { agent: "chat", confidence: CONFIDENCE.none, reason: "no cue word for a specialist: chat answers" };
  const reason = `the query mentions ${first.cue}, a ${first.agent} cue`;
  if (others.length === 0) return { agent: first.agent, confidence: CONFIDENCE.single, reason };
  const also = others.map((h) => `${h.cue}, a ${h.agent} cue`).join("; ");
  return {
    agent: first.agent,
    confidence: CONFIDENCE.several,
    reason: `${reason} (also ${also}; ${first.agent} comes first)`,
  };
}
