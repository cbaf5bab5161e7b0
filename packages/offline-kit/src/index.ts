// What the agent roles' offline behaviours share: question classification (arithmetic through the
// tools package's exact evaluator, the calculator's),
// and text rules (words, intent, entities, suspicious patterns, ambiguity). Deterministic.
export { classifyQuestion, findExpression, isGreeting, isVague, type QuestionKind } from "./classify.js";
export { ambiguityOf, constraintsOf, contentWords, coverage, entitiesOf, intentOf, keywordQuery, sentencesOf, suspiciousPatterns } from "./text-rules.js";
export { clip, clipText, numbersIn, plural, quote } from "./words.js";
