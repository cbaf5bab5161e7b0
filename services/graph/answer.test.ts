import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AgentmeshError, ROLES } from "@agentmesh/contracts";
import type { HandlerModelCall } from "@agentmesh/agent-kit";
import { createLogger } from "@agentmesh/service-kit";
import { answerFromGraph, graphDraftOffline, renderGraphPrompt } from "./answer.js";
import { loadGraph } from "./role.js";

const log = createLogger({ service: "graph-test", level: "silent" });
const dir = mkdtempSync(join(tmpdir(), "graph-role-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TRIPLES = [
  {
    subject: "trastuzumab",
    predicate: "targets",
    object: "the HER2 receptor",
    source: "https://drugs.example/trastuzumab",
  },
  {
    subject: "pertuzumab",
    predicate: "is combined with",
    object: "trastuzumab in HER2-positive disease",
    source: "notes/her2.md:12",
  },
  { subject: "the travel desk", predicate: "books", object: "business travel", source: null },
];
const file = join(dir, "her2.jsonl");
writeFileSync(file, `${TRIPLES.map((t) => JSON.stringify(t)).join("\n")}\n`);

/** A model stub that records its prompts and answers with `answer`. */
function model(answer: string) {
  const prompts: string[] = [];
  return {
    prompts,
    complete: <T>(call: HandlerModelCall<T>): Promise<T> => {
      prompts.push(call.prompt);
      return Promise.resolve(call.schema.parse({ answer }));
    },
  };
}

describe("graph.answer", () => {
  it("answers offline from the triples found, each triple's source its citation (url for a web page, else the path)", async () => {
    const graph = await loadGraph({ graphPath: file }, log);
    const offline = graphDraftOffline(graph);
    const out = await answerFromGraph(
      graph,
      { question: "What does trastuzumab target?" },
      { complete: <T>() => Promise.resolve(offline({ question: "What does trastuzumab target?" }) as T) },
    );
    expect(ROLES.graph.answer.response.parse(out)).toEqual(out);
    expect(out.response_str).toContain("Trastuzumab targets the HER2 receptor.");
    expect(out.citations).toContainEqual({
      title: "trastuzumab",
      url: "https://drugs.example/trastuzumab",
      path: null,
      snippet: "Trastuzumab targets the HER2 receptor.",
    });
    // only triples the query found are cited: never the unrelated travel fact
    expect(
      out.citations.every((c) => c.url === "https://drugs.example/trastuzumab" || c.path === "notes/her2.md:12"),
    ).toBe(true);
  });

  it("lets a model write the prose from the triples, but the citations stay the triples found", async () => {
    const graph = await loadGraph({ graphPath: file }, log);
    const m = model("Pertuzumab is given with trastuzumab, which targets HER2.");
    const out = await answerFromGraph(graph, { question: "How is pertuzumab combined with trastuzumab?" }, m);
    expect(out.response_str).toBe("Pertuzumab is given with trastuzumab, which targets HER2.");
    expect(m.prompts).toHaveLength(1);
    expect(m.prompts[0]).toContain("pertuzumab | is combined with | trastuzumab in HER2-positive disease");
    const found = graph.query("How is pertuzumab combined with trastuzumab?");
    expect(out.citations).toEqual(found.citations);
    expect(out.citations.map((c) => c.path ?? c.url)).toContain("notes/her2.md:12");
  });

  it("a triple without a source is cited by its graph file and line", async () => {
    const graph = await loadGraph({ graphPath: file }, log);
    const out = await answerFromGraph(
      graph,
      { question: "Who books business travel?" },
      model("The travel desk books it."),
    );
    expect(out.citations).toEqual([
      { title: "the travel desk", url: null, path: "her2.jsonl:3", snippet: "The travel desk books business travel." },
    ]);
  });

  it("nothing found: a short honest answer with no citations, and no model call", async () => {
    const graph = await loadGraph({ graphPath: file }, log);
    const m = model("should not be asked");
    const out = await answerFromGraph(graph, { question: "What is the boiling point of mercury?" }, m);
    expect(out).toEqual({ response_str: "The knowledge graph has nothing on this.", citations: [] });
    expect(m.prompts).toEqual([]);
    expect(ROLES.graph.answer.response.safeParse(out).success).toBe(true);
  });

  it("the prompt lists the facts as data, one per line", async () => {
    const graph = await loadGraph({ graphPath: file }, log);
    const prompt = renderGraphPrompt("What does trastuzumab target?", graph.query("What does trastuzumab target?"));
    expect(prompt).toMatch(/^Question: What does trastuzumab target\?/);
    expect(prompt).toContain("1. trastuzumab | targets | the HER2 receptor");
  });

  it("a path that names nothing is a clear start-up error naming the setting", async () => {
    const err = await loadGraph({ graphPath: join(dir, "missing.jsonl") }, log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect((err as AgentmeshError).code).toBe("invalid_config");
    expect((err as AgentmeshError).message).toMatch(
      /^AGENTMESH_GRAPH_PATH: the knowledge graph path .*missing\.jsonl does not exist/,
    );
  });

  it("a file without one valid triple is a clear start-up error naming its first bad lines", async () => {
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, 'not json\n{"subject":"a","predicate":"b"}\n');
    const err = await loadGraph({ graphPath: bad }, log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentmeshError);
    expect((err as AgentmeshError).code).toBe("invalid_config");
    expect((err as AgentmeshError).message).toContain(
      "the knowledge graph has no valid triple; 2 problem(s), first: bad.jsonl:1: not a JSON value; skipped; bad.jsonl:2:",
    );
  });

  it("a graph with some bad lines still loads the good ones", async () => {
    const mixed = join(dir, "mixed.jsonl");
    writeFileSync(mixed, `${JSON.stringify(TRIPLES[0])}\nnot json\n`);
    const graph = await loadGraph({ graphPath: mixed }, log);
    expect(graph.size).toBe(1);
    expect(graph.issueCount).toBe(1);
  });
});
