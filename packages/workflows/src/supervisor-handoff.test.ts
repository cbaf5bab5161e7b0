import { describe, expect, it } from "vitest";
import { HANDOFF_MATRIX, HandoffInfo, MAX_HANDOFFS, SupervisorAgent, type HandoffArgs } from "@agentmesh/contracts";
import { decideHandoff, handoffTarget, handoffToolName, handoffToolsFor } from "./supervisor-handoff.js";

const AGENTS = SupervisorAgent.options;
const args: HandoffArgs = { task_description: "Plot the totals per month", context: "totals are in the CSV" };
const hop = (source_agent: SupervisorAgent, target_agent: SupervisorAgent): HandoffInfo => ({
  source_agent,
  target_agent,
  task_description: "t",
  context: null,
});

/** The handoff matrix written out cell by cell (row: from, column: to), so the test does not read the table it checks. */
const ALLOWED = new Set([
  "chat>research",
  "chat>code",
  "chat>writing",
  "chat>data",
  "research>code",
  "research>data",
  "writing>research",
  "code>data",
  "data>code",
]);

describe("handoff tools", () => {
  it("names them handoff_to_<target>, one per target the matrix allows, in its order", () => {
    expect(handoffToolsFor("chat")).toEqual([
      "handoff_to_research",
      "handoff_to_code",
      "handoff_to_writing",
      "handoff_to_data",
    ]);
    expect(handoffToolsFor("research")).toEqual(["handoff_to_code", "handoff_to_data"]);
    expect(handoffToolsFor("writing")).toEqual(["handoff_to_research"]);
    expect(handoffToolsFor("code")).toEqual(["handoff_to_data"]);
    expect(handoffToolsFor("data")).toEqual(["handoff_to_code"]);
  });

  it("reads a tool name back to its target, and nothing else", () => {
    for (const a of AGENTS) expect(handoffTarget(handoffToolName(a))).toBe(a);
    for (const name of ["handoff_to_", "handoff_to_sales", "web_search", "handoff_to_chat_x", "xhandoff_to_code"])
      expect(handoffTarget(name), name).toBeNull();
  });
});

describe("deciding a handoff", () => {
  it("allows exactly the matrix's cells, and refuses the other cells with a message naming what is allowed", () => {
    let accepted = 0;
    for (const current of AGENTS) {
      for (const target of AGENTS) {
        const cell = `${current}>${target}`;
        const d = decideHandoff({ current, target, args, history: [] });
        if (ALLOWED.has(cell)) {
          accepted++;
          expect(d, cell).toEqual({
            outcome: "accepted",
            handoff: {
              source_agent: current,
              target_agent: target,
              task_description: args.task_description,
              context: args.context,
            },
          });
          if (d.outcome === "accepted") expect(HandoffInfo.safeParse(d.handoff).success, cell).toBe(true);
        } else {
          expect(d.outcome, cell).toBe("refused");
          if (d.outcome === "refused") {
            expect(d.reason, cell).toBe(current === target ? "self" : "not_in_matrix");
            if (current !== target) expect(d.message, cell).toContain(HANDOFF_MATRIX[current].join(", "));
          }
        }
      }
    }
    expect(accepted).toBe(9);
  });

  it("refuses a handoff to the agent itself", () => {
    for (const a of AGENTS) {
      const d = decideHandoff({ current: a, target: a, args, history: [] });
      expect(d).toMatchObject({ outcome: "refused", reason: "self" });
    }
  });

  it("refuses A→B→A: handing the task back to the agent that just handed it over", () => {
    const d = decideHandoff({
      current: "data",
      target: "code",
      args,
      history: [hop("chat", "code"), hop("code", "data")],
    });
    expect(d).toMatchObject({ outcome: "refused", reason: "ping_pong" });
    if (d.outcome === "refused") expect(d.message).toMatch(/back to the code agent/);
    expect(decideHandoff({ current: "code", target: "data", args, history: [hop("data", "code")] })).toMatchObject({
      outcome: "refused",
      reason: "ping_pong",
    });
  });

  it(`ends the chain once ${MAX_HANDOFFS} handoffs were made, whatever is asked`, () => {
    expect(MAX_HANDOFFS).toBe(3);
    const two = [hop("chat", "research"), hop("research", "code")];
    expect(decideHandoff({ current: "code", target: "data", args, history: two }).outcome).toBe("accepted");
    const three = [...two, hop("code", "data")];
    for (const target of AGENTS) {
      const d = decideHandoff({ current: "data", target, args, history: three });
      expect(d.outcome, target).toBe("cap_reached");
      if (d.outcome === "cap_reached") expect(d.message).toMatch(/data agent's answer is the final answer/);
    }
  });

  it("records a trimmed task and a blank context as null", () => {
    const d = decideHandoff({
      current: "chat",
      target: "research",
      args: { task_description: "  Find sources \n", context: "  " },
      history: [],
    });
    expect(d).toEqual({
      outcome: "accepted",
      handoff: { source_agent: "chat", target_agent: "research", task_description: "Find sources", context: null },
    });
    const e = decideHandoff({
      current: "chat",
      target: "research",
      args: { task_description: "Find sources" },
      history: [],
    });
    expect(e.outcome === "accepted" && e.handoff.context).toBeNull();
  });
});
