import { afterEach, describe, expect, inject, test } from "vitest";
import { SCHEMA_VERSION, SubmitReply } from "@agentmesh/contracts";
import { request } from "@agentmesh/messaging";
import { startScriptedOpenAIServer, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { AGENT_ROLES, Cluster, assertAppliedOnce } from "./harness.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.js";
import { happyPath } from "./scripts.js";

const CLIENT_TRACE = "5a1c0ffee0ddba11c0ffee0ddba11c0f";
const CLIENT_SPAN = "b0a710ad5eed1e55";
/** Tasks (and model calls) of a critic-chain session whose critics approve everything. */
const HAPPY_TASKS = 9;

const open: Array<{ cluster: Cluster; llm: ScriptedServer; otlp: OtlpReceiver }> = [];
afterEach(async () => {
  for (const { cluster, llm, otlp } of open.splice(0)) {
    await cluster.close();
    await llm.close();
    await otlp.close();
  }
});

async function until<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("one OpenTelemetry trace per session, across processes, through a coordinator crash", () => {
  test("a critic-chain session whose first coordinator dies after its CAS: one trace, linked spans, GenAI attributes", async () => {
    const llm = await startScriptedOpenAIServer({ script: happyPath() });
    const otlp = await startOtlpReceiver();
    const cluster = new Cluster({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      prefix: uniquePrefix("trace"),
      llmBaseUrl: llm.url,
      extraEnv: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_BSP_SCHEDULE_DELAY: "100",
        AGENTMESH_LLM_PRICES: "scripted=1.5/6",
      },
    });
    await cluster.open();
    open.push({ cluster, llm, otlp });

    // The only coordinator at first is armed: it applies the session's start, writes the CAS and dies
    // before publishing the outbox. The second coordinator re-publishes that outbox.
    const victim = cluster.start("coordinator", { AGENTMESH_CRASH_AT: "after-cas" });
    for (const r of AGENT_ROLES) cluster.start(r);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(AGENT_ROLES.map((r) => [r, 1])) });

    const sid = "tracedsession0000001";
    const reply = SubmitReply.parse(
      await request(
        cluster.natsConnection,
        cluster.naming.submit,
        { v: SCHEMA_VERSION, query: "What is CRISPR and who invented it?", session_id: sid, idempotency_key: sid },
        10_000,
        {
          traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
        },
      ),
    );
    expect(reply.ok).toBe(true);
    const death = await victim.exited;
    expect(death.signal).toBe("SIGKILL");
    expect(victim.output()).toContain("dying at after-cas");
    cluster.start("coordinator");

    const { state, log } = await cluster.waitDone(sid, 90_000);
    expect(state.meta.status).toBe("completed");
    assertAppliedOnce(log, state.meta.version);
    const trace = state.meta.trace;
    expect(trace).toMatchObject({ trace_id: CLIENT_TRACE, parent_span_id: CLIENT_SPAN, sampled: true });

    const ofSession = () => otlp.spans.filter((s) => s.attributes["agentmesh.session_id"] === sid);
    await until("the session's root span and every task's span", 20_000, () => {
      const spans = ofSession();
      return spans.some((s) => s.name === "session") && spans.filter((s) => s.name === "task").length >= HAPPY_TASKS
        ? true
        : undefined;
    });
    await new Promise((r) => setTimeout(r, 500)); // stragglers of the last batch
    const spans = ofSession();
    expect(otlp.refused).toEqual([]);

    // one trace: the client's, across the coordinator and the five agent processes
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CLIENT_TRACE]));
    const services = new Set(spans.map((s) => s.service));
    expect(services.size).toBeGreaterThanOrEqual(3);
    expect([...services].sort()).toEqual(["coordinator", "critic", "expert", "finalizer", "planner", "researcher"]);

    // the root: written at the end, under the id fixed at creation, starting at the session's creation
    const roots = spans.filter((s) => s.name === "session");
    expect(roots).toHaveLength(1);
    const root = roots[0]!;
    expect(root.spanId).toBe(trace!.root_span_id);
    expect(root.parentSpanId).toBe(CLIENT_SPAN);
    expect(root.startNs).toBe(BigInt(state.meta.created_at) * 1_000_000n);
    expect(root.attributes["agentmesh.status"]).toBe("completed");

    // parent/child links: transitions under the root, tasks under a transition, model calls under a task
    const byId = new Map<string, ReceivedSpan>(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: ReceivedSpan) => (s.parentSpanId === null ? undefined : byId.get(s.parentSpanId));
    const transitions = spans.filter((s) => s.name === "transition");
    expect(transitions.length).toBeGreaterThanOrEqual(state.meta.version);
    for (const t of transitions) expect(t.parentSpanId).toBe(root.spanId);
    // the transition the dead coordinator committed, written by the one that re-published its outbox
    const republished = transitions.filter((t) => t.attributes["agentmesh.republished"] === true);
    expect(republished.map((t) => t.attributes["agentmesh.version"])).toEqual([1]);
    const tasks = spans.filter((s) => s.name === "task");
    expect(tasks).toHaveLength(HAPPY_TASKS);
    for (const t of tasks) {
      expect(parentOf(t)?.name, `parent of task ${String(t.attributes["agentmesh.task_id"])}`).toBe("transition");
      expect(t.attributes).toMatchObject({ "agentmesh.ok": true, "agentmesh.session_id": sid });
      expect(typeof t.attributes["agentmesh.attempt"]).toBe("number");
    }
    const planTask = tasks.find((t) => t.attributes["agentmesh.role"] === "planner")!;
    expect(planTask.service).toBe("planner");
    expect(parentOf(planTask)).toBe(republished[0]);

    // GenAI attributes on every model call
    const models = spans.filter((s) => s.name === "model_call");
    expect(models).toHaveLength(HAPPY_TASKS);
    for (const m of models) {
      expect(parentOf(m)?.name).toBe("task");
      expect(m.attributes).toMatchObject({
        "gen_ai.system": "openai",
        "gen_ai.request.model": "scripted",
        "agentmesh.session_id": sid,
      });
      expect(typeof m.attributes["gen_ai.request.temperature"]).toBe("number");
      expect(m.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(m.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
      expect(m.attributes["agentmesh.cost_usd"]).toBeGreaterThan(0);
    }
  }, 180_000);
});
