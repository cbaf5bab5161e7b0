import { describe, expect, it } from "vitest";
import { mapCallResult } from "./result.js";

describe("mapCallResult", () => {
  it("joins text, turns links and embedded resources into citations, one per address or path", () => {
    const mapped = mapCallResult({
      content: [
        { type: "text", text: " First finding. " },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        {
          type: "resource_link",
          uri: "https://a.example/1",
          name: "one",
          title: "Article one",
          description: "About one.",
        },
        { type: "resource_link", uri: "file:///data/notes/2.txt", name: "2.txt" },
        { type: "resource", resource: { uri: "https://a.example/docs/3?x=1", text: "Embedded   text\nof three." } },
        { type: "resource", resource: { uri: "biomcp://gene/BRCA1", blob: "AAAA" } },
        { type: "resource_link", uri: "https://a.example/1", name: "one again" },
        { type: "text", text: "Second finding." },
      ],
    });
    expect(mapped).toEqual({
      text: "First finding.\n\nSecond finding.",
      citations: [
        { title: "Article one", url: "https://a.example/1", path: null, snippet: "About one." },
        { title: "2.txt", url: null, path: "/data/notes/2.txt", snippet: "" },
        { title: "3", url: "https://a.example/docs/3?x=1", path: null, snippet: "Embedded text of three." },
        { title: "BRCA1", url: "biomcp://gene/BRCA1", path: null, snippet: "" },
      ],
    });
  });

  it("answers empty text and no citations for an empty result", () => {
    expect(mapCallResult({ content: [] })).toEqual({ text: "", citations: [] });
  });
});
