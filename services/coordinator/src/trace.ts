import { randomBytes } from "node:crypto";
import {
  Traceparent,
  isTerminal,
  sessionTraceparent,
  type InboxInput,
  type Outbox,
  type SessionState,
  type SessionTrace,
} from "@agentmesh/contracts";
import type { SpanAttributeMap, SpanHandle, Tracing } from "@agentmesh/service-kit";
import type { SpanAttributes } from "@agentmesh/workflows";

function nonZeroHex(bytes: number, random: (n: number) => Buffer): string {
  for (;;) {
    const h = random(bytes).toString("hex");
    if (/[^0]/.test(h)) return h;
  }
}

/**
 * A new session's trace: it continues the client's trace when its submit carried a valid
 * traceparent (the client's span becomes the root span's parent), else starts one. The root
 * span's id is fixed here, long before the span is written (at the session's end).
 */
export function mintSessionTrace(
  clientTraceparent: string | undefined,
  random: (n: number) => Buffer = randomBytes,
): SessionTrace {
  const rootSpanId = nonZeroHex(8, random);
  if (clientTraceparent !== undefined && Traceparent.safeParse(clientTraceparent).success) {
    const [, traceId, spanId, flags] = clientTraceparent.split("-") as [string, string, string, string];
    if (/[^0]/.test(traceId) && /[^0]/.test(spanId)) {
      return {
        trace_id: traceId,
        root_span_id: rootSpanId,
        parent_span_id: spanId,
        sampled: (Number.parseInt(flags, 16) & 1) === 1,
      };
    }
  }
  return { trace_id: nonZeroHex(16, random), root_span_id: rootSpanId, parent_span_id: null, sampled: true };
}

/** Attributes every span of a session carries: its id, and its thread as Langfuse's session. */
export function sessionAttributes(state: SessionState): SpanAttributeMap {
  return { "agentmesh.session_id": state.meta.session_id, "langfuse.session.id": state.meta.thread_id };
}

/** The traceparent a session's messages carry when no transition span exists (tracing off): its root span. */
export function rootTraceparent(state: SessionState): string | undefined {
  return state.meta.trace === null ? undefined : sessionTraceparent(state.meta.trace);
}

/** The parts of an input a transition span names. */
function inputAttributes(input: InboxInput): SpanAttributeMap {
  return {
    "agentmesh.input_kind": input.kind,
    "agentmesh.input_id": input.input_id,
    ...(input.kind === "result"
      ? {
          "agentmesh.task_id": input.task_id,
          "agentmesh.role": input.role,
          "agentmesh.op": input.op,
          "agentmesh.ok": input.outcome.ok,
        }
      : {}),
    ...(input.kind === "timer" ? { "agentmesh.timer_reason": input.reason } : {}),
  };
}

/** How the coordinator writes a session's spans; every method is a no-op when tracing is off. */
export interface SessionSpans {
  /** Starts the span of a transition about to be committed (child of the session's root span). */
  transition(
    prev: SessionState,
    next: SessionState,
    input: InboxInput,
    decided: SpanAttributes | undefined,
  ): SpanHandle;
  /**
   * A pending outbox found at load is re-published: the span its traceparent names was never
   * written (the coordinator died before ending it), so it is written now under that id, and the
   * session's root too when that outbox was its terminal transition's.
   */
  republished(state: SessionState, outbox: Outbox): void;
  /** Writes the session's root span at its terminal transition: created_at → now, id fixed at creation. */
  ended(state: SessionState): void;
}

/** The coordinator's span writer over a process's tracing. */
export function sessionSpans(tracing: Tracing): SessionSpans {
  const ended = (state: SessionState): void => {
    const t = state.meta.trace;
    if (!tracing.enabled || t === null) return;
    const { meta } = state;
    tracing.emit({
      name: "session",
      traceId: t.trace_id,
      spanId: t.root_span_id,
      parentSpanId: t.parent_span_id,
      sampled: t.sampled,
      startTime: meta.created_at,
      endTime: Math.max(meta.updated_at, meta.created_at),
      failed: meta.status !== "completed",
      attributes: {
        ...sessionAttributes(state),
        "agentmesh.workflow": meta.workflow,
        "agentmesh.status": meta.status,
        "agentmesh.version": meta.version,
        "agentmesh.owner": meta.owner,
        "agentmesh.steps": meta.usage.steps,
        "agentmesh.model_calls": meta.usage.model_calls,
        "gen_ai.usage.input_tokens": meta.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": meta.usage.completion_tokens,
        "agentmesh.cost_usd": meta.usage.cost_usd,
        "agentmesh.error_code": meta.error?.code,
      },
    });
  };
  return {
    transition(prev, next, input, decided) {
      if (!tracing.enabled) return tracing.start("transition");
      return tracing.start("transition", {
        parent: rootTraceparent(prev),
        kind: "consumer",
        attributes: {
          ...sessionAttributes(prev),
          "agentmesh.workflow": prev.meta.workflow,
          "agentmesh.version": next.meta.version,
          "agentmesh.status": next.meta.status,
          ...inputAttributes(input),
          ...decided,
        },
      });
    },
    republished(state, outbox) {
      const t = state.meta.trace;
      if (!tracing.enabled || t === null || outbox.traceparent === undefined) return;
      const [, traceId, spanId] = outbox.traceparent.split("-") as [string, string, string];
      if (traceId === t.trace_id && spanId !== t.root_span_id) {
        tracing.emit({
          name: "transition",
          traceId,
          spanId,
          parentSpanId: t.root_span_id,
          sampled: t.sampled,
          startTime: Date.now(),
          attributes: {
            ...sessionAttributes(state),
            "agentmesh.workflow": state.meta.workflow,
            "agentmesh.version": outbox.version,
            "agentmesh.republished": true,
          },
        });
      }
      if (isTerminal(state.meta.status) && outbox.version === state.meta.version) ended(state);
    },
    ended,
  };
}
