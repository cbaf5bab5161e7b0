import { describe, expect, it } from "vitest";
import type { Attachment } from "@agentmesh/contracts";
import { attachmentData, findDataInput } from "./supervisor-data-input.js";

describe("findDataInput (the data agent's data)", () => {
  it("takes a fenced csv block from the query", () => {
    expect(findDataInput(["Plot:\n```csv\nx,y\n1,2\n3,4\n```\nthanks"], [])).toEqual({
      format: "csv",
      text: "x,y\n1,2\n3,4",
      origin: "query",
      columns: ["x", "y"],
      rows: 2,
    });
  });

  it("takes a fenced json block, and a bare JSON array of records", () => {
    expect(findDataInput(['```json\n[{"a":1,"b":2},{"a":3,"b":4}]\n```'], [])).toMatchObject({
      format: "json",
      columns: ["a", "b"],
      rows: 2,
    });
    expect(findDataInput(['Sum these: [{"k": 1}, {"k": 2}, {"k": 3}] please'], [])).toMatchObject({
      format: "json",
      text: '[{"k": 1}, {"k": 2}, {"k": 3}]',
      columns: ["k"],
      rows: 3,
    });
  });

  it("takes unfenced lines with the same number of commas (at least two lines, at least one comma)", () => {
    expect(findDataInput(["Here is the data\nname,score\nann,3\nbob,5\nWhat is the mean?"], [])).toMatchObject({
      format: "csv",
      text: "name,score\nann,3\nbob,5",
      rows: 2,
    });
    expect(findDataInput(["Hello, world. How are you?"], [])).toBeNull();
    expect(findDataInput(["a,b\nc,d,e"], [])).toBeNull();
  });

  it("looks in the thread, latest message first, when the texts have none; null when nothing has data", () => {
    const messages = [
      { role: "user" as const, content: "old,data\n1,2" },
      { role: "assistant" as const, content: "```csv\nnew,data\n3,4\n```" },
    ];
    expect(findDataInput(["What is the total?"], messages)).toMatchObject({
      origin: "thread",
      columns: ["new", "data"],
    });
    expect(findDataInput(["What is the total?"], [])).toBeNull();
  });

  it("text that is not JSON after a bracket is not data; data over 100,000 characters is not taken", () => {
    expect(findDataInput(["See [the note] and {this}"], [])).toBeNull();
    const big = `a,b\n${"1,2\n".repeat(30_000)}`;
    expect(findDataInput([big], [])).toBeNull();
  });

  describe("attachments", () => {
    const csv = (content: string, name = "sales.csv"): Attachment => ({ name, content_type: "text/csv", content });
    const inline = "Sum this:\n```csv\nq,r\n1,2\n```";

    it("an attachment's data is preferred over the query's and the thread's, with its origin and name", () => {
      const attached = attachmentData([csv("region,total\nA,5\nB,7\n")]);
      expect(attached).toEqual({
        format: "csv",
        text: "region,total\nA,5\nB,7",
        origin: "attachment",
        name: "sales.csv",
        columns: ["region", "total"],
        rows: 2,
      });
      expect(findDataInput([inline], [{ role: "user", content: "x,y\n1,2" }], attached)).toBe(attached);
      expect(findDataInput([inline], [], null)).toMatchObject({ origin: "query", columns: ["q", "r"] });
    });

    it("a JSON attachment is read whole; CSV and JSON attachments come before text ones, in order", () => {
      const json: Attachment = {
        name: "rows.json",
        content_type: "application/json",
        content: '[{"k":1,"v":2},{"k":3,"v":4}]',
      };
      const text: Attachment = { name: "notes.txt", content_type: "text/plain", content: "a,b\n1,2" };
      expect(attachmentData([text, json])).toMatchObject({
        format: "json",
        origin: "attachment",
        name: "rows.json",
        columns: ["k", "v"],
        rows: 2,
      });
      expect(attachmentData([text])).toMatchObject({ format: "csv", name: "notes.txt", text: "a,b\n1,2" });
      expect(attachmentData([{ ...text, content: "Numbers:\n```json\n[1, 2, 3]\n```\nThanks" }])).toMatchObject({
        format: "json",
        text: "[1, 2, 3]",
        rows: 3,
      });
    });

    it("an empty or unparsable attachment is passed over: the next one, else the query's inline data, is used", () => {
      const bad: Attachment[] = [
        csv(""),
        csv("just one line"),
        { name: "b.json", content_type: "application/json", content: "{not json" },
        { name: "n.txt", content_type: "text/plain", content: "no data here" },
      ];
      expect(attachmentData(bad)).toBeNull();
      expect(findDataInput([inline], [], attachmentData(bad))).toMatchObject({ origin: "query", columns: ["q", "r"] });
      expect(attachmentData([...bad, csv("x,y\n1,2", "good.csv")])).toMatchObject({ name: "good.csv" });
    });
  });
});
