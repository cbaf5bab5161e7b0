import { describe, expect, test } from "vitest";
import { AgentmeshError } from "@agentmesh/contracts";
import { loadCoordinatorConfig } from "./config.js";

describe("coordinator config", () => {
  test("every budget has a server ceiling, by default and from the environment", () => {
    expect(loadCoordinatorConfig({}).defaults.ceilings).toEqual({
      max_steps: 500,
      max_tokens: 2_000_000,
      max_cost_usd: 10,
      max_wall_ms: 7_200_000,
    });
    const cfg = loadCoordinatorConfig({
      AGENTMESH_MAX_STEPS_CEILING: "40",
      AGENTMESH_MAX_TOKENS_CEILING: "5000",
      AGENTMESH_MAX_COST_USD_CEILING: "0.5",
      AGENTMESH_MAX_WALL_MS_CEILING: "60000",
      AGENTMESH_MAX_STEPS: "20",
    });
    expect(cfg.defaults.ceilings).toEqual({ max_steps: 40, max_tokens: 5000, max_cost_usd: 0.5, max_wall_ms: 60_000 });
    expect(cfg.defaults.budgets.max_steps).toBe(20);
  });

  test("a thread keeps its latest 20 long-term references for 7 days by default; both are configurable, at most 20", () => {
    expect(loadCoordinatorConfig({}).longTermRefs).toEqual({ max: 20, ttlMs: 604_800_000 });
    expect(
      loadCoordinatorConfig({ AGENTMESH_LONG_TERM_REFS_MAX: "5", AGENTMESH_LONG_TERM_REFS_TTL_MS: "60000" })
        .longTermRefs,
    ).toEqual({ max: 5, ttlMs: 60_000 });
    expect(() => loadCoordinatorConfig({ AGENTMESH_LONG_TERM_REFS_MAX: "21" })).toThrow(/AGENTMESH_LONG_TERM_REFS_MAX/);
    expect(() => loadCoordinatorConfig({ AGENTMESH_LONG_TERM_REFS_TTL_MS: "10" })).toThrow(
      /AGENTMESH_LONG_TERM_REFS_TTL_MS/,
    );
  });

  test("a default above its ceiling is a configuration error naming both", () => {
    const load = () =>
      loadCoordinatorConfig({
        AGENTMESH_MAX_STEPS: "100",
        AGENTMESH_MAX_STEPS_CEILING: "50",
        AGENTMESH_MAX_COST_USD: "3",
        AGENTMESH_MAX_COST_USD_CEILING: "1",
      });
    expect(load).toThrow(AgentmeshError);
    expect(load).toThrow(/max_steps 100 is above its ceiling 50[\s\S]*max_cost_usd 3 is above its ceiling 1/);
  });

  test("halo serves graph, rag and chitchat by default, web with a search key, and each MCP capability a server is named after", () => {
    expect(loadCoordinatorConfig({}).defaults.halo).toEqual({
      available_capabilities: ["graph", "rag", "chitchat"],
      join_deadline_ms: 30_000,
      domain_hints: null,
    });
    const cfg = loadCoordinatorConfig({
      AGENTMESH_WEB_SEARCH_KEY: "k",
      AGENTMESH_MCP_SERVERS: JSON.stringify({
        biomcp: { command: "node", args: ["x.mjs"] },
        other: { url: "http://127.0.0.1:1/mcp" },
      }),
      AGENTMESH_HALO_JOIN_DEADLINE_MS: "5000",
    });
    expect(cfg.defaults.halo?.available_capabilities).toEqual(["graph", "rag", "biomcp", "web", "chitchat"]);
    expect(cfg.defaults.halo?.join_deadline_ms).toBe(5000);
  });

  test("an explicit halo list is used as given (chitchat always added); unknown tags and bad hints are configuration errors", () => {
    expect(
      loadCoordinatorConfig({ AGENTMESH_HALO_CAPABILITIES: "llama_mcp, graph" }).defaults.halo?.available_capabilities,
    ).toEqual(["graph", "llama_mcp", "chitchat"]);
    const hints = { graph: { bonus: 2, keywords: ["kinase"] } };
    expect(
      loadCoordinatorConfig({ AGENTMESH_HALO_DOMAIN_HINTS: JSON.stringify(hints) }).defaults.halo?.domain_hints,
    ).toEqual(hints);
    const load = () =>
      loadCoordinatorConfig({
        AGENTMESH_HALO_CAPABILITIES: "graph,telepathy",
        AGENTMESH_HALO_DOMAIN_HINTS: '{"graph": {"bonus": 9, "keywords": []}}',
      });
    expect(load).toThrow(/unknown capability "telepathy"[\s\S]*AGENTMESH_HALO_DOMAIN_HINTS/);
    expect(() => loadCoordinatorConfig({ AGENTMESH_HALO_DOMAIN_HINTS: "{nope" })).toThrow(
      /AGENTMESH_HALO_DOMAIN_HINTS: not valid JSON/,
    );
    expect(() => loadCoordinatorConfig({ AGENTMESH_MCP_SERVERS: "[1" })).toThrow(
      /AGENTMESH_MCP_SERVERS: not valid JSON/,
    );
  });

  test("the supervisor's agents get the corpus and the sandbox by default, web search with a key, the image tools with an endpoint; an explicit list wins", () => {
    expect(loadCoordinatorConfig({}).defaults.supervisor).toEqual({ tools: ["corpus_search", "run_python", "run_js"] });
    const all = loadCoordinatorConfig({
      AGENTMESH_WEB_SEARCH_KEY: "k",
      AGENTMESH_IMAGES_BASE_URL: "http://127.0.0.1:9/v1",
    });
    expect(all.defaults.supervisor?.tools).toEqual([
      "web_search",
      "corpus_search",
      "generate_image",
      "analyze_image",
      "run_python",
      "run_js",
    ]);
    expect(
      loadCoordinatorConfig({ AGENTMESH_SUPERVISOR_TOOLS: "run_js, web_search" }).defaults.supervisor?.tools,
    ).toEqual(["web_search", "run_js"]);
    expect(() => loadCoordinatorConfig({ AGENTMESH_SUPERVISOR_TOOLS: "run_python,teleport" })).toThrow(
      /AGENTMESH_SUPERVISOR_TOOLS: unknown tool "teleport"/,
    );
  });

  test("critic-chain's researcher and expert get the calculator, the corpus and the sandbox, web search with a key, and 5 tool rounds unless set", () => {
    expect(loadCoordinatorConfig({}).defaults.criticChain).toEqual({
      tools: ["calculator", "corpus_search", "run_python", "run_js"],
      max_tool_rounds: 5,
    });
    const keyed = loadCoordinatorConfig({ AGENTMESH_WEB_SEARCH_KEY: "k", AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS: "2" })
      .defaults.criticChain;
    expect(keyed).toEqual({
      tools: ["calculator", "corpus_search", "run_python", "run_js", "web_search"],
      max_tool_rounds: 2,
    });
    expect(
      loadCoordinatorConfig({ AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS: "0" }).defaults.criticChain?.max_tool_rounds,
    ).toBe(0);
    expect(() => loadCoordinatorConfig({ AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS: "11" })).toThrow(
      /AGENTMESH_CRITIC_CHAIN_TOOL_ROUNDS/,
    );
  });

  test("clarify takes the 2 clarifications and 10 messages of history unless configured; out-of-range values are refused", () => {
    expect(loadCoordinatorConfig({}).defaults.clarify).toEqual({ max_clarifications: 2, max_history: 10 });
    expect(
      loadCoordinatorConfig({ AGENTMESH_CLARIFY_MAX_CLARIFICATIONS: "1", AGENTMESH_CLARIFY_MAX_HISTORY: "4" }).defaults
        .clarify,
    ).toEqual({ max_clarifications: 1, max_history: 4 });
    expect(() =>
      loadCoordinatorConfig({ AGENTMESH_CLARIFY_MAX_CLARIFICATIONS: "11", AGENTMESH_CLARIFY_MAX_HISTORY: "0" }),
    ).toThrow(/AGENTMESH_CLARIFY_MAX_CLARIFICATIONS[^]*AGENTMESH_CLARIFY_MAX_HISTORY/);
  });
});
