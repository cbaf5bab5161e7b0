import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { configError } from "@agentmesh/service-kit";

/** The owner of requests without a key when AGENTMESH_GATEWAY_ANONYMOUS is on; no key may take the name. */
export const ANONYMOUS_OWNER = "anonymous";

/** What every key starts with, so a key is recognisable in a leak scan or when pasted by mistake. */
const KEY_PREFIX = "am_";
const KEY_BYTES = 32;
const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const NAME_RULE = "[a-z0-9][a-z0-9_-]{0,63}";
const HASH = /^sha256:[0-9a-f]{64}$/;
/** Longer presented keys are refused unhashed: no configured key is that long. */
const MAX_PRESENTED = 512;

/** A new API key: `am_` and 32 random bytes, base64url. Shown once; only its hash is configured. */
export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(KEY_BYTES).toString("base64url")}`;
}

const sha256 = (key: string) => createHash("sha256").update(key, "utf8").digest();

/** The configuration entry of a key: `name=sha256:<64 lowercase hex>`. */
export function apiKeyEntry(name: string, key: string): string {
  return `${name}=sha256:${sha256(key).toString("hex")}`;
}

/**
 * Why `name` cannot own a key, or null when it can. The problem never quotes the name: a name
 * that breaks the rules may be a key pasted in the wrong place.
 */
export function keyNameProblem(name: string): string | null {
  if (name === ANONYMOUS_OWNER) return `the name ${ANONYMOUS_OWNER} is reserved for requests without a key`;
  // A key pasted as a name would otherwise pass as one and be shown in errors and logs.
  if (name.startsWith(KEY_PREFIX)) return `a name may not start with ${KEY_PREFIX} (the prefix of keys)`;
  if (!NAME.test(name)) return `a name must match ${NAME_RULE} (this one has ${name.length} characters, not shown)`;
  return null;
}

/** Checks presented keys against the configured hashes. */
export interface ApiKeyVerifier {
  /** The configured names, in configuration order. */
  readonly names: readonly string[];
  /** The name owning `presentedKey`, or null when no configured key matches. */
  authenticate(presentedKey: string): string | null;
}

/** Where keys are configured: AGENTMESH_API_KEYS's value and the text of AGENTMESH_API_KEYS_FILE. */
export interface ApiKeySources {
  /** Comma-separated entries. */
  readonly inline?: string;
  /** One entry per line; `#` comment lines and blank lines are skipped. */
  readonly file?: { readonly path: string; readonly text: string };
}

interface Entry {
  readonly where: string;
  readonly text: string;
}

function entriesOf(sources: ApiKeySources): Entry[] {
  const inline = (sources.inline ?? "")
    .split(",")
    .map((text, i) => ({ where: `AGENTMESH_API_KEYS entry ${i + 1}`, text: text.trim() }));
  const file = sources.file;
  const lines = file
    ? file.text.split(/\r?\n/).map((text, i) => ({ where: `${file.path} line ${i + 1}`, text: text.trim() }))
    : [];
  return [...inline, ...lines].filter((e) => e.text.length > 0 && !e.text.startsWith("#"));
}

const EXPECTED = "expected name=sha256:<64 lowercase hex digits>";
const RAW_KEY = "this is a raw key; configure its hash instead (`pnpm gateway:key <name>` prints an entry)";

/** What is wrong with an entry's hash part (never quoted: it may be a raw key). */
function hashProblem(value: string): string | null {
  if (HASH.test(value)) return null;
  if (value.startsWith(KEY_PREFIX)) return RAW_KEY;
  if (HASH.test(value.toLowerCase())) return "the hash must be lowercase hex";
  return EXPECTED;
}

/**
 * Parses the configured keys into a verifier. Every bad entry is listed at once, by position
 * (entry or line), in one `invalid_config` error that quotes no key, hash or bad name.
 */
export function parseApiKeys(sources: ApiKeySources): ApiKeyVerifier {
  const problems: string[] = [];
  const byName = new Map<string, string>();
  const byHash = new Map<string, string>();
  const keys: Array<{ name: string; digest: Buffer }> = [];
  for (const { where, text } of entriesOf(sources)) {
    const eq = text.indexOf("=");
    if (eq < 0) {
      problems.push(`${where}: ${text.startsWith(KEY_PREFIX) ? RAW_KEY : EXPECTED}`);
      continue;
    }
    const name = text.slice(0, eq).trim();
    const value = text.slice(eq + 1).trim();
    const nameIssue = keyNameProblem(name);
    const hashIssue = hashProblem(value);
    const label = nameIssue === null ? `${where} (${name})` : where;
    if (nameIssue !== null) problems.push(`${where}: ${nameIssue}`);
    if (hashIssue !== null) problems.push(`${label}: ${hashIssue}`);
    if (nameIssue !== null || hashIssue !== null) continue;
    const sameName = byName.get(name);
    const sameHash = byHash.get(value);
    if (sameName !== undefined) problems.push(`${label}: the name is already used by ${sameName}`);
    if (sameHash !== undefined) problems.push(`${label}: the same key as ${sameHash}; each key has one owner`);
    if (sameName !== undefined || sameHash !== undefined) continue;
    byName.set(name, where);
    byHash.set(value, `${where} (${name})`);
    keys.push({ name, digest: Buffer.from(value.slice("sha256:".length), "hex") });
  }
  if (problems.length) throw configError(problems.map((p) => `API keys: ${p}`));
  return Object.freeze({
    names: Object.freeze(keys.map((k) => k.name)),
    authenticate(presentedKey: string): string | null {
      if (presentedKey.length === 0 || presentedKey.length > MAX_PRESENTED) return null;
      const digest = sha256(presentedKey);
      // Every configured digest is compared in constant time and the loop never stops early, so
      // how long this takes says nothing about which key, or how much of one, matched.
      let owner: string | null = null;
      for (const k of keys) if (timingSafeEqual(k.digest, digest) && owner === null) owner = k.name;
      return owner;
    },
  });
}

/**
 * The key a request presents: `Authorization: Bearer <key>` (what OpenAI clients send), else
 * `X-API-Key: <key>`; null when neither carries one. `header` reads a request header by name.
 */
export function presentedApiKey(header: (name: string) => string | undefined): string | null {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header("authorization")?.trim() ?? "");
  if (bearer?.[1] !== undefined) return bearer[1];
  const key = header("x-api-key")?.trim() ?? "";
  return key.length > 0 ? key : null;
}
