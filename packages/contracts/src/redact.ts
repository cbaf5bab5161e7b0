/**
 * The one redaction of secrets in text that leaves a process (logs, errors, CLI output).
 * Pure string functions: every package can use them, and `AgentmeshError` applies
 * `redactUrls` to its message, so no error can carry a URL's password.
 */

/** What a hidden secret is replaced with. */
export const REDACTED = "***";

/**
 * `scheme://userinfo@` in free text. The userinfo runs to the last `@` before the host (a raw
 * `@` in a password is a common misconfiguration) and stops at whitespace, `/`, `?`, `#` and quotes.
 */
const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"'<>`]+)@/gi;

/** Shortest known secret value that is replaced in free text (shorter ones would mangle ordinary words). */
const MIN_SECRET_LENGTH = 4;

/**
 * Every URL in `text` with its credentials hidden: `user:pass@` → `user:***@`, and a bare
 * `token@` (NATS token auth, `redis://password@`) → `***@`. Text without URLs is returned as is.
 */
export function redactUrls(text: string): string {
  if (!text.includes("@")) return text;
  return text.replace(URL_USERINFO, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return colon === -1 ? `${scheme}${REDACTED}@` : `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@`;
  });
}

/**
 * `text` with URL credentials hidden and every occurrence of each known secret value (API keys,
 * passwords; see `secretsOfUrl`) replaced. Values shorter than `MIN_SECRET_LENGTH` are skipped.
 */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = redactUrls(text);
  // Longest first, so a secret that contains another is replaced whole.
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out;
}

/**
 * The secret parts of a URL or comma-separated URL list: each password and each bare token,
 * both as written and percent-decoded (an error may quote either form).
 */
export function secretsOfUrl(url: string): string[] {
  const found = new Set<string>();
  for (const m of url.matchAll(URL_USERINFO)) {
    const userinfo = m[2] ?? "";
    const colon = userinfo.indexOf(":");
    const secret = colon === -1 ? userinfo : userinfo.slice(colon + 1);
    if (secret.length === 0) continue;
    found.add(secret);
    try {
      found.add(decodeURIComponent(secret));
    } catch {
      // not valid percent-encoding: the raw form is all there is
    }
  }
  return [...found];
}

/** Words that make an argument's name a secret's (`password`, `access_token`, `apiKey`, `Authorization`, …). */
const SECRET_WORDS = new Set([
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "authorization",
  "credential",
  "credentials",
  "cookie",
  "apikey",
]);

/** Whether an argument's name says its value is a secret: by its words (`max_tokens` is not). */
function secretName(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
  return words.some(
    (w, i) => SECRET_WORDS.has(w) || (w === "key" && (words[i - 1] === "api" || words[i - 1] === "private")),
  );
}

/**
 * Tool arguments as events show them: the value of every argument whose name says it is a secret
 * replaced, and URL credentials hidden in every string, at any depth. The task that runs the tool
 * still carries the arguments as given; only what clients and logs see is redacted.
 */
export function redactArgs<T>(value: T, name?: string): T;
export function redactArgs(value: unknown, name = ""): unknown {
  if (name !== "" && secretName(name) && value !== null && value !== "") return REDACTED;
  if (typeof value === "string") return redactUrls(value);
  if (Array.isArray(value)) return value.map((v) => redactArgs(v));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactArgs(v, k)]));
  return value;
}
