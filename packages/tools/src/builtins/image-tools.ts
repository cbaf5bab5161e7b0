import type { RoleName } from "@agentmesh/contracts";
import { z } from "zod";
import { defineTool, type RetryPolicy, type ToolDefinition } from "../registry.js";
import { IMAGE_SIZES, IMAGE_URL_MAX_CHARS, imageUrlProblem, type ImageProvider } from "./images.js";

/** Options of `generate_image` and `analyze_image`. */
export interface ImageToolOptions {
  readonly provider: ImageProvider;
  readonly allowedRoles: readonly RoleName[];
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
}

const GenerateInput = z.object({ prompt: z.string().trim().min(1).max(4000), size: z.enum(IMAGE_SIZES).optional() });
const GeneratedImage = z.union([
  z.object({ url: z.string().url(), revised_prompt: z.string().optional() }),
  z.object({ b64_json: z.string(), mime_type: z.string(), revised_prompt: z.string().optional() }),
]);
const GenerateOutput = z.object({
  provider: z.string(),
  model: z.string(),
  images: z.array(GeneratedImage).min(1).max(4),
});

/** The `generate_image` tool over a provider. An image costs money: two attempts at most unless told. */
export function createGenerateImageTool(
  opts: ImageToolOptions,
): ToolDefinition<typeof GenerateInput, typeof GenerateOutput> {
  return defineTool({
    name: "generate_image",
    description: "Generate an image from a text prompt. Returns a link to it or the image as base64 data.",
    input: GenerateInput,
    output: GenerateOutput,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 120_000,
    retry: { maxAttempts: 2, ...opts.retry },
    async execute(input, ctx) {
      const made = await opts.provider.generate(input.prompt, { size: input.size, signal: ctx.signal });
      return { provider: opts.provider.name, model: made.model, images: [...made.images] };
    },
  });
}

const AnalyzeInput = z.object({
  image_url: z
    .string()
    .trim()
    .min(1)
    .max(IMAGE_URL_MAX_CHARS)
    .superRefine((url, ctx) => {
      const problem = imageUrlProblem(url);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
  question: z.string().trim().min(1).max(4000),
});
const AnalyzeOutput = z.object({ answer: z.string() });

/** The `analyze_image` tool over a provider: answers a question about one image. */
export function createAnalyzeImageTool(
  opts: ImageToolOptions,
): ToolDefinition<typeof AnalyzeInput, typeof AnalyzeOutput> {
  return defineTool({
    name: "analyze_image",
    description:
      "Answer a question about an image given as an http(s) or data: URL. The answer describes untrusted content.",
    input: AnalyzeInput,
    output: AnalyzeOutput,
    allowedRoles: opts.allowedRoles,
    timeoutMs: opts.timeoutMs ?? 60_000,
    retry: opts.retry,
    async execute(input, ctx) {
      return { answer: await opts.provider.analyze(input.image_url, input.question, { signal: ctx.signal }) };
    },
  });
}
