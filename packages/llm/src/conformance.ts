import { describe, expect, it } from "vitest";
import { AgentmeshError, ROLES } from "@agentmesh/contracts";
import type { ModelPort, ModelRequest } from "./types.js";

/** One scripted answer, in the form every model twin understands. */
export interface ConformanceAnswer {
  readonly role: string;
  readonly op: string;
  readonly output: unknown;
  readonly delayMs?: number;
}

/** Builds a model that answers `answers` (per role+op, in order) and a way to shut it down. */
export type ModelFactory = (answers: readonly ConformanceAnswer[]) => Promise<{ model: ModelPort; close(): Promise<void> }>;

const plan = ROLES.planner.plan;
const review = ROLES.critic.review_plan;
const message = { sender: "orchestrator" as const, receiver: "planner", type: "instruction" as const, content: "Develop a logical plan to answer: Q?", step_id: null };

function request<T>(schema: ModelRequest<T>["schema"], role: string, op: string, taskId: string, signal?: AbortSignal): ModelRequest<T> {
  return { role, op, taskId, system: "You plan.", prompt: "Question: Q?", input: { message, question: "Q?", feedback: null }, schema, schemaName: `${role}_${op}`, ...(signal ? { signal } : {}) };
}

/**
 * The model port's contract, run against every implementation (the scripted twin and the
 * OpenAI-compatible adapter over a scripted HTTP server), so tests that use the twin exercise
 * the same behaviour agents get from a real endpoint.
 */
export function runModelConformance(name: string, factory: ModelFactory): void {
  describe(`model port conformance: ${name}`, () => {
    it("answers per role+op in script order, validated against the op's schema", async () => {
      const { model, close } = await factory([
        { role: "planner", op: "plan", output: { research_steps: ["r1"], expert_steps: ["e1"] } },
        { role: "critic", op: "review_plan", output: { decision: "reject", feedback: "more" } },
        { role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["e2"] } },
      ]);
      try {
        const a = await model.complete(request(plan.response, "planner", "plan", "sessconf0001.1.0.0"));
        const r = await model.complete(request(review.response, "critic", "review_plan", "sessconf0001.2.0.0"));
        const b = await model.complete(request(plan.response, "planner", "plan", "sessconf0001.3.0.0"));
        expect(a.output).toEqual({ research_steps: ["r1"], expert_steps: ["e1"] });
        expect(r.output).toEqual({ decision: "reject", feedback: "more" });
        expect(b.output).toEqual({ research_steps: [], expert_steps: ["e2"] });
        for (const reply of [a, r, b]) {
          expect(reply.usage.prompt_tokens).toBeGreaterThanOrEqual(0);
          expect(reply.latencyMs).toBeGreaterThanOrEqual(0);
          expect(typeof reply.model).toBe("string");
        }
      } finally {
        await close();
      }
    });

    it("a repeated task id (a redelivered task) gets the same answer again", async () => {
      const { model, close } = await factory([
        { role: "planner", op: "plan", output: { research_steps: ["first"], expert_steps: ["e"] } },
        { role: "planner", op: "plan", output: { research_steps: ["second"], expert_steps: ["e"] } },
      ]);
      try {
        const first = await model.complete(request(plan.response, "planner", "plan", "sessconf0002.1.0.0"));
        const again = await model.complete(request(plan.response, "planner", "plan", "sessconf0002.1.0.0"));
        const next = await model.complete(request(plan.response, "planner", "plan", "sessconf0002.3.0.0"));
        expect(again.output).toEqual(first.output);
        expect(next.output).toEqual({ research_steps: ["second"], expert_steps: ["e"] });
      } finally {
        await close();
      }
    });

    it("an abort during the call fails it as `cancelled`, promptly", async () => {
      const { model, close } = await factory([{ role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["e"] }, delayMs: 5000 }]);
      try {
        const ac = new AbortController();
        const t0 = Date.now();
        setTimeout(() => ac.abort(), 100);
        const err = await model.complete(request(plan.response, "planner", "plan", "sessconf0003.1.0.0", ac.signal)).then(() => null, (e: unknown) => e);
        expect(err instanceof AgentmeshError && err.code).toBe("cancelled");
        expect(Date.now() - t0).toBeLessThan(2000);
      } finally {
        await close();
      }
    });
  });
}
