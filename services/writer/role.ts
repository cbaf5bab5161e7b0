import { defineAgent, type HandlerContext } from "@agentmesh/agent-kit";
import {
  LIMITS,
  STREAMING_CONFIG,
  type AgentBrief,
  type WritingAnalysis,
  type WritingAnalyzeRequest,
  type WritingBrief,
} from "@agentmesh/contracts";
import {
  draftToolCall,
  needsModel,
  parseToolArguments,
  renderBrief,
  renderObservations,
  renderTools,
} from "@agentmesh/offline-kit";
import { z } from "zod";
import { offlineSynthesis, renderSynthesize } from "./synthesize.js";

/**
 * What the analyze node's model writes: one flat object, every field present (those the action
 * does not use empty), so strict structured output accepts it; a tool's arguments travel as JSON
 * text. The refinements hold what the flat shape cannot say, so a reply breaking one gets the
 * model port's validation retry.
 */
export const WriterDraft = z
  .object({
    action: z.enum(["brief", "tool"]),
    writing_type: z.string().max(80),
    tone: z.string().max(80),
    audience: z.string().max(200),
    key_points: z.array(z.string().min(1).max(500)).max(LIMITS.maxListItems),
    tool: z.string().max(80),
    arguments_json: z.string().max(30_000),
  })
  .superRefine((d, ctx) => {
    const need = (ok: boolean, path: string, message: string) =>
      ok || ctx.addIssue({ code: "custom", path: [path], message });
    if (d.action === "brief") {
      need(d.writing_type.trim().length > 0, "writing_type", "action brief needs the writing type");
      need(d.tone.trim().length > 0, "tone", "action brief needs the tone");
    }
    if (d.action === "tool")
      need(parseToolArguments(d.arguments_json) !== null, "arguments_json", "arguments_json must be a JSON object");
  });
export type WriterDraft = z.infer<typeof WriterDraft>;

/** The analyze node's user prompt: the brief, the results of its earlier tool calls, the tools it may call. */
export function renderWritingAnalyze(input: WritingAnalyzeRequest): string {
  return [
    renderBrief(input.brief),
    renderObservations(input.observations),
    `Tools you may call:\n${renderTools(input.tools)}`,
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The draft as the node's answer; a tool the writing agent was not offered is the model's fault (a handoff goes to the workflow, which decides it). */
export function toWritingAnalysis(d: WriterDraft, input: WritingAnalyzeRequest): WritingAnalysis {
  if (d.action === "brief")
    return {
      action: "brief",
      writing_type: d.writing_type,
      tone: d.tone,
      audience: d.audience,
      key_points: d.key_points,
    };
  return draftToolCall(d, input.tools, "writing");
}

/** analyze: one structured model call, never streamed (STREAMING_CONFIG.analyze). */
export async function analyze(
  input: WritingAnalyzeRequest,
  ctx: Pick<HandlerContext, "complete">,
): Promise<WritingAnalysis> {
  const draft = await ctx.complete({
    schema: WriterDraft,
    schemaName: "writer_analyze",
    prompt: renderWritingAnalyze(input),
  });
  return toWritingAnalysis(draft, input);
}

/** The brief and the writing brief, the opening of the outline, write and finalize prompts. */
export function renderWriting(brief: AgentBrief, w: WritingBrief): string {
  const points = w.key_points.length ? w.key_points.map((p) => `- ${p}`).join("\n") : "(none given)";
  return [
    renderBrief(brief),
    `Writing type: ${w.writing_type}\nTone: ${w.tone}\nAudience: ${w.audience || "(not stated)"}`,
    `Key points:\n${points}`,
  ].join("\n\n");
}

/** Offline the writing agent answers `needs_model`: it cannot write without a model. */
const writingNeedsModel = needsModel("writing agent", "plan, outline or write a piece");

/** One line for the log. */
const summarizeAnalysis = (o: WritingAnalysis): string =>
  o.action === "tool" ? `tool ${o.tool}` : `${o.writing_type}, ${o.tone}, ${o.key_points.length} key point(s)`;

/** The writer: the supervisor's writing agent (`analyze → outline → write → finalize`). */
export default defineAgent({
  role: "writer",
  description:
    "The supervisor's writing agent (reads the task or hands off to research, outlines, drafts, finalizes) and clarify's synthesis agent (a cited answer from gathered passages)",
  ops: {
    analyze: {
      kind: "handler",
      version: "writer.analyze/1",
      contract: "writer.analyze",
      run: analyze,
      summarize: summarizeAnalysis,
      offline: writingNeedsModel,
    },
    outline: {
      contract: "writer.outline",
      output: "text",
      stream: STREAMING_CONFIG.outline,
      render: (i) => renderWriting(i.brief, i.writing),
      toOutput: (text) => ({ outline: text }),
      summarize: (o) => `an outline of ${o.outline.split("\n").length} line(s)`,
      offline: writingNeedsModel,
    },
    write: {
      contract: "writer.write",
      output: "text",
      stream: STREAMING_CONFIG.write,
      render: (i) => `${renderWriting(i.brief, i.writing)}\n\nOutline:\n${i.outline}`,
      toOutput: (text) => ({ draft: text }),
      summarize: (o) => `a draft of ${o.draft.length} characters`,
      offline: writingNeedsModel,
    },
    finalize: {
      contract: "writer.finalize",
      output: "text",
      stream: STREAMING_CONFIG.finalize,
      render: (i) => `${renderWriting(i.brief, i.writing)}\n\nDraft:\n${i.draft}`,
      // the final text is the session's final answer as the model wrote it
      toOutput: (text) => ({ final_content: text }),
      summarize: (o) => `the final text, ${o.final_content.length} characters`,
      offline: writingNeedsModel,
    },
    synthesize: {
      contract: "writer.synthesize",
      output: "text",
      // clarify's synthesis agent streams its answer; the workflow adds the source list after it
      stream: true,
      render: renderSynthesize,
      toOutput: (text) => ({ answer: text }),
      summarize: (o) => `an answer of ${o.answer.length} characters`,
      offline: offlineSynthesis,
    },
  },
});
