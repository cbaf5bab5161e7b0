import { CALC_NAMES, evaluateExact, type CalcResult } from "@agentmesh/tools";

/** What the offline engine makes of a question. */
export type QuestionKind =
  | { readonly kind: "arithmetic"; readonly source: string; readonly calc: CalcResult }
  | { readonly kind: "greeting" }
  | { readonly kind: "vague" }
  | { readonly kind: "needs_model" };

// Words that may surround an expression without changing what is asked ("What is ...?",
// "Please compute ..."). Anything else next to the numbers ("2014-2015 season") means the
// question is about something other than arithmetic, so it is not computed.
const ARITHMETIC_FILLER = new Set(
  (
    "what whats s is are was the value of result compute calculate calc evaluate eval solve work out please pls " +
    "can could would you u tell me us how much equals equal to exactly answer give find simplify number do does " +
    "hi hello hey i want need know get quick question math maths arithmetic expression for this that it in " +
    "decimal exact precisely numerically let"
  ).split(" "),
);

const GREETING_CORE = new Set(
  "hi hello hey hiya howdy greetings yo morning afternoon evening hola bonjour hallo sup".split(" "),
);
const GREETING_EXTRA = new Set(
  "good day there all everyone folks how are you doing whats what s up agentmesh assistant bot and".split(" "),
);

// Words that carry no topic of their own; a query made only of these (and VAGUE_WORDS) says
// nothing specific enough to answer.
const STOP_WORDS = new Set(
  (
    "i me my you your a an the is are was be can could would will please with to of for on in about do does have has " +
    "got need want what how why who when where which it this that just give tell show say so and or there here hi " +
    "hello hey let s us we our some any know ask explain"
  ).split(" "),
);
const VAGUE_WORDS = new Set(
  (
    "help something anything stuff things thing question questions info information idea ideas random whatever test " +
    "testing hmm ok okay yes no idk dunno fact facts interesting everything nothing topic"
  ).split(" "),
);

/** Rewrites common spoken and typographic forms into the calculator's syntax. */
function normaliseMath(question: string): string {
  let s = question.toLowerCase();
  s = s.replace(/[×·✕]/g, "*").replace(/÷/g, "/").replace(/[−–—]/g, "-").replace(/\*\*/g, "^");
  // Thousands separators, unless commas could be separating function arguments.
  if (!/[a-z]\s*\(/.test(s)) s = s.replace(/(\d),(?=\d{3}(?!\d))/g, "$1");
  const words: Array<[RegExp, string]> = [
    [/\bmultiplied by\b/g, "*"],
    [/\bdivided by\b/g, "/"],
    [/\b(?:raised )?to the power of\b/g, "^"],
    [/\braised to\b/g, "^"],
    [/\bsquare root of\s+(\d+(?:\.\d+)?)/g, "sqrt($1)"],
    [/\bcube root of\s+(\d+(?:\.\d+)?)/g, "cbrt($1)"],
    [/\b(sqrt|cbrt)\s+(\d+(?:\.\d+)?)/g, "$1($2)"],
    [/\bplus\b/g, "+"],
    [/\bminus\b/g, "-"],
    [/\btimes\b/g, "*"],
    [/\bmodulo\b/g, " mod "],
    [/\bsquared\b/g, "^2"],
    [/\bcubed\b/g, "^3"],
    [/(\d)\s*x\s*(?=\d)/g, "$1 * "],
    // "15% of 80" is 15/100 * 80; mathjs reads a postfix % as a percentage.
    [/%\s*of\b/g, "% *"],
  ];
  for (const [re, to] of words) s = s.replace(re, to);
  return s;
}

type Token = { readonly text: string; readonly kind: "num" | "name" | "op" | "ws" | "word" | "punct" };

function tokenize(s: string): Token[] {
  const tokens: Token[] = [];
  const re = /(\d+(?:\.\d+)?(?:e[+-]?\d+)?|\.\d+)|([a-z_][a-z0-9_]*)|(\s+)|([+\-*/^%(),])|(.)/gy;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    if (m[1] !== undefined) tokens.push({ text: m[1], kind: "num" });
    else if (m[2] !== undefined) tokens.push({ text: m[2], kind: CALC_NAMES.has(m[2]) ? "name" : "word" });
    else if (m[3] !== undefined) tokens.push({ text: m[3], kind: "ws" });
    else if (m[4] !== undefined) tokens.push({ text: m[4], kind: "op" });
    else tokens.push({ text: m[5] ?? "", kind: "punct" });
  }
  return tokens;
}

const isMath = (t: Token) => t.kind === "num" || t.kind === "name" || t.kind === "op" || t.kind === "ws";

/**
 * Finds the arithmetic expression a question asks about ("What is 12.5 * (3 + 4)?",
 * "compute 2^64"), or null when the question is about something else.
 */
export function findExpression(question: string): string | null {
  const tokens = tokenize(normaliseMath(question));
  // Spans of math tokens; the question is arithmetic only if exactly one span carries the
  // numbers and operators and every token outside it is filler or punctuation.
  const spans: Token[][] = [];
  let current: Token[] = [];
  for (const t of tokens) {
    if (isMath(t)) current.push(t);
    else {
      if (current.length) spans.push(current);
      current = [];
      if (t.kind === "word" && !ARITHMETIC_FILLER.has(t.text)) return null;
    }
  }
  if (current.length) spans.push(current);
  const meaningful = spans.filter((span) => span.some((t) => t.kind === "num" || t.kind === "name"));
  if (meaningful.length !== 1) return null;
  const span = meaningful[0]!;
  const hasNumber = span.some((t) => t.kind === "num");
  const hasOperation = span.some(
    (t) =>
      (t.kind === "op" && t.text !== "," && t.text !== "(" && t.text !== ")") ||
      (t.kind === "name" && t.text !== "pi" && t.text !== "e"),
  );
  if (!hasNumber || !hasOperation) return null;
  const text = span
    .map((t) => t.text)
    .join("")
    .trim()
    .replace(/^[,\s]+|[,\s]+$/g, "");
  return text.length > 0 ? text : null;
}

function words(question: string): string[] {
  return question
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/** True for a short greeting or small-talk opener ("hi", "good morning", "how are you?"). */
export function isGreeting(question: string): boolean {
  const ws = words(question);
  if (ws.length === 0 || ws.length > 8) return false;
  if (!ws.every((w) => GREETING_CORE.has(w) || GREETING_EXTRA.has(w))) return false;
  return ws.some((w) => GREETING_CORE.has(w)) || ws.join(" ").includes("how are you");
}

/** True when a query names no topic at all ("help", "something", "tell me anything"). */
export function isVague(question: string): boolean {
  const content = words(question).filter((w) => !STOP_WORDS.has(w));
  return content.every((w) => VAGUE_WORDS.has(w));
}

/** How many recent questions' classes are kept: one role classifies a session's question at each of its steps. */
const REMEMBERED = 256;
const remembered = new Map<string, QuestionKind>();

/**
 * Classifies a question for the offline engine: arithmetic, greeting, vague, or needs a model.
 * Pure, so the class of a recent question is remembered (the same frozen object is returned): an
 * arithmetic question costs an exact evaluation, and every step of a session asks about the same one.
 */
export function classifyQuestion(question: string): QuestionKind {
  const known = remembered.get(question);
  if (known !== undefined) return known;
  const kind = deepFreeze(classifyAfresh(question));
  if (remembered.size >= REMEMBERED) remembered.delete(remembered.keys().next().value as string);
  remembered.set(question, kind);
  return kind;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function classifyAfresh(question: string): QuestionKind {
  const source = findExpression(question);
  if (source !== null) return { kind: "arithmetic", source, calc: evaluateExact(source) };
  if (isGreeting(question)) return { kind: "greeting" };
  if (isVague(question)) return { kind: "vague" };
  return { kind: "needs_model" };
}
