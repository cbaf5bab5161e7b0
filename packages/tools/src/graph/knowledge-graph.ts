import MiniSearch from "minisearch";
import { stemmer } from "stemmer";
import { clipText } from "../text.js";
import { isUrlSource, loadTriples, type GraphIssue, type GraphLimits, type GraphTriple } from "./load.js";

// The knowledge graph a `graph` specialist answers from: triples ranked with BM25 (minisearch,
// the library corpus_search ranks passages with) and an offline answer composed from the best.

/** Triples one query returns at most (halo's citations per answer). */
export const GRAPH_MAX_RESULTS = 10;
const DEFAULT_RESULTS = 5;
/** The longest question a query may be; a longer question is cut before it is split into words. */
const MAX_QUESTION_CHARS = 5000;
/** Distinct words of a question searched at most, so a long question costs what a short one does. */
const MAX_QUERY_TERMS = 32;
/** Longer words are matched exactly and by prefix only: fuzzy matching costs with the word's length. */
const MAX_FUZZY_TERM_CHARS = 24;
/** A triple scoring below this share of the best one is left out: it matched only a side word. */
const MIN_SHARE_OF_BEST = 0.3;
/** One sentence of the answer; ten of them stay under halo's 4000-character answer. */
const MAX_SENTENCE_CHARS = 360;
const MAX_TITLE_CHARS = 300;
/** The answer when no triple matches: honest, and without citations. */
const NOTHING_FOUND = "The knowledge graph has nothing on this.";

/** Words that name no entity or relation: they neither index a triple nor make one match. */
const STOP = new Set(
  (
    "a an the and or but if then so of to in on at by for with from into about as is are was were be been being " +
    "do does did have has had can could would should will shall may might must not no " +
    "i me my we us our you your he she it its they them their this that these those there here " +
    "what which who whom whose where when why how all any each some such than too very just also only " +
    "please tell show give explain describe find list know"
  ).split(" "),
);

/** One source of a graph answer, in halo's citation shape: `url` for a web source, else `path`. */
export interface GraphCitation {
  readonly title: string;
  readonly url: string | null;
  readonly path: string | null;
  readonly snippet: string;
}

/** A triple that matched a question, with its BM25 score (higher is better). */
export interface GraphHit {
  readonly triple: GraphTriple;
  readonly score: number;
}

/** A query's result: the offline answer text, the triples it rests on and one citation per triple. */
export interface GraphAnswer {
  /** "<subject> <predicate> <object>." per triple (repeats once), or the "nothing on this" answer. */
  readonly text: string;
  /** Best first; empty when nothing matched. */
  readonly hits: readonly GraphHit[];
  /** `citations[i]` is the source of `hits[i]`. */
  readonly citations: readonly GraphCitation[];
}

/** Options of one query. */
export interface GraphQueryOptions {
  /** Triples returned at most: 1..10, default 5. */
  readonly limit?: number;
}

/** A loaded, indexed graph. Queries are synchronous and deterministic: the same graph and question give the same answer. */
export interface KnowledgeGraph {
  /** Triples indexed. */
  readonly size: number;
  /** Problems met while loading (bad lines, skipped files, limits reached): the first 100. */
  readonly issues: readonly GraphIssue[];
  readonly issueCount: number;
  query(question: string, opts?: GraphQueryOptions): GraphAnswer;
}

/** Options of `loadKnowledgeGraph`. */
export interface LoadGraphOptions {
  /** Lower bounds than the defaults (`GRAPH_MAX_*`); higher ones are ignored. */
  readonly limits?: Partial<GraphLimits>;
}

interface Doc {
  readonly id: number;
  readonly subject: string;
  readonly predicate: string;
  readonly object: string;
}

/**
 * Lowercase words (letters and digits of any script), stop words and one-letter words left out,
 * Porter-stemmed alike in the graph and the question, so "acknowledged" finds "acknowledgement".
 */
function termsOf(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 1 && !STOP.has(w)).map(stemmer);
}

/** The distinct terms of a question, first ones first, at most MAX_QUERY_TERMS. */
function questionTerms(question: string): string[] {
  return [...new Set(termsOf(question.slice(0, MAX_QUESTION_CHARS)))].slice(0, MAX_QUERY_TERMS);
}

/** "<Subject> <predicate> <object>.": the first letter raised, a final stop added unless one is there. */
function sentenceOf(t: GraphTriple): string {
  const body = clipText(`${t.subject} ${t.predicate} ${t.object}`, MAX_SENTENCE_CHARS);
  const raised = body.charAt(0).toUpperCase() + body.slice(1);
  return /[.!?…]$/.test(raised) ? raised : `${raised}.`;
}

function citationOf(t: GraphTriple): GraphCitation {
  const url = isUrlSource(t.source);
  return {
    title: clipText(t.subject, MAX_TITLE_CHARS),
    url: url ? t.source : null,
    path: url ? null : t.source,
    snippet: sentenceOf(t),
  };
}

/** The offline answer: one sentence per distinct fact, one citation per triple used. */
function composeAnswer(hits: readonly GraphHit[]): GraphAnswer {
  if (hits.length === 0) return { text: NOTHING_FOUND, hits, citations: [] };
  const sentences = [...new Set(hits.map((h) => sentenceOf(h.triple)))];
  return { text: sentences.join(" "), hits, citations: hits.map((h) => citationOf(h.triple)) };
}

class KnowledgeGraphImpl implements KnowledgeGraph {
  constructor(
    private readonly triples: readonly GraphTriple[],
    private readonly index: MiniSearch<Doc>,
    readonly issues: readonly GraphIssue[],
    readonly issueCount: number,
  ) {}

  get size(): number {
    return this.triples.length;
  }

  query(question: string, opts: GraphQueryOptions = {}): GraphAnswer {
    const limit = Math.max(1, Math.min(GRAPH_MAX_RESULTS, Math.floor(opts.limit ?? DEFAULT_RESULTS)));
    const terms = questionTerms(question);
    if (terms.length === 0) return composeAnswer([]);
    // ties keep file order, so the answer never depends on how the index iterates
    const found = this.index
      .search(terms.join(" "), { combineWith: "OR" })
      .sort((a, b) => b.score - a.score || (a.id as number) - (b.id as number));
    const best = found[0]?.score ?? 0;
    const hits = found
      .filter((r) => r.score >= best * MIN_SHARE_OF_BEST)
      .slice(0, limit)
      .flatMap((r) => {
        const triple = this.triples[r.id as number];
        return triple ? [{ triple, score: Math.round(r.score * 1000) / 1000 }] : [];
      });
    return composeAnswer(hits);
  }
}

/** Indexes triples already in memory (the loader's output, or a test's). */
export async function indexTriples(
  triples: readonly GraphTriple[],
  issues: readonly GraphIssue[] = [],
  issueCount = issues.length,
): Promise<KnowledgeGraph> {
  const index = new MiniSearch<Doc>({
    fields: ["subject", "predicate", "object"],
    tokenize: termsOf,
    processTerm: (t) => t,
    searchOptions: {
      // entities weigh more than the relation between them
      boost: { subject: 2, object: 1.5 },
      prefix: (t) => t.length > 3,
      fuzzy: (t) => (t.length > 6 && t.length <= MAX_FUZZY_TERM_CHARS ? 0.1 : 0),
    },
  });
  const docs = triples.map((t, id) => ({ id, subject: t.subject, predicate: t.predicate, object: t.object }));
  // in slices, with a turn of the event loop between them: a large graph does not stall the process
  await index.addAllAsync(docs, { chunkSize: 1000 });
  return new KnowledgeGraphImpl(triples, index, issues, issueCount);
}

/**
 * Loads the triples of a `.jsonl` file or a folder of them (see `loadTriples` for the format,
 * the limits and what is skipped) and indexes them. Throws `invalid_config` only when `path`
 * names no readable file or folder; every other problem is in `issues`.
 */
export async function loadKnowledgeGraph(path: string, opts: LoadGraphOptions = {}): Promise<KnowledgeGraph> {
  const loaded = await loadTriples(path, opts.limits);
  return indexTriples(loaded.triples, loaded.issues, loaded.issueCount);
}
