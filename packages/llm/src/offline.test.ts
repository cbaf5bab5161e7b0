import { describe, expect, it } from "vitest";
import { createOfflineModel } from "./offline.js";
import { planRequest } from "./test-support.js";

const handlers = new Map([["planner.plan", () => ({ research_steps: [], expert_steps: ["Evaluate 2 + 2 exactly"] })]]);

describe("the offline engine's latency knob (tests and benches)", () => {
  it("answers at once by default", async () => {
    const t0 = performance.now();
    const reply = await createOfflineModel({ handlers }).complete(planRequest);
    expect(performance.now() - t0).toBeLessThan(100);
    expect(reply.latencyMs).toBe(0);
  });

  it("takes latencyMs per answer, as a model would, and reports it", async () => {
    const model = createOfflineModel({ handlers, latencyMs: 300 });
    const t0 = performance.now();
    // answers overlap: the wait is a timer, not a queue
    const replies = await Promise.all([
      model.complete(planRequest),
      model.complete(planRequest),
      model.complete(planRequest),
    ]);
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(295);
    expect(took).toBeLessThan(900);
    for (const r of replies) {
      expect(r.output.expert_steps[0]).toMatch(/2 \+ 2/);
      expect(r.latencyMs).toBeGreaterThanOrEqual(295);
    }
  });

  it("is cut short by the request's abort signal", async () => {
    const controller = new AbortController();
    const t0 = performance.now();
    const call = createOfflineModel({ handlers, latencyMs: 10_000 }).complete({
      ...planRequest,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toMatchObject({ code: "cancelled" });
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it("refuses a negative latency", () => {
    expect(() => createOfflineModel({ handlers, latencyMs: -1 })).toThrow(/latencyMs/);
  });
});
