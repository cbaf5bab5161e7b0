import { Traceparent } from "@agentmesh/contracts";
import { describe, expect, it } from "vitest";
import { childTraceparent, newTraceparent, randomHex } from "./trace.js";

describe("randomHex (the pool behind trace and span ids)", () => {
  it("gives `bytes` bytes of lowercase hex", () => {
    for (const n of [1, 8, 16, 4096]) expect(randomHex(n)).toMatch(new RegExp(`^[0-9a-f]{${2 * n}}$`));
  });

  it("hands out each byte once: 20,000 span ids (40 refills of the pool) are all distinct", () => {
    // a pool that is not advanced, or not refilled when used up, repeats ids here
    const ids = new Set(Array.from({ length: 20_000 }, () => randomHex(8)));
    expect(ids.size).toBe(20_000);
  });

  it("a draw that does not fit in the rest of the pool is whole and fresh (the rest is dropped)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const h = randomHex(13); // 13 does not divide the pool: every refill leaves a tail unused
      expect(h).toHaveLength(26);
      seen.add(h);
    }
    expect(seen.size).toBe(2_000);
  });

  it("refuses sizes it cannot serve", () => {
    for (const n of [0, -1, 1.5, 4097, Number.NaN]) expect(() => randomHex(n)).toThrow(RangeError);
  });
});

describe("traceparents from the pool", () => {
  it("new and child traceparents are valid W3C ones, distinct, and a child keeps its trace id and flags", () => {
    const tps = Array.from({ length: 1_000 }, () => newTraceparent());
    for (const tp of tps) expect(Traceparent.safeParse(tp).success).toBe(true);
    expect(new Set(tps.map((tp) => tp.split("-")[1])).size).toBe(1_000);
    const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    const child = childTraceparent(parent);
    expect(child).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
    expect(child.split("-")[2]).not.toBe("b7ad6b7169203331");
  });
});
