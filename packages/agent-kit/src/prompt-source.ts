import { z } from "zod";
import type { Logger } from "@agentmesh/service-kit";
import { contractVersion, type PromptContract } from "./prompts.js";

/** The instructions an op runs with, and where they came from (recorded as the prompt version). */
export interface ResolvedPrompt {
  readonly text: string;
  /** `<id>/v<N>` for a prompt file, `langfuse:<name>/v<N>` for a prompt from Langfuse. */
  readonly version: string;
  readonly source: "file" | "langfuse";
}

/**
 * Where an op's instructions come from: a prompt registry by name, else its prompt file. Never
 * fails: a registry that is down, slow or lacks the name gives the file's text.
 */
export interface PromptSource {
  resolve(name: string, file: PromptContract): Promise<ResolvedPrompt>;
}

const fromFile = (file: PromptContract): ResolvedPrompt => ({
  text: file.system,
  version: contractVersion(file),
  source: "file",
});

/** The prompt files only (no registry configured). */
export const FILE_PROMPTS: PromptSource = { resolve: async (_name, file) => fromFile(file) };

/**
 * Fills `{{name}}` placeholders (spaces inside the braces allowed) from `vars`; a placeholder
 * with no value is left as it is, so a prompt never silently loses text.
 */
export function compileTemplate(text: string, vars: Readonly<Record<string, string | number>>): string {
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name: string) =>
    Object.hasOwn(vars, name) ? String(vars[name]) : whole,
  );
}

/** Langfuse's answer to `GET /api/public/v2/prompts/{name}`: only text prompts are used. */
const LangfusePrompt = z.object({ type: z.literal("text"), prompt: z.string().min(1), version: z.number().int() });

/** How to reach Langfuse: its host, the project's key pair, the cache's lifetime and one fetch's timeout. */
export interface LangfuseOptions {
  readonly host: string;
  readonly publicKey: string;
  readonly secretKey: string;
  /** How long a fetched prompt (or a miss) is used before Langfuse is asked again. */
  readonly ttlMs: number;
  /** One fetch's timeout: past it the file's text is used. */
  readonly timeoutMs: number;
  /** The label asked for (Langfuse's `production` by default). */
  readonly label?: string;
  readonly log: Logger;
  readonly now?: () => number;
  readonly fetch?: typeof fetch;
}

type Cached = { readonly at: number; readonly prompt: { text: string; version: number } | null };

/**
 * Prompts from Langfuse (public API, basic auth with the key pair) with the prompt files as the
 * fallback. Each name is fetched at most once per `ttlMs`, a miss (down, 404, timeout, not a text
 * prompt) included, so a Langfuse outage costs one short timeout per name per TTL, not one per
 * task. The first fallback of a name is logged; it is logged again only after Langfuse served it.
 */
export function createLangfusePromptSource(opts: LangfuseOptions): PromptSource {
  const now = opts.now ?? Date.now;
  const doFetch = opts.fetch ?? fetch;
  const cache = new Map<string, Cached>();
  const inflight = new Map<string, Promise<Cached>>();
  const warned = new Set<string>();
  const auth = `Basic ${Buffer.from(`${opts.publicKey}:${opts.secretKey}`).toString("base64")}`;
  const base = opts.host.replace(/\/+$/, "");
  const label = opts.label ?? "production";

  async function fetchPrompt(name: string): Promise<Cached> {
    const url = `${base}/api/public/v2/prompts/${encodeURIComponent(name)}?label=${encodeURIComponent(label)}`;
    let why: string;
    try {
      const res = await doFetch(url, {
        headers: { authorization: auth, accept: "application/json" },
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      if (res.ok) {
        const parsed = LangfusePrompt.safeParse(await res.json());
        if (parsed.success) {
          if (warned.delete(name)) opts.log.info({ prompt: name }, "Langfuse serves the prompt again");
          return { at: now(), prompt: { text: parsed.data.prompt, version: parsed.data.version } };
        }
        why = "not a text prompt";
      } else {
        await res.body?.cancel();
        why = `HTTP ${res.status}`;
      }
    } catch (err) {
      why =
        err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")
          ? `no answer within ${opts.timeoutMs} ms`
          : "unreachable";
    }
    if (!warned.has(name)) {
      warned.add(name);
      opts.log.warn({ prompt: name, reason: why }, "Langfuse did not give the prompt: using the prompt file");
    }
    return { at: now(), prompt: null };
  }

  async function lookup(name: string): Promise<Cached> {
    const hit = cache.get(name);
    if (hit && now() - hit.at < opts.ttlMs) return hit;
    let pending = inflight.get(name);
    if (!pending) {
      // one request per name at a time, however many tasks ask at once
      pending = fetchPrompt(name).finally(() => inflight.delete(name));
      inflight.set(name, pending);
    }
    const got = await pending;
    cache.set(name, got);
    return got;
  }

  return {
    async resolve(name, file) {
      const got = (await lookup(name)).prompt;
      return got === null
        ? fromFile(file)
        : { text: got.text, version: `langfuse:${name}/v${got.version}`, source: "langfuse" };
    },
  };
}
