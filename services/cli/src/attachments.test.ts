import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { LIMITS } from "@agentmesh/contracts";
import { contentTypeOf, readAttachments } from "./attachments.js";
import { sessionOptions } from "./commands.js";

const dir = mkdtempSync(join(tmpdir(), "agentmesh-attach-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string | Uint8Array) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe("agentmesh ask --attach", () => {
  test("reads each file as an attachment named by its base name, typed by its extension, and carries them as options.attachments", () => {
    const csv = file("sales.csv", "region,total\nA,5\n");
    const json = file("Rows.JSON", '[{"k":1}]');
    const txt = file("notes", "\uFEFFsome notes");
    const read = readAttachments([csv, json, txt]);
    expect(read).toEqual([
      { name: "sales.csv", content_type: "text/csv", content: "region,total\nA,5\n" },
      { name: "Rows.JSON", content_type: "application/json", content: '[{"k":1}]' },
      { name: "notes", content_type: "text/plain", content: "some notes" },
    ]);
    expect(contentTypeOf("a.tsv")).toBe("text/plain");
    const opts = { workflow: "supervisor" as const, verbose: false, json: false, timeoutMs: 1000 };
    expect(sessionOptions({ ...opts, attachments: read }).attachments).toEqual(read);
    expect(sessionOptions({ ...opts, attachments: readAttachments([]) })).toEqual({});
  });

  test("refuses, naming the file and the limit: a missing file, a folder, binary content, too many files, too much text in all", () => {
    const missing = join(dir, "nope.csv");
    expect(() => readAttachments([missing])).toThrow(`--attach: cannot read ${JSON.stringify(missing)} (no such file)`);
    const folder = join(dir, "folder.csv");
    mkdirSync(folder);
    expect(() => readAttachments([folder])).toThrow("is not a file");
    expect(() => readAttachments([file("image.png", new Uint8Array([0x89, 0x50, 0xff, 0xfe, 0x00]))])).toThrow(
      "is not UTF-8 text",
    );
    expect(() => readAttachments([file("nul.txt", "a\u0000b")])).toThrow(/--attach: .*no control characters/);
    const small = file("small.csv", "a,b\n1,2");
    expect(() => readAttachments(Array.from({ length: LIMITS.maxAttachments + 1 }, () => small))).toThrow(
      `--attach: ${LIMITS.maxAttachments + 1} files given, at most ${LIMITS.maxAttachments}`,
    );
    const half = file("half.txt", "x".repeat(LIMITS.maxAttachmentChars / 2 + 1));
    expect(() => readAttachments([half, half])).toThrow(
      `--attach: the files hold ${LIMITS.maxAttachmentChars + 2} characters in all, over the limit of ${LIMITS.maxAttachmentChars}`,
    );
    expect(() => readAttachments([file("huge.csv", "x".repeat(LIMITS.maxAttachmentChars * 4 + 1))])).toThrow(
      /huge\.csv" is \d+ bytes, over the 100000 characters/,
    );
    expect(readAttachments([half])).toHaveLength(1);
  });
});
