import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GRAPH_MAX_TRIPLES, loadTriples } from "./load.js";

let dir: string;
let outside: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "graph-"));
  outside = mkdtempSync(join(tmpdir(), "graph-outside-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

const line = (subject: string, predicate: string, object: string, source?: string): string =>
  JSON.stringify({ subject, predicate, object, source });
const write = (rel: string, lines: readonly string[]): void => writeFileSync(join(dir, rel), lines.join("\n"));

describe("loadTriples: one file", () => {
  it("reads every triple in order, keeps a given source and sets <file>:<line> when there is none", async () => {
    write("facts.jsonl", [
      line("Redis", "is", "the system of record", "notes/redis.md:3"),
      "",
      line("JetStream", "is", "the persistence layer of NATS", "https://docs.example.org/jetstream"),
      `${line("a consumer", "keeps", "its position")}\r`,
      JSON.stringify({ subject: "a stream", predicate: "holds", object: "messages", source: null }),
    ]);
    const got = await loadTriples(join(dir, "facts.jsonl"));
    expect(got.triples).toEqual([
      { subject: "Redis", predicate: "is", object: "the system of record", source: "notes/redis.md:3" },
      {
        subject: "JetStream",
        predicate: "is",
        object: "the persistence layer of NATS",
        source: "https://docs.example.org/jetstream",
      },
      { subject: "a consumer", predicate: "keeps", object: "its position", source: "facts.jsonl:4" },
      { subject: "a stream", predicate: "holds", object: "messages", source: "facts.jsonl:5" },
    ]);
    expect(got.issues).toEqual([]);
  });

  it("reports each bad line with its file:line and why, skips it and loads the rest", async () => {
    write("mixed.jsonl", [
      line("good", "is", "first"),
      "{not json",
      JSON.stringify(["a", "list"]),
      JSON.stringify({ subject: "no object", predicate: "has" }),
      JSON.stringify({ subject: "  ", predicate: "is", object: "blank subject" }),
      JSON.stringify({ subject: "numbers", predicate: 7, object: "x" }),
      line("too long", "has", "x".repeat(5000)),
      line("long source", "has", "a source", `notes/${"d".repeat(400)}.md:1`),
      line("good", "is", "last"),
    ]);
    const got = await loadTriples(join(dir, "mixed.jsonl"));
    expect(got.triples.map((t) => t.object)).toEqual(["first", "last"]);
    expect(got.issues.map((i) => i.where)).toEqual([
      "mixed.jsonl:2",
      "mixed.jsonl:3",
      "mixed.jsonl:4",
      "mixed.jsonl:5",
      "mixed.jsonl:6",
      "mixed.jsonl:7",
      "mixed.jsonl:8",
    ]);
    expect(got.issues[0]?.message).toMatch(/not a JSON value/);
    expect(got.issues[2]?.message).toMatch(/not a triple: .*object/);
    expect(got.issues[5]?.message).toMatch(/longer than 4096 characters/);
    expect(got.issues[6]?.message).toMatch(/source is longer than 300 characters/);
    expect(got.issueCount).toBe(7);
  });

  it("lists the first 100 problems and counts them all", async () => {
    write(
      "bad.jsonl",
      Array.from({ length: 150 }, (_, i) => `bad ${i}`),
    );
    const got = await loadTriples(join(dir, "bad.jsonl"));
    expect(got.triples).toEqual([]);
    expect(got.issues).toHaveLength(100);
    expect(got.issues[99]?.where).toBe("bad.jsonl:100");
    expect(got.issueCount).toBe(150);
  });

  it("throws invalid_config for a path that names nothing", async () => {
    await expect(loadTriples(join(dir, "missing.jsonl"))).rejects.toMatchObject({ code: "invalid_config" });
  });
});

describe("loadTriples: a folder", () => {
  it("reads the .jsonl files below it by path, with sources relative to it; hidden entries and other files are left out", async () => {
    mkdirSync(join(dir, "sub"));
    mkdirSync(join(dir, ".hidden"));
    write("b.jsonl", [line("b", "is", "second")]);
    write("a.jsonl", [line("a", "is", "first")]);
    write("sub/c.jsonl", ["", line("c", "is", "third")]);
    write(".hidden/d.jsonl", [line("d", "is", "hidden")]);
    write(".e.jsonl", [line("e", "is", "hidden")]);
    write("notes.md", [line("f", "is", "not a graph file")]);
    const got = await loadTriples(dir);
    expect(got.triples.map((t) => [t.subject, t.source])).toEqual([
      ["a", "a.jsonl:1"],
      ["b", "b.jsonl:1"],
      ["c", "sub/c.jsonl:2"],
    ]);
    expect(got.issues).toEqual([]);
  });

  it("never follows a symbolic link below it, to a file or a folder, and says so", async () => {
    write("a.jsonl", [line("a", "is", "inside")]);
    writeFileSync(join(outside, "secret.jsonl"), line("secret", "is", "outside"));
    symlinkSync(join(outside, "secret.jsonl"), join(dir, "link.jsonl"));
    symlinkSync(outside, join(dir, "linked-folder"));
    const got = await loadTriples(dir);
    expect(got.triples.map((t) => t.subject)).toEqual(["a"]);
    expect(got.issues).toEqual([
      { where: "link.jsonl", message: expect.stringMatching(/symbolic link/) },
      { where: "linked-folder", message: expect.stringMatching(/symbolic link/) },
    ]);
  });

  it("reads only the first maxFiles files (by path) and says so", async () => {
    for (const n of ["c", "a", "d", "b"]) write(`${n}.jsonl`, [line(n, "is", "here")]);
    const got = await loadTriples(dir, { maxFiles: 2 });
    expect(got.triples.map((t) => t.subject)).toEqual(["a", "b"]);
    expect(got.issues).toEqual([{ where: dir, message: expect.stringMatching(/more than 2 \.jsonl files/) }]);
  });

  it("stops at maxTriples, naming the line where it stopped", async () => {
    write("a.jsonl", [line("a1", "is", "x"), line("a2", "is", "x")]);
    write("b.jsonl", [line("b1", "is", "x"), line("b2", "is", "x")]);
    write("c.jsonl", [line("c1", "is", "x")]);
    const got = await loadTriples(dir, { maxTriples: 3 });
    expect(got.triples.map((t) => t.subject)).toEqual(["a1", "a2", "b1"]);
    expect(got.issues).toEqual([{ where: "b.jsonl:2", message: expect.stringMatching(/more than 3 triples/) }]);
  });

  it("stops before the file that would pass the byte budget", async () => {
    const one = line("a", "is", "x");
    write("a.jsonl", [one]);
    write("b.jsonl", [one, one, one]);
    write("c.jsonl", [one]);
    const got = await loadTriples(dir, { maxBytes: one.length * 2 + 5 });
    expect(got.triples).toHaveLength(1);
    expect(got.issues).toEqual([{ where: "b.jsonl", message: expect.stringMatching(/byte budget/) }]);
  });

  it("applies a lower line limit, and never raises a limit above its default", async () => {
    write("a.jsonl", [line("short", "is", "x"), line("longer", "is", "x".repeat(60))]);
    const lowered = await loadTriples(dir, { maxLineChars: 50 });
    expect(lowered.triples.map((t) => t.subject)).toEqual(["short"]);
    expect(lowered.issues[0]?.where).toBe("a.jsonl:2");

    write(
      "many.jsonl",
      Array.from({ length: GRAPH_MAX_TRIPLES + 1 }, (_, i) => line(`s${i}`, "p", "o")),
    );
    const raised = await loadTriples(join(dir, "many.jsonl"), { maxTriples: GRAPH_MAX_TRIPLES * 10 });
    expect(raised.triples).toHaveLength(GRAPH_MAX_TRIPLES);
    expect(raised.issues[0]?.where).toBe(`many.jsonl:${GRAPH_MAX_TRIPLES + 1}`);
  });
});
