import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import {
  ANSWER_OPS,
  SessionOptions,
  ThreadId,
  WORKFLOW_OPTIONS,
  WORKFLOW_DESCRIPTIONS,
  WorkflowName,
  checkQuery,
  formatZodError,
  misplacedOption,
  type ChatMessage,
  type SessionEvent,
} from "@agentmesh/contracts";
import { ApiError, readJson } from "./http.js";
import { startSession, type SessionDeps, type Started } from "./sessions.js";
import { sessionStream } from "./stream.js";

/** Model names are `agentmesh/<workflow>`: the model a client picks is the workflow that answers. */
const MODEL_PREFIX = "agentmesh/";
const CREATED = 1_767_225_600; // a fixed date for /v1/models (OpenAI lists one per model)

/** An OpenAI error body: `{"error":{"message","type","param","code"}}`. */
export function openAiError(e: ApiError) {
  const type =
    e.status === 401
      ? "authentication_error"
      : e.status === 429
        ? "rate_limit_error"
        : e.status >= 500
          ? "server_error"
          : "invalid_request_error";
  return { error: { message: e.message, type, param: null, code: e.code } };
}

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const Message = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([z.string(), z.array(Part), z.null()]).optional(),
});

/** The request: OpenAI's shape; sampling parameters a workflow has no use for are accepted and ignored. */
const ChatRequest = z.looseObject({
  model: z.string().min(1).max(100),
  messages: z.array(Message).min(1, "messages must hold at least the user's message").max(1000),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  metadata: z.record(z.string(), z.string().max(512)).nullish(),
});
type ChatRequest = z.infer<typeof ChatRequest>;

/** The text of a message: its string, or its text parts joined (images and other parts are not read). */
const textOf = (m: z.infer<typeof Message>): string =>
  typeof m.content === "string"
    ? m.content
    : (m.content ?? []).flatMap((p) => (p.type === "text" && typeof p.text === "string" ? [p.text] : [])).join("\n");

/** The workflow a model name selects, or a 404 naming the models there are. */
function workflowOf(model: string): WorkflowName {
  const name = model.startsWith(MODEL_PREFIX) ? model.slice(MODEL_PREFIX.length) : model;
  const wf = WorkflowName.safeParse(name);
  if (!wf.success)
    throw new ApiError(
      "not_found",
      `the model ${JSON.stringify(model.slice(0, 100))} does not exist; use one of ${WorkflowName.options.map((w) => MODEL_PREFIX + w).join(", ")}`,
    );
  return wf.data;
}

/** A metadata value as the option's own type: a list (comma-separated), a number or the text itself. */
function optionValue(option: keyof typeof WORKFLOW_OPTIONS, text: string): unknown {
  const list = () =>
    text
      .split(",")
      .map((x) => x.trim())
      .filter((x) => x !== "");
  switch (option) {
    case "capabilities":
      return list();
    case "image_attachments":
      return list().map((url) => ({ url }));
    case "retry_limit":
      return /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
    case "strategy_profile":
      return text.trim().toUpperCase();
    case "mode":
    case "depth":
    case "scenario":
    case "provider":
    case "model":
    case "tier":
      return text.trim();
  }
}

/**
 * The workflow options a request's `metadata` carries (the keys of `WORKFLOW_OPTIONS`; every other
 * key is the client's own and is left alone): checked like the API's, an option of another workflow
 * or a value the option does not take is a 400 naming it.
 */
export function metadataOptions(workflow: WorkflowName, metadata: Readonly<Record<string, string>>): SessionOptions {
  const raw: Record<string, unknown> = {};
  for (const option of Object.keys(WORKFLOW_OPTIONS) as (keyof typeof WORKFLOW_OPTIONS)[]) {
    const text = metadata[option];
    if (text !== undefined) raw[option] = optionValue(option, text);
  }
  const misplaced = misplacedOption(workflow, raw);
  if (misplaced) throw new ApiError("bad_request", `metadata: ${misplaced.message}`);
  const parsed = SessionOptions.safeParse(raw);
  if (!parsed.success) throw new ApiError("bad_request", `metadata: ${formatZodError(parsed.error)}`);
  return parsed.data;
}

/** The conversation: the last message is the question (from the user); the earlier ones are its history. */
function conversation(req: ChatRequest): { query: string; history: ChatMessage[] } {
  const last = req.messages.at(-1)!;
  if (last.role !== "user")
    throw new ApiError("bad_request", `the last message must be the user's (got "${last.role}")`);
  const q = checkQuery(textOf(last));
  if (!q.ok) throw new ApiError("invalid_query", q.reason);
  const history: ChatMessage[] = [];
  for (const m of req.messages.slice(0, -1)) {
    const role = m.role === "developer" ? "system" : m.role;
    if (role === "system" || role === "user" || role === "assistant") history.push({ role, content: textOf(m) });
  }
  return { query: q.query, history };
}

/**
 * What is left of the final answer after the answering node's streamed text: the rest when the
 * stream was its beginning (all of it when nothing streamed); null when they disagree (the node
 * ran again after a failure), which the caller reports rather than sending text twice.
 */
export function answerRemainder(streamed: string, final: string): string | null {
  return final.startsWith(streamed) ? final.slice(streamed.length) : null;
}

/** Cuts a text into deltas of about `size` characters at word ends, so a client shows it as it comes. */
export function deltas(text: string, size = 48): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let j = Math.min(text.length, i + size);
    const space = text.lastIndexOf(" ", j);
    if (j < text.length && space > i) j = space + 1;
    out.push(text.slice(i, j));
    i = j;
  }
  return out;
}

/** How a session's turn ended for a chat client: its final answer, or the question it asks the person. */
type Outcome = { readonly text: string; readonly status: string };

/** Mounts `GET /v1/models` and `POST /v1/chat/completions`. */
export function mountOpenAi(app: Hono<{ Variables: { owner: string } }>, d: SessionDeps): void {
  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: WorkflowName.options.map((w) => ({
        id: MODEL_PREFIX + w,
        object: "model",
        created: CREATED,
        owned_by: "agentmesh",
        description: WORKFLOW_DESCRIPTIONS[w],
      })),
    }),
  );

  app.post("/v1/chat/completions", async (c) => {
    const req = await readJson(c, ChatRequest);
    const workflow = workflowOf(req.model);
    const { query, history } = conversation(req);
    const threadId = req.metadata?.thread_id ?? c.req.header("x-agentmesh-thread") ?? undefined;
    if (threadId !== undefined && !ThreadId.safeParse(threadId).success) {
      throw new ApiError(
        "bad_request",
        "the thread id (metadata.thread_id or X-Agentmesh-Thread) must be 8-64 of [A-Za-z0-9_-]",
      );
    }
    const options = metadataOptions(workflow, req.metadata ?? {});
    const started = await startSession(d, c.get("owner"), {
      query,
      workflow,
      options,
      threadId,
      messages: history.length ? history : undefined,
      traceparent: c.req.header("traceparent"),
    });
    c.header("X-Agentmesh-Session", started.sessionId);
    c.header("X-Agentmesh-Thread", started.threadId);
    const id = `chatcmpl-${started.sessionId}`;
    const created = Math.floor(Date.now() / 1000);
    const ids = { session_id: started.sessionId, thread_id: started.threadId };
    if (req.stream === true)
      return streamCompletion(c, d, started, {
        id,
        created,
        model: req.model,
        includeUsage: req.stream_options?.include_usage === true,
        ids,
      });

    const ac = new AbortController();
    c.req.raw.signal.addEventListener("abort", () => ac.abort(), { once: true });
    let outcome: Outcome | null = null;
    for await (const item of sessionStream(d.nc, d.naming, started.sessionId, {
      after: started.after,
      tokens: false,
      signal: ac.signal,
      log: d.log,
    })) {
      outcome = endOf(item.event);
      if (outcome) break;
    }
    ac.abort();
    if (!outcome)
      throw new ApiError(
        "unavailable",
        "the session's events stopped before it answered; follow it with GET /api/v1/sessions/:id/events",
      );
    return c.json({
      id,
      object: "chat.completion",
      created,
      model: req.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: outcome.text, refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: await usageOf(d, started.sessionId),
      system_fingerprint: null,
      agentmesh: { ...ids, status: outcome.status },
    });
  });
}

/** The end of a turn: `complete` (the answer), or the session pausing to ask the person something. */
function endOf(e: SessionEvent): Outcome | null {
  if (e.type === "complete") return { text: e.final_answer, status: e.status };
  if (e.type === "stage" && e.name === "awaiting_user" && e.status === "running")
    return { text: e.description, status: "awaiting_user" };
  return null;
}

async function usageOf(d: SessionDeps, sessionId: string) {
  const u = (await d.store.load(sessionId))?.state.meta.usage;
  const prompt = u?.prompt_tokens ?? 0;
  const completion = u?.completion_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

interface StreamMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly includeUsage: boolean;
  readonly ids: { readonly session_id: string; readonly thread_id: string };
}

/**
 * `stream: true`: `chat.completion.chunk`s. Only the answering node's tokens go out live; when the
 * turn ends, the rest of the final answer (all of it when nothing streamed) follows as deltas, so
 * the streamed text always equals the answer. The usage chunk only when asked for.
 */
function streamCompletion(c: Context, d: SessionDeps, started: Started, m: StreamMeta) {
  return streamSSE(c, async (s) => {
    const ac = new AbortController();
    s.onAbort(() => ac.abort());
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      s.writeSSE({
        data: JSON.stringify({
          id: m.id,
          object: "chat.completion.chunk",
          created: m.created,
          model: m.model,
          system_fingerprint: null,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          agentmesh: m.ids,
        }),
      });
    try {
      await chunk({ role: "assistant", content: "" });
      let streamed = "";
      let outcome: Outcome | null = null;
      for await (const item of sessionStream(d.nc, d.naming, started.sessionId, {
        after: started.after,
        tokens: true,
        signal: ac.signal,
        log: d.log,
      })) {
        if (item.kind === "token") {
          const t = item.event;
          if (t.role !== undefined && t.op !== undefined && ANSWER_OPS.has(`${t.role}.${t.op}`)) {
            streamed += t.delta;
            await chunk({ content: t.delta });
          }
          continue;
        }
        outcome = endOf(item.event);
        if (outcome) break;
      }
      if (!outcome) {
        if (!ac.signal.aborted)
          await s.writeSSE({
            data: JSON.stringify({
              error: {
                message: "the session's events stopped before it answered",
                type: "server_error",
                param: null,
                code: "unavailable",
              },
            }),
          });
        return;
      }
      const rest = answerRemainder(streamed, outcome.text);
      if (rest === null)
        d.log.warn(
          { session_id: started.sessionId },
          "the streamed answer differs from the final one (the answering node ran again)",
        );
      for (const piece of deltas(rest ?? "")) await chunk({ content: piece });
      await chunk({}, "stop");
      if (m.includeUsage) {
        await s.writeSSE({
          data: JSON.stringify({
            id: m.id,
            object: "chat.completion.chunk",
            created: m.created,
            model: m.model,
            system_fingerprint: null,
            choices: [],
            usage: await usageOf(d, started.sessionId),
          }),
        });
      }
      await s.writeSSE({ data: "[DONE]" });
    } catch (err) {
      if (!ac.signal.aborted)
        d.log.warn({ session_id: started.sessionId, err: (err as Error).message }, "chat completion stream failed");
    } finally {
      ac.abort();
    }
  });
}
