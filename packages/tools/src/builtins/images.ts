import { BlockList, isIP } from "node:net";
import { AgentmeshError } from "@agentmesh/contracts";
import type { OpenAI } from "openai";
import type * as OpenAISdk from "openai";
import { z } from "zod";
import { cappedFetch, endpointFailure } from "./openai-failure.js";

const ENDPOINT = "the images endpoint";

/** Sizes `generate_image` may ask for: the ones OpenAI-compatible images endpoints know. */
export const IMAGE_SIZES = [
  "auto",
  "256x256",
  "512x512",
  "1024x1024",
  "1536x1024",
  "1024x1536",
  "1792x1024",
  "1024x1792",
] as const;
export type ImageSize = (typeof IMAGE_SIZES)[number];

/** Longest `image_url` `analyze_image` takes: a data: URL of an image of about 700 KB. */
export const IMAGE_URL_MAX_CHARS = 1_000_000;

/** One generated image: a link (providers keep it for a while) or the image itself, base64. */
export type GeneratedImage =
  | { readonly url: string; readonly revised_prompt?: string }
  | { readonly b64_json: string; readonly mime_type: string; readonly revised_prompt?: string };

/** What an images endpoint made, and with which model. */
export interface GeneratedImages {
  readonly images: readonly GeneratedImage[];
  readonly model: string;
}

/**
 * An images and vision backend. Throws `AgentmeshError`s: `tool_unavailable` (none configured,
 * key refused), `tool_error` (retryable on 429, 5xx and network failures), `timeout`.
 */
export interface ImageProvider {
  readonly name: string;
  generate(prompt: string, opts: { readonly size?: ImageSize; readonly signal: AbortSignal }): Promise<GeneratedImages>;
  /** `imageUrl` is an http(s) or data: URL already checked by `imageUrlProblem`. */
  analyze(imageUrl: string, question: string, opts: { readonly signal: AbortSignal }): Promise<string>;
}

/** Options of the OpenAI-compatible provider (OpenAI, Azure, LiteLLM, vLLM, LocalAI, a local fake). */
export interface OpenAIImagesOptions {
  /** The API base, e.g. https://api.openai.com/v1. */
  readonly baseUrl: string;
  /** Sent as a bearer token; never part of an error. */
  readonly apiKey?: string;
  /** Model of `POST {base}/images/generations`. */
  readonly imageModel: string;
  /** Model of `POST {base}/chat/completions` with an `image_url` part. */
  readonly visionModel: string;
  readonly fetch?: typeof globalThis.fetch;
  /** Largest response body read (default 16 MiB). */
  readonly maxResponseBytes?: number;
  /** Largest base64 image handed on (default 8 MiB of characters); bigger ones fail, not retried. */
  readonly maxImageChars?: number;
  /** Longest answer `analyze` returns (default 8000 characters; longer ones are clipped). */
  readonly maxAnswerChars?: number;
}

const DATA_URL = /^data:image\/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

// Hosts a provider on our own network would fetch on our behalf: loopback, private, link-local
// and unique-local ranges. A name that resolves there (DNS rebinding) is the provider's to refuse.
const PRIVATE = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
] as const)
  PRIVATE.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 127],
  ["::ffff:0:0", 96],
  ["fc00::", 7],
  ["fe80::", 10],
] as const)
  PRIVATE.addSubnet(net, bits, "ipv6");

/** Why `url` may not be given to `analyze_image`, or null when it may. */
export function imageUrlProblem(url: string): string | null {
  if (url.length > IMAGE_URL_MAX_CHARS) return `image_url is longer than ${IMAGE_URL_MAX_CHARS} characters`;
  if (/^data:/i.test(url))
    return DATA_URL.test(url) ? null : "a data: image_url must be data:image/(png|jpeg|gif|webp);base64,<data>";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "image_url is not a URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return `image_url must be http(s) or data:, not ${parsed.protocol.slice(0, 20)}`;
  if (url.length > 4096) return "an http(s) image_url is longer than 4096 characters";
  if (parsed.username || parsed.password) return "image_url may not carry credentials";
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const family = isIP(host);
  if (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    (family !== 0 && PRIVATE.check(host, family === 4 ? "ipv4" : "ipv6"))
  ) {
    return "image_url may not point at a loopback or private address";
  }
  return null;
}

const ImagesResponse = z.object({
  data: z
    .array(
      z.object({ url: z.string().nullish(), b64_json: z.string().nullish(), revised_prompt: z.string().nullish() }),
    )
    .default([]),
  output_format: z.enum(["png", "webp", "jpeg"]).nullish(),
});
const ChatResponse = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }) }))
    .min(1),
});

function sniffMime(b64: string, fallback: string | null | undefined): string {
  if (b64.startsWith("iVBORw0KGgo")) return "image/png";
  if (b64.startsWith("/9j/")) return "image/jpeg";
  if (b64.startsWith("UklGR")) return "image/webp";
  if (b64.startsWith("R0lGOD")) return "image/gif";
  return `image/${fallback ?? "png"}`;
}

/**
 * The OpenAI-compatible images and vision provider, through the `openai` client (the reference
 * client of this wire format, already the model port's). Its own retries are off: the safe
 * executor's retry policy is the only one. Errors never carry the key: messages are ours, and the
 * provider's own words are passed through `redactText` with the key.
 */
export function createOpenAIImages(opts: OpenAIImagesOptions): ImageProvider {
  if (!opts.baseUrl) throw new Error("the OpenAI-compatible images provider needs a base URL");
  const maxImage = opts.maxImageChars ?? 8 * 1024 * 1024;
  const maxAnswer = opts.maxAnswerChars ?? 8000;
  const secrets = opts.apiKey ? [opts.apiKey] : [];
  // the `openai` package is imported by the first call: an executor without images never loads it
  let made: Promise<{ readonly sdk: typeof OpenAISdk; readonly client: OpenAI }> | null = null;
  let sdk: typeof OpenAISdk | null = null;
  const connect = (): Promise<{ readonly sdk: typeof OpenAISdk; readonly client: OpenAI }> =>
    (made ??= import("openai").then((loaded) => {
      sdk = loaded;
      const client = new loaded.OpenAI({
        baseURL: opts.baseUrl,
        apiKey: opts.apiKey || "not-needed",
        organization: null,
        project: null,
        webhookSecret: null,
        logLevel: "off",
        maxRetries: 0,
        // The executor's per-attempt timeout aborts first; this is only a backstop.
        timeout: 600_000,
        fetch: cappedFetch(opts.fetch ?? globalThis.fetch, opts.maxResponseBytes ?? 16 * 1024 * 1024, ENDPOINT),
      });
      return { sdk: loaded, client };
    }));

  const failure = (err: unknown, what: string, signal: AbortSignal) =>
    endpointFailure(err, what, signal, { sdk, secrets, endpoint: ENDPOINT });

  return {
    name: "openai-compatible",
    async generate(prompt, { size, signal }) {
      let body: unknown;
      try {
        const { client } = await connect();
        body = await client.images.generate(
          { model: opts.imageModel, prompt, n: 1, ...(size ? { size } : {}) },
          { signal, maxRetries: 0 },
        );
      } catch (err) {
        throw failure(err, "image generation", signal);
      }
      const images = generatedImages(body, maxImage);
      return { images, model: opts.imageModel };
    },
    async analyze(imageUrl, question, { signal }) {
      let body: unknown;
      try {
        const { client } = await connect();
        body = await client.chat.completions.create(
          {
            model: opts.visionModel,
            messages: [
              {
                role: "user",
                content: [
                  { type: "text", text: question },
                  { type: "image_url", image_url: { url: imageUrl } },
                ],
              },
            ],
          },
          { signal, maxRetries: 0 },
        );
      } catch (err) {
        throw failure(err, "image analysis", signal);
      }
      return visionAnswer(body, maxAnswer);
    },
  };
}

/** The images of a generation response (at most 4): base64 ones checked against `maxImage`, http(s) URLs as they are. */
function generatedImages(body: unknown, maxImage: number): GeneratedImage[] {
  const parsed = ImagesResponse.safeParse(body);
  if (!parsed.success)
    throw new AgentmeshError("tool_error", "the images endpoint sent an unexpected response", { retryable: false });
  const images: GeneratedImage[] = [];
  for (const d of parsed.data.data.slice(0, 4)) {
    const revised = d.revised_prompt ? { revised_prompt: d.revised_prompt.slice(0, 4000) } : {};
    if (d.b64_json) {
      if (d.b64_json.length > maxImage)
        throw new AgentmeshError("tool_error", `the generated image is over ${maxImage} base64 characters`, {
          retryable: false,
        });
      images.push({
        b64_json: d.b64_json,
        mime_type: sniffMime(d.b64_json, parsed.data.output_format),
        ...revised,
      });
    } else if (d.url && /^https?:\/\//i.test(d.url) && d.url.length <= 4096) {
      images.push({ url: d.url, ...revised });
    }
  }
  if (images.length === 0)
    throw new AgentmeshError("tool_error", "the images endpoint returned no image", { retryable: false });
  return images;
}

/** The vision model's answer, at most `maxAnswer` characters; a refusal or an empty answer is a failure. */
function visionAnswer(body: unknown, maxAnswer: number): string {
  const parsed = ChatResponse.safeParse(body);
  if (!parsed.success)
    throw new AgentmeshError("tool_error", "the vision endpoint sent an unexpected response", { retryable: false });
  const message = parsed.data.choices[0]?.message;
  if (message?.refusal)
    throw new AgentmeshError("tool_error", `the vision model refused: ${message.refusal.slice(0, 500)}`, {
      retryable: false,
    });
  const answer = message?.content?.trim() ?? "";
  if (!answer) throw new AgentmeshError("tool_error", "the vision model gave an empty answer", { retryable: false });
  return answer.slice(0, maxAnswer);
}

/** The default provider: no images endpoint configured, so both tools answer `tool_unavailable`. */
export function createOfflineImages(
  message = "no images provider is configured: set AGENTMESH_IMAGES_BASE_URL (and AGENTMESH_IMAGES_API_KEY) to an OpenAI-compatible endpoint",
): ImageProvider {
  const unavailable = () => Promise.reject(new AgentmeshError("tool_unavailable", message));
  return { name: "offline", generate: unavailable, analyze: unavailable };
}
