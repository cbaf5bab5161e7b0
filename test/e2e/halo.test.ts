import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { Capability, HaloData, SessionEvent, SessionState } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { startHttpTestServer, stdioTestServer, type HttpTestServer } from "@agentmesh/tools/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, type Proc, type ServiceName } from "./harness.js";

// The halo workflow end to end: a coordinator and each specialist role as its own OS process over
// real NATS and Redis. One cluster answers offline (the offline engine) with two real MCP servers
// built with the SDK, one over stdio (started by the mcp role) and one over streamable HTTP (its
// own process); the other runs against a scripted model whose replies are held back, to show the
// specialists run in parallel and a specialist killed mid-call costs no more than the join deadline.

const HALO_ROLES = ["planner", "graph", "retriever", "mcp", "chat"] as const satisfies readonly ServiceName[];
const JOIN_MS = 4000;

function halo(state: SessionState): HaloData {
  if (state.data.workflow !== "halo") throw new Error(`expected a halo session, got ${state.data.workflow}`);
  return state.data;
}

/** A cluster with one coordinator and each halo role, every one its own process. */
async function haloCluster(
  name: string,
  opts: { llmBaseUrl?: string; env?: Record<string, string> },
): Promise<{ cluster: Cluster; procs: Map<string, Proc> }> {
  const cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix(name),
    ...(opts.llmBaseUrl ? { llmBaseUrl: opts.llmBaseUrl } : {}),
    extraEnv: { AGENTMESH_HALO_JOIN_DEADLINE_MS: String(JOIN_MS), ...opts.env },
  });
  await cluster.open();
  const procs = new Map<string, Proc>();
  procs.set("coordinator", cluster.start("coordinator"));
  await cluster.waitReady({ coordinator: 1 }, 90_000);
  for (const role of HALO_ROLES) procs.set(role, cluster.start(role));
  await cluster.waitReady(Object.fromEntries(HALO_ROLES.map((r) => [r, 1])), 120_000);
  return { cluster, procs };
}

async function ask(cluster: Cluster, sid: string, query: string, capabilities?: Capability[]) {
  const submittedAt = Date.now();
  await cluster.submit(query, sid, { workflow: "halo", ...(capabilities ? { options: { capabilities } } : {}) });
  const { state, log, events } = await cluster.waitDone(sid, 60_000);
  assertAppliedOnce(log, state.meta.version);
  return { state, data: halo(state), events, wallMs: Date.now() - submittedAt };
}

const sources = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === "source" ? [e.url ?? e.path] : []));

describe("halo offline: graph, corpus and two real MCP servers (stdio and HTTP), each specialist its own process", () => {
  let cluster: Cluster;
  let http: HttpTestServer;

  beforeAll(async () => {
    http = await startHttpTestServer();
    const stdio = stdioTestServer("biomcp");
    const servers = {
      biomcp: {
        command: stdio.transport === "stdio" ? stdio.command : "",
        args: stdio.transport === "stdio" ? stdio.args : [],
        allow: { mcp: "*" },
      },
      llama_mcp: { url: http.url, allow: { mcp: "*" } },
    };
    ({ cluster } = await haloCluster("halo", { env: { AGENTMESH_MCP_SERVERS: JSON.stringify(servers) } }));
  }, 240_000);

  afterAll(async () => {
    await cluster?.close();
    await http?.kill();
  });

  test("the offline planner picks graph and rag by cue words; the answer merges both specialists' cited sources", async () => {
    const { state, data, events } = await ask(
      cluster,
      "halooffplan000000001",
      "How is the coordinator related to the session inbox according to the documents?",
    );
    expect(state.meta.status).toBe("completed");
    expect(data).toMatchObject({ plan_source: "model", capabilities: ["graph", "rag"] });
    expect(data.outputs.map((o) => [o.capability, o.status])).toEqual(
      expect.arrayContaining([
        ["graph", "answered"],
        ["rag", "answered"],
      ]),
    );
    expect(data.response_str).toMatch(/^\[HALO\] /);
    expect(data.response_str).toContain("\n\nAdditional insights:\n- ");
    // the graph's triples cite their file:line sources, the corpus its passages' files
    expect(data.citations.some((c) => /\.md:\d+$/.test(c.path ?? ""))).toBe(true);
    expect(data.citations.some((c) => c.path !== null && !/:\d+$/.test(c.path))).toBe(true);
    expect(sources(events)).toEqual(data.citations.map((c) => c.url ?? c.path));
    expect(data.judge_response?.split("\n")).toHaveLength(2);
    const complete = events.find((e) => e.type === "complete");
    expect(complete?.type === "complete" ? complete.final_answer : "").toBe(data.response_str);
  });

  test("graph, rag and both MCP servers at once: the servers' shared links are one source, numbered inline per fragment", async () => {
    const plan: Capability[] = ["graph", "rag", "biomcp", "llama_mcp"];
    const { data } = await ask(
      cluster,
      "halooffmcp0000000001",
      "Search published articles: how does the coordinator drive each session?",
      plan,
    );
    expect(data.plan_source).toBe("override");
    expect(Object.fromEntries(data.outputs.map((o) => [o.capability, o.status]))).toEqual({
      graph: "answered",
      rag: "answered",
      biomcp: "answered",
      llama_mcp: "answered",
    });
    const mcpOutputs = data.outputs.filter((o) => o.capability === "biomcp" || o.capability === "llama_mcp");
    for (const o of mcpOutputs)
      expect(o.citations.map((c) => c.url ?? c.path)).toContain("https://articles.example/a/1");
    // the same article from two servers is listed once
    const keys = data.citations.map((c) => c.url ?? c.path);
    expect(keys.filter((k) => k === "https://articles.example/a/1")).toHaveLength(1);
    expect(new Set(keys).size).toBe(keys.length);
    // every inline number points into the list, and both MCP fragments carry the shared article's number
    const shared = keys.indexOf("https://articles.example/a/1") + 1;
    const body = (data.response_str ?? "").split("\n\nSources:\n")[0] ?? "";
    const markers = [...body.matchAll(/\[(\d+(?:,\d+)*)\]/g)].map((m) => (m[1] ?? "").split(",").map(Number));
    for (const n of markers.flat()) expect(n >= 1 && n <= keys.length).toBe(true);
    expect(markers.filter((m) => m.includes(shared)).length).toBeGreaterThanOrEqual(2);
    expect(data.response_str).toContain(`\n\nSources:\n1) ${keys[0]}`);
  });
});

describe("halo with a model: parallel specialists and a specialist killed mid-call", () => {
  let cluster: Cluster;
  let procs: Map<string, Proc>;
  let llm: ScriptedServer;
  const RUNS = 5;
  const QUESTION = "How does the coordinator drive each session?";
  const slow = (role: string, op: string, output: unknown): HttpScriptEntry => ({ role, op, output, delayMs: 1000 });

  beforeAll(async () => {
    const timed = Array.from({ length: RUNS }, () => [
      slow("graph", "answer", { answer: "The coordinator drives each session and consumes the session inbox." }),
      slow("retriever", "answer", {
        answer: "The architecture notes say a coordinator steps each session from its inbox.",
      }),
      slow("chat", "chitchat", { response_str: "Happy to help with questions about agentmesh." }),
    ]).flat();
    // the kill test: the graph answers at once, chat's model reply is held back far past the join
    const killed: HttpScriptEntry[] = [
      { role: "graph", op: "answer", output: { answer: "The coordinator drives each session." } },
      { role: "chat", op: "chitchat", output: { response_str: "never delivered" }, delayMs: 60_000 },
    ];
    llm = await startScriptedOpenAIServer({ script: [...timed, ...killed] });
    ({ cluster, procs } = await haloCluster("halom", { llmBaseUrl: llm.url }));
  }, 240_000);

  afterAll(async () => {
    await cluster?.close();
    await llm?.close();
  });

  test(`three specialists each held 1 s by the model: the session takes about the slowest, not the sum (p50 of ${RUNS} runs < 1.5 s)`, async () => {
    const walls: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { data, wallMs } = await ask(cluster, `halopar${i}0000000000001`, QUESTION, ["graph", "rag", "chitchat"]);
      expect(data.outputs.map((o) => o.status)).toEqual(["answered", "answered", "answered"]);
      // each specialist really waited for its held-back model reply
      for (const o of data.outputs) expect(o.latency_ms).toBeGreaterThanOrEqual(1000);
      walls.push(wallMs);
    }
    const sorted = [...walls].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(RUNS / 2)] as number;
    console.log(`halo parallel wall time over ${RUNS} runs (ms): ${walls.join(", ")}; p50 ${p50}`);
    expect(p50).toBeLessThan(1500);
  });

  test("a specialist killed mid-call: the session completes within the join deadline plus 2 s, with its availability message", async () => {
    const sid = "halokill000000000001";
    const chat = procs.get("chat") as Proc;
    const submittedAt = Date.now();
    await cluster.submit(QUESTION, sid, { workflow: "halo", options: { capabilities: ["graph", "chitchat"] } });
    // kill the chat process once its model call is under way
    const end = Date.now() + 15_000;
    while (llm.calls.filter((c) => c.role === "chat").length < RUNS + 1) {
      if (Date.now() > end) throw new Error("the chat specialist never called the model");
      await new Promise((r) => setTimeout(r, 50));
    }
    chat.child.kill("SIGKILL");
    await chat.exited;
    const { state, log } = await cluster.waitDone(sid, 30_000);
    const wall = Date.now() - submittedAt;
    assertAppliedOnce(log, state.meta.version);
    const data = halo(state);
    expect(state.meta.status).toBe("completed");
    expect(data.outputs.find((o) => o.capability === "chitchat")).toMatchObject({
      status: "unavailable",
      error_code: "deadline_exceeded",
    });
    const numbers = data.citations.map((_, i) => i + 1).join(",");
    expect(data.citations.length).toBeGreaterThan(0);
    expect(data.response_str).toBe(
      `[HALO] The coordinator drives each session [${numbers}].\n\nAdditional insights:\n- The chitchat specialist is unavailable right now.\n\nSources:\n${data.citations.map((c, i) => `${i + 1}) ${c.url ?? c.path ?? ""}`).join("\n")}`,
    );
    console.log(`halo with a killed specialist: completed in ${wall} ms (join deadline ${JOIN_MS} ms)`);
    expect(wall).toBeLessThan(JOIN_MS + 2000);
  });
});
