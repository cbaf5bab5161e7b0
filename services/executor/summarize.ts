import { SUMMARIZE_TOOL, type Citation, type OpRequest, type StepResult } from "@agentmesh/contracts";
import type { HandlerContext } from "@agentmesh/agent-kit";
import { SummaryDraft, numberedSources } from "./draft.js";
import { clipText as clip } from "@agentmesh/tools";

type ExecuteRequest = OpRequest<"executor", "execute">;

/** The summarize step's prompt: the question, the accepted results, the numbered sources and any answers from a person. */
export function renderSummarize(req: ExecuteRequest): string {
  const ctx = req.context;
  if (!ctx) return `Question: ${req.question}`;
  const sources = numberedSources(ctx);
  return [
    `Question: ${req.question}`,
    ctx.results.length
      ? `Accepted step results:\n${ctx.results.map((r) => `- step ${r.step_index + 1} (${r.tool}, ${r.strategy}): ${r.description}\n  ${clip(r.output, 1500)}`).join("\n")}`
      : "No tool results.",
    sources.length
      ? `Sources (cite as [n]):\n${sources.map((c, i) => `[${i + 1}] ${c.path}: ${c.passage}`).join("\n")}`
      : "No sources.",
    ctx.user_replies.length ? `The person clarified:\n${ctx.user_replies.map((r) => `- ${r}`).join("\n")}` : "",
    "Write the final answer from these results only. Reference the sources you use as [n] and return them as citations. If they do not answer the question, say so.",
  ]
    .filter(Boolean)
    .join("\n\n");
}

const same = (a: Citation, b: Citation) => a.path === b.path && a.passage === b.passage;

/**
 * The summarize step: the model (offline engine or a real one) writes the answer from the
 * context; only citations that are among the context's sources are kept, so none is invented.
 */
export async function summarizeStep(req: ExecuteRequest, ctx: HandlerContext): Promise<StepResult> {
  const started = performance.now();
  const draft = await ctx.complete({
    schema: SummaryDraft,
    schemaName: "executor_summarize",
    prompt: renderSummarize(req),
  });
  const known = req.context
    ? [...numberedSources(req.context), ...req.context.results.flatMap((r) => r.citations)]
    : [];
  const citations: Citation[] = [];
  for (const c of draft.citations)
    if (known.some((k) => same(k, c)) && !citations.some((x) => same(x, c))) citations.push(c);
  const dropped = draft.citations.length - citations.length;
  if (dropped > 0) ctx.log.warn({ dropped }, "the summary cited sources it was not given; they were left out");
  return {
    strategy: "tool",
    tool: SUMMARIZE_TOOL,
    ok: true,
    output: draft.answer.slice(0, 4000),
    error: null,
    latency_ms: Math.round((performance.now() - started) * 1000) / 1000,
    attempts: 1,
    records: [],
    citations: citations.slice(0, 10),
  };
}
