import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ANSWER_OPS, STREAMING_CONFIG, SupervisorAgent, isTerminal, type StreamingNode } from "@agentmesh/contracts";
import { failure, resultFor } from "./testing.js";
import { NODE_OPS } from "./supervisor-tools.js";
import {
  codeOutcome,
  outcome,
  source,
  started,
  sup,
  supervisorHarness,
  type SupervisorHarness,
} from "./supervisor-testkit.js";

const TOOL_CHOICES = [
  "web_search",
  "corpus_search",
  "run_python",
  "teleport",
  ...SupervisorAgent.options.map((a) => `handoff_to_${a}`),
];

/** A valid output of the awaited op, chosen by `pick`: every kind of move each op can make. */
function outputFor(op: string, pick: number, input: Record<string, unknown>): unknown {
  const toolMove = () => {
    const tool = TOOL_CHOICES[pick % TOOL_CHOICES.length] ?? "web_search";
    return tool.startsWith("handoff_to_")
      ? sup.tool(tool, pick % 5 === 0 ? { task_description: " " } : { task_description: "go on" })
      : sup.tool(tool);
  };
  const agentMove = () => (pick % 3 === 0 ? sup.answer(`answer ${pick}`) : toolMove());
  switch (op) {
    case "router.route":
      return sup.routed(SupervisorAgent.options[pick % 5] ?? "chat", (pick % 10) / 10);
    case "chat.respond":
    case "researcher.search":
      return agentMove();
    case "coder.generate":
      return pick % 3 === 0 ? sup.code(`print(${pick})`) : agentMove();
    case "writer.analyze":
      return pick % 2 === 0 ? sup.writingBrief() : toolMove();
    case "analyst.plan":
      return pick % 2 === 0 ? sup.dataPlan(pick % 4 === 0) : toolMove();
    case "analyst.generate":
      return sup.dataCode("print(1)", pick % 2 === 0 ? { mark: "line" } : null);
    case "executor.call": {
      const tool = String(input.tool);
      if (tool === "run_python" || tool === "run_js")
        return codeOutcome(
          pick % 3 === 0 ? 0 : 1,
          `[{"x": ${pick}}]`,
          pick % 3 === 0 ? null : "Error",
          tool === "run_js" ? "javascript" : "python",
        );
      return outcome(tool, `content ${pick}`, { citations: [source(pick % 7)], ok: pick % 4 !== 0 });
    }
    case "researcher.analyze":
      return sup.analysis();
    case "researcher.synthesize":
      return sup.synthesis();
    case "researcher.finalize":
      return sup.report();
    case "writer.outline":
      return sup.outline();
    case "writer.write":
      return sup.draft();
    case "writer.finalize":
      return sup.final();
    case "analyst.summarize":
      return sup.summary();
    default:
      throw new Error(`no output for ${op}`);
  }
}

type Move = { readonly pick: number; readonly fail: boolean; readonly redeliver: boolean };
/** A session of at most this many tasks ends whatever its agents do (4 agents, each bounded by rounds, refusals and its nodes). */
const TASK_BOUND = 150;

function drive(h: SupervisorHarness, moves: readonly Move[]): void {
  for (let n = 0; !isTerminal(h.state.meta.status); n++) {
    if (n >= TASK_BOUND) throw new Error(`still running after ${TASK_BOUND} tasks: ${h.ops().join(", ")}`);
    const move = moves[n % moves.length] ?? { pick: n, fail: false, redeliver: false };
    const task = h.awaited();
    const op = `${task.role}.${task.op}`;
    const input = resultFor(task, outputFor(op, move.pick + n, h.input()));
    if (move.fail) h.fail(op, failure(move.pick % 2 ? "needs_model" : "deadline_exceeded", move.pick % 2 === 0));
    else h.send(input);
    if (move.redeliver) {
      const before = h.state;
      expect(h.send(input)).toMatchObject({ kind: "drop" });
      expect(h.state).toBe(before);
    }
  }
}

describe("supervisor under any sequence of agent moves (property)", () => {
  const moves = fc.array(
    fc.record({ pick: fc.nat(1000), fail: fc.nat(9).map((n) => n === 0), redeliver: fc.boolean() }),
    { minLength: 1, maxLength: 40 },
  );
  it(`ends within ${TASK_BOUND} tasks, every state and task valid, a redelivered result never applied twice`, () => {
    fc.assert(
      fc.property(fc.option(fc.constantFrom(...SupervisorAgent.options), { nil: undefined }), moves, (mode, script) => {
        const h = supervisorHarness({ options: mode ? { mode } : {} });
        h.start();
        drive(h, script);
        expect(h.data.node).toBe("done");
        expect(h.data.response).not.toBeNull();
        expect(h.data.handoff_history.length).toBeLessThanOrEqual(3);
      }),
      { numRuns: 300 },
    );
  });
});

describe("supervisor streaming (STREAMING_CONFIG)", () => {
  /** One session of each agent, run to its answer. */
  const sessions = (): SupervisorHarness[] => {
    const chat = started("chat");
    chat.reply("chat.respond", sup.tool("web_search"));
    chat.reply("executor.call", outcome("web_search", "x"));
    chat.reply("chat.respond", sup.answer("Chat answer."));
    const research = started("research", { options: { depth: "quick" } });
    research.reply("researcher.search", sup.tool("web_search"));
    research.reply("executor.call", outcome("web_search", "x", { citations: [source(1)] }));
    research.reply("researcher.search", sup.answer("done"));
    research.reply("researcher.analyze", sup.analysis());
    research.reply("researcher.synthesize", sup.synthesis());
    research.reply("researcher.finalize", sup.report("Research answer [1]."));
    const writing = started("writing");
    writing.reply("writer.analyze", sup.writingBrief());
    writing.reply("writer.outline", sup.outline());
    writing.reply("writer.write", sup.draft());
    writing.reply("writer.finalize", sup.final("Writing answer."));
    const data = started("data", { query: "a,b\n1,2\n3,4" });
    data.reply("analyst.plan", sup.dataPlan());
    data.reply("analyst.generate", sup.dataCode());
    data.reply("executor.call", codeOutcome(0, "ok"));
    data.reply("analyst.summarize", sup.summary("Data answer."));
    const code = supervisorHarness();
    code.start();
    code.reply("router.route", sup.routed("code"));
    code.reply("coder.generate", sup.code("print(2)"));
    code.reply("executor.call", codeOutcome(0, "2"));
    return [chat, research, writing, data, code];
  };

  it("every dispatched task runs its node's op per NODE_OPS, and the answering ops are nodes that stream", () => {
    for (const h of sessions()) {
      expect(h.state.meta.status).toBe("completed");
      const agent = h.data.active_agent ?? "chat";
      for (const t of h.tasks()) {
        const node = h.nodes.get(t.task_id) as StreamingNode;
        const table = node === "router" ? NODE_OPS.router : NODE_OPS[agent];
        expect(table[node], `${agent} ${node}`).toEqual({ role: t.role, op: t.op });
        if (ANSWER_OPS.has(`${t.role}.${t.op}`)) expect(STREAMING_CONFIG[node], `${t.role}.${t.op} streams`).toBe(true);
      }
    }
  });

  it("an answering op's text is the final answer verbatim; the code agent's composed answer comes from no answering op", () => {
    const [chat, research, writing, data, code] = sessions();
    const answers = [chat, research, writing, data].map((h) => h?.ofType("complete")[0]?.final_answer);
    expect(answers).toEqual(["Chat answer.", "Research answer [1].", "Writing answer.", "Data answer."]);
    for (const h of [chat, research, writing, data])
      expect(
        ANSWER_OPS.has(
          h
            ?.ops()
            .filter((o) => o !== "executor.call")
            .at(-1) ?? "",
        ),
      ).toBe(true);
    expect(code?.ops().some((o) => ANSWER_OPS.has(o))).toBe(false);
  });
});
