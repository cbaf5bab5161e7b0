// `pnpm bench --concurrent`: its flags and defaults, and how it reads the services' counters and logs.
import { describe, expect, it } from "vitest";
import { parseArgs, type BenchOptions } from "../../bench/args.js";
import { logSummary, mustBeZero } from "../../bench/concurrent.js";
import { diffTotals } from "../../bench/services.js";

const options = (argv: string[]): BenchOptions => {
  const o = parseArgs(argv);
  if (o === "help") throw new Error("unexpected help");
  return o;
};

describe("pnpm bench --concurrent", () => {
  it("is off by default: instant agents, the levels, the gateway", () => {
    const o = options([]);
    expect(o.concurrent).toBeNull();
    expect(o.modelLatencyMs).toBe(0);
    expect(o.coordinators).toBe(2);
    expect(o.gatewaySessions.size).toBe(2);
  });

  it("runs N sessions at once on one coordinator with a 1 s model, no gateway and no start-up timing", () => {
    const o = options(["--concurrent", "10000"]);
    expect(o).toMatchObject({
      concurrent: 10000,
      modelLatencyMs: 1000,
      coordinators: 1,
      agentConcurrency: 1000,
      coordinatorConcurrency: 64,
      sessionTimeoutMs: 900_000,
      warmup: 4,
      submitWindow: 64,
      rssBudgetMiB: 1024,
      startup: "off",
    });
    expect(o.gatewaySessions.size).toBe(0);
  });

  it("keeps every flag given over the mode's defaults, in any order", () => {
    const o = options([
      "--agent-concurrency",
      "200",
      "--concurrent",
      "500",
      "--model-latency-ms",
      "0",
      "--coordinators",
      "2",
      "--timeout-ms",
      "1000",
      "--warmup",
      "0",
      "--submit-window",
      "8",
      "--rss-budget-mib",
      "2048",
    ]);
    expect(o).toMatchObject({
      concurrent: 500,
      agentConcurrency: 200,
      modelLatencyMs: 0,
      coordinators: 2,
      sessionTimeoutMs: 1000,
      warmup: 0,
      submitWindow: 8,
      rssBudgetMiB: 2048,
    });
    expect(options(["--model-latency-ms", "50"]).modelLatencyMs).toBe(50);
  });

  it("refuses bad values with a one-line reason", () => {
    expect(() => parseArgs(["--concurrent", "0"])).toThrow(/--concurrent needs a positive integer/);
    expect(() => parseArgs(["--model-latency-ms", "-1"])).toThrow(
      /--model-latency-ms needs an integer from 0 to 600000/,
    );
    expect(() => parseArgs(["--submit-window", "x"])).toThrow(/--submit-window needs a positive integer/);
  });

  it("sums every service's redeliveries, the coordinator's inbox ones included, with its timers and conflicts", () => {
    const before = {
      coordinator: { conflicts: 1, timers_fired: 0, "inbox.redelivered": 2, "inbox.in_flight": 5 },
      expert: { redelivered: 0 },
    };
    const after = {
      coordinator: { conflicts: 1, timers_fired: 3, "inbox.redelivered": 6, "inbox.in_flight": 1 },
      expert: { redelivered: 7 },
      critic: { processed: 9 },
    };
    const d = diffTotals(before, after);
    // a gauge keeps its value at the end; counters are after − before
    expect(d.coordinator).toEqual({ conflicts: 0, timers_fired: 3, "inbox.redelivered": 4, "inbox.in_flight": 1 });
    expect(mustBeZero(d)).toEqual({ redelivered: 11, timersFired: 3, casConflicts: 0 });
  });

  it("counts warnings and errors by message, skips info lines and keeps other output", () => {
    const out = [
      JSON.stringify({ level: 30, msg: "op done" }),
      JSON.stringify({ level: 40, msg: "cannot publish the task outcome; retrying the task later" }),
      JSON.stringify({ level: 40, msg: "cannot publish the task outcome; retrying the task later" }),
      JSON.stringify({ level: 50, msg: "inbox handler threw; nak with delay" }),
      "node: a plain line",
      "",
    ].join("\n");
    expect(logSummary(out)).toEqual([
      { msg: "cannot publish the task outcome; retrying the task later", n: 2 },
      { msg: "inbox handler threw; nak with delay", n: 1 },
      { msg: "node: a plain line", n: 1 },
    ]);
  });
});
