import {
  BLACKBOARD_LIMITS,
  SUMMARIZE_TOOL,
  type BehaviourPattern,
  type ErrorCode,
  type MemoryItem,
  type MemoryState,
  type OpRequest,
  type PatternDraft,
} from "@agentmesh/contracts";

/** Failures that will not go away for this session: the tool is banned from further plans. */
const BANNING_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "sandbox_unavailable",
  "tool_not_found",
  "permission_denied",
  "tool_unavailable",
]);

const MAX_ITEM = 240;

/** Flattens whitespace and clips to `max` characters with an ellipsis. */
function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The short-term line for one event (at most 240 characters). */
function itemFor(req: OpRequest<"memory", "update">): MemoryItem {
  const e = req.event;
  switch (e.kind) {
    case "perception": {
      const s = e.snapshot;
      const entities = s.entities
        .slice(0, 5)
        .map((x) => x.text)
        .join(", ");
      const flagged = s.suspicious_patterns.length ? `; flagged ${s.suspicious_patterns.join("/")}` : "";
      return {
        kind: "query",
        content: clip(
          `Asked "${clip(req.question, 120)}": intent ${s.intent}${entities ? `; entities ${entities}` : ""}${flagged}`,
          MAX_ITEM,
        ),
        step_index: null,
      };
    }
    case "step": {
      const r = e.result;
      const what = r.ok
        ? `ok: ${clip(r.output ?? "", 120)}`
        : `failed (${r.error?.code ?? "error"}): ${clip(r.error?.message ?? "", 80)}`;
      const critic = e.critic
        ? `; critic ${e.critic.is_acceptable ? "accepted" : "rejected"} (quality ${e.critic.quality})`
        : "";
      return {
        kind: "step",
        content: clip(`Step ${e.step_index + 1} ${r.tool} (${r.strategy}) ${what}${critic}`, MAX_ITEM),
        step_index: e.step_index,
      };
    }
    case "user_reply":
      return {
        kind: "user",
        content: clip(`Asked "${clip(e.question_for_human, 100)}"; the person answered "${e.text}"`, MAX_ITEM),
        step_index: null,
      };
  }
}

/**
 * Folds one critic report's patterns into the memory's: a kind already kept for that tool is
 * restated in the new words and counted once more (it keeps its place), a new one is appended,
 * and the latest 20 are kept. A pattern about another tool than the step's is dropped: a report
 * speaks only of the step it reviewed.
 */
export function foldPatterns(
  kept: readonly BehaviourPattern[],
  drafts: readonly PatternDraft[],
  stepTool: string,
): BehaviourPattern[] {
  const key = (p: { kind: string; tool: string | null }) => `${p.kind}:${p.tool ?? ""}`;
  const seenNow = new Set<string>();
  let out = [...kept];
  for (const d of drafts) {
    if ((d.tool !== null && d.tool !== stepTool) || seenNow.has(key(d))) continue;
    seenNow.add(key(d));
    const at = out.findIndex((p) => key(p) === key(d));
    const old = out[at];
    out = old
      ? out.map((p, i) => (i === at ? { ...d, pattern: clip(d.pattern, 200), seen: old.seen + 1 } : p))
      : [...out, { ...d, pattern: clip(d.pattern, 200), seen: 1 }];
  }
  return out.slice(-BLACKBOARD_LIMITS.maxPatterns);
}

/**
 * The long-term reference a step leaves: only a result the critic accepted. The summarize step's
 * is the answer to the question; another step's is what its tool found, with its first source.
 */
export function longTermRef(req: OpRequest<"memory", "update">): string | null {
  const e = req.event;
  if (e.kind !== "step" || !e.result.ok || e.critic?.is_acceptable !== true) return null;
  const output = clip(e.result.output ?? "", 140);
  if (e.step.tool === SUMMARIZE_TOOL) return clip(`Answered "${clip(req.question, 50)}": ${output}`, 200);
  const source = e.result.citations[0] ? `, ${clip(e.result.citations[0].path, 40)}` : "";
  return clip(`${clip(e.step.description, 50)} (${e.result.tool}${source}): ${output}`, 200);
}

/** Appends a reference not yet kept, keeping the latest 20 (the thread's come first, so they go first). */
function withRef(refs: readonly string[], ref: string | null): string[] {
  if (ref === null || refs.includes(ref)) return [...refs];
  return [...refs, ref].slice(-BLACKBOARD_LIMITS.maxLongTermRefs);
}

/**
 * memory.update as a pure fold: one short-term item per event (the last 100 kept), a tool banned
 * on a failure that cannot pass, a tool's success counted, the critic report's behavioural
 * patterns (`drafts`, derived by the model or the rule) folded in, and an accepted step's
 * long-term reference added. The agent holds no state: the memory arrives by value and the next
 * one is returned.
 */
export function foldMemory(req: OpRequest<"memory", "update">, drafts: readonly PatternDraft[] = []): MemoryState {
  const m = req.memory;
  const short_term = [...m.short_term, itemFor(req)].slice(-BLACKBOARD_LIMITS.maxShortTermItems);
  let banned_tools = m.banned_tools;
  let successful_tools = m.successful_tools;
  let patterns = m.patterns;
  const e = req.event;
  if (e.kind === "step") {
    const r = e.result;
    const code = r.error?.code;
    if (!r.ok && code !== undefined && BANNING_CODES.has(code) && !banned_tools.some((b) => b.tool === r.tool)) {
      banned_tools = [...banned_tools, { tool: r.tool, reason: clip(`${code}: ${r.error?.message ?? ""}`, 200) }].slice(
        -BLACKBOARD_LIMITS.maxBannedTools,
      );
    }
    if (r.ok && r.tool !== SUMMARIZE_TOOL) {
      const known = successful_tools.find((t) => t.tool === r.tool);
      successful_tools = known
        ? successful_tools.map((t) => (t === known ? { ...t, successes: t.successes + 1 } : t))
        : [...successful_tools, { tool: r.tool, purpose: clip(e.step.description, 120), successes: 1 }].slice(
            -BLACKBOARD_LIMITS.maxSuccessfulTools,
          );
    }
    if (e.critic !== null) patterns = foldPatterns(patterns, drafts, r.tool);
  }
  return {
    short_term,
    banned_tools,
    successful_tools,
    patterns,
    long_term_refs: withRef(m.long_term_refs, longTermRef(req)),
  };
}
