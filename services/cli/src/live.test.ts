import { describe, expect, test } from "vitest";
import { SessionEvent } from "@agentmesh/contracts";
import { createTokenDedup, type TokenDelta } from "@agentmesh/messaging";
import { createAskPrinter } from "./live.js";
import { renderFinal } from "./render.js";
import { createTerminalOut } from "./text.js";

const SID = "sess_test_0001";
const token = (task: string, seq: number, delta: string, who = { role: "writer", op: "write" }): TokenDelta => {
  const t = SessionEvent.parse({
    v: 1,
    session_id: SID,
    version: 2,
    index: 0,
    timestamp: 1,
    type: "token",
    task_id: `${SID}.${task}`,
    ...who,
    attempt: 0,
    seq,
    delta,
  });
  if (t.type !== "token") throw new Error("unreachable");
  return t;
};

/** What reaches the terminal, as one string, through the CLI's own terminal-safe sink. */
function terminal(secrets: readonly string[] = []) {
  const chunks: string[] = [];
  const out = createTerminalOut(
    { stdout: (s) => void chunks.push(s), stderr: (s) => void chunks.push(`ERR:${s}`) },
    secrets,
  );
  return { out, text: () => chunks.join(""), chunks };
}

describe("agentmesh ask prints live model text", () => {
  test("deltas as they come, under their op's heading and indented, then a newline before the final answer", () => {
    const t = terminal();
    const print = createAskPrinter(t.out, { json: false });
    print.line("  … writing");
    print.token(token("2.0.0", 0, "Para"));
    expect(t.text()).toBe("  … writing\n  ✎ writer.write:\n    Para");
    print.token(token("2.0.0", 1, "graph one.\n\nPara"));
    print.token(token("2.0.0", 2, "graph two."));
    print.end();
    const complete = SessionEvent.parse({
      v: 1,
      session_id: SID,
      version: 3,
      index: 0,
      timestamp: 2,
      type: "complete",
      status: "completed",
      final_answer: "Paragraph one.",
      final_reasoning_trace: "t",
    });
    if (complete.type !== "complete") throw new Error("unreachable");
    print.line(renderFinal(complete));
    expect(t.text()).toBe(
      "  … writing\n  ✎ writer.write:\n    Paragraph one.\n\n    Paragraph two.\n\nAnswer (completed):\n  Paragraph one.\n\nReasoning trace:\n  t\n",
    );
  });

  test("a progress line or another task's text ends the open line; the next delta gets its heading again", () => {
    const t = terminal();
    const print = createAskPrinter(t.out, { json: false });
    print.token(token("2.0.0", 0, "Draft"));
    print.line("  ✓ outline");
    print.token(token("2.0.0", 1, " goes on"));
    print.token(token("2.1.0", 0, "Summary", { role: "analyst", op: "summarize" }));
    print.end();
    print.end();
    expect(t.text()).toBe(
      "  ✎ writer.write:\n    Draft\n  ✓ outline\n  ✎ writer.write:\n     goes on\n  ✎ analyst.summarize:\n    Summary\n",
    );
  });

  test("a redelivered task's deltas, de-duplicated as followTokens does, print once", () => {
    const t = terminal();
    const print = createAskPrinter(t.out, { json: false });
    const dedup = createTokenDedup();
    const wire = [
      token("2.0.0", 0, "Hello, "),
      token("2.0.0", 1, "wor"),
      token("2.0.0", 0, "Hello, "),
      token("2.0.0", 1, "wor"),
      token("2.0.0", 2, "ld."),
    ];
    for (const d of wire) {
      const shown = dedup.admit(d);
      if (shown) print.token(shown);
    }
    print.end();
    expect(t.text()).toBe("  ✎ writer.write:\n    Hello, world.\n");
  });

  test("model text cannot drive the terminal, and secrets in it are redacted", () => {
    const t = terminal(["sk-live-0123456789abcdef"]);
    const print = createAskPrinter(t.out, { json: false });
    print.token(token("2.0.0", 0, "\u001b]0;pwned\u0007ok\rFAKE \u202eevil key sk-live-0123456789abcdef"));
    print.end();
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(t.text()).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/u);
    expect(t.text()).not.toContain("sk-live-0123456789abcdef");
    expect(t.text()).toContain("okFAKE evil key");
  });

  test("--json: each delta is a JSON line like the events, with its seq", () => {
    const t = terminal();
    const print = createAskPrinter(t.out, { json: true });
    print.line('{"type":"stage"}');
    print.token(token("2.0.0", 0, "Hi"));
    print.token(token("2.0.0", 1, " there"));
    print.end();
    const lines = t.text().trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines.slice(1).map((l) => JSON.parse(l) as TokenDelta)).toMatchObject([
      { type: "token", seq: 0, delta: "Hi" },
      { type: "token", seq: 1, delta: " there" },
    ]);
  });
});
