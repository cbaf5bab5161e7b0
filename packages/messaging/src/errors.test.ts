import { AgentmeshError, ErrorCode } from "@agentmesh/contracts";
import { TimeoutError, RequestError, NoRespondersError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { natsFailure, thrownError } from "./errors.js";
import { serviceErrorCode } from "./micro.js";

describe("errors on the transport", () => {
  it("classifies foreign errors by who is at fault", () => {
    const zerr = z.object({ a: z.string() }).safeParse({ a: 1 }).error;
    expect(thrownError(zerr)).toMatchObject({ code: "invalid_message", retryable: false });
    expect(thrownError(zerr).message).toContain("→ at a");
    expect(thrownError(new TimeoutError())).toMatchObject({ code: "timeout", retryable: true });
    expect(thrownError(new RequestError("no responders", { cause: new NoRespondersError("x.y") }))).toMatchObject({
      code: "unavailable",
      retryable: true,
    });
    expect(thrownError(new DOMException("stop", "AbortError"))).toMatchObject({ code: "cancelled", retryable: false });
    expect(thrownError(new TypeError("x is undefined")).toWire("planner")).toEqual({
      code: "internal",
      message: "x is undefined",
      retryable: false,
      component: "planner",
    });
    expect(thrownError("plain string")).toMatchObject({ code: "internal", message: "plain string" });
    expect(thrownError({ weird: true }).message).toContain('{"weird":true}');
    const ours = new AgentmeshError("tool_error", "down", { retryable: false });
    expect(thrownError(ours)).toBe(ours);
  });

  it("wraps NATS failures: timeouts stay timeouts, the rest is `unavailable`", () => {
    expect(natsFailure(new TimeoutError(), "publish")).toMatchObject({ code: "timeout", component: "nats" });
    expect(natsFailure(new Error("connection closed"), "publish")).toMatchObject({
      code: "unavailable",
      message: "publish: connection closed",
    });
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
