import { LIMITS, type EventDraft, type StageStatus, type ToolFlag } from "@agentmesh/contracts";
import { clip } from "./critic-chain-messages.js";

const DESCRIPTION_MAX = 2000;

/** A stage event: `name` is running, completed or failed; `description` is one line about it. */
export const stage = (name: string, status: StageStatus, description: string): EventDraft => ({
  type: "stage",
  name,
  status,
  description: clip(description, DESCRIPTION_MAX),
});

/** A tool call's arguments, as the workflow dispatched them (the runtime adds the task id). */
export interface ToolCallSpec {
  /** Unique within the session: the `tool_result` of this call carries it too. */
  readonly id: string;
  readonly tool: string;
  readonly args: unknown;
}

/** A `tool_result` event; the content is cut to the 500-character preview; flags only when some were seen. */
export const toolResult = (
  id: string,
  tool: string,
  ok: boolean,
  content: string,
  latencyMs: number,
  flags: readonly ToolFlag[] = [],
): EventDraft => ({
  type: "tool_result",
  id,
  tool,
  ok,
  content: clip(content, LIMITS.toolResultPreviewChars),
  latency_ms: Math.max(0, latencyMs),
  ...(flags.length > 0 ? { flags: [...new Set(flags)].sort() } : {}),
});

const fits = (v: unknown) => JSON.stringify(v).length <= LIMITS.maxToolArgsChars;
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Every string in a JSON value cut to `max` characters. */
function clipStrings(v: unknown, max: number): unknown {
  if (typeof v === "string") return clip(v, max);
  if (Array.isArray(v)) return v.map((x) => clipStrings(x, max));
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clipStrings(x, max)]));
  return v;
}

/**
 * A tool call's arguments bounded for its event: as they are when their JSON fits
 * `LIMITS.maxToolArgsChars`; else with long strings cut; else (too many or too deep) the start of
 * their JSON under `truncated_json`. Anything cut is marked `args_truncated`.
 */
export function boundedArgs(args: unknown): { args: Record<string, unknown>; args_truncated: boolean } {
  const whole = isRecord(args) ? args : { value: args ?? null };
  if (fits(whole)) return { args: whole, args_truncated: false };
  for (const max of [1000, 200, 40]) {
    const cut = clipStrings(whole, max);
    if (isRecord(cut) && fits(cut)) return { args: cut, args_truncated: true };
  }
  const json = JSON.stringify(whole);
  // Escaping may lengthen the quoted JSON, so shrink until it fits.
  for (let n = LIMITS.maxToolArgsChars - 40; ; n = Math.floor(n / 2)) {
    const cut = { truncated_json: clip(json, n) };
    if (fits(cut)) return { args: cut, args_truncated: true };
  }
}
