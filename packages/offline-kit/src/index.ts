// What the agent roles' offline behaviours share: question classification (arithmetic through the
// tools package's exact evaluator, the calculator's),
// text rules (words, intent, entities, suspicious patterns, ambiguity), and the halo planner's
// capability picking by cue words, the supervisor router's routing by cue words. Deterministic.
export { pickCapabilities } from "./capabilities.js";
export { routeByKeywords } from "./routing.js";
export { classifyQuestion, findExpression, isGreeting, isVague, type QuestionKind } from "./classify.js";
export { ambiguityOf, constraintsOf, contentWords, coverage, entitiesOf, intentOf, keywordQuery, sentencesOf, suspiciousPatterns } from "./text-rules.js";
export { clip, clipText, numbersIn, plural, quote } from "./words.js";
