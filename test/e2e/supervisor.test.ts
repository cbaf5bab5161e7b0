import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from "vitest";
import type { SessionEvent, SessionState, SupervisorAgent, SupervisorData } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, comparable, logShape, type ServiceName } from "./harness.js";

// The supervisor workflow end to end: a coordinator and each agent's role as its own
// OS process over real NATS and Redis, the model scripted over HTTP (the real OpenAI adapter in
// every agent), every tool call and code run an executor task in the real sandbox. Only the roles
// the supervisor uses are started.

const SUPERVISOR_ROLES = [
  "router",
  "chat",
  "researcher",
  "coder",
  "writer",
  "analyst",
  "executor",
] as const satisfies readonly ServiceName[];

function supervisor(state: SessionState): SupervisorData {
  if (state.data.workflow !== "supervisor")
    throw new Error(`expected a supervisor session, got ${state.data.workflow}`);
  return state.data;
}

const ofType = <T extends SessionEvent["type"]>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
const finalAnswer = (events: readonly SessionEvent[]) => ofType(events, "complete")[0]?.final_answer;

// The model's replies, as each role's prompt asks for them (flat drafts where strict structured
// output needs them; free text for the streamed nodes).
const route = (agent: SupervisorAgent, confidence = 0.9): HttpScriptEntry => ({
  role: "router",
  op: "route",
  output: { agent, confidence, reason: `a ${agent} question` },
});
const chatSays = (text: string): HttpScriptEntry => ({ role: "chat", op: "respond", content: text });
const chatCalls = (tool: string, args: Record<string, unknown>): HttpScriptEntry => ({
  role: "chat",
  op: "respond",
  content: JSON.stringify({ tool, arguments: args }),
});
const searchCalls = (tool: string, args: Record<string, unknown>): HttpScriptEntry => ({
  role: "researcher",
  op: "search",
  output: { action: "tool", text: "", tool, arguments_json: JSON.stringify(args) },
});
const searchEnds = (text: string): HttpScriptEntry => ({
  role: "researcher",
  op: "search",
  output: { action: "answer", text, tool: "", arguments_json: "" },
});
const coderDraft = (d: Record<string, unknown>) => ({
  action: "answer",
  language: null,
  code: "",
  explanation: "",
  text: "",
  tool: "",
  arguments_json: "",
  ...d,
});
const coderRuns = (code: string, explanation = "Runs it."): HttpScriptEntry => ({
  role: "coder",
  op: "generate",
  output: coderDraft({ action: "code", language: "python", code, explanation }),
});
const coderHandsOff = (tool: string, args: Record<string, unknown>): HttpScriptEntry => ({
  role: "coder",
  op: "generate",
  output: coderDraft({ action: "tool", tool, arguments_json: JSON.stringify(args) }),
});
const planDraft = (d: Record<string, unknown>) => ({
  action: "plan",
  analysis_plan: "",
  chart: false,
  tool: "",
  arguments_json: "",
  ...d,
});

const RESEARCH_REPORT = "Sessions are stepped by the coordinator from each session's inbox [1].";
const WRITTEN = "Durable steps,\nno session lost to a crash —\nthe inbox holds on.";
const CSV_QUERY = "Total the sales per region and chart them:\n```csv\nregion,sales\nnorth,10\nsouth,20\nnorth,5\n```";
const TOTALS =
  "import csv, io, json\nrows = list(csv.DictReader(io.StringIO(DATA_TEXT)))\ntotals = {}\nfor r in rows:\n    totals[r['region']] = totals.get(r['region'], 0) + int(r['sales'])\nprint('totals:', totals)\nprint(json.dumps([{'region': k, 'sales': v} for k, v in sorted(totals.items())]))";
const BAR = {
  mark: "bar",
  encoding: { x: { field: "region", type: "nominal" }, y: { field: "sales", type: "quantitative" } },
};

/** Every session's model replies, in the order the sessions run (each (role, op) is its own queue). */
const SCRIPT: HttpScriptEntry[] = [
  // one session per specialist
  route("chat"),
  chatSays("Hello! I can research, write, run code and analyse data for you."),
  route("research", 0.42),
  searchCalls("corpus_search", { query: "coordinator session inbox", limit: 3 }),
  searchEnds("The architecture notes describe the coordinator and the inbox."),
  {
    role: "researcher",
    op: "analyze",
    output: { analysis: "The notes agree: one coordinator steps each session from its inbox." },
  },
  {
    role: "researcher",
    op: "synthesize",
    content: "The coordinator consumes the session inbox and steps the workflow.",
  },
  { role: "researcher", op: "finalize", content: RESEARCH_REPORT },
  route("code", 0.95),
  coderRuns("print(6 * 7)", "Prints six times seven."),
  route("writing"),
  {
    role: "writer",
    op: "analyze",
    output: {
      action: "brief",
      writing_type: "haiku",
      tone: "calm",
      audience: "operators",
      key_points: ["durability"],
      tool: "",
      arguments_json: "",
    },
  },
  { role: "writer", op: "outline", content: "1. durable steps\n2. crashes\n3. the inbox" },
  { role: "writer", op: "write", content: "Durable steps, no session lost, the inbox holds." },
  { role: "writer", op: "finalize", content: WRITTEN },
  route("data"),
  {
    role: "analyst",
    op: "plan",
    output: planDraft({ analysis_plan: "Sum sales per region; chart the totals.", chart: true }),
  },
  { role: "analyst", op: "generate", output: { code: TOTALS, chart_json: JSON.stringify(BAR) } },
  { role: "analyst", op: "summarize", content: "North sold 15 and south 20." },
  // chat → research → code
  route("chat"),
  chatCalls("handoff_to_research", {
    task_description: "Find how many workers the sample runs",
    context: "the user wants a number",
  }),
  searchCalls("handoff_to_code", { task_description: "Compute 2 ** 10", context: "research found the formula" }),
  coderRuns("print(2 ** 10)"),
  // code → data → code is refused; the data agent goes on
  coderHandsOff("handoff_to_data", { task_description: "Summarise the numbers 1, 2 and 3" }),
  {
    role: "analyst",
    op: "plan",
    output: planDraft({
      action: "tool",
      tool: "handoff_to_code",
      arguments_json: JSON.stringify({ task_description: "you do it" }),
    }),
  },
  { role: "analyst", op: "plan", output: planDraft({ analysis_plan: "Average the three numbers." }) },
  {
    role: "analyst",
    op: "generate",
    output: { code: "import statistics\nprint(statistics.mean([1, 2, 3]))", chart_json: "" },
  },
  { role: "analyst", op: "summarize", content: "The mean of 1, 2 and 3 is 2." },
  // the code agent fixes its code on the second iteration
  coderRuns("print(undefined_name)"),
  coderRuns("print('fixed')"),
];

describe("supervisor with a scripted model: each agent its own process", () => {
  let cluster: Cluster;
  let llm: ScriptedServer;

  beforeAll(async () => {
    llm = await startScriptedOpenAIServer({ script: SCRIPT, host: "127.0.0.1" });
    cluster = new Cluster({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      prefix: uniquePrefix("sup"),
      llmBaseUrl: llm.url,
    });
    await cluster.open();
    cluster.start("coordinator");
    for (const role of SUPERVISOR_ROLES) cluster.start(role);
    await cluster.waitReady({ coordinator: 1, ...Object.fromEntries(SUPERVISOR_ROLES.map((r) => [r, 1])) }, 150_000);
  }, 200_000);

  afterAll(async () => {
    await cluster?.close();
    await llm?.close();
  });

  async function ask(sid: string, query: string, options: Record<string, unknown> = {}) {
    await cluster.submit(query, sid, { workflow: "supervisor", options });
    const { state, log, events } = await cluster.waitDone(sid, 90_000);
    assertAppliedOnce(log, state.meta.version);
    return { state, data: supervisor(state), events, log };
  }

  test("one session per specialist: chat, research, code, writing and data", async () => {
    const chat = await ask("supchat0000000000001", "Hi there, what can you do?");
    expect(chat.state.meta.status).toBe("completed");
    expect(ofType(chat.events, "routing")).toMatchObject([
      { agent: "chat", confidence: 0.9, is_low_confidence: false },
    ]);
    expect(finalAnswer(chat.events)).toBe("Hello! I can research, write, run code and analyse data for you.");

    const research = await ask("supresearch000000001", "How does the coordinator use the session inbox?", {
      depth: "quick",
      scenario: "technical",
    });
    expect(research.state.meta.status).toBe("completed");
    // low confidence is flagged, not re-routed
    expect(ofType(research.events, "routing")).toMatchObject([
      { agent: "research", confidence: 0.42, is_low_confidence: true },
    ]);
    expect(ofType(research.events, "config")).toMatchObject([
      { agent: "research", settings: { depth: "quick", scenario: "technical" } },
    ]);
    expect(ofType(research.events, "tool_call").map((e) => e.tool)).toEqual(["corpus_search"]);
    expect(ofType(research.events, "source").length).toBeGreaterThan(0);
    expect(finalAnswer(research.events)).toBe(RESEARCH_REPORT);

    const code = await ask("supcode0000000000001", "Compute six times seven in Python");
    expect(code.state.meta.status).toBe("completed");
    expect(ofType(code.events, "code_result")).toMatchObject([{ language: "python", exit_code: 0, stdout: "42\n" }]);
    const codeCall = ofType(code.events, "tool_call")[0];
    expect(codeCall).toMatchObject({ tool: "run_python" });
    expect(ofType(code.events, "code_result")[0]?.id).toBe(codeCall?.id);
    expect(finalAnswer(code.events)).toContain("42");

    const writing = await ask("supwriting0000000001", "Write a haiku about durable sessions");
    expect(writing.state.meta.status).toBe("completed");
    expect(finalAnswer(writing.events)).toBe(WRITTEN);

    const data = await ask("supdata0000000000001", CSV_QUERY);
    expect(data.state.meta.status).toBe("completed");
    expect(ofType(data.events, "code_result")).toMatchObject([{ exit_code: 0 }]);
    const [chart] = ofType(data.events, "visualization");
    expect(chart?.spec).toMatchObject({
      mark: "bar",
      data: {
        values: [
          { region: "north", sales: 15 },
          { region: "south", sales: 20 },
        ],
      },
    });
    expect(finalAnswer(data.events)).toBe("North sold 15 and south 20.");
  });

  test("a chat → research → code handoff chain goes straight to each target, never back to the router", async () => {
    const { state, data, events } = await ask(
      "supchain000000000001",
      "How many workers does the sample run, as a power of two?",
    );
    expect(state.meta.status).toBe("completed");
    expect(ofType(events, "routing")).toHaveLength(1);
    expect(ofType(events, "handoff").map((h) => [h.source_agent, h.target_agent])).toEqual([
      ["chat", "research"],
      ["research", "code"],
    ]);
    expect(data.handoff_history).toHaveLength(2);
    expect(data.handoff_history[1]).toMatchObject({
      source_agent: "research",
      target_agent: "code",
      task_description: "Compute 2 ** 10",
      context: "research found the formula",
    });
    expect(ofType(events, "code_result")).toMatchObject([{ exit_code: 0, stdout: "1024\n" }]);
    expect(data.shared_memory).toMatchObject({ generated_code: "print(2 ** 10)", code_language: "python" });
    // the code agent was briefed with the task research delegated and its context
    const gen = llm.calls.find((c) => c.role === "coder" && c.taskId.startsWith("supchain"));
    expect(JSON.stringify(gen?.body)).toContain("research found the formula");
    expect(llm.calls.filter((c) => c.role === "router" && c.taskId.startsWith("supchain"))).toHaveLength(1);
  });

  test("code → data → code is refused: the data agent is told and finishes the task itself", async () => {
    const { state, data, events } = await ask("suppingpong000000001", "Run the numbers 1, 2 and 3", { mode: "code" });
    expect(state.meta.status).toBe("completed");
    expect(ofType(events, "routing")).toMatchObject([{ agent: "code", confidence: 1 }]);
    expect(ofType(events, "handoff").map((h) => [h.source_agent, h.target_agent])).toEqual([["code", "data"]]);
    expect(data.handoff_history).toHaveLength(1);
    expect(finalAnswer(events)).toBe("The mean of 1, 2 and 3 is 2.");
    // the refusal reached the data agent's second plan call
    const plans = llm.calls.filter(
      (c) => c.role === "analyst" && c.op === "plan" && c.taskId.startsWith("suppingpong"),
    );
    expect(plans).toHaveLength(2);
    expect(JSON.stringify(plans[1]?.body)).toContain("cannot hand the task back");
  });

  test("the code agent fixes its code on the second iteration after a sandbox error", async () => {
    const { state, events } = await ask("supcodefix0000000001", "Print the word fixed", { mode: "code" });
    expect(state.meta.status).toBe("completed");
    const runs = ofType(events, "code_result");
    expect(runs.map((r) => r.exit_code)).toEqual([1, 0]);
    expect(runs[0]?.stderr + (runs[0]?.stdout ?? "")).toMatch(/NameError/);
    expect(runs[1]?.stdout).toBe("fixed\n");
    // the second generation saw the first run's error
    const gens = llm.calls.filter((c) => c.role === "coder" && c.taskId.startsWith("supcodefix"));
    expect(gens).toHaveLength(2);
    expect(JSON.stringify(gens[1]?.body)).toContain("NameError");
  });
});

describe("supervisor crashes: the coordinator and the code agent killed mid-session", () => {
  const CRASH_ROLES = ["coder", "executor"] as const satisfies readonly ServiceName[];
  const QUERY = "Print the first five squares";
  const CODE = "print([i * i for i in range(1, 6)])";
  const open: Array<{ cluster: Cluster; llm: ScriptedServer }> = [];
  let baseline: { data: unknown; log: string[] };

  async function newCluster(sessions: number) {
    const script = Array.from({ length: sessions }, () => coderRuns(CODE, "Squares one to five.")).flat();
    const llm = await startScriptedOpenAIServer({ script, host: "127.0.0.1" });
    const cluster = new Cluster({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      prefix: uniquePrefix("supcrash"),
      llmBaseUrl: llm.url,
    });
    await cluster.open();
    open.push({ cluster, llm });
    return { cluster, llm };
  }

  afterEach(async () => {
    for (const { cluster, llm } of open.splice(0)) {
      await cluster.close();
      await llm.close();
    }
  });

  beforeAll(async () => {
    const { cluster } = await newCluster(1);
    cluster.start("coordinator");
    for (const r of CRASH_ROLES) cluster.start(r);
    await cluster.waitReady({ coordinator: 1, coder: 1, executor: 1 }, 150_000);
    await cluster.submit(QUERY, "supcrashbase00000001", { workflow: "supervisor", options: { mode: "code" } });
    const { state, log } = await cluster.waitDone("supcrashbase00000001", 90_000);
    expect(state.meta.status).toBe("completed");
    baseline = { data: comparable(state), log: logShape(log, "supcrashbase00000001") };
    for (const { cluster: c, llm } of open.splice(0)) {
      await c.close();
      await llm.close();
    }
  }, 200_000);

  test.each([
    { service: "coordinator" as const, point: "after-cas" },
    { service: "coder" as const, point: "after-model" },
  ])(
    "$service killed at $point: the same final state as undisturbed",
    async ({ service, point }) => {
      const { cluster, llm } = await newCluster(3);
      const victim = cluster.start(service, { AGENTMESH_CRASH_AT: point });
      cluster.start("coordinator"); // a healthy coordinator beside an armed one, or the only one
      for (const r of CRASH_ROLES) if (r !== service) cluster.start(r);
      await cluster.waitReady({ coordinator: service === "coordinator" ? 2 : 1, coder: 1, executor: 1 }, 150_000);

      const sessions: string[] = [];
      let death: { code: number | null; signal: NodeJS.Signals | null } | null = null;
      for (let i = 0; i < 3 && !death; i++) {
        const sid = `supcrash${service}${i}`.padEnd(20, "0");
        sessions.push(sid);
        await cluster.submit(QUERY, sid, { workflow: "supervisor", options: { mode: "code" } });
        death = await Promise.race([victim.exited, cluster.waitDone(sid, 90_000).then(() => null)]);
        if (!death) continue;
        expect(death.signal).toBe("SIGKILL");
        expect(victim.output()).toContain(`dying at ${point}`);
        cluster.start(service);
      }
      expect(death, `${service} never reached ${point} in ${sessions.length} sessions`).not.toBeNull();
      for (const sid of sessions) {
        const { state, log } = await cluster.waitDone(sid, 90_000);
        expect(state.meta.status).toBe("completed");
        assertAppliedOnce(log, state.meta.version);
        expect(comparable(state)).toEqual(baseline.data);
        expect(logShape(log, sid)).toEqual(baseline.log);
      }
      if (service === "coder") {
        // the code agent's model call ran before the crash and again after it, for the same task
        const calls = llm.calls.filter((c) => c.role === "coder" && c.taskId.startsWith(sessions.at(-1)!));
        expect(calls.length).toBeGreaterThanOrEqual(2);
        expect(new Set(calls.map((c) => c.taskId)).size).toBe(1);
      }
    },
    300_000,
  );
});
