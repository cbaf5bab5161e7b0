import { describe, expect, it } from "vitest";
import { LOW_ROUTING_CONFIDENCE, RoutingResult } from "@agentmesh/contracts";
import { routeByKeywords } from "./routing.js";

describe("offline routing by keywords", () => {
  it("routes each specialist's cue words to it, naming the cue", () => {
    expect(routeByKeywords("Debug this Python function for me")).toEqual({
      agent: "code",
      confidence: 0.7,
      reason: 'the query mentions "function", a code cue',
    });
    expect(routeByKeywords("Summarise the columns of this CSV")).toEqual({
      agent: "data",
      confidence: 0.7,
      reason: 'the query mentions "csv", a data cue',
    });
    expect(routeByKeywords("Make a chart of monthly sales").agent).toBe("data");
    expect(routeByKeywords("Parse this JSON and give me totals").agent).toBe("data");
    expect(routeByKeywords("An essay on the history of tea, please")).toEqual({
      agent: "writing",
      confidence: 0.7,
      reason: 'the query mentions "essay", a writing cue',
    });
    expect(routeByKeywords("Write an article about remote work").agent).toBe("writing");
    expect(routeByKeywords("Compare NATS and Kafka for event streaming")).toEqual({
      agent: "research",
      confidence: 0.7,
      reason: 'the query mentions "compare", a research cue',
    });
    expect(routeByKeywords("What is the latest on fusion energy?").agent).toBe("research");
    expect(routeByKeywords("I need a report on EU battery regulation").agent).toBe("research");
  });

  it("takes a fenced code block as a code cue", () => {
    expect(routeByKeywords("Why does this fail?\n```\nx = [1, 2\n```")).toEqual({
      agent: "code",
      confidence: 0.7,
      reason: "the query mentions a code block, a code cue",
    });
  });

  it("takes a fenced block of CSV or JSON as a data cue, not code", () => {
    expect(routeByKeywords("Sales by region:\n```csv\nregion,sales\nnorth,10\n```")).toEqual({
      agent: "data",
      confidence: 0.7,
      reason: "the query mentions a block of data, a data cue",
    });
    expect(routeByKeywords("Chart sales by region:\n```csv\nregion,sales\nnorth,10\nsouth,20\n```").agent).toBe("data");
    expect(routeByKeywords('Totals?\n```json\n[{"a": 1}]\n```').agent).toBe("data");
    // untagged data is not code either: no cue from the fence
    expect(routeByKeywords("Look at these rows\n```\nregion,sales\nnorth,10\n```").agent).toBe("chat");
  });

  it("goes code, data, writing, research when several are cued, and says which others it saw", () => {
    const r = routeByKeywords("Write a Python script that plots a CSV");
    expect(r.agent).toBe("code");
    expect(r.confidence).toBe(0.55);
    expect(r.reason).toBe(
      'the query mentions "script", a code cue (also "csv", a data cue; "write", a writing cue; code comes first)',
    );
    expect(routeByKeywords("Write a report comparing the two").agent).toBe("writing");
    expect(routeByKeywords("Research this dataset").agent).toBe("data");
  });

  it("matches whole words only", () => {
    expect(routeByKeywords("Tell me about the codex of Leicester").agent).toBe("chat");
    expect(routeByKeywords("Who wrote the Iliad?").agent).toBe("chat");
    expect(routeByKeywords("Where is the data centre?").agent).toBe("data");
  });

  it("gives a greeting to chat, and a query with no cue to chat flagged as low confidence", () => {
    expect(routeByKeywords("hello there")).toEqual({
      agent: "chat",
      confidence: 0.9,
      reason: "a greeting: chat answers",
    });
    const none = routeByKeywords("What is the capital of France?");
    expect(none).toEqual({ agent: "chat", confidence: 0.4, reason: "no cue word for a specialist: chat answers" });
    expect(none.confidence).toBeLessThan(LOW_ROUTING_CONFIDENCE);
  });

  it("always answers a valid routing result", () => {
    for (const q of ["", "   ", "```", "x".repeat(5000), "write code data research"])
      expect(RoutingResult.safeParse(routeByKeywords(q)).success, q.slice(0, 20)).toBe(true);
  });
});
