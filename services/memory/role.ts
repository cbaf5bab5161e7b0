import { defineAgent, type HandlerContext } from "@agentmesh/agent-kit";
import { MemoryPatterns, type MemoryState, type OpRequest, type PatternDraft } from "@agentmesh/contracts";
import { clipText } from "@agentmesh/offline-kit";
import { foldMemory } from "./fold.js";
import { derivePatterns } from "./offline.js";

type Update = OpRequest<"memory", "update">;

/** The user message of the pattern call: the step, its result, the critic's report and the patterns kept so far. */
export function renderPatterns(i: Update): string {
  const e = i.event;
  if (e.kind !== "step" || e.critic === null) return "";
  const r = e.result;
  const c = e.critic;
  const kept = i.memory.patterns.map((p) => `- ${p.kind} [${p.tool ?? "any"}] ×${p.seen}: ${p.pattern}`);
  return [
    "Derive the behavioural patterns this critic report shows (at most 3).",
    `Question: ${i.question}`,
    `Step ${e.step_index + 1}: ${e.step.description} [tool ${e.step.tool}]`,
    r.ok
      ? `Result (${r.strategy} via ${r.tool}):\n${clipText(r.output ?? "", 1500)}`
      : `The step failed: ${r.error?.code ?? "error"}: ${r.error?.message ?? ""}`,
    [
      `Critic: ${c.is_acceptable ? "acceptable" : "not acceptable"}, quality ${c.quality}, hallucination risk ${c.hallucination_risk}`,
      ...c.issues.map((x) => `- issue: ${x}`),
      c.rewrite_suggestion ? `Suggested: ${c.rewrite_suggestion}` : "",
      c.requires_human_input ? `Asked a person: ${c.question_for_human ?? ""}` : "",
    ]
      .filter(Boolean)
      .join("\n"),
    kept.length ? `Patterns kept so far:\n${kept.join("\n")}` : "No patterns kept so far.",
    `A pattern's tool is ${r.tool} or null.`,
  ].join("\n\n");
}

/**
 * memory.update: the fold (short-term items, bans, successes, long-term references) is code; the
 * behavioural patterns of a step's critic report come from the model, or offline from the rule. A
 * failed model call falls back to the rule, so the bans and items of the step are never lost to it.
 */
export async function update(
  input: Update,
  ctx: Pick<HandlerContext, "complete" | "log" | "signal">,
): Promise<MemoryState> {
  const e = input.event;
  if (e.kind !== "step" || e.critic === null) return foldMemory(input);
  let drafts: readonly PatternDraft[];
  try {
    const derived = await ctx.complete({
      schema: MemoryPatterns,
      schemaName: "memory_patterns",
      prompt: renderPatterns(input),
    });
    drafts = derived.patterns;
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn({ err }, "the pattern model call failed: the rule's patterns are used");
    drafts = derivePatterns(input).patterns;
  }
  return foldMemory(input, drafts);
}

/** The memory agent: folds each event into the session memory it is given, with critic-derived patterns. */
export default defineAgent({
  role: "memory",
  description:
    "Folds a perception, a step outcome or a person's reply into the session memory: short-term items, banned and successful tools, critic-derived behavioural patterns, long-term references",
  ops: {
    update: {
      kind: "handler",
      version: "memory.update/2",
      contract: "memory.update",
      run: update,
      summarize: (o) =>
        `${o.short_term.length} short-term items, ${o.banned_tools.length} banned, ${o.successful_tools.length} successful tools, ${o.patterns.length} patterns, ${o.long_term_refs.length} long-term refs`,
      // the handler's model call (patterns from a critic report), answered offline by the rule
      offline: derivePatterns,
    },
  },
});
