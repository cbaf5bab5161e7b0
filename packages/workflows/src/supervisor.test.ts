import { describe, expect, it } from "vitest";
import { HANDOFF_MATRIX, MAX_HANDOFFS, SUPERVISOR_LIMITS, SupervisorAgent } from "@agentmesh/contracts";
import { failure } from "./testing.js";
import { FIRST_OP, QUERY, outcome, source, started, sup, supervisorHarness } from "./supervisor-testkit.js";

describe("supervisor routing", () => {
  it("an explicit mode bypasses the router: no router task, confidence 1, the agent starts at once with its config", () => {
    const h = started("code");
    expect(h.ops()).toEqual(["coder.generate"]);
    expect(h.ofType("routing")).toEqual([
      expect.objectContaining({ agent: "code", confidence: 1, is_low_confidence: false }),
    ]);
    expect(h.ofType("config")).toEqual([
      expect.objectContaining({ agent: "code", settings: expect.objectContaining({ max_iterations: 3 }) }),
    ]);
    expect(h.data).toMatchObject({ mode: "code", selected_agent: "code", active_agent: "code", node: "generate" });
  });

  it("without a mode the router is asked with the query and the thread, and its pick starts that agent", () => {
    const messages = [
      { role: "user" as const, content: "earlier" },
      { role: "assistant" as const, content: "reply" },
    ];
    const h = supervisorHarness({ messages });
    h.start();
    expect(h.ops()).toEqual(["router.route"]);
    expect(h.input()).toEqual({ query: QUERY, messages });
    h.reply("router.route", sup.routed("writing", 0.8, "a text to write"));
    expect(h.ops()).toEqual(["router.route", "writer.analyze"]);
    expect(h.data).toMatchObject({
      selected_agent: "writing",
      routing_confidence: 0.8,
      routing_reason: "a text to write",
      is_low_confidence: false,
    });
    expect(h.ofType("routing")).toEqual([
      expect.objectContaining({
        agent: "writing",
        confidence: 0.8,
        reason: "a text to write",
        is_low_confidence: false,
      }),
    ]);
  });

  it("a confidence under 0.5 is flagged low, not re-routed; 0.5 itself is not low", () => {
    for (const [confidence, low] of [
      [0.49, true],
      [0.5, false],
    ] as const) {
      const h = supervisorHarness();
      h.start();
      h.reply("router.route", sup.routed("research", confidence));
      expect(h.data.is_low_confidence).toBe(low);
      expect(h.ofType("routing")[0]?.is_low_confidence).toBe(low);
      expect(h.ops()).toEqual(["router.route", "researcher.search"]);
    }
  });

  it("a router failure goes to chat with confidence 0 and a reason naming the failure", () => {
    const h = supervisorHarness();
    h.start();
    h.fail("router.route", failure("model_invalid_output", true, "not JSON"));
    expect(h.ops()).toEqual(["router.route", "chat.respond"]);
    expect(h.data).toMatchObject({ selected_agent: "chat", routing_confidence: 0, is_low_confidence: true });
    expect(h.data.routing_reason).toContain("router failed (model_invalid_output)");
  });
});

describe("supervisor handoffs (the matrix, through the workflow)", () => {
  const agents = SupervisorAgent.options;
  for (const source_agent of agents) {
    for (const target of agents) {
      const allowed = HANDOFF_MATRIX[source_agent].includes(target);
      it(`${source_agent} → ${target} is ${allowed ? "made" : "refused, and the agent goes on"}`, () => {
        const h = started(source_agent);
        h.reply(FIRST_OP[source_agent], sup.handoff(target, "the delegated task", "what I know"));
        if (allowed) {
          expect(h.ofType("handoff")).toEqual([
            expect.objectContaining({
              source_agent,
              target_agent: target,
              task_description: "the delegated task",
              context: "what I know",
            }),
          ]);
          expect(h.ops()).toEqual([FIRST_OP[source_agent], FIRST_OP[target]]);
          expect(h.input()).toMatchObject({
            brief: { query: QUERY, task: "the delegated task", handoff_context: "what I know" },
          });
          expect(h.data).toMatchObject({
            active_agent: target,
            handoff_count: 1,
            delegated_task: "the delegated task",
            pending_handoff: null,
          });
          expect(h.ofType("config").map((c) => c.agent)).toEqual([source_agent, target]);
        } else {
          expect(h.ofType("handoff")).toEqual([]);
          expect(h.ops()).toEqual([FIRST_OP[source_agent], FIRST_OP[source_agent]]);
          const observations = h.input().observations as Array<{ tool: string; ok: boolean; content: string }>;
          expect(observations).toEqual([expect.objectContaining({ tool: `handoff_to_${target}`, ok: false })]);
          expect(observations[0]?.content).toMatch(target === source_agent ? /yourself/ : /cannot hand off/);
          expect(h.data).toMatchObject({ active_agent: source_agent, handoff_count: 0 });
        }
      });
    }
  }

  it(`the ${MAX_HANDOFFS}rd handoff is the last: the 4th is refused with the cap message, no handoff tool is offered, and the agent's answer is final`, () => {
    const h = started("chat");
    h.reply("chat.respond", sup.handoff("writing"));
    h.reply("writer.analyze", sup.handoff("research"));
    h.reply("researcher.search", sup.handoff("code"));
    expect(h.data.handoff_count).toBe(3);
    const offered = (h.input().tools as Array<{ name: string }>).map((t) => t.name);
    expect(offered.filter((n) => n.startsWith("handoff_to_"))).toEqual([]);
    h.reply("coder.generate", sup.handoff("data"));
    expect(h.ofType("handoff")).toHaveLength(3);
    expect(h.ops().at(-1)).toBe("coder.generate");
    expect(h.input().observations).toEqual([
      expect.objectContaining({
        tool: "handoff_to_data",
        ok: false,
        content: expect.stringContaining(`made its ${MAX_HANDOFFS} handoffs`),
      }),
    ]);
    h.reply("coder.generate", sup.answer("The code agent's own answer."));
    expect(h.state.meta.status).toBe("completed");
    expect(h.data.response).toBe("The code agent's own answer.");
  });

  it("A→B→A is refused (ping-pong) and B goes on with the task itself", () => {
    const h = started("code");
    h.reply("coder.generate", sup.handoff("data", "chart it"));
    h.reply("analyst.plan", sup.handoff("code", "back to you"));
    expect(h.ofType("handoff")).toHaveLength(1);
    expect(h.ops()).toEqual(["coder.generate", "analyst.plan", "analyst.plan"]);
    expect(h.input().observations).toEqual([
      expect.objectContaining({
        tool: "handoff_to_code",
        ok: false,
        content: expect.stringContaining("just handed it to you"),
      }),
    ]);
    h.reply("analyst.plan", sup.dataPlan());
    expect(h.ops().at(-1)).toBe("analyst.generate");
  });

  it("a handoff goes straight to its target: the router is asked once, at the start, never for a handoff", () => {
    const h = supervisorHarness();
    h.start();
    h.reply("router.route", sup.routed("chat"));
    h.reply("chat.respond", sup.handoff("research"));
    h.reply("researcher.search", sup.handoff("data"));
    expect(h.ops().filter((o) => o === "router.route")).toHaveLength(1);
    expect(h.ops()).toEqual(["router.route", "chat.respond", "researcher.search", "analyst.plan"]);
  });

  it("invalid handoff arguments are a refused call, not a handoff", () => {
    const h = started("chat");
    h.reply("chat.respond", sup.tool("handoff_to_code", { task_description: "   " }));
    expect(h.ofType("handoff")).toEqual([]);
    expect(h.input().observations).toEqual([
      expect.objectContaining({ ok: false, content: expect.stringContaining("arguments are invalid") }),
    ]);
  });

  it("the shared notes carry the source's work to the target, rendered within the 8000-character budget", () => {
    const h = started("research");
    const long = "Finding. ".repeat(440);
    for (let i = 0; i < 3; i++) {
      h.reply("researcher.search", sup.tool("web_search", { query: `q${i}` }));
      h.reply("executor.call", outcome("web_search", long, { citations: [source(i)] }));
    }
    h.reply("researcher.search", sup.handoff("code", "compute the growth"));
    const notes = (h.input().brief as { memory: string }).memory;
    expect(notes).toContain("## research_findings");
    expect(notes).toContain("## research_sources");
    expect(notes).toContain("Source 2 — https://example.com/2");
    expect(notes.length).toBeLessThanOrEqual(SUPERVISOR_LIMITS.notesBudgetChars);
    expect(h.data.shared_memory.research_sources).toHaveLength(3);
  });

  it("a refused call counts: after more refusals than allowed the agent is stopped with an honest answer, never looping", () => {
    const h = started("writing");
    for (let i = 0; i < 10 && h.state.meta.status === "running"; i++) h.reply("writer.analyze", sup.tool("web_search"));
    expect(h.state.meta.status).toBe("completed");
    expect(h.ops().filter((o) => o === "writer.analyze")).toHaveLength(4);
    expect(h.data.response).toContain("stopped");
  });
});
