import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  inputIds,
  SCHEMA_VERSION,
  type AwaitedTask,
  type Capability,
  type HaloCitation,
  type HaloData,
  type HaloSettings,
  type InboxInput,
  type SessionOptions,
  type SessionState,
  type TaskEnvelope,
} from "@agentmesh/contracts";
import { createSession, step } from "./runtime.js";
import { DEFAULTS, SID, T0, checkApplied, eventsOf, failure, failureFor, resultFor, tasksOf } from "./testing.js";
import type { RuntimeDefaults, StepOutcome } from "./types.js";

const QUESTION = "Which therapies target HER2 and how does HER2 interact with HER3?";
const ALL: HaloSettings = {
  available_capabilities: ["graph", "rag", "biomcp", "web", "llama_mcp", "chitchat"],
  join_deadline_ms: 30_000,
  domain_hints: null,
};

type HaloSession = SessionState & { data: HaloData };

const url = (slug: string): HaloCitation => ({
  title: slug,
  url: `https://example.com/${slug}`,
  path: null,
  snippet: slug,
});
const triple = (line: number): HaloCitation => ({
  title: `triple ${line}`,
  url: null,
  path: `graph/her2.jsonl:${line}`,
  snippet: "HER2 interacts_with HER3",
});
const answer = (response_str: string, citations: HaloCitation[] = []) => ({ response_str, citations });

/** Drives one halo session through step() as the coordinator does, checking every outcome against the contracts. */
function haloHarness(
  opts: { settings?: HaloSettings; options?: SessionOptions; defaults?: Partial<RuntimeDefaults> } = {},
) {
  const defaults: RuntimeDefaults = { ...DEFAULTS, ...opts.defaults, halo: opts.settings ?? ALL };
  const created = createSession({
    sessionId: SID,
    workflow: "halo",
    query: QUESTION,
    options: opts.options ?? {},
    now: T0,
    defaults,
  });
  const h = {
    state: created as HaloSession,
    now: T0,
    outcomes: [] as StepOutcome[],
    send(input: InboxInput, advanceMs = 100): StepOutcome {
      h.now += advanceMs;
      const o = step(h.state, input, { now: h.now, defaults });
      h.outcomes.push(o);
      if (o.kind === "apply") {
        checkApplied(o);
        h.state = o.state as HaloSession;
      }
      return o;
    },
    start: () =>
      h.send({
        v: SCHEMA_VERSION,
        kind: "start",
        session_id: SID,
        input_id: inputIds.start(SID),
        workflow: "halo",
        query: QUESTION,
        options: opts.options ?? {},
      }),
    /** The awaited task of a capability (by its tag) or the planner's. */
    task(tag: Capability | "planner"): AwaitedTask {
      const t = h.state.meta.awaiting.find((a) => (tag === "planner" ? a.role === "planner" : a.tag === tag));
      if (!t) throw new Error(`no awaited task for ${tag}: ${JSON.stringify(h.state.meta.awaiting)}`);
      return t;
    },
    reply: (tag: Capability | "planner", output: unknown, advanceMs?: number) =>
      h.send(resultFor(h.task(tag), output), advanceMs),
    fail: (tag: Capability | "planner", code: Parameters<typeof failure>[0], advanceMs?: number) =>
      h.send(failureFor(h.task(tag), failure(code, false)), advanceMs),
    deadline: (tag: Capability, advanceMs?: number) =>
      h.send(
        {
          v: SCHEMA_VERSION,
          kind: "timer",
          session_id: SID,
          input_id: inputIds.timer(h.task(tag).task_id),
          task_id: h.task(tag).task_id,
          reason: "task_deadline",
        },
        advanceMs,
      ),
    /** Every task ever dispatched. */
    allTasks: (): TaskEnvelope[] => h.outcomes.flatMap(tasksOf),
  };
  return h;
}

/** A session planned by the model as `plan`. */
function planned(plan: Capability[], opts: Parameters<typeof haloHarness>[0] = {}) {
  const h = haloHarness(opts);
  h.start();
  h.reply("planner", { capabilities: plan, invalid_reason: null });
  return h;
}

describe("halo planning", () => {
  it("asks the planner once with what this deployment serves, then dispatches every planned specialist in one transition, order kept", () => {
    const h = haloHarness({ settings: { ...ALL, available_capabilities: ["graph", "rag", "chitchat"] } });
    const started = h.start();
    const [plan] = tasksOf(started);
    expect(plan).toMatchObject({
      role: "planner",
      op: "capabilities",
      input: { question: QUESTION, available: ["graph", "rag", "chitchat"] },
    });
    const fanned = h.reply("planner", { capabilities: ["rag", "graph", "rag"], invalid_reason: null });
    const tasks = tasksOf(fanned);
    expect(tasks.map((t) => `${t.role}.${t.op}`)).toEqual(["retriever.answer", "graph.answer"]);
    expect(tasks[0]?.input).toEqual({ question: QUESTION, source: "corpus" });
    expect(h.state.meta.awaiting.map((a) => a.tag)).toEqual(["rag", "graph"]);
    expect(h.state.data).toMatchObject({
      capabilities: ["rag", "graph"],
      plan_source: "model",
      plan_fallback_reason: null,
      phase: "specialists",
    });
  });

  it("maps each capability to its role: web to the retriever, biomcp and llama_mcp to the mcp role with the server's name, chitchat to chat", () => {
    const h = planned(["graph", "rag", "biomcp", "web", "llama_mcp", "chitchat"]);
    const tasks = tasksOf(h.outcomes.at(-1) as StepOutcome);
    expect(tasks.map((t) => [t.role, t.op, t.input])).toEqual([
      ["graph", "answer", { question: QUESTION }],
      ["retriever", "answer", { question: QUESTION, source: "corpus" }],
      ["mcp", "answer", { question: QUESTION, server: "biomcp" }],
      ["retriever", "answer", { question: QUESTION, source: "web" }],
      ["mcp", "answer", { question: QUESTION, server: "llama_mcp" }],
      ["chat", "chitchat", { question: QUESTION }],
    ]);
  });

  it.each([
    [
      "the planner's reply was not a valid plan (not JSON, an unknown tag)",
      { capabilities: [], invalid_reason: "the model's output failed validation: not JSON" },
      /not JSON/,
    ],
    ["the plan is empty", { capabilities: [], invalid_reason: null }, /empty/],
    [
      "the plan names only what this deployment cannot serve",
      { capabilities: ["web", "biomcp"], invalid_reason: null },
      /serves none of web, biomcp/,
    ],
  ])("falls back to chitchat when %s, as a normal path", (_why, output, reason) => {
    const h = haloHarness({ settings: { ...ALL, available_capabilities: ["graph", "chitchat"] } });
    h.start();
    const o = h.reply("planner", output);
    expect(tasksOf(o).map((t) => `${t.role}.${t.op}`)).toEqual(["chat.chitchat"]);
    expect(h.state.data.plan_source).toBe("fallback");
    expect(h.state.data.plan_fallback_reason).toMatch(reason);
    expect(h.state.meta.status).toBe("running");
  });

  it("leaves out a planned capability this deployment cannot serve", () => {
    const h = planned(["web", "graph"], { settings: { ...ALL, available_capabilities: ["graph", "chitchat"] } });
    expect(h.state.data.capabilities).toEqual(["graph"]);
    expect(h.state.meta.awaiting.map((a) => a.tag)).toEqual(["graph"]);
  });

  it("falls back to chitchat when the planner task fails, and never asks the planner twice", () => {
    const h = haloHarness();
    h.start();
    h.fail("planner", "model_error");
    expect(h.state.data).toMatchObject({ capabilities: ["chitchat"], plan_source: "fallback" });
    expect(h.state.data.plan_fallback_reason).toMatch(/planner failed \(model_error\)/);
    h.reply("chitchat", answer("Hello! I can help with questions about biology."));
    expect(h.state.meta.status).toBe("completed");
    expect(h.allTasks().filter((t) => t.role === "planner")).toHaveLength(1);
  });

  it("takes a plan given in the request instead of the planner: no planner task at all", () => {
    const h = haloHarness({ options: { capabilities: ["graph", "rag", "graph"] } });
    const o = h.start();
    expect(tasksOf(o).map((t) => t.input)).toEqual([{ question: QUESTION }, { question: QUESTION, source: "corpus" }]);
    expect(h.state.data).toMatchObject({ capabilities: ["graph", "rag"], plan_source: "override" });
    expect(
      eventsOf(o).some(
        (e) =>
          e.type === "stage" && e.name === "plan" && e.status === "completed" && e.description.includes("override"),
      ),
    ).toBe(true);
    h.reply("graph", answer("HER2 interacts with HER3.", [triple(3)]));
    h.reply("rag", answer("Trastuzumab targets HER2.", [url("nccn")]));
    expect(h.state.meta.status).toBe("completed");
    expect(h.allTasks().some((t) => t.role === "planner")).toBe(false);
  });

  it("an override naming only what this deployment cannot serve falls back to chitchat", () => {
    const h = haloHarness({
      settings: { ...ALL, available_capabilities: ["chitchat"] },
      options: { capabilities: ["web"] },
    });
    const o = h.start();
    expect(tasksOf(o).map((t) => t.role)).toEqual(["chat"]);
    expect(h.state.data.plan_source).toBe("fallback");
  });
});

describe("halo specialists, judge and synthesis", () => {
  it("a single capability: its answer becomes the cited response, with the judge's summary and a source event per citation", () => {
    const h = planned(["rag"]);
    const o = h.reply(
      "rag",
      answer("[RAG] NCCN recommends trastuzumab-based regimens for HER2+ disease.", [url("nccn"), url("trastuzumab")]),
    );
    expect(h.state.meta.status).toBe("completed");
    const d = h.state.data;
    expect(d.response_str).toBe(
      "[HALO] NCCN recommends trastuzumab-based regimens for HER2+ disease [1,2].\n\nSources:\n1) https://example.com/nccn\n2) https://example.com/trastuzumab",
    );
    expect(d.citations.map((c) => c.url)).toEqual(["https://example.com/nccn", "https://example.com/trastuzumab"]);
    expect(d.judge_response).toMatch(/^rag: score \d+, citations 2, length \d+ \(primary\)$/);
    const events = eventsOf(o);
    expect(events.filter((e) => e.type === "source").map((e) => (e.type === "source" ? e.url : null))).toEqual([
      "https://example.com/nccn",
      "https://example.com/trastuzumab",
    ]);
    const complete = events.find((e) => e.type === "complete");
    expect(complete).toMatchObject({ status: "completed", final_answer: d.response_str });
    expect(complete?.type === "complete" ? complete.final_reasoning_trace : "").toContain("Judge:\nrag: score");
  });

  it("several capabilities: waits for all, merges citations shared across specialists into one numbered list, whatever order they arrive in", () => {
    const run = (order: Capability[]) => {
      const h = planned(["graph", "rag", "biomcp"]);
      const replies: Record<string, ReturnType<typeof answer>> = {
        graph: answer("HER2 interacts with HER3 through heterodimerization.", [triple(3), url("shared")]),
        rag: answer(
          "Trastuzumab and pertuzumab target HER2; guidelines recommend them together in the neoadjuvant setting for HER2-positive disease.",
          [url("nccn"), url("shared"), url("pertuzumab")],
        ),
        biomcp: answer("Trial NCT01 studies HER2.", [url("nct01")]),
      };
      for (const [i, c] of order.entries()) {
        h.reply(c, replies[c]);
        expect(h.state.meta.status).toBe(i < order.length - 1 ? "running" : "completed");
      }
      return h.state.data;
    };
    const a = run(["graph", "rag", "biomcp"]);
    const b = run(["biomcp", "rag", "graph"]);
    expect(b.response_str).toBe(a.response_str);
    expect(a.citations.map((c) => c.url ?? c.path)).toEqual([
      "https://example.com/nccn",
      "https://example.com/shared",
      "https://example.com/pertuzumab",
      "graph/her2.jsonl:3",
      "https://example.com/nct01",
    ]);
    expect(a.response_str).toContain(
      "[HALO] Trastuzumab and pertuzumab target HER2; guidelines recommend them together in the neoadjuvant setting for HER2-positive disease [1,2,3].",
    );
    expect(a.response_str).toContain(
      "\n\nAdditional insights:\n- HER2 interacts with HER3 through heterodimerization [2,4].\n- Trial NCT01 studies HER2 [5].",
    );
    expect(a.judge_response?.split("\n")).toHaveLength(3);
  });

  it("a specialist's error becomes the short availability message: scored 0, never primary, last", () => {
    const h = planned(["graph", "rag"]);
    h.fail("graph", "tool_unavailable");
    h.reply("rag", answer("Trastuzumab targets HER2.", [url("nccn")]));
    const d = h.state.data;
    expect(h.state.meta.status).toBe("completed");
    expect(d.outputs.find((o) => o.capability === "graph")).toMatchObject({
      status: "unavailable",
      error_code: "tool_unavailable",
      response_str: "The graph specialist is unavailable right now.",
    });
    expect(d.response_str).toBe(
      "[HALO] Trastuzumab targets HER2 [1].\n\nAdditional insights:\n- The graph specialist is unavailable right now.\n\nSources:\n1) https://example.com/nccn",
    );
    expect(d.judge_response?.split("\n")[1]).toBe(
      "graph: score 0, citations 0, length 46 (unavailable: tool_unavailable)",
    );
  });

  it("joins at the deadline: the late specialists contribute the availability message, the session completes and a late result is dropped", () => {
    const h = planned(["graph", "rag", "biomcp"], { settings: { ...ALL, join_deadline_ms: 3000 } });
    const deadlines = h.state.meta.awaiting.map((a) => a.deadline_at);
    expect(new Set(deadlines).size).toBe(1);
    expect(deadlines[0]).toBe(h.now + 3000);
    h.reply("graph", answer("HER2 interacts with HER3.", [triple(3)]));
    const biomcp = h.task("biomcp");
    const joined = h.deadline("rag", 3000);
    expect(h.state.meta.status).toBe("completed");
    expect(h.state.meta.awaiting).toEqual([]);
    const d = h.state.data;
    expect(d.outputs.map((o) => [o.capability, o.status, o.error_code])).toEqual([
      ["graph", "answered", null],
      ["rag", "unavailable", "deadline_exceeded"],
      ["biomcp", "unavailable", "deadline_exceeded"],
    ]);
    expect(d.response_str).toMatch(/^\[HALO\] HER2 interacts with HER3 \[1\]\./);
    expect(d.response_str).toContain(
      "- The rag specialist is unavailable right now.\n- The biomcp specialist is unavailable right now.",
    );
    expect(joined.kind === "apply" ? joined.commands.some((c) => c.startsWith("complete")) : false).toBe(true);
    const late = h.send(resultFor(biomcp, answer("too late", [url("late")])));
    expect(late.kind).toBe("drop");
  });

  it("the join deadline is never later than the runtime's task deadline", () => {
    const h = planned(["graph"], {
      settings: { ...ALL, join_deadline_ms: 30_000 },
      defaults: { taskDeadlineMs: 5000 },
    });
    expect(h.task("graph").deadline_at).toBe(h.now + 5000);
  });

  it("no specialist answered: 'No primary answer available.'", () => {
    const h = planned(["graph"]);
    h.fail("graph", "internal");
    expect(h.state.meta.status).toBe("completed");
    expect(h.state.data.response_str).toBe(
      "[HALO] No primary answer available.\n\nAdditional insights:\n- The graph specialist is unavailable right now.",
    );
  });

  it("ties go to the earlier capability in the plan; a deployment's domain hints replace the workflow's table", () => {
    const texts = { graph: answer("Graph says A.", [url("g")]), rag: answer("Corpus says B.", [url("r")]) };
    const primaryOf = (h: ReturnType<typeof planned>) =>
      h.state.data.judge_response
        ?.split("\n")
        .find((l) => l.endsWith("(primary)"))
        ?.split(":")[0];
    const plain = planned(["rag", "graph"], { settings: { ...ALL, domain_hints: {} } });
    plain.reply("graph", texts.graph);
    plain.reply("rag", texts.rag);
    expect(primaryOf(plain)).toBe("rag");
    const hinted = planned(["rag", "graph"], {
      settings: { ...ALL, domain_hints: { graph: { bonus: 2, keywords: ["her3"] } } },
    });
    hinted.reply("graph", texts.graph);
    hinted.reply("rag", texts.rag);
    expect(primaryOf(hinted)).toBe("graph");
  });

  it("appends the judge's summary as a guidance note when biomcp is primary, and not otherwise", () => {
    const h = planned(["biomcp", "graph"]);
    h.reply(
      "biomcp",
      answer("Trastuzumab is approved for HER2-positive breast cancer and is studied in many trials.", [
        url("a"),
        url("b"),
        url("c"),
      ]),
    );
    h.reply("graph", answer("HER2 interacts with HER3."));
    expect(h.state.data.response_str).toMatch(
      /\n\nGuidance from the judge:\nbiomcp: score \d+, citations 3, length \d+ \(primary\)\ngraph: score/,
    );
    const other = planned(["rag"]);
    other.reply("rag", answer("Corpus answer.", [url("x")]));
    expect(other.state.data.response_str).not.toContain("Guidance from the judge");
  });

  it("a cancel mid-fan-out ends the session with its own message and no response from the specialists", () => {
    const h = planned(["graph", "rag"]);
    h.send({
      v: SCHEMA_VERSION,
      kind: "cancel",
      session_id: SID,
      input_id: inputIds.cancel("c1"),
      reason: "user asked",
    });
    expect(h.state.meta.status).toBe("cancelled");
    expect(h.state.meta.awaiting).toEqual([]);
    expect(h.state.data.response_str).toMatch(/ended early \(cancelled\)/);
    expect(h.state.data.phase).toBe("done");
  });

  it("halo never asks a person: a reply is not applicable", () => {
    const h = planned(["graph"]);
    expect(
      h.send({ v: SCHEMA_VERSION, kind: "user_reply", session_id: SID, input_id: inputIds.user("u1"), text: "hi" })
        .kind,
    ).toBe("drop");
  });
});

describe("halo under any plan and any mix of specialist outcomes, in any order (property)", () => {
  type Move = {
    readonly kind: "answer" | "fail" | "deadline" | "redeliver";
    readonly pick: number;
    readonly cites: readonly number[];
  };
  const capabilities = fc.uniqueArray(
    fc.constantFrom<Capability>("graph", "rag", "biomcp", "web", "llama_mcp", "chitchat"),
    { minLength: 1, maxLength: 6 },
  );
  const moves = fc.array(
    fc.record({
      kind: fc.constantFrom<Move["kind"]>("answer", "answer", "answer", "fail", "deadline", "redeliver"),
      pick: fc.nat(5),
      cites: fc.array(fc.nat(4), { maxLength: 4 }),
    }),
    { minLength: 1, maxLength: 12 },
  );

  it("completes exactly when every specialist is in or the join deadline passed; the answer's numbers all point into one de-duplicated source list", () => {
    fc.assert(
      fc.property(capabilities, moves, (plan, script) => {
        const h = planned(plan);
        const answered = new Set<Capability>();
        let lastAnswered: ReturnType<typeof resultFor> | null = null;
        for (const move of script) {
          if (h.state.meta.status !== "running") break;
          const awaiting = h.state.meta.awaiting;
          const task = awaiting[move.pick % awaiting.length] as AwaitedTask;
          const tag = task.tag as Capability;
          if (move.kind === "redeliver") {
            // A copy of a result already applied: never applied twice.
            if (lastAnswered) expect(h.send(lastAnswered).kind).toBe("drop");
            continue;
          }
          const before = awaiting.length;
          if (move.kind === "answer") {
            lastAnswered = resultFor(
              task,
              answer(
                `The ${tag} view of HER2, part ${move.pick}.`,
                move.cites.map((n) => url(`s${n}`)),
              ),
            );
            h.send(lastAnswered);
            answered.add(tag);
          } else if (move.kind === "fail") h.fail(tag, "tool_error");
          else h.deadline(tag);
          const joined = move.kind === "deadline" || before === 1;
          expect(h.state.meta.status).toBe(joined ? "completed" : "running");
        }
        if (h.state.meta.status === "running") return;
        const d = h.state.data;
        expect(d.outputs.map((o) => o.capability).sort()).toEqual([...plan].sort());
        expect(d.response_str?.startsWith("[HALO] ")).toBe(true);
        const keys = d.citations.map((c) => c.url ?? c.path);
        expect(new Set(keys).size).toBe(keys.length);
        const body = (d.response_str ?? "").split("\n\nSources:\n")[0] ?? "";
        for (const m of body.matchAll(/\[(\d+(?:,\d+)*)\]/g))
          for (const n of (m[1] ?? "").split(",").map(Number)) expect(n >= 1 && n <= d.citations.length).toBe(true);
        const primary = d.judge_response
          ?.split("\n")
          .find((l) => l.endsWith("(primary)"))
          ?.split(":")[0];
        if (answered.size === 0) expect(d.response_str).toMatch(/^\[HALO\] No primary answer available\./);
        else expect(answered.has(primary as Capability)).toBe(true);
        expect(h.allTasks().filter((t) => t.role === "planner")).toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });
});
