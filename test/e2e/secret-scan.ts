import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { secretsOfUrl } from "@agentmesh/contracts";

/** One place a planted secret was found. */
export interface SecretHit {
  readonly where: string;
  /** The secret with all but its first 6 characters masked, so the report itself leaks nothing new. */
  readonly secret: string;
  /** The text around the hit, with the secret masked. */
  readonly excerpt: string;
}

const mask = (s: string) => `${s.slice(0, 6)}…(${s.length})`;

/** Every occurrence of any of `secrets` in the texts. Pure, so its own test can plant a hit. */
export function findSecrets(
  texts: Iterable<{ readonly where: string; readonly text: string }>,
  secrets: readonly string[],
): SecretHit[] {
  const hits: SecretHit[] = [];
  for (const { where, text } of texts) {
    for (const s of secrets) {
      for (let i = text.indexOf(s); i >= 0; i = text.indexOf(s, i + s.length)) {
        const excerpt = secrets.reduce(
          (t, x) => t.split(x).join(mask(x)),
          text.slice(Math.max(0, i - 80), i + s.length + 80),
        );
        hits.push({ where, secret: mask(s), excerpt });
      }
    }
  }
  return hits;
}

/** Adds `user:password@` to a URL (or each of a comma-separated list) that has no credentials yet. */
function withPassword(url: string, user: string, password: string): string {
  return url
    .split(",")
    .map((u) => (u.includes("@") ? u : u.replace(/^([a-z][a-z0-9+.-]*:\/\/)/i, `$1${user}:${password}@`)))
    .join(",");
}

/** The roles whose web search a planted key would switch on (and so change what they do). */
const WEB_SEARCH_ROLES = new Set(["retriever", "executor", "researcher"]);

/**
 * Secrets planted in every service's environment, and what the services printed and published,
 * so a run can prove none of it ever shows a secret. The values are ones the services accept
 * without contacting anything new: an LLM key only where the base URL is the scripted server, a
 * web search key only in roles that do not search the web, and passwords in the NATS and Redis
 * URLs that servers without auth ignore (credentials a URL already has are scanned for too).
 */
export class SecretScan {
  readonly #tag = randomBytes(6).toString("hex");
  readonly #secrets = new Set<string>();
  readonly #texts: Array<{ where: string; text: string }> = [];

  /** A fresh secret value of the given kind, remembered for the scan. */
  #secret(kind: string): string {
    const s = `planted-${kind}-${this.#tag}`;
    this.#secrets.add(s);
    return s;
  }

  /** The secrets this scan looks for. */
  get secrets(): readonly string[] {
    return [...this.#secrets];
  }

  /**
   * `env` for the service `name` with secrets planted, and a `warn` log level raised to `info` so
   * more is scanned, unless `raiseLogLevel` is false (a run that measures at its own level).
   */
  plant(name: string, env: NodeJS.ProcessEnv, opts: { raiseLogLevel?: boolean } = {}): NodeJS.ProcessEnv {
    const raise = (opts.raiseLogLevel ?? true) && env.LOG_LEVEL === "warn";
    const out: NodeJS.ProcessEnv = { ...env, LOG_LEVEL: raise ? "info" : env.LOG_LEVEL };
    for (const v of ["NATS_URL", "REDIS_URL"] as const) {
      const url = env[v];
      if (!url) continue;
      for (const s of secretsOfUrl(url)) this.#secrets.add(s);
      out[v] = withPassword(
        url,
        v === "REDIS_URL" ? "default" : "agentmesh",
        this.#secret(v === "REDIS_URL" ? "redis-pw" : "nats-pw"),
      );
    }
    // the service's NKey seed (access control on) is a real secret: scanned for, never planted
    if (env.NATS_NKEY_SEED_FILE) this.#secrets.add(readFileSync(env.NATS_NKEY_SEED_FILE, "utf8").trim());
    if (env.AGENTMESH_LLM_BASE_URL?.startsWith("http://127.0.0.1:") === true)
      out.AGENTMESH_LLM_API_KEY = this.#secret("llm-key");
    if (!WEB_SEARCH_ROLES.has(name)) out.AGENTMESH_WEB_SEARCH_KEY = this.#secret("web-key");
    return out;
  }

  /** Something a service printed or published (process output, events, states, replies, CLI output). */
  record(where: string, text: string): void {
    this.#texts.push({ where, text });
  }

  /** Throws, naming each place, when any recorded text contains a planted secret. */
  check(): void {
    const hits = findSecrets(this.#texts, this.secrets);
    if (hits.length === 0) return;
    const shown = hits
      .slice(0, 20)
      .map((h) => `  ${h.where}: ${h.secret} in …${h.excerpt}…`)
      .join("\n");
    throw new Error(`secret scan: ${hits.length} planted secret(s) found in output, events or errors:\n${shown}`);
  }

  /** How much was scanned (for reports). */
  get scanned(): { texts: number; chars: number; secrets: number } {
    return {
      texts: this.#texts.length,
      chars: this.#texts.reduce((n, t) => n + t.text.length, 0),
      secrets: this.#secrets.size,
    };
  }
}
