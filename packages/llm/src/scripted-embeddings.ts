// The scripted server's `/v1/embeddings`: deterministic vectors, so retrieval tests can tell a
// passage found by meaning from one found by its words without a live model. A text's vector
// is a hashed bag of its words: each word (lowercase, three letters or more, after the synonym
// table maps it to its stand-in) adds 1 at the FNV-1a hash of the word modulo the dimension.

/** How the scripted server answers `/v1/embeddings`. */
export interface ScriptedEmbeddingsOptions {
  /** Vector length (default 256). */
  readonly dim?: number;
  /** Words embedded as another (`{ automobile: "car" }`): the "meaning" a test gives them. */
  readonly synonyms?: Readonly<Record<string, string>>;
  /** Answer every embeddings request with this HTTP status instead (an endpoint that is down). */
  readonly status?: number;
}

/** One request the server received on /v1/embeddings. */
export interface ScriptedEmbeddingCall {
  readonly model: string;
  readonly inputs: readonly string[];
  readonly status: number;
}

const STOP = new Set(["the", "and", "for", "with", "are", "was", "this", "that", "from", "into", "its"]);

/** The scripted embedding of one text (not normalized). */
export function scriptedEmbedding(text: string, opts: ScriptedEmbeddingsOptions = {}): number[] {
  const dim = opts.dim ?? 256;
  const v = new Array<number>(dim).fill(0);
  for (const raw of text.toLowerCase().match(/[a-z0-9]{3,}/g) ?? []) {
    if (STOP.has(raw)) continue;
    const word = opts.synonyms?.[raw] ?? raw;
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
    v[h % dim] = (v[h % dim] ?? 0) + 1;
  }
  return v;
}

/** The inputs of an embeddings request body (a string or a list of strings), or null when it has none. */
export function embeddingInputs(body: unknown): { model: string; inputs: string[] } | null {
  if (typeof body !== "object" || body === null) return null;
  const { model, input } = body as { model?: unknown; input?: unknown };
  const inputs = typeof input === "string" ? [input] : input;
  if (typeof model !== "string" || !Array.isArray(inputs) || !inputs.every((x) => typeof x === "string")) return null;
  return { model, inputs };
}

/** The response body OpenAI sends for embeddings (float encoding). */
export function embeddingsResponse(model: string, inputs: readonly string[], opts: ScriptedEmbeddingsOptions): unknown {
  return {
    object: "list",
    model,
    data: inputs.map((text, index) => ({ object: "embedding", index, embedding: scriptedEmbedding(text, opts) })),
    usage: { prompt_tokens: inputs.join(" ").length, total_tokens: inputs.join(" ").length },
  };
}
