import { describe, expect, it, vi } from "vitest";
import { createLogger, lazyChild } from "./logger.js";

function capture(level: string) {
  const lines: string[] = [];
  const log = createLogger({ service: "t", level, destination: { write: (s: string) => void lines.push(s) } });
  return { log, lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("lazyChild", () => {
  it("writes enabled lines with its bindings, as a child would", () => {
    const { log, lines } = capture("info");
    const c = lazyChild(log, { task_id: "t1", op: "plan" });
    c.info({ n: 1 }, "op done");
    c.warn("careful");
    expect(lines()).toMatchObject([
      { level: 30, task_id: "t1", op: "plan", n: 1, msg: "op done", service: "t" },
      { level: 40, task_id: "t1", op: "plan", msg: "careful" },
    ]);
  });

  it("makes no child while only disabled levels are written", () => {
    const { log, lines } = capture("warn");
    const child = vi.spyOn(log, "child");
    const c = lazyChild(log, { task_id: "t1" });
    c.info("hidden");
    c.debug({ big: "x".repeat(100) }, "hidden too");
    expect(c.isLevelEnabled("info")).toBe(false);
    expect(c.isLevelEnabled("error")).toBe(true);
    expect(c.level).toBe("warn");
    expect(child).not.toHaveBeenCalled();
    expect(lines()).toEqual([]);
    c.error("shown");
    expect(child).toHaveBeenCalledTimes(1);
    c.error("shown again");
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines()).toMatchObject([
      { level: 50, task_id: "t1", msg: "shown" },
      { level: 50, task_id: "t1", msg: "shown again" },
    ]);
  });

  it("hands everything else to the child: its bindings, grand-children, a level of its own", () => {
    const { log, lines } = capture("warn");
    const c = lazyChild(log, { task_id: "t1" });
    expect(c.bindings()).toMatchObject({ task_id: "t1" });
    c.child({ tool: "calculator" }).warn("from a grand-child");
    c.level = "debug";
    c.debug("now enabled on the child only");
    log.debug("still disabled on the parent");
    expect(lines()).toMatchObject([
      { level: 40, task_id: "t1", tool: "calculator", msg: "from a grand-child" },
      { level: 20, task_id: "t1", msg: "now enabled on the child only" },
    ]);
  });

  it("redacts secret fields like any child", () => {
    const { log, lines } = capture("info");
    lazyChild(log, { task_id: "t1" }).info({ apiKey: "sk-123" }, "call");
    expect(lines()[0]).toMatchObject({ apiKey: "[redacted]" });
  });
});
