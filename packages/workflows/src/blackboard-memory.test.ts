import { describe, expect, it } from "vitest";
import { CORPUS_QUESTION, bbHarness, bbOut } from "./blackboard-testkit.js";

const THREAD_REFS = ['Answered "What is AOF?": Redis logs every write', "Search the corpus (corpus_search): fsync"];

describe("blackboard memory across a thread's sessions", () => {
  it("starts with the thread's long-term references and sends them on to memory and the retriever", () => {
    const h = bbHarness({ query: CORPUS_QUESTION, carry: { clarification_count: null, long_term_refs: THREAD_REFS } });
    expect(h.state.data.memory.long_term_refs).toEqual(THREAD_REFS);
    h.start();
    h.answer("perception.perceive", bbOut.perception("lookup"));
    h.answer("executor.list_tools", bbOut.tools());
    expect(h.input(h.task("memory.update")).memory).toMatchObject({ long_term_refs: THREAD_REFS });
    const added = [...THREAD_REFS, "Check the design document (corpus_search): deadlines"];
    h.answer("memory.update", { ...bbOut.memory(), long_term_refs: added });
    expect(h.input(h.task("retriever.retrieve")).memory).toMatchObject({ long_term_refs: added });
    expect(h.state.data.memory.long_term_refs).toEqual(added);
  });

  it("a session outside a thread, or of a thread that kept none, starts with none", () => {
    expect(bbHarness().state.data.memory.long_term_refs).toEqual([]);
    expect(bbHarness({ carry: { clarification_count: 2 } }).state.data.memory.long_term_refs).toEqual([]);
  });
});
