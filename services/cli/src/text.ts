import {
  AgentmeshError,
  Capability,
  ResearchDepth,
  ResearchScenario,
  SupervisorAgent,
  redactText,
  type SessionOptions,
} from "@agentmesh/contracts";
import type { Out } from "./render.js";

/**
 * What a terminal acts on instead of showing: C0 controls but tab and newline (ESC starts ANSI and
 * OSC sequences, CR overwrites a line), DEL and the C1 range (U+009B is an 8-bit CSI).
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/gu;
/** Bidi embeddings, overrides and isolates: they reorder how the rest of a line is displayed. */
const BIDI = /[\u202a-\u202e\u2066-\u2069]/gu;

/** Text as it may reach a terminal: control and bidi override characters removed, `\n` and `\t` kept. */
export function terminalSafe(s: string): string {
  return s.replace(CONTROL, "").replace(BIDI, "");
}

/** `terminalSafe` text with URL credentials and each of `secrets` redacted. */
export function terminalText(s: string, secrets: readonly string[]): string {
  return redactText(terminalSafe(s), secrets);
}

/**
 * An output sink that makes every line terminal-safe and free of secrets before writing it:
 * everything the CLI prints goes through here, model- and web-derived text included.
 */
export function createTerminalOut(
  sink: { stdout(s: string): void; stderr(s: string): void },
  secrets: readonly string[],
): Out {
  const clean = (s: string) => `${terminalText(s, secrets)}\n`;
  return {
    line: (s) => sink.stdout(clean(s)),
    write: (s) => sink.stdout(terminalText(s, secrets)),
    err: (s) => sink.stderr(clean(s)),
  };
}

/**
 * Refuses text a person typed as a question or answer when it holds a control character (other
 * than newline and tab) or a bidi override: it would reach the model and every terminal as is.
 */
export function checkTypedText(what: "question" | "answer", s: string): string {
  for (const re of [CONTROL, BIDI]) {
    re.lastIndex = 0;
    const m = re.exec(s);
    if (m) {
      const code = (m[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
      const kind = re === BIDI ? "a bidi override" : "a control";
      throw new AgentmeshError(
        "invalid_query",
        `the ${what} contains ${kind} character (U+${code}) at position ${m.index + 1}; remove it and try again`,
      );
    }
  }
  return s;
}

/** The longest wait a Node timer can hold (2^31-1 ms); a longer one would fire at once. */
const MAX_SECONDS = Math.floor(2_147_483_647 / 1000);

/** A `--<option> <seconds>` value: a finite number in (0, MAX_SECONDS] (or from 0 with `allowZero`). */
export function parseSeconds(option: string, raw: string, opts: { allowZero?: boolean } = {}): number {
  const n = raw.trim() === "" ? Number.NaN : Number(raw);
  const min = opts.allowZero === true ? 0 : Number.MIN_VALUE;
  if (!Number.isFinite(n) || n < min || n > MAX_SECONDS) {
    const range = opts.allowZero === true ? `0 to ${MAX_SECONDS}` : `more than 0, at most ${MAX_SECONDS}`;
    throw new AgentmeshError(
      "invalid_config",
      `--${option} must be a number of seconds (${range}), got ${JSON.stringify(terminalSafe(raw))}`,
    );
  }
  return n;
}

/** `--capabilities graph,rag`: halo's capability tags, each known, repeats dropped. */
export function parseCapabilities(raw: string): Capability[] {
  const tags = raw
    .split(",")
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  const unknown = tags.filter((t) => !Capability.safeParse(t).success);
  if (tags.length === 0 || unknown.length > 0) {
    const what =
      tags.length === 0
        ? "no capability given"
        : `unknown capability ${unknown.map((t) => JSON.stringify(terminalSafe(t))).join(", ")}`;
    throw new AgentmeshError("invalid_config", `--capabilities: ${what} (known: ${Capability.options.join(", ")})`);
  }
  return [...new Set(tags as Capability[])];
}

/** One `--<flag> <value>` of an enum, lower-cased; a clear error naming the known values otherwise. */
function oneOf<T extends string>(flag: string, raw: string, known: readonly T[]): T {
  const v = raw.trim().toLowerCase();
  if (!(known as readonly string[]).includes(v))
    throw new AgentmeshError(
      "invalid_config",
      `--${flag}: unknown value ${JSON.stringify(terminalSafe(v))} (known: ${known.join(", ")})`,
    );
  return v as T;
}

/** The supervisor's `--mode`, `--depth` and `--scenario` as session options (absent flags stay absent). */
export function parseSupervisorFlags(o: {
  mode?: string;
  depth?: string;
  scenario?: string;
}): Pick<SessionOptions, "mode" | "depth" | "scenario"> {
  return {
    ...(o.mode === undefined ? {} : { mode: oneOf("mode", o.mode, SupervisorAgent.options) }),
    ...(o.depth === undefined ? {} : { depth: oneOf("depth", o.depth, ResearchDepth.options) }),
    ...(o.scenario === undefined ? {} : { scenario: oneOf("scenario", o.scenario, ResearchScenario.options) }),
  };
}

/** A `--<option> <n>` count: a whole number from 1 up. */
export function parseCount(option: string, raw: string): number {
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new AgentmeshError(
      "invalid_config",
      `--${option} must be a whole number from 1 up, got ${JSON.stringify(terminalSafe(raw))}`,
    );
  return n;
}
