import { ERROR_CODES, ErrorCode, WireError } from "@agentmesh/contracts";
import { TimeoutError, RequestError, NoRespondersError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentmeshError, fromWireError, natsFailure, toWireError } from "./errors.js";
import { serviceErrorCode } from "./micro.js";

describe("AgentmeshError", () => {
  it("takes retryability and fault from the code table unless told otherwise", () => {
    for (const code of ErrorCode.options) {
      const e = new AgentmeshError(code, "m");
      expect(e.retryable).toBe(ERROR_CODES[code].retryable);
      expect(e.fault).toBe(ERROR_CODES[code].fault);
      expect(e).toBeInstanceOf(Error);
      expect(e.name).toBe("AgentmeshError");
    }
    expect(new AgentmeshError("internal", "m", { retryable: true }).retryable).toBe(true);
  });
});

describe("wire conversion", () => {
  it("round-trips every code, keeping message, retryability and component", () => {
    for (const code of ErrorCode.options) {
      for (const retryable of [true, false]) {
        const e = new AgentmeshError(code, `boom ${code}`, { retryable, component: "critic" });
        const w = toWireError(e);
        expect(WireError.parse(w)).toEqual(w);
        const back = fromWireError(w);
        expect(back).toBeInstanceOf(AgentmeshError);
        expect({ code: back.code, message: back.message, retryable: back.retryable, component: back.component }).toEqual({
          code, message: `boom ${code}`, retryable, component: "critic",
        });
      }
    }
  });

  it("classifies foreign errors by who is at fault", () => {
    const zerr = z.object({ a: z.string() }).safeParse({ a: 1 }).error;
    expect(toWireError(zerr)).toMatchObject({ code: "invalid_message", retryable: false });
    expect(toWireError(zerr).message).toContain("a:");
    expect(toWireError(new TimeoutError())).toMatchObject({ code: "timeout", retryable: true });
    expect(toWireError(new RequestError("no responders", { cause: new NoRespondersError("x.y") }))).toMatchObject({ code: "unavailable", retryable: true });
    expect(toWireError(new DOMException("stop", "AbortError"))).toMatchObject({ code: "cancelled", retryable: false });
    expect(toWireError(new TypeError("x is undefined"), "planner")).toEqual({ code: "internal", message: "x is undefined", retryable: false, component: "planner" });
    expect(toWireError("plain string")).toMatchObject({ code: "internal", message: "plain string" });
    expect(toWireError({ weird: true }).message).toContain('{"weird":true}');
  });

  it("bounds message and component so the result always fits WireError", () => {
    const w = toWireError(new AgentmeshError("tool_error", "x".repeat(10_000), { component: "c".repeat(500) }));
    expect(w.message).toHaveLength(4000);
    expect(w.component).toHaveLength(100);
    expect(WireError.safeParse(w).success).toBe(true);
  });

  it("turns a malformed wire error into `internal` instead of throwing", () => {
    const e = fromWireError({ code: "nope", message: 1 } as unknown as WireError);
    expect(e.code).toBe("internal");
    expect(e.message).toMatch(/malformed wire error/);
  });

  it("wraps NATS failures: timeouts stay timeouts, the rest is `unavailable`", () => {
    expect(natsFailure(new TimeoutError(), "publish")).toMatchObject({ code: "timeout", component: "nats" });
    expect(natsFailure(new Error("connection closed"), "publish")).toMatchObject({ code: "unavailable", message: "publish: connection closed" });
    const ours = new AgentmeshError("payload_too_large", "big");
    expect(natsFailure(ours, "publish")).toBe(ours);
  });

  it("maps every code to an ADR-32 status that a client maps back to a sensible class", () => {
    for (const code of ErrorCode.options) {
      const s = serviceErrorCode(code);
      expect(Number.isInteger(s)).toBe(true);
      expect(s >= 400 && s < 600).toBe(true);
    }
    expect(serviceErrorCode("invalid_query")).toBe(400);
    expect(serviceErrorCode("unknown_op")).toBe(404);
    expect(serviceErrorCode("payload_too_large")).toBe(413);
    expect(serviceErrorCode("internal")).toBe(500);
    expect(serviceErrorCode("model_error")).toBe(502);
    expect(serviceErrorCode("unavailable")).toBe(503);
    expect(serviceErrorCode("timeout")).toBe(504);
  });
});
