import { describe, expect, it } from "vitest";
import type { ChatMessage } from "@agentmesh/contracts";
import { offlineClarification, offlineDecision, unclearOf } from "./clarity.js";

const user = (content: string): ChatMessage => ({ role: "user", content });
const ai = (content: string): ChatMessage => ({ role: "assistant", content });
const decision = (messages: ChatMessage[]) =>
  offlineDecision(messages).startsWith("Decision: CLARIFICATION") ? "CLARIFICATION" : "RESEARCH";

/**
 * Seven example decisions of clarify's orchestrator (docs/workflows/clarify.md), each with the
 * decision a model should make and the offline rules' own. All seven agree. Row 7 never reaches Layer 3 in the workflow (Layer 2,
 * the answered clarification, routes it without a model); the rules alone also say research.
 */
const EXAMPLES: ReadonlyArray<{
  query: string;
  context: ChatMessage[];
  model: "CLARIFICATION" | "RESEARCH";
  offline: "CLARIFICATION" | "RESEARCH";
  rule: string | null;
}> = [
  {
    query: "Tell me more about it",
    context: [user("What are RAG systems?"), ai("RAG systems use retrieval...")],
    model: "CLARIFICATION",
    offline: "CLARIFICATION",
    rule: "pronoun",
  },
  {
    query: "Which prompt gave highest accuracy in Zhang 2024?",
    context: [],
    model: "RESEARCH",
    offline: "RESEARCH",
    rule: null,
  },
  { query: "What did OpenAI release this month?", context: [], model: "RESEARCH", offline: "RESEARCH", rule: null },
  { query: "The best approach", context: [], model: "CLARIFICATION", offline: "CLARIFICATION", rule: "no_criterion" },
  {
    query: "How many examples are enough?",
    context: [user("I'm working on classification"), ai("Classification assigns labels...")],
    model: "CLARIFICATION",
    offline: "CLARIFICATION",
    rule: "no_criterion",
  },
  {
    query: "Use the approach from the paper",
    context: [],
    model: "CLARIFICATION",
    offline: "CLARIFICATION",
    rule: "unnamed_reference",
  },
  {
    query: "I meant the DAIL-SQL approach",
    context: [user("The best approach"), ai("Best for what problem?")],
    model: "RESEARCH",
    offline: "RESEARCH",
    rule: null,
  },
];

/**
 * Where the rules differ from a model: they read words, not context. A pronoun whose antecedent
 * the previous turn names plainly is still a bare pronoun to them (a model would research), and a
 * message that names enough words is never unclear to them even when its scope is open.
 */
const DIFFERENCES: ReadonlyArray<{
  query: string;
  context: ChatMessage[];
  model: "CLARIFICATION" | "RESEARCH";
  offline: "CLARIFICATION" | "RESEARCH";
}> = [
  {
    query: "Tell me more about it",
    context: [user("What is DAIL-SQL?"), ai("DAIL-SQL is a prompting method for text-to-SQL.")],
    model: "RESEARCH",
    offline: "CLARIFICATION",
  },
  { query: "Compare retrieval strategies for my project", context: [], model: "CLARIFICATION", offline: "RESEARCH" },
];

describe("the offline orchestrator's keyword rules against the example decisions", () => {
  it.each(EXAMPLES.map((e, i) => [i + 1, e] as const))("example %i: %o", (_n, e) => {
    const messages = [...e.context, user(e.query)];
    expect(decision(messages)).toBe(e.offline);
    expect(e.offline).toBe(e.model);
    expect(unclearOf(messages)?.rule ?? null).toBe(e.rule);
  });

  it.each(DIFFERENCES.map((e) => [e.query, e] as const))("where it differs from a model: %s", (_q, e) => {
    const messages = [...e.context, user(e.query)];
    expect(decision(messages)).toBe(e.offline);
    expect(e.offline).not.toBe(e.model);
  });

  it("replies in the format, naming the rule", () => {
    expect(offlineDecision([user("Tell me more about it")])).toBe(
      'Decision: CLARIFICATION\nReasoning: "it" is ambiguous (offline rule: pronoun).',
    );
    expect(offlineDecision([user("How does Redis persist data?")])).toMatch(/^Decision: RESEARCH\nReasoning: /);
  });
});

describe("the offline clarifier's question names what is ambiguous", () => {
  it.each([
    ["Tell me more about it", /What does "it" refer to/],
    ["Use the approach from the paper", /^Which approach do you mean\?/],
    ["The best approach", /^"Best" for what: which problem, and by which measure/],
    ["How cold is 4 degrees?", /4 degrees without a scale/],
    ["help", /What topic should I look into\?/],
  ])("%s", (query, question) => {
    expect(offlineClarification([user(query)])).toMatch(question);
  });

  it("a clear message still gets a question (the orchestrator asked for one), quoting the message", () => {
    expect(offlineClarification([user("How does Redis persist data?")])).toBe(
      'Could you say more about what you want to know: "How does Redis persist data?"?',
    );
  });

  it("a reference named in an earlier turn is not unclear", () => {
    expect(unclearOf([user("Summarise the paper")])?.rule).toBe("unnamed_reference");
    expect(
      unclearOf([user("The approach in the DAIL-SQL paper looks good"), ai("It does."), user("Summarise the paper")]),
    ).toBeNull();
  });
});
