import { afterAll, describe, expect, it } from "vitest";
import { createComputePool } from "./compute-pool.js";

// A secret the host holds, planted before the pool starts its worker.
const PLANTED = `sk-planted-${Math.random().toString(36).slice(2)}`;
process.env.AGENTMESH_TEST_PLANTED_KEY = PLANTED;
const pool = createComputePool({ url: new URL("./test-support/env.worker.mjs", import.meta.url), size: 1 });
afterAll(async () => {
  await pool.close();
  delete process.env.AGENTMESH_TEST_PLANTED_KEY;
});

describe("compute pool workers", () => {
  it("inherit no environment from the host: a planted API key is not in the worker's process.env", async () => {
    const seen = (await pool.run({}, AbortSignal.timeout(30_000))) as {
      env: Record<string, string>;
      execArgv: string[];
    };
    expect(seen.env).toEqual({});
    expect(JSON.stringify(seen)).not.toContain(PLANTED);
    expect(seen.execArgv).toEqual([]);
  });
});
