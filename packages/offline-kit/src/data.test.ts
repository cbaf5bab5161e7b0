import { describe, expect, it } from "vitest";
import { dataColumns, parseCsv } from "./data.js";

describe("parseCsv", () => {
  it("reads quoted fields with commas, doubled quotes and line breaks, CRLF, and skips blank lines", () => {
    expect(parseCsv('name,note\r\n"Smith, J","said ""hi"""\r\n\r\nLee,"two\nlines"\n')).toEqual([
      ["name", "note"],
      ["Smith, J", 'said "hi"'],
      ["Lee", "two\nlines"],
    ]);
    expect(parseCsv("")).toEqual([]);
  });
});

describe("dataColumns", () => {
  it("classifies CSV columns: number when every present value is a number, text otherwise, empty when none is present", () => {
    const csv = "city,pop,area,code,blank\nOslo,709000,454.0,A1,\nBergen,,465,7,\nTromsø,-1.5e3,2521,B2, \n";
    expect(dataColumns("csv", csv)).toEqual([
      { name: "city", kind: "text" },
      { name: "pop", kind: "number" },
      { name: "area", kind: "number" },
      { name: "code", kind: "text" },
      { name: "blank", kind: "empty" },
    ]);
  });

  it("reads thousands separators, nan and inf as text, as the offline script does", () => {
    expect(dataColumns("csv", 'a,b,c\n"1,000",nan,inf\n')).toEqual([
      { name: "a", kind: "text" },
      { name: "b", kind: "text" },
      { name: "c", kind: "text" },
    ]);
  });

  it("classifies a JSON array's keys in order of first appearance; null is missing, a boolean is text", () => {
    const json = JSON.stringify([
      { name: "a", score: 1 },
      { name: null, score: "2.5", extra: true },
      7,
      { score: null },
    ]);
    expect(dataColumns("json", json)).toEqual([
      { name: "name", kind: "text" },
      { name: "score", kind: "number" },
      { name: "extra", kind: "text" },
    ]);
  });

  it("has no columns for JSON that is not an array of objects", () => {
    expect(dataColumns("json", "{not json")).toEqual([]);
    expect(dataColumns("json", '{"a": 1}')).toEqual([]);
  });
});
