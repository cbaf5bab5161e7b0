// The gateway comparison's plan in `pnpm bench`: its flags and the interleaving of its rounds.
import { describe, expect, it } from "vitest";
import { parseArgs, type BenchOptions } from "../../bench/args.js";
import { schedule } from "../../bench/gateway.js";

const options = (argv: string[]): BenchOptions => {
  const o = parseArgs(argv);
  if (o === "help") throw new Error("unexpected help");
  return o;
};

describe("pnpm bench gateway flags", () => {
  it("compares at c=1 and c=64 by default, 30 and 256 sessions per path (10 and 128 with --quick)", () => {
    expect([...options([]).gatewaySessions]).toEqual([
      [1, 30],
      [64, 256],
    ]);
    expect([...options(["--quick"]).gatewaySessions]).toEqual([
      [1, 10],
      [64, 128],
    ]);
  });

  it("takes other levels and per-level counts, and --no-gateway skips the comparison", () => {
    expect([...options(["--gateway-levels", "1,8", "--gateway-sessions-8", "50"]).gatewaySessions]).toEqual([
      [1, 30],
      [8, 50],
    ]);
    expect(options(["--no-gateway"]).gatewaySessions.size).toBe(0);
    // --gateway-sessions-<c> does not change the main levels' --sessions-<c>
    expect(options(["--gateway-sessions-64", "9"]).sessions.get(64)).toBe(400);
    expect(() => parseArgs(["--gateway-sessions-1", "0"])).toThrow(/positive integer/);
  });
});

describe("pnpm bench --tracing", () => {
  it("is off by default and on with the flag", () => {
    expect(options(["--quick"]).tracing).toBe(false);
    expect(options(["--quick", "--no-gateway", "--tracing"]).tracing).toBe(true);
  });
});

describe("the gateway comparison's rounds", () => {
  const order = (c: number, n: number) =>
    schedule(c, n)
      .map((r) => `${r.path === "direct" ? "D" : "G"}${r.sessions}`)
      .join(" ");

  it("alternates D G G D … in rounds of 5 at c=1 and 2c above", () => {
    expect(order(1, 20)).toBe("D5 G5 G5 D5 D5 G5 G5 D5");
    expect(order(64, 256)).toBe("D128 G128 G128 D128");
    expect(order(64, 128)).toBe("D128 G128");
  });

  it("runs exactly the sessions asked for on each path, the last round smaller", () => {
    const rounds = schedule(4, 19);
    const total = (p: string) => rounds.filter((r) => r.path === p).reduce((a, r) => a + r.sessions, 0);
    expect([total("direct"), total("gateway")]).toEqual([19, 19]);
    expect(order(4, 19)).toBe("D8 G8 G8 D8 D3 G3");
  });
});
