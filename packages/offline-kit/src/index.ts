// What the agent roles' offline behaviours share: question classification with exact arithmetic,
// and text rules (words, intent, entities, suspicious patterns, ambiguity). Deterministic.
export { classifyQuestion, findExpression, isGreeting, isVague, type QuestionKind } from "./classify.js";
export { CALC_PRECISION, evaluateExact, sameNumber, type CalcResult } from "./calc.js";
export { ambiguityOf, constraintsOf, contentWords, coverage, entitiesOf, intentOf, keywordQuery, sentencesOf, suspiciousPatterns } from "./text-rules.js";
export { clip, clipText, numbersIn, plural, quote } from "./words.js";
