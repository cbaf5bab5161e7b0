import type { Intent, PerceptionSnapshot } from "@agentmesh/contracts";
import { clipText } from "@agentmesh/tools";
import { classifyQuestion } from "./classify.js";

// Text rules the roles' offline behaviours share: words, intent, entities,
// suspicious patterns and ambiguous quantities. Deterministic: no clock, no randomness.

/** Words that carry no topic: left out of search queries and overlap scores. */
const STOP = new Set(
  (
    "a an the and or but if then so of to in on at by for with from into onto about as is are was were be been being " +
    "do does did done have has had having can could would should will shall may might must not no nor " +
    "i me my we us our you your he she it its they them their this that these those there here what which who whom " +
    "whose where when why how all any each some such than too very just also only own same other more most " +
    "please tell show give say says said explain describe find list name use using used get make know want need " +
    "s t let lets whats hows"
  ).split(" "),
);

/** Lowercase words of a text (letters, digits, `_` and inner `-`). */
function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9_]+(?:-[a-z0-9_]+)*/g) ?? [];
}

/** Content words: stop words and one-letter words left out, order kept, no repeats. */
export function contentWords(text: string): string[] {
  const out: string[] = [];
  for (const w of wordsOf(text)) if (w.length > 1 && !STOP.has(w) && !out.includes(w)) out.push(w);
  return out;
}

/** A crude stem: enough to match "persist" with "persistence", "deadlines" with "deadline". */
function stem(word: string): string {
  const w = word.toLowerCase();
  for (const suffix of ["ations", "ation", "ences", "ence", "ings", "ing", "ies", "es", "ed", "s"]) {
    if (w.length - suffix.length >= 4 && w.endsWith(suffix)) return w.slice(0, -suffix.length);
  }
  return w;
}

/** Share (0..1) of `terms` that some word of `words` starts with (by stem). */
export function coverage(terms: readonly string[], words: ReadonlySet<string> | readonly string[]): number {
  if (terms.length === 0) return 0;
  const list = [...words];
  const hit = terms.filter((t) => {
    const s = stem(t);
    return list.some((w) => w === t || (s.length >= 3 && w.startsWith(s)));
  });
  return hit.length / terms.length;
}

/** A search query from a question: its content words, at most `max` characters (at least the question if none). */
export function keywordQuery(question: string, max = 400): string {
  const words = contentWords(question);
  let q = "";
  for (const w of words) {
    if ((q ? q.length + 1 : 0) + w.length > max) break;
    q = q ? `${q} ${w}` : w;
  }
  if (q.length >= 3) return q;
  const flat = question.replace(/\s+/g, " ").trim();
  return flat.length >= 3 ? flat.slice(0, max) : `${flat}...`.slice(0, Math.max(3, max));
}

/** Sentences of a text (at . ! ? followed by a space and a capital, digit or quote). */
export function sentencesOf(text: string): string[] {
  return text
    .replace(/\s+/g, " ")
    .split(/(?<=[.!?])\s+(?=[A-Z0-9"“([])/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The question's intent by rule: an arithmetic expression is `arithmetic`, a greeting
 * `conversation`, what/who/where/which/when `lookup`, why/how/explain `explanation`.
 */
export function intentOf(question: string): Intent {
  const kind = classifyQuestion(question).kind;
  if (kind === "arithmetic") return "arithmetic";
  if (kind === "greeting") return "conversation";
  const q = question.trim().toLowerCase();
  if (/\b(compare|comparison|versus|vs\.?|difference between|differences between)\b/.test(q)) return "comparison";
  if (/^(why|how|explain|describe)\b/.test(q)) return "explanation";
  if (/^(what|who|where|which|when|whom|whose|list|name|find)\b/.test(q)) return "lookup";
  if (
    /\b(write|implement|fix|debug)\b.*\b(code|function|script|program|class)\b|\b(javascript|typescript|python)\s+(code|function|script)\b/.test(
      q,
    )
  )
    return "code";
  if (/\b(why|explain)\b/.test(q)) return "explanation";
  if (/\b(what|who|where|which)\b/.test(q)) return "lookup";
  if (/^how\b|\bhow (does|do|is|are|can|to)\b/.test(q)) return "explanation";
  return "other";
}

const SUSPICIOUS: ReadonlyArray<readonly [string, RegExp]> = [
  ["xss", /<\s*script\b|javascript\s*:|\bon(?:error|load|click|mouseover)\s*=|<\s*iframe\b|<\s*img\b[^>]*\bsrc\s*=/i],
  [
    "code_injection",
    /\b(?:eval|exec|compile|__import__|popen|os\.system)\s*\(|\bimport\s+(?:os|subprocess|sys|socket)\b|require\(\s*["']child_process|\$\([^)]*\)/i,
  ],
  ["path_traversal", /\.\.[\\/]|[\\/]etc[\\/](?:passwd|shadow)|%2e%2e(?:%2f|%5c)/i],
  ["sql_injection", /'\s*or\s+'?1'?\s*=\s*'?1|\bunion\s+(?:all\s+)?select\b|;\s*drop\s+table\b/i],
  ["shell_command", /\brm\s+-rf\b|\bmkfs\b|:\(\)\s*\{\s*:\|:&\s*\};:/i],
];

/** Names of the suspicious patterns in a text: flagged for the record, never acted on. */
export function suspiciousPatterns(text: string): string[] {
  return SUSPICIOUS.filter(([, re]) => re.test(text)).map(([name]) => name);
}

type Entity = PerceptionSnapshot["entities"][number];
const LEADING_STOP =
  /^(?:What|Who|Where|Which|When|Why|How|Is|Are|Does|Do|Did|Can|Could|Should|Would|Will|The|A|An|Please|Tell|Explain|Describe|Use|Find|List|Name|Give|Show|Hi|Hello|Hey|In|On|At|For|From|If|I)\s+/;

/** Entities of a text: quoted strings, numbers, capitalised names and snake/kebab-case terms (at most `max`). */
export function entitiesOf(text: string, max = 50): Entity[] {
  const out: Entity[] = [];
  const seen = new Set<string>();
  const add = (t: string, kind: Entity["kind"]) => {
    const v = clipText(t.trim(), 100);
    if (!v || seen.has(v.toLowerCase()) || out.length >= max) return;
    seen.add(v.toLowerCase());
    out.push({ text: v, kind });
  };
  for (const m of text.matchAll(/"([^"\n]{1,98})"|“([^”\n]{1,98})”|(?:^|[\s(])'([^'\n]{1,98})'(?=[\s).,!?;:]|$)/g))
    add(m[1] ?? m[2] ?? m[3] ?? "", "quoted");
  for (const m of text.matchAll(/(?<![\w.])-?\d+(?:[.,]\d+)*(?:e[+-]?\d+)?(?![\w])/gi)) add(m[0], "number");
  for (const m of text.matchAll(
    /\b[A-Z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*(?:\s+[A-Z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*)*/g,
  )) {
    let name = m[0];
    while (LEADING_STOP.test(`${name} `) && name.includes(" ")) name = name.replace(LEADING_STOP, "");
    if (LEADING_STOP.test(`${name} `)) continue;
    add(name, "name");
  }
  for (const m of text.matchAll(/\b[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+\b/g)) add(m[0], "term");
  return out;
}

const CONSTRAINTS: readonly RegExp[] = [
  /\b(?:in|within|under|at most|no more than|less than)\s+\d+\s+(?:words?|sentences?|characters?|lines?|paragraphs?|bullet points?|seconds?|minutes?)\b/gi,
  /\b(?:in|to|into)\s+(?:celsius|fahrenheit|kelvin|metric|imperial|usd|eur|euros?|dollars?|json|csv|markdown|a table|bullet points)\b/gi,
  /\b(?:step by step|briefly|in detail|exactly|with (?:sources|citations|references))\b/gi,
];

/** Constraints stated in a question (length, units, format, exactness). */
export function constraintsOf(question: string): string[] {
  const out: string[] = [];
  for (const re of CONSTRAINTS)
    for (const m of question.matchAll(re)) if (!out.includes(m[0].toLowerCase())) out.push(m[0].toLowerCase());
  return out.slice(0, 10);
}

const AMBIGUOUS: ReadonlyArray<{
  readonly unit: RegExp;
  readonly resolved: RegExp;
  readonly ask: (n: string) => string;
}> = [
  {
    unit: /(-?\d+(?:\.\d+)?)\s*(?:degrees?|deg\b|°)(?!\s*(?:c|f|k|celsius|fahrenheit|kelvin)\b)/i,
    resolved: /\b(?:celsius|fahrenheit|kelvin|centigrade)\b|°\s*[cfk]\b|\bangle\b/i,
    ask: (n) => `Your question mentions ${n} degrees without a scale: is that Celsius or Fahrenheit?`,
  },
  {
    unit: /(\d+(?:\.\d+)?)\s*gallons?\b/i,
    resolved: /\b(?:us|u\.s\.|imperial|uk)\s+gallons?\b/i,
    ask: (n) => `Do you mean ${n} US gallons or imperial gallons?`,
  },
  {
    unit: /(\d+(?:\.\d+)?)\s*tons?\b/i,
    resolved: /\b(?:metric|short|long)\s+tons?\b|\btonnes?\b/i,
    ask: (n) => `Do you mean ${n} metric tonnes or US short tons?`,
  },
  {
    unit: /(\d+(?:\.\d+)?)\s*(?:ounces?|oz)\b/i,
    resolved: /\bfluid\s+ounces?\b|\bfl\.?\s*oz\b|\btroy\b/i,
    ask: (n) => `Is ${n} ounces a weight or a fluid volume?`,
  },
];

/** A question a person must answer before the question can be: a quantity whose unit is ambiguous. Null when none. */
export function ambiguityOf(question: string): string | null {
  for (const a of AMBIGUOUS) {
    const m = a.unit.exec(question);
    if (m && !a.resolved.test(question)) return a.ask(m[1] ?? "the");
  }
  return null;
}
