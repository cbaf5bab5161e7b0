import { defineAgent, type HandlerContext } from "@agentmesh/agent-kit";
import { BLACKBOARD_LIMITS, PerceptionSnapshot, type OpRequest } from "@agentmesh/contracts";
import { clipText } from "@agentmesh/offline-kit";
import { perceiveOffline } from "./offline.js";

type Perceive = OpRequest<"perception", "perceive">;

/** The user message: the question, or a step result against the question and the step's goal. */
export function renderPerceive(i: Perceive): string {
  if (i.kind === "query") return `Analyse this question.\n\nQuestion: ${i.query}`;
  const r = i.result;
  return [
    "Analyse this step result against the question and the step's goal. Set goal_satisfied.",
    `Question: ${i.query}`,
    `Step ${i.step_index + 1}: ${i.step.description} [tool ${i.step.tool}]`,
    `Expected outcome: ${i.step.expected_outcome || "(not stated)"}`,
    r.ok
      ? `Result (${r.strategy} via ${r.tool}):\n${r.output ?? ""}`
      : `The step failed: ${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`,
  ].join("\n\n");
}

/**
 * The model's snapshot with the rules' findings merged in: every suspicious pattern the rules
 * flag is kept (rules first, so the cap of 10 never drops one), the rules' entities follow the
 * model's ones not already named (at most 50), and a flag the model missed lowers its confidence
 * by 0.2 and is said in the notes. Merging a snapshot with itself changes nothing.
 */
export function mergePerception(model: PerceptionSnapshot, rules: PerceptionSnapshot): PerceptionSnapshot {
  const missed = rules.suspicious_patterns.filter((p) => !model.suspicious_patterns.includes(p));
  const flags = [...new Set([...rules.suspicious_patterns, ...model.suspicious_patterns])].slice(0, 10);
  const named = new Set(model.entities.map((e) => e.text.toLowerCase()));
  const entities = [...model.entities, ...rules.entities.filter((e) => !named.has(e.text.toLowerCase()))].slice(
    0,
    BLACKBOARD_LIMITS.maxEntities,
  );
  const confidence =
    missed.length > 0 ? Math.round(Math.max(0.1, model.confidence - 0.2) * 100) / 100 : model.confidence;
  const notes =
    missed.length > 0 ? `${model.notes} Rules flagged, not acted on: ${missed.join(", ")}.`.trim() : model.notes;
  return { ...model, entities, suspicious_patterns: flags, confidence, notes: clipText(notes, 1000) };
}

/**
 * perception.perceive: the rules (suspicious patterns, entities) run on every input; with a model
 * its snapshot is merged with theirs, so an injection the model misses is still flagged.
 */
export async function perceive(input: Perceive, ctx: Pick<HandlerContext, "complete">): Promise<PerceptionSnapshot> {
  const rules = perceiveOffline(input);
  const model = await ctx.complete({
    schema: PerceptionSnapshot,
    schemaName: "perception_perceive",
    prompt: renderPerceive(input),
  });
  return mergePerception(model, rules);
}

/** The perception agent: reads the question, and later each step result, into a PerceptionSnapshot. */
export default defineAgent({
  role: "perception",
  description:
    "Extracts entities, intent, constraints and sub-goals from the question or a step result; flags suspicious patterns",
  ops: {
    perceive: {
      kind: "handler",
      version: "perception.perceive/1",
      contract: "perception.perceive",
      run: perceive,
      summarize: (o) =>
        `intent ${o.intent}, ${o.entities.length} entities, ${o.sub_goals.length} sub-goals${o.goal_satisfied === null ? "" : `, goal ${o.goal_satisfied ? "satisfied" : "not satisfied"}`}${o.suspicious_patterns.length ? `, flagged ${o.suspicious_patterns.join("/")}` : ""}`,
      // the handler's model call, answered offline by the rules (merged with themselves: the rules' snapshot)
      offline: perceiveOffline,
    },
  },
});
