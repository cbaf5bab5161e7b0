import { defineAgent, type HandlerContext, type OfflineContext } from "@agentmesh/agent-kit";
import { CodeLanguage, LIMITS, codeFailure, type CodeGenerateRequest, type CoderAction } from "@agentmesh/contracts";
import {
  clip,
  draftToolCall,
  findCode,
  parseToolArguments,
  renderAttempts,
  renderBrief,
  renderObservations,
  renderTools,
} from "@agentmesh/offline-kit";
import { z } from "zod";

/**
 * What the model writes: one flat object, every field present (those the action does not use
 * empty), so strict structured output accepts it; the tool's arguments travel as JSON text.
 * The refinements hold what the flat shape cannot say, so a reply that breaks one gets the
 * model port's validation retry.
 */
export const CoderDraft = z
  .object({
    action: z.enum(["code", "tool", "answer"]),
    language: CodeLanguage.nullable(),
    code: z.string().max(LIMITS.maxCodeChars),
    explanation: z.string().max(2000),
    text: z.string().max(LIMITS.maxTextChars),
    tool: z.string().max(80),
    arguments_json: z.string().max(30_000),
  })
  .superRefine((d, ctx) => {
    const need = (ok: boolean, path: string, message: string) =>
      ok || ctx.addIssue({ code: "custom", path: [path], message });
    if (d.action === "code") {
      need(d.language !== null, "language", "code needs its language");
      need(d.code.trim().length > 0, "code", "action code needs the code");
    }
    if (d.action === "answer") need(d.text.trim().length > 0, "text", "action answer needs the answer's text");
    if (d.action === "tool")
      need(parseToolArguments(d.arguments_json) !== null, "arguments_json", "arguments_json must be a JSON object");
  });
export type CoderDraft = z.infer<typeof CoderDraft>;

const EMPTY = { language: null, code: "", explanation: "", text: "", tool: "", arguments_json: "" } as const;

/** The user prompt: the brief, the tools, and with earlier runs the last one's code and error to fix. */
export function renderCodeGenerate(input: CodeGenerateRequest): string {
  const fix = input.attempts.length
    ? `Earlier runs of this task:\n\n${renderAttempts(input.attempts)}\n\nFix the last run's code so that it runs cleanly and does the task; return the whole corrected program.`
    : "";
  return [
    renderBrief(input.brief),
    `Tools you may call:\n${renderTools(input.tools)}`,
    renderObservations(input.observations),
    fix,
    `Rounds left, this one included: ${input.rounds_left}`,
  ]
    .filter(Boolean)
    .join("\n\n");
}

/** The draft as the op's answer; a tool the agent was not offered is the model's fault (a handoff goes to the workflow, which decides it). */
export function toCoderAction(d: CoderDraft, input: CodeGenerateRequest): CoderAction {
  switch (d.action) {
    case "code":
      // the draft's refinement has made sure a code action names its language
      return { action: "code", language: d.language ?? "python", code: d.code, explanation: d.explanation };
    case "answer":
      return { action: "answer", text: d.text };
    case "tool":
      return draftToolCall(d, input.tools, "code");
  }
}

/** generate: one structured model call, never streamed (STREAMING_CONFIG.generate: the code's results reach the user, not its writing). */
async function generate(input: CodeGenerateRequest, ctx: Pick<HandlerContext, "complete">): Promise<CoderAction> {
  const draft = await ctx.complete({
    schema: CoderDraft,
    schemaName: "coder_generate",
    prompt: renderCodeGenerate(input),
  });
  return toCoderAction(draft, input);
}

/**
 * Offline the code agent runs the code it is given: the first runnable fenced block of the task
 * (or the query). It cannot write code, nor fix code that failed, and says so with the last error.
 */
export function generateOffline(input: CodeGenerateRequest, ctx: Pick<OfflineContext, "configHint">): CoderDraft {
  const last = input.attempts.at(-1);
  if (last) {
    return {
      ...EMPTY,
      action: "answer",
      text: `The code failed: ${clip(codeFailure(last), 1000)}\n\nWithout a language model I cannot fix code, only run the code I am given. ${ctx.configHint}`,
    };
  }
  const found = findCode(input.brief.task) ?? findCode(input.brief.query);
  if (!found) {
    return {
      ...EMPTY,
      action: "answer",
      text: `Writing code needs a language model. Without one I run code you give me: put it in a fenced block (\`\`\`python or \`\`\`js) in your message. ${ctx.configHint}`,
    };
  }
  return {
    ...EMPTY,
    action: "code",
    language: found.language,
    code: found.code,
    explanation: "Runs the code given in the request (offline: no model writes or fixes code).",
  };
}

/** One line for the log. */
function summarizeAction(o: CoderAction): string {
  switch (o.action) {
    case "code":
      return `${o.language} code, ${o.code.split("\n").length} line(s)`;
    case "tool":
      return `tool ${o.tool}`;
    case "answer":
      return `an answer of ${o.text.length} characters`;
  }
}

/** The coder role: the supervisor's code agent (generate_code); the executor runs its code. */
export default defineAgent({
  role: "coder",
  description:
    "Writes (or fixes) Python or JavaScript for the sandbox, hands data work to the data agent, or answers without code",
  ops: {
    generate: {
      kind: "handler",
      version: "coder.generate/1",
      contract: "coder.generate",
      run: generate,
      summarize: summarizeAction,
      // the handler's one model call, answered offline
      offline: generateOffline,
    },
  },
});
