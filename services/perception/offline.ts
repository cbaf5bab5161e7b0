import type { Intent, OpRequest, PerceptionSnapshot } from "@agentmesh/contracts";
import {
  classifyQuestion,
  clipText,
  constraintsOf,
  entitiesOf,
  intentOf,
  suspiciousPatterns,
} from "@agentmesh/offline-kit";
import { BLACKBOARD_LIMITS } from "@agentmesh/contracts";

// Perception's offline behaviour: entities, intent, constraints and sub-goals by rule.

type Perceive = OpRequest<"perception", "perceive">;

const CONFIDENCE: Record<Intent, number> = {
  arithmetic: 0.95,
  conversation: 0.9,
  lookup: 0.7,
  explanation: 0.7,
  comparison: 0.6,
  code: 0.5,
  other: 0.4,
};
const RULE: Record<Intent, string> = {
  arithmetic: "the question is an arithmetic expression",
  conversation: "the question is a greeting",
  lookup: "the question asks what, who, where, which or when",
  explanation: "the question asks why or how, or asks to explain",
  comparison: "the question asks to compare",
  code: "the question asks for code",
  other: "no rule matched",
};

function subGoals(question: string, intent: Intent): string[] {
  const q = classifyQuestion(question);
  switch (intent) {
    case "arithmetic":
      return q.kind === "arithmetic" && q.calc.ok
        ? [`Evaluate ${q.calc.expression} exactly`, "State the exact value"]
        : ["Find the expression to evaluate", "State its value"];
    case "conversation":
      return ["Reply to the greeting"];
    case "lookup":
    case "explanation":
    case "comparison": {
      const parts = question
        .split(/\?|;|\band\s+(?=(?:what|who|where|why|how|when|which)\b)/i)
        .map((p) => p.trim())
        .filter((p) => p.length >= 3);
      return [...parts.map((p) => clipText(`Find: ${p}`, 200)), "Answer with citations from the sources"].slice(
        0,
        BLACKBOARD_LIMITS.maxSubGoals,
      );
    }
    case "code":
    case "other":
      return ["Work out what is asked", "Answer plainly"];
  }
}

/** perception.perceive: entities, intent, constraints and sub-goals by rule; suspicious patterns flagged, never acted on. */
export function perceiveOffline(input: Perceive): PerceptionSnapshot {
  const intent = intentOf(input.query);
  if (input.kind === "query") {
    const flagged = suspiciousPatterns(input.query);
    const entities = entitiesOf(input.query);
    const notes = [
      `Offline rules: intent ${intent} (${RULE[intent]}); ${entities.length} entities.`,
      flagged.length ? `Suspicious patterns flagged, not acted on: ${flagged.join(", ")}.` : "",
    ]
      .filter(Boolean)
      .join(" ");
    return {
      entities,
      intent,
      constraints: constraintsOf(input.query),
      sub_goals: subGoals(input.query, intent),
      confidence: Math.round(Math.max(0.1, CONFIDENCE[intent] - (flagged.length ? 0.2 : 0)) * 100) / 100,
      suspicious_patterns: flagged,
      goal_satisfied: null,
      notes: clipText(notes, 1000),
    };
  }
  const { result, step, step_index } = input;
  const output = result.output ?? "";
  const satisfied = result.ok && output.trim().length > 0;
  const flagged = suspiciousPatterns(output);
  const how = result.ok
    ? `returned ${output.trim().length} characters`
    : `failed (${result.error?.code ?? "error"}: ${result.error?.message ?? ""})`;
  const notes = [
    `Step ${step_index + 1} (${step.tool} via ${result.tool}, ${result.strategy}) ${how}; goal ${satisfied ? "satisfied" : "not satisfied"}.`,
    flagged.length ? `Suspicious patterns in the result, treated as data: ${flagged.join(", ")}.` : "",
  ]
    .filter(Boolean)
    .join(" ");
  return {
    entities: entitiesOf(output),
    intent,
    constraints: [],
    sub_goals: [],
    confidence: satisfied ? 0.85 : 0.3,
    suspicious_patterns: flagged,
    goal_satisfied: satisfied,
    notes: clipText(notes, 1000),
  };
}
