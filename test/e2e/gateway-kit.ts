import { spawn } from "node:child_process";
import { expect, inject } from "vitest";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { SessionEvent } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, type Proc } from "./harness.js";

// What the gateway's end-to-end tests share: a scripted model that makes sessions last, an SSE
// client that can hang up after any event, and a small JSON request helper.

/** Research steps per scripted critic-chain session: enough events (3 per node) to disconnect often. */
export const RESEARCH_STEPS = 8;

/**
 * `count` critic-chain sessions for the scripted model, each of its model calls held back
 * `delayMs`, so a session runs for seconds and a client can leave it mid-stream. Only the
 * planner, researcher, expert and finalizer are scripted (the critic runs offline and approves
 * these); the n-th finalize call answers with a text that names n, so an answer can only match
 * the session it came from.
 */
export function slowSessions(count: number, delayMs: number): HttpScriptEntry[] {
  const plan = {
    research_steps: Array.from({ length: RESEARCH_STEPS }, (_, i) => `Research aspect ${i + 1} of CRISPR`),
    expert_steps: ["Define CRISPR and name its inventors"],
  };
  return Array.from({ length: count }, (_, n) => [
    { role: "planner", op: "plan", output: plan, delayMs },
    ...Array.from({ length: RESEARCH_STEPS }, (_, i) => ({
      role: "researcher",
      op: "research",
      output: { result: `Finding ${i + 1}: CRISPR-Cas9 edits genes.` },
      delayMs,
    })),
    {
      role: "expert",
      op: "answer",
      output: {
        expert_answer: "CRISPR is a gene-editing tool by Doudna and Charpentier.",
        expert_reasoning: "From the findings.",
      },
      delayMs,
    },
    {
      role: "finalizer",
      op: "finalize",
      delayMs,
      output: {
        final_answer: `Answer #${n + 1}: CRISPR — “clustered regularly interspaced short palindromic repeats” — is a gene-editing technology developed by Jennifer Doudna & Emmanuelle Charpentier (2012). ✓`,
        final_reasoning_trace: "Planned, researched, answered, finalized.",
      },
    },
  ]).flat();
}

/** An open SSE response, read one message at a time; `hangUp()` drops the connection at once. */
export interface SseClient {
  readonly res: Response;
  /** The next message (comments skipped), or null when the server ended the stream. */
  next(): Promise<EventSourceMessage | null>;
  hangUp(): void;
}

/** Opens an SSE request; the caller checks `res.status` before reading. */
export async function openSse(url: string, init: RequestInit = {}): Promise<SseClient> {
  const ac = new AbortController();
  const res = await fetch(url, { ...init, signal: ac.signal });
  const reader = res.body
    ? res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
    : null;
  return {
    res,
    async next() {
      const r = reader ? await reader.read() : { done: true as const };
      return r.done ? null : r.value;
    },
    hangUp() {
      ac.abort();
      reader?.cancel().catch(() => {});
    },
  };
}

/** The next session event (token deltas skipped), or null when the server ended the stream. */
export async function nextEvent(client: SseClient): Promise<SessionEvent | null> {
  for (let m = await client.next(); m !== null; m = await client.next()) {
    const [e] = sessionEvents([m]);
    if (e) return e;
  }
  return null;
}

/** Every message of an SSE response to its end. */
export async function readAll(client: SseClient): Promise<EventSourceMessage[]> {
  const out: EventSourceMessage[] = [];
  for (let m = await client.next(); m !== null; m = await client.next()) out.push(m);
  return out;
}

/** SSE messages in a complete text (what curl printed). */
export function parseSse(text: string): EventSourceMessage[] {
  const out: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (m) => out.push(m) });
  parser.feed(text);
  return out;
}

/** The session events among SSE messages (token deltas, which carry no id, left out), checked against their ids. */
export function sessionEvents(messages: readonly EventSourceMessage[]): SessionEvent[] {
  return messages.flatMap((m) => {
    if (m.id === undefined) return [];
    const e = JSON.parse(m.data) as SessionEvent;
    // `<seq>:<version>:<index>`: the stream sequence of the event's message, then the event's own place
    if (!new RegExp(`^\\d+:${e.version}:${e.index}$`).test(m.id) || m.event !== e.type)
      throw new Error(`SSE id/event ${m.id}/${m.event} do not match the event ${e.version}:${e.index} ${e.type}`);
    return [e];
  });
}

/** An HTTP answer with its body parsed as JSON (null when it is not JSON). */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
  readonly text: string;
}

/** One JSON request: `json` is sent as the body (a string is sent as it is, for malformed bodies). */
export async function call(
  base: string,
  path: string,
  o: { key?: string | null; method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {
    accept: "application/json",
    ...(o.key ? { authorization: `Bearer ${o.key}` } : {}),
    ...o.headers,
  };
  if (o.json !== undefined) headers["content-type"] ??= "application/json";
  const body = o.json === undefined ? undefined : typeof o.json === "string" ? o.json : JSON.stringify(o.json);
  const res = await fetch(`${base}${path}`, {
    method: o.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** The `/api` error body, exactly (for `toEqual`): the one shape, and no more keys than it has. */
export const apiError = (code: string, status: number, message: string | RegExp = /\S/) => ({
  error: { code, status, message: typeof message === "string" ? message : expect.stringMatching(message) },
});

/** Text that looks like a stack trace or a source path: never in an answer to a client. */
export const STACK_TRACE = /\bat [\w.<>]+ \(|\.ts:\d+|node_modules|Error:\s*\n/;

/** Runs curl (a real SSE client, unbuffered) and returns what it printed. */
export function curl(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn("curl", ["-sS", "-N", "--max-time", "60", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.once("close", (code) => resolve({ code, out, err }));
  });
}

/** A critic-chain cluster behind two gateway replicas, as the `/v1` client suites use it. */
export interface CriticChainGateways {
  readonly llm: ScriptedServer;
  readonly cluster: Cluster;
  /** The two replicas' base URLs. */
  readonly urls: readonly [string, string];
  /** The second replica's process (the suites stop or kill it last). */
  readonly second: Proc;
  close(): Promise<void>;
}

/**
 * One coordinator, the critic-chain agents on the scripted model (`slowSessions(count, delayMs)`)
 * with the critic on the offline engine, and two gateway replicas with `gatewayEnv`.
 */
export async function startCriticChainGateways(o: {
  readonly prefix: string;
  readonly gatewayEnv: Record<string, string>;
  readonly sessions: number;
  readonly delayMs: number;
}): Promise<CriticChainGateways> {
  const llm = await startScriptedOpenAIServer({ script: slowSessions(o.sessions, o.delayMs) });
  const cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix(o.prefix),
    llmBaseUrl: llm.url,
  });
  await cluster.open();
  cluster.start("coordinator");
  for (const r of CRITIC_CHAIN_SCRIPTED) cluster.start(r);
  cluster.start("critic", { AGENTMESH_LLM_BASE_URL: "" });
  const [g1, g2] = await Promise.all([
    cluster.startGateway(o.gatewayEnv, 120_000),
    cluster.startGateway(o.gatewayEnv, 120_000),
  ]);
  await cluster.waitReady(
    { coordinator: 1, critic: 1, ...Object.fromEntries(CRITIC_CHAIN_SCRIPTED.map((r) => [r, 1])) },
    120_000,
  );
  return {
    llm,
    cluster,
    urls: [g1!.url, g2!.url],
    second: g2!.proc,
    async close() {
      await cluster.close();
      await llm.close();
    },
  };
}

/** The critic-chain roles the scripted model plays (the critic runs offline). */
const CRITIC_CHAIN_SCRIPTED = ["planner", "researcher", "expert", "finalizer"] as const;
