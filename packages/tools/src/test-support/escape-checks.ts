// Outcomes and the checks the escape cases use (test-only; not shipped).
import { expect } from "vitest";
import type { CodeRunResult } from "../runners/types.js";

/** What a run came to: the code ran (maybe raising), or the runner refused / killed it. */
export type Outcome =
  | { readonly kind: "ran"; readonly r: CodeRunResult; readonly ms: number }
  | {
      readonly kind: "failed";
      readonly code: string;
      readonly message: string;
      readonly retryable: boolean;
      readonly ms: number;
    };

/** Host facts the payloads aim at. */
export interface Targets {
  readonly canaryPath: string;
  readonly pwnedPath: string;
  readonly port: number;
  readonly hostCwd: string;
}

/**
 * `js` QuickJS; `py` Pyodide with both walls; `py-open` the OS wall alone (`import js` allowed);
 * `os` a shell run under the same OS wall (bwrap, seccomp, limits, uid) instead of node: what
 * native code would meet if it got through every interpreter layer.
 */
export type Lang = "js" | "py" | "py-open" | "os";

/** One escape attempt. */
export interface EscapeCase {
  readonly name: string;
  readonly lang: Lang;
  readonly code: (t: Targets) => string;
  /** Written to dodge the dangerous-pattern list; the suite checks that it does. */
  readonly evasive?: boolean;
  /** A runaway: must end as timeout / resource_exhausted within the limit + 20%. */
  readonly runaway?: boolean;
  readonly check: (o: Outcome, t: Targets) => void;
}

export const text = (o: Outcome): string =>
  o.kind === "ran" ? `${o.r.result ?? ""}\n${o.r.error ?? ""}\n${o.r.stdout}\n${o.r.stderr}` : o.message;

/** The code ran and its last expression was exactly `v`. */
export const value = (v: string | null) => (o: Outcome) => {
  expect(o.kind === "ran" && o.r.ok ? o.r.result : o).toEqual(v);
};
/** The code ran and raised an error matching `re`. */
export const raised = (re: RegExp) => (o: Outcome) => {
  expect(o.kind === "ran" && !o.r.ok, text(o)).toBe(true);
  expect(text(o)).toMatch(re);
};
/** The runner refused or stopped it with one of these codes. */
export const failed =
  (...codes: string[]) =>
  (o: Outcome) => {
    expect(o.kind === "failed" ? o.code : `ran: ${text(o).slice(0, 300)}`).toSatisfy((c: string) => codes.includes(c));
  };
/** Ran or failed, anything but a leak (the suite checks leaks for every case). */
export const contained = () => () => undefined;
/** Whatever happened, `re` is not in what came back. */
export const never = (re: RegExp) => (o: Outcome) => {
  expect(text(o)).not.toMatch(re);
};
export const either =
  (...checks: Array<(o: Outcome) => void>) =>
  (o: Outcome) => {
    const errors: unknown[] = [];
    for (const c of checks) {
      try {
        c(o);
        return;
      } catch (e) {
        errors.push(e);
      }
    }
    throw errors[0] as Error;
  };
export const killed = failed("timeout", "resource_exhausted");

/** A protocol violation: typed, and a retry cannot help. */
export const violation = (o: Outcome) => {
  expect(
    o.kind === "failed" ? [o.code, o.retryable, /result protocol/.test(o.message)] : `ran: ${text(o).slice(0, 300)}`,
  ).toEqual(["tool_error", false, true]);
};

export const py = (lines: string[]) => lines.join("\n");

// Several attempts in one Python case share one interpreter start (the costly part); each
// attempt is caught on its own and reported, so one refusal does not hide the next.
export const tries = (attempts: string[]) =>
  py([
    "out = []",
    ...attempts.flatMap((a) => [
      "try:",
      `    out.append(str(${a})[:200])`,
      "except BaseException as e:",
      "    out.append(type(e).__name__ + ': ' + str(e)[:120])",
    ]),
    "out",
  ]);
/** Every attempt in a `tries` case was refused with an error matching `re`. */
export const allRefused = (n: number, re: RegExp) => (o: Outcome) => {
  expect(o.kind === "ran" && o.r.ok, text(o)).toBe(true);
  const items = o.kind === "ran" ? (o.r.result ?? "").slice(1, -1).split(/', '|", "|', "|", '/) : [];
  expect(items, text(o)).toHaveLength(n);
  for (const item of items) expect(item, text(o)).toMatch(re);
};
