import { describe, expect, it } from "vitest";
import { HANDOFF_MATRIX, MAX_HANDOFFS, SessionEvent, SupervisorAgent } from "@agentmesh/contracts";
import { FIRST_OP, sup, started, supervisorHarness } from "./supervisor-testkit.js";

describe("a refused handoff is a handoff_refused event, one per refusal, with one of the three reasons", () => {
  const agents = SupervisorAgent.options;
  for (const from of agents) {
    for (const to of agents) {
      if (HANDOFF_MATRIX[from].includes(to)) continue;
      it(`${from} → ${to} (outside the matrix${from === to ? ": to itself" : ""}) is refused as "matrix"`, () => {
        const h = started(from);
        h.reply(FIRST_OP[from], sup.handoff(to, "the delegated task"));
        expect(h.ofType("handoff_refused")).toEqual([expect.objectContaining({ from, to, reason: "matrix" })]);
        expect(h.ofType("handoff")).toEqual([]);
        for (const e of h.ofType("handoff_refused")) expect(SessionEvent.safeParse(e).success).toBe(true);
      });
    }
  }

  it('A → B → A is refused as "ping_pong", naming B as the one that asked', () => {
    const h = started("code");
    h.reply("coder.generate", sup.handoff("data", "chart it"));
    h.reply("analyst.plan", sup.handoff("code", "back to you"));
    expect(h.ofType("handoff_refused")).toEqual([
      expect.objectContaining({ from: "data", to: "code", reason: "ping_pong" }),
    ]);
  });

  it(`a handoff after the ${MAX_HANDOFFS}rd is refused as "cap", even to an agent the matrix allows`, () => {
    const h = started("chat");
    h.reply("chat.respond", sup.handoff("writing"));
    h.reply("writer.analyze", sup.handoff("research"));
    h.reply("researcher.search", sup.handoff("code"));
    expect(h.ofType("handoff_refused")).toEqual([]);
    h.reply("coder.generate", sup.handoff("data"));
    expect(h.ofType("handoff_refused")).toEqual([expect.objectContaining({ from: "code", to: "data", reason: "cap" })]);
    expect(h.ofType("handoff")).toHaveLength(MAX_HANDOFFS);
  });

  it("an accepted handoff emits no handoff_refused; a handoff with invalid arguments is no handoff decision at all", () => {
    const h = started("chat");
    h.reply("chat.respond", sup.handoff("research"));
    expect(h.ofType("handoff_refused")).toEqual([]);
    h.reply("researcher.search", sup.tool("handoff_to_code", { task_description: "   " }));
    expect(h.ofType("handoff_refused")).toEqual([]);
  });
});

describe("the HandoffManager's state: visited agents and the handoff summary", () => {
  it("visited_agents lists the routed agent, then each handoff's target, in order; the summary one line per handoff", () => {
    const h = supervisorHarness();
    h.start();
    expect(h.data).toMatchObject({ visited_agents: [], handoff_summary: "No handoffs." });
    h.reply("router.route", sup.routed("chat", 0.9));
    expect(h.data.visited_agents).toEqual(["chat"]);
    h.reply("chat.respond", sup.handoff("writing", "Write the report"));
    h.reply("writer.analyze", sup.handoff("research", "Find   sources\nfor it"));
    expect(h.data.visited_agents).toEqual(["chat", "writing", "research"]);
    expect(h.data.handoff_summary).toBe(
      `Handoffs: 2 of ${MAX_HANDOFFS}.\n1. chat → writing: Write the report\n2. writing → research: Find sources for it`,
    );
  });

  it("a refused handoff visits no agent and leaves the summary as it was", () => {
    const h = started("code");
    h.reply("coder.generate", sup.handoff("data", "chart it"));
    const before = h.data.handoff_summary;
    h.reply("analyst.plan", sup.handoff("code", "back to you"));
    expect(h.data.visited_agents).toEqual(["code", "data"]);
    expect(h.data.handoff_summary).toBe(before);
  });

  it("a long task is cut in the summary, which stays within its bound at the cap", () => {
    const h = started("chat");
    const long = "x".repeat(2000);
    h.reply("chat.respond", sup.handoff("writing", long));
    h.reply("writer.analyze", sup.handoff("research", long));
    h.reply("researcher.search", sup.handoff("code", long));
    const lines = h.data.handoff_summary.split("\n");
    expect(lines).toHaveLength(MAX_HANDOFFS + 1);
    for (const l of lines.slice(1)) expect(l.endsWith("…")).toBe(true);
    expect(h.data.visited_agents).toEqual(["chat", "writing", "research", "code"]);
  });
});

describe("the request's metadata in the supervisor's state", () => {
  it("user_id is the session's owner; provider, model, tier and image_attachments are the client's", () => {
    const images = [{ url: "https://example.org/chart.png", mime_type: "image/png" as const }];
    const h = supervisorHarness({
      owner: "alice",
      options: { provider: "openai", model: "gpt-4o-mini", tier: "fast", image_attachments: images },
    });
    expect(h.data).toMatchObject({
      user_id: "alice",
      provider: "openai",
      model: "gpt-4o-mini",
      tier: "fast",
      image_attachments: images,
    });
  });

  it("without them: user_id, provider, model and tier are null, and no images", () => {
    expect(supervisorHarness().data).toMatchObject({
      user_id: null,
      provider: null,
      model: null,
      tier: null,
      image_attachments: [],
    });
  });
});
