// The pool behind trace and span ids, with a counting fill in place of the random source: draws
// are consecutive windows of the pool, and it is refilled exactly when a draw would overrun it.
import { describe, expect, it, vi } from "vitest";

let fills = 0;
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  return {
    ...real,
    // byte i of the k-th fill is (k * 7 + i) & 0xff: every window is recognisable
    randomFillSync: <T extends NodeJS.ArrayBufferView>(buf: T): T => {
      const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (fills * 7 + i) & 0xff;
      fills++;
      return buf;
    },
  };
});

const { randomHex } = await import("./trace.js");
const hex = (fill: number, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ((fill * 7 + from + i) & 0xff).toString(16).padStart(2, "0")).join("");

describe("randomHex's pool", () => {
  it("hands out consecutive windows, refills only when a draw would overrun, and drops the tail it cannot use", () => {
    expect(fills).toBe(0);
    expect(randomHex(8)).toBe(hex(0, 0, 8));
    expect(fills).toBe(1);
    expect(randomHex(16)).toBe(hex(0, 8, 16));
    // 24 used; 4,072 left: 509 draws of 8 fit exactly
    for (let i = 0; i < 509; i++) expect(randomHex(8)).toBe(hex(0, 24 + 8 * i, 8));
    expect(fills).toBe(1);
    // the pool is used up: the next draw refills and starts at byte 0 of the new fill
    expect(randomHex(3)).toBe(hex(1, 0, 3));
    expect(fills).toBe(2);
    // 4,093 left: a draw of 4,094 does not fit, so the tail is dropped
    expect(randomHex(4094)).toBe(hex(2, 0, 4094));
    expect(fills).toBe(3);
  });
});
