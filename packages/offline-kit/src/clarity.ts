import type { ChatMessage } from "@agentmesh/contracts";
import { isVague } from "./classify.js";
import { ambiguityOf, contentWords } from "./text-rules.js";

// clarify's offline orchestrator and clarifier: keyword rules for what a message
// leaves open. A model is meant to decide this, not keyword rules; these rules are the offline
// engine's stand-in and cannot read context the way a model does (see clarity.test.ts).

/** What the latest message leaves open, and the question that would settle it. */
export interface Unclear {
  /** Which rule found it: a unit, no topic, a pronoun with no antecedent, a reference to something never named, a criterion never given. */
  readonly rule: "unit" | "no_topic" | "pronoun" | "unnamed_reference" | "no_criterion";
  /** The words that are ambiguous, as the message has them. */
  readonly what: string;
  /** One question for the person. */
  readonly ask: string;
}

const PRONOUN = /\b(it|that|this|these|those|them|they)\b/i;
/** Words that say "more of the same" and name no topic of their own. */
const FILLER = new Set([
  "more",
  "details",
  "detail",
  "again",
  "else",
  "further",
  "elaborate",
  "expand",
  "continue",
  "go",
  "on",
  "mean",
  "meant",
  "about",
  "like",
  "really",
  "okay",
  "ok",
]);
/** Things a message may refer to as "the …" that must have been named before. */
const REFERENCE =
  /\bthe\s+(paper|study|article|approach|method|model|dataset|book|report|document|author|results?|one|thing|idea|technique)\b/i;
/** Words that ask for the best or enough of something without saying by what measure. */
const UNMEASURED = /\b(best|optimal|ideal|better|enough|sufficient|good enough)\b/i;
/** A stated criterion: "for …", "to …", "in terms of", a number, "than …". */
const CRITERION = /\b(for|to|in terms of|measured by|than|accuracy|latency|cost|speed|precision|recall|f1)\b|\d/i;

/** The latest user message of a conversation, or "". */
export function latestUserMessage(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === "user") return messages[i]?.content ?? "";
  return "";
}

/**
 * What the latest user message leaves open, by rule (null: nothing found, so research): an
 * ambiguous unit, no topic at all, a bare pronoun with at most one word of its own ("Tell me more
 * about it"), "the paper" when no earlier message names a paper, "best" or "enough" without a
 * measure. Earlier turns count only for the references rule.
 */
export function unclearOf(messages: readonly ChatMessage[]): Unclear | null {
  const text = latestUserMessage(messages).trim();
  if (!text) return { rule: "no_topic", what: "the message", ask: "What would you like to know?" };
  const unit = ambiguityOf(text);
  if (unit) return { rule: "unit", what: "a unit", ask: unit };
  if (isVague(text))
    return {
      rule: "no_topic",
      what: text,
      ask: "What topic should I look into? Please name it and what you want to know about it.",
    };
  const own = contentWords(text).filter((w) => !FILLER.has(w));
  const pronoun = PRONOUN.exec(text);
  if (pronoun && own.length <= 1) {
    return {
      rule: "pronoun",
      what: `"${pronoun[1]}"`,
      ask: `What does "${pronoun[1]}" refer to, and which aspect of it would you like to know about?`,
    };
  }
  const ref = REFERENCE.exec(text);
  if (ref) {
    const noun = (ref[1] ?? "").toLowerCase();
    const earlier = messages
      .slice(0, -1)
      .map((m) => m.content.toLowerCase())
      .join("\n");
    if (!earlier.includes(noun.replace(/s$/, "")))
      return {
        rule: "unnamed_reference",
        what: `"the ${noun}"`,
        ask: `Which ${noun} do you mean? Please give its name, title or author.`,
      };
  }
  const unmeasured = UNMEASURED.exec(text);
  if (unmeasured && !CRITERION.test(text.replace(unmeasured[0], ""))) {
    const word = (unmeasured[1] ?? "").toLowerCase();
    return {
      rule: "no_criterion",
      what: `"${word}"`,
      ask: `"${word[0]?.toUpperCase()}${word.slice(1)}" for what: which problem, and by which measure (accuracy, cost, speed, …)?`,
    };
  }
  return null;
}

/** The orchestrator's offline reply, in the output format. */
export function offlineDecision(messages: readonly ChatMessage[]): string {
  const u = unclearOf(messages);
  return u
    ? `Decision: CLARIFICATION\nReasoning: ${u.what} is ambiguous (offline rule: ${u.rule}).`
    : "Decision: RESEARCH\nReasoning: the offline rules found nothing ambiguous in the latest message.";
}

/** The clarifier's offline question: the rule's question, naming what is ambiguous. */
export function offlineClarification(messages: readonly ChatMessage[]): string {
  return (
    unclearOf(messages)?.ask ??
    `Could you say more about what you want to know: "${latestUserMessage(messages).slice(0, 200)}"?`
  );
}
