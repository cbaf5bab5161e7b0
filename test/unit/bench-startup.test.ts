/** `pnpm bench`'s start-up timing: its flags, its table, and the command it times. */
import { basename } from "node:path";
import { describe, expect, it } from "vitest";
import { parseArgs, type BenchOptions } from "../../bench/args.js";
import { BASELINE, baselineOnce, describeCommand, renderStartup, type StartupReport } from "../../bench/startup.js";

function opts(argv: string[]): BenchOptions {
  const o = parseArgs(argv);
  if (o === "help") throw new Error("help");
  return o;
}

describe("bench start-up flags", () => {
  it("times start-up after every full run by default, three starts per service kind", () => {
    expect(opts([])).toMatchObject({ startup: "also", startupRounds: 3 });
    expect(opts(["--startup-only"]).startup).toBe("only");
    expect(opts(["--no-startup"]).startup).toBe("off");
    expect(opts(["--startup-rounds", "5"]).startupRounds).toBe(5);
  });

  it("refuses contradictions and nonsense in one line", () => {
    expect(() => parseArgs(["--startup-only", "--no-startup"])).toThrow(
      "--startup-only and --no-startup contradict each other",
    );
    expect(() => parseArgs(["--startup-rounds", "0"])).toThrow("--startup-rounds needs a positive integer, got 0");
    expect(() => parseArgs(["--startup-rounds"])).toThrow("--startup-rounds needs a value");
  });
});

describe("the start-up table", () => {
  const sample = (readyMs: number, pingMs: number | null) => ({ readyMs, pingMs, cpuMs: 100, rssMiB: 80 });
  const report: StartupReport = {
    command: "node dist",
    rounds: 3,
    targetMs: 300,
    loadavgStart: "1.00 1.00 1.00",
    loadavgEnd: "2.00 1.00 1.00",
    results: [
      { service: BASELINE, samples: [sample(60, null)], median: { readyMs: 60, pingMs: null, cpuMs: 50, rssMiB: 40 } },
      {
        service: "coordinator",
        samples: [sample(250, 240)],
        median: { readyMs: 250, pingMs: 240, cpuMs: 180, rssMiB: 70.4 },
      },
      {
        service: "gateway",
        samples: [sample(420, null)],
        median: { readyMs: 420, pingMs: null, cpuMs: null, rssMiB: null },
      },
    ],
  };

  it("shows each median, a dash where a figure does not exist, and whether it meets the target", () => {
    const lines = renderStartup(report).split("\n");
    expect(lines[0]).toBe(
      "START-UP (node dist; median of 3 starts each, interleaved; load 1.00 1.00 1.00 → 2.00 1.00 1.00)",
    );
    expect(lines[1]?.split(/\s{2,}/)).toEqual([
      "service",
      "spawn → /readyz 200",
      "spawn → $SRV.PING",
      "CPU to ready",
      "RSS at ready",
      "≤ 300 ms",
    ]);
    expect(lines[2]?.split(/\s{2,}/)).toEqual(["node itself", "60 ms", "—", "50 ms", "40 MiB", "—"]);
    expect(lines[3]?.split(/\s{2,}/)).toEqual(["coordinator", "250 ms", "240 ms", "180 ms", "70 MiB", "yes"]);
    expect(lines[4]?.split(/\s{2,}/)).toEqual(["gateway", "420 ms", "—", "—", "—", "no"]);
    expect(lines[5]).toMatch(/^\(node itself: a bare node with the same NODE_OPTIONS answering \/readyz/);
  });

  it("times a bare node to its first /readyz answer, as it times a service", async () => {
    const s = await baselineOnce(30_000);
    expect(s.readyMs).toBeGreaterThan(0);
    expect(s.readyMs).toBeLessThan(30_000);
    expect(s.pingMs).toBeNull();
    expect(s.cpuMs).not.toBeNull();
    expect(s.rssMiB).toBeGreaterThan(10);
  });

  it("names the command the harness runs services with (serviceCommand), for either runtime", () => {
    expect(describeCommand("planner", "tsx")).toBe(`${basename(process.execPath)} --import tsx`);
    expect(describeCommand("planner", "compiled")).toBe(basename(process.execPath));
  });
});
