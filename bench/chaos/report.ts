// What `pnpm bench:chaos` concludes from what it recorded: pure functions over the sessions'
// transition logs (coordinator clock, epoch ms) and the fault windows, so they are unit-tested.
import { parseTaskId, type TransitionLogLine } from "@agentmesh/contracts";

/** One fault as it ran: from its injection to the end of its settling time. */
export interface FaultWindow {
  readonly kind: string;
  readonly name: string;
  readonly start: number;
  /** When the fault was healed (the step returned). */
  readonly healed: number;
  /** The end of the window (healed + settle). */
  readonly end: number;
  /** Redeliveries the live services counted during the window (tasks + inbox inputs). */
  readonly redeliveries: number;
}

/** One session at the end of the run, verified against Redis. */
export interface SessionOutcome {
  readonly id: string;
  /** Null when the session is complete, right, and every transition applied once; else why not. */
  readonly problem: string | null;
  /** `lost` (no state), `stuck` (not finished by the end), `wrong` (answer, log or status). */
  readonly kind: "ok" | "lost" | "stuck" | "wrong";
  readonly log: readonly TransitionLogLine[];
}

/** A row of the chaos table: one kind of fault over all its windows. */
export interface FaultRow {
  readonly kind: string;
  readonly runs: number;
  /** The longest time within any of its windows in which no session made a transition, ms. */
  readonly longestStallMs: number;
  /** Sessions with a retry (a timer fired, or a task dispatched again as a later attempt) in one of its windows. */
  readonly sessionsRetried: number;
  readonly redeliveries: number;
  /** Transitions applied within its windows. */
  readonly transitions: number;
}

/** The attempt a task id carries (`<sid>.<version>.<index>.<attempt>[.<made>]`); null when it is none. */
export function attemptOf(taskId: string): number | null {
  return parseTaskId(taskId)?.attempt ?? null;
}

/** Whether a transition is a retry: its input is a timer, or it dispatched a task as attempt ≥ 1. */
export function isRetry(line: TransitionLogLine): boolean {
  if (line.input_id.startsWith("timer:")) return true;
  return line.commands.some((c) => {
    const m = /^dispatch \S+ (\S+)/.exec(c);
    return m ? (attemptOf(m[1]!) ?? 0) > 0 : false;
  });
}

/** The longest gap between progress instants within [start, end], the window's edges counting as instants. */
export function longestStall(progress: readonly number[], start: number, end: number): number {
  let last = start;
  let longest = 0;
  for (const t of progress) {
    if (t < start) continue;
    if (t > end) break;
    longest = Math.max(longest, t - last);
    last = t;
  }
  return Math.max(longest, end - last);
}

/** Every transition's commit time, sorted: the run's progress. */
export function progressOf(sessions: readonly SessionOutcome[]): number[] {
  return sessions.flatMap((s) => s.log.map((l) => l.now)).sort((a, b) => a - b);
}

/** The chaos table: one row per fault kind, in the order the kinds first ran. */
export function faultRows(windows: readonly FaultWindow[], sessions: readonly SessionOutcome[]): FaultRow[] {
  const progress = progressOf(sessions);
  const kinds = [...new Set(windows.map((w) => w.kind))];
  return kinds.map((kind) => {
    const mine = windows.filter((w) => w.kind === kind);
    const inside = (t: number) => mine.some((w) => t >= w.start && t <= w.end);
    const retried = sessions.filter((s) => s.log.some((l) => inside(l.now) && isRetry(l))).length;
    return {
      kind,
      runs: mine.length,
      longestStallMs: Math.max(...mine.map((w) => longestStall(progress, w.start, w.end))),
      sessionsRetried: retried,
      redeliveries: mine.reduce((a, w) => a + w.redeliveries, 0),
      transitions: progress.filter(inside).length,
    };
  });
}

/** The run's verdict counts. */
export function tally(sessions: readonly SessionOutcome[]): Record<SessionOutcome["kind"], number> {
  const out = { ok: 0, lost: 0, stuck: 0, wrong: 0 };
  for (const s of sessions) out[s.kind]++;
  return out;
}

/** The chaos table as text. */
export function renderRows(rows: readonly FaultRow[], quietStallMs: number): string[] {
  const head = `${"fault".padEnd(54)}${"runs".padStart(5)}${"longest stall".padStart(15)}${"retried".padStart(9)}${"redelivered".padStart(13)}${"transitions".padStart(13)}`;
  return [
    head,
    `${"(no fault: steady load before the first)".padEnd(54)}${"".padStart(5)}${`${(quietStallMs / 1000).toFixed(1)} s`.padStart(15)}`,
    ...rows.map(
      (r) =>
        `${r.kind.padEnd(54)}${String(r.runs).padStart(5)}${`${(r.longestStallMs / 1000).toFixed(1)} s`.padStart(15)}${String(r.sessionsRetried).padStart(9)}${String(r.redeliveries).padStart(13)}${String(r.transitions).padStart(13)}`,
    ),
  ];
}
