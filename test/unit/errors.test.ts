import { describe, expect, it } from "vitest";
import { AgentmeshError, ERROR_CODES, ErrorCode, WireError, formatZodError } from "@agentmesh/contracts";

describe("AgentmeshError", () => {
  it("takes fault and retryability from the code table unless told otherwise", () => {
    for (const code of ErrorCode.options) {
      const e = new AgentmeshError(code, "m");
      expect(e).toBeInstanceOf(Error);
      expect(e.name).toBe("AgentmeshError");
      expect(e.code).toBe(code);
      expect(e.fault).toBe(ERROR_CODES[code].fault);
      expect(e.retryable).toBe(ERROR_CODES[code].retryable);
      expect(e.component).toBeNull();
    }
    // a code whose retryability varies with the case: a killed runaway will time out again
    const killed = new AgentmeshError("timeout", "killed at its limit", { retryable: false });
    expect(killed.retryable).toBe(false);
    expect(killed.fault).toBe("timeout");
    expect(new AgentmeshError("internal", "m", { retryable: true }).retryable).toBe(true);
  });

  it("round-trips every code through the wire shape, keeping message, retryability and component", () => {
    for (const code of ErrorCode.options) {
      for (const retryable of [true, false]) {
        const e = new AgentmeshError(code, `boom ${code}`, { retryable, component: "critic" });
        const wire = e.toWire();
        expect(WireError.parse(wire)).toEqual(wire);
        expect(wire).toEqual({ code, message: `boom ${code}`, retryable, component: "critic" });
        const back = AgentmeshError.fromWire(JSON.parse(JSON.stringify(wire)));
        expect(back).toBeInstanceOf(AgentmeshError);
        expect(back.toWire()).toEqual(wire);
        expect(back.fault).toBe(ERROR_CODES[code].fault);
      }
    }
    expect(new AgentmeshError("tool_error", "x").toWire()).toMatchObject({ component: null });
  });

  it("names the reporting component on the wire only when the error names none", () => {
    expect(new AgentmeshError("cancelled", "c").toWire("planner").component).toBe("planner");
    expect(new AgentmeshError("unavailable", "u", { component: "nats" }).toWire("planner").component).toBe("nats");
  });

  it("bounds message and component so the wire form always fits WireError", () => {
    const w = new AgentmeshError("tool_error", "x".repeat(10_000), { component: "c".repeat(500) }).toWire();
    expect(w.message).toHaveLength(4000);
    expect(w.component).toHaveLength(100);
    expect(WireError.safeParse(w).success).toBe(true);
  });

  it("turns a malformed wire value into `internal` instead of throwing", () => {
    for (const bad of [{ code: "nope", message: 1 }, null, "timeout", { code: "timeout", message: "m" }]) {
      const e = AgentmeshError.fromWire(bad);
      expect(e.code).toBe("internal");
      expect(e.retryable).toBe(false);
      expect(e.message).toMatch(/^malformed wire error: /);
    }
  });

  it("keeps our own errors and makes anything else thrown `internal`, not retried", () => {
    const ours = new AgentmeshError("needs_model", "no model");
    expect(AgentmeshError.from(ours)).toBe(ours);
    expect(AgentmeshError.from(ours, "bug in x.y")).toBe(ours);
    const bug = new TypeError("x is undefined");
    const e = AgentmeshError.from(bug);
    expect(e).toMatchObject({
      code: "internal",
      retryable: false,
      fault: "internal",
      message: "x is undefined",
      cause: bug,
    });
    expect(AgentmeshError.from(bug, "bug in planner.plan").message).toBe("bug in planner.plan: x is undefined");
    expect(AgentmeshError.from(new Error("")).message).toBe("Error");
    expect(AgentmeshError.from("plain string")).toMatchObject({ code: "internal", message: "plain string" });
    expect(AgentmeshError.from({ weird: true }).message).toBe('non-error thrown: {"weird":true}');
    expect(AgentmeshError.from(undefined)).toMatchObject({ code: "internal", message: "non-error thrown: undefined" });
    // an error-shaped value is not ours: only the class carries a code
    expect(AgentmeshError.from(Object.assign(new Error("slow"), { code: "timeout", retryable: true })).code).toBe(
      "internal",
    );
  });
});

/** The error of a parse that must fail (the root has no zod of its own: contracts' schemas make them). */
function failed<E>(r: { readonly error?: E }): E {
  if (r.error === undefined) throw new Error("expected the parse to fail");
  return r.error;
}

describe("formatZodError", () => {
  const error = failed(
    WireError.array().safeParse([
      { code: "timeout", message: 1, retryable: "no", component: null },
      { code: "nope", message: "m", retryable: true, component: null },
    ]),
  );

  it("lists every problem with where it is, on one line", () => {
    const text = formatZodError(error);
    expect(text).not.toContain("\n");
    expect(text).toContain("Invalid input: expected string, received number → at [0].message");
    expect(text).toContain("→ at [0].retryable");
    expect(text).toContain("→ at [1].code");
    expect(text.split("; ")).toHaveLength(3);
  });

  it("leaves out the location of a problem at the root", () => {
    expect(formatZodError(failed(ErrorCode.safeParse(42)))).toMatch(
      /^Invalid option: expected one of "invalid_query"\|.*"internal"$/,
    );
  });

  it("cuts a long list to the given length", () => {
    const many = failed(ErrorCode.array().safeParse(Array.from({ length: 500 }, (_, i) => i)));
    const text = formatZodError(many, 200);
    expect(text).toHaveLength(200);
    expect(text.endsWith("…")).toBe(true);
    expect(formatZodError(many).length).toBeLessThanOrEqual(1000);
  });
});
