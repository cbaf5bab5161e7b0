import {
  BLACKBOARD_LIMITS,
  SUMMARIZE_TOOL,
  type MemoryPatterns,
  type OpRequest,
  type PatternDraft,
} from "@agentmesh/contracts";
import { clipText } from "@agentmesh/offline-kit";

// The memory agent's offline behaviour: the behavioural patterns one critic report shows, by rule.

type Update = OpRequest<"memory", "update">;

/** An accepted result at least this good shows a tool worth preferring for such steps. */
export const PREFER_MIN_QUALITY = 0.8;

const two = (n: number) => Math.round(n * 100) / 100;

/**
 * memory.update's model call, answered by rule: from a step's critic report, `ask` when the
 * critic needed a person, `verify` when it rejected the result with a hallucination risk over
 * the default threshold (0.4), `avoid` when it rejected it otherwise (its first issue said), and
 * `prefer` when it accepted a tool's result with quality of at least 0.8. Any other event, and a
 * step without a report, show nothing.
 */
export function derivePatterns(req: Update): MemoryPatterns {
  const e = req.event;
  if (e.kind !== "step" || e.critic === null) return { patterns: [] };
  const c = e.critic;
  const r = e.result;
  const what = `"${clipText(e.step.description, 60)}"`;
  const via = `${r.tool} (${r.strategy})`;
  const patterns: PatternDraft[] = [];
  if (c.requires_human_input) {
    const asked = c.question_for_human ? `: ${clipText(c.question_for_human, 80)}` : "";
    patterns.push({
      kind: "ask",
      tool: null,
      pattern: clipText(`Steps like ${what} needed a person's input${asked}`, 200),
    });
  }
  if (!c.is_acceptable && c.hallucination_risk > BLACKBOARD_LIMITS.defaultMaxHallucinationRisk) {
    patterns.push({
      kind: "verify",
      tool: r.tool,
      pattern: clipText(
        `Check what ${via} returns against the sources: the critic rated its hallucination risk ${two(c.hallucination_risk)} for ${what}`,
        200,
      ),
    });
  } else if (!c.is_acceptable) {
    const issue = c.issues[0] ? `: ${clipText(c.issues[0], 80)}` : "";
    patterns.push({
      kind: "avoid",
      tool: r.tool,
      pattern: clipText(`${via} gave a rejected result (quality ${two(c.quality)}) for ${what}${issue}`, 200),
    });
  } else if (c.quality >= PREFER_MIN_QUALITY && r.tool !== SUMMARIZE_TOOL) {
    patterns.push({
      kind: "prefer",
      tool: r.tool,
      pattern: clipText(`${via} gave an accepted result (quality ${two(c.quality)}) for ${what}`, 200),
    });
  }
  return { patterns: patterns.slice(0, BLACKBOARD_LIMITS.maxPatternsPerReport) };
}
