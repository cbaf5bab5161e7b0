import { describe, expect, it } from "vitest";
import { AgentmeshError, ROLES } from "@agentmesh/contracts";
import type { ModelPort, SchemaRequest, TextRequest } from "./types.js";

/** One scripted answer, in the form every model twin understands: exactly one of `output` (sent as JSON) and `content` (raw text). */
export interface ConformanceAnswer {
  readonly role: string;
  readonly op: string;
  readonly output?: unknown;
  readonly content?: string;
  readonly delayMs?: number;
  /** Pause between streamed deltas. */
  readonly chunkDelayMs?: number;
}

/**
 * Builds a model that answers `answers` (per role+op, in order), a count of the requests it
 * received, the temperature each request carried (null: it named none), and a way to shut it down.
 */
export type ModelFactory = (answers: readonly ConformanceAnswer[]) => Promise<{
  model: ModelPort;
  requests(): number;
  temperatures(): readonly (number | null)[];
  close(): Promise<void>;
}>;

const plan = ROLES.planner.plan;
const review = ROLES.critic.review_plan;
const message = {
  sender: "orchestrator" as const,
  receiver: "planner",
  type: "instruction" as const,
  content: "Develop a logical plan to answer: Q?",
  step_id: null,
};

function request<T>(
  schema: SchemaRequest<T>["schema"],
  role: string,
  op: string,
  taskId: string,
  signal?: AbortSignal,
): SchemaRequest<T> {
  return {
    role,
    op,
    taskId,
    system: "You plan.",
    prompt: "Question: Q?",
    input: { message, question: "Q?", feedback: null },
    schema,
    schemaName: `${role}_${op}`,
    ...(signal ? { signal } : {}),
  };
}

function textRequest(taskId: string, onToken: (delta: string) => void, signal?: AbortSignal): TextRequest {
  return {
    mode: "text",
    role: "writer",
    op: "draft",
    taskId,
    system: "You write.",
    prompt: "Write about Q.",
    input: { question: "Q?" },
    onToken,
    ...(signal ? { signal } : {}),
  };
}

const TEXT = "Gene editing changes DNA at a chosen place. CRISPR-Cas9 finds the place with a guide RNA, then cuts.";

/**
 * The model port's contract, run against every implementation (the scripted twin and the
 * OpenAI-compatible adapter over a scripted HTTP server), so tests that use the twin exercise
 * the same behaviour agents get from a real endpoint.
 */
export function runModelConformance(name: string, factory: ModelFactory): void {
  describe(`model port conformance: ${name}`, () => {
    schemaAnswerCases(factory);
    jsonObjectCases(factory);
    textAndTemperatureCases(factory);
  });
}

/** Structured answers: script order per role+op, a redelivered task's repeat, an abort mid-call. */
function schemaAnswerCases(factory: ModelFactory): void {
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
    const { model, close } = await factory([
      { role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["e"] }, delayMs: 5000 },
    ]);
    try {
      const ac = new AbortController();
      const t0 = Date.now();
      setTimeout(() => ac.abort(), 100);
      const err = await model.complete(request(plan.response, "planner", "plan", "sessconf0003.1.0.0", ac.signal)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err instanceof AgentmeshError && err.code).toBe("cancelled");
      expect(Date.now() - t0).toBeLessThan(2000);
    } finally {
      await close();
    }
  });
}

/** json_object mode: one request, valid or failed for good. */
function jsonObjectCases(factory: ModelFactory): void {
  it("json_object: a valid reply is validated and returned after one request", async () => {
    const { model, requests, close } = await factory([
      { role: "planner", op: "plan", output: { research_steps: ["r"], expert_steps: ["e"] } },
    ]);
    try {
      const reply = await model.complete({
        ...request(plan.response, "planner", "plan", "sessconf0004.1.0.0"),
        mode: "json_object",
      });
      expect(reply.output).toEqual({ research_steps: ["r"], expert_steps: ["e"] });
      expect(requests()).toBe(1);
    } finally {
      await close();
    }
  });

  it("json_object: invalid JSON or a schema failure fails model_invalid_output, not retryable, after exactly one request", async () => {
    const { model, requests, close } = await factory([
      { role: "planner", op: "plan", content: "{ not json" },
      { role: "planner", op: "plan", output: { research_steps: "not a list" } },
    ]);
    try {
      for (const [i, taskId] of ["sessconf0005.1.0.0", "sessconf0005.2.0.0"].entries()) {
        const err = await model
          .complete({ ...request(plan.response, "planner", "plan", taskId), mode: "json_object" })
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(err instanceof AgentmeshError && { code: err.code, retryable: err.retryable }).toEqual({
          code: "model_invalid_output",
          retryable: false,
        });
        expect(requests()).toBe(i + 1);
      }
    } finally {
      await close();
    }
  });
}

/** A request's temperature in every mode, and text mode's streamed deltas and abort. */
function textAndTemperatureCases(factory: ModelFactory): void {
  it("a request's temperature override reaches the model, in every output mode", async () => {
    const { model, temperatures, close } = await factory([
      { role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["e1"] } },
      { role: "planner", op: "plan", output: { research_steps: [], expert_steps: ["e2"] } },
      { role: "writer", op: "draft", content: TEXT },
    ]);
    try {
      await model.complete({ ...request(plan.response, "planner", "plan", "sessconf0008.1.0.0"), temperature: 0.7 });
      await model.complete({
        ...request(plan.response, "planner", "plan", "sessconf0008.2.0.0"),
        mode: "json_object",
        temperature: 1.3,
      });
      await model.complete({ ...textRequest("sessconf0008.3.0.0", () => undefined), temperature: 0.4 });
      expect(temperatures()).toEqual([0.7, 1.3, 0.4]);
    } finally {
      await close();
    }
  });

  it("text: streams the deltas in order to onToken and returns the joined text", async () => {
    const { model, requests, close } = await factory([{ role: "writer", op: "draft", content: TEXT }]);
    try {
      const deltas: string[] = [];
      const reply = await model.complete(textRequest("sessconf0006.1.0.0", (d) => deltas.push(d)));
      const output: string = reply.output;
      expect(output).toBe(TEXT);
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join("")).toBe(TEXT);
      expect(reply.usage.prompt_tokens).toBeGreaterThanOrEqual(0);
      expect(requests()).toBe(1);
    } finally {
      await close();
    }
  });

  it("text: an abort mid-stream stops the stream and fails the call as `cancelled`, promptly", async () => {
    const { model, close } = await factory([{ role: "writer", op: "draft", content: TEXT, chunkDelayMs: 300 }]);
    try {
      const ac = new AbortController();
      const deltas: string[] = [];
      const t0 = Date.now();
      const onToken = (d: string) => {
        deltas.push(d);
        if (deltas.length === 1) setTimeout(() => ac.abort(), 50);
      };
      const err = await model.complete(textRequest("sessconf0007.1.0.0", onToken, ac.signal)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err instanceof AgentmeshError && err.code).toBe("cancelled");
      expect(Date.now() - t0).toBeLessThan(2000);
      // Stopped: no delta arrives after the abort.
      const seen = deltas.length;
      await new Promise((r) => setTimeout(r, 400));
      expect(deltas.length).toBe(seen);
      expect(seen).toBeLessThan(Math.ceil(TEXT.length / 16));
    } finally {
      await close();
    }
  });
}
