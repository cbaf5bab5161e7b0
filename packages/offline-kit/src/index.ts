// What the agent roles' offline behaviours share: question classification (arithmetic through the
// tools package's exact evaluator, the calculator's),
// text rules (words, intent, entities, suspicious patterns, ambiguity), and the halo planner's
// capability picking by cue words, the supervisor router's routing by cue words, the code agent's code
// finding, the data agent's column kinds, and the supervisor agents' prompt parts (brief, tools, earlier
// code runs, which tool names are handoffs), and the needs_model answer of the agents only a model can run (research, writing). Deterministic.
export { pickCapabilities } from "./capabilities.js";
export { routeByKeywords } from "./routing.js";
export { classifyQuestion, findExpression, isGreeting, isVague, type QuestionKind } from "./classify.js";
export {
  ambiguityOf,
  constraintsOf,
  contentWords,
  coverage,
  entitiesOf,
  intentOf,
  keywordQuery,
  sentencesOf,
  suspiciousPatterns,
} from "./text-rules.js";
export { clip, clipText, numbersIn, plural, quote } from "./words.js";
export { findCode, guessLanguage, type FoundCode } from "./code.js";
export { dataColumns, type ColumnKind, type DataColumn } from "./data.js";
export {
  draftToolCall,
  isHandoffTool,
  mayCall,
  parseToolArguments,
  renderAttempts,
  renderBrief,
  renderObservations,
  renderTools,
} from "./brief.js";
export { needsModel } from "./needs-model.js";
export { latestUserMessage, offlineClarification, offlineDecision, unclearOf, type Unclear } from "./clarity.js";
