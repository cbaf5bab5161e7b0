import { describe, expect, it } from "vitest";
import { classifyQuestion, findExpression, isGreeting, isVague } from "./classify.js";

describe("question classification", () => {
  it("finds the expression inside a question", () => {
    expect(findExpression("What is 12.5 * (3 + 4)?")).toBe("12.5 * (3 + 4)");
    expect(findExpression("compute 2^64")).toBe("2^64");
    expect(findExpression("What's 0.1 + 0.2?")).toBe("0.1 + 0.2");
    expect(findExpression("Please calculate 7 times 6.")).toBe("7 * 6");
    expect(findExpression("what is 1,000 * 3")).toBe("1000 * 3");
    expect(findExpression("calculate the square root of 16")).toBe("sqrt(16)");
    expect(findExpression("What is 15% of 80?")).toBe("15% * 80");
    expect(findExpression("2 ** 10")).toBe("2 ^ 10");
  });

  it("does not treat numbers in a non-arithmetic question as arithmetic", () => {
    expect(findExpression("Who won the 2014-2015 season?")).toBeNull();
    expect(findExpression("What happened in 1969?")).toBeNull();
    expect(findExpression("What is 42?")).toBeNull();
    expect(findExpression("What is import({}, {})?")).toBeNull();
    expect(findExpression("Is 2+2 bigger than 3+1?")).toBeNull();
  });

  it("recognises greetings and vague queries", () => {
    for (const g of ["hi", "Hello there!", "good morning", "hey", "How are you?"]) expect(isGreeting(g), g).toBe(true);
    for (const g of ["hi, what is CRISPR?", "hello world program in C"]) expect(isGreeting(g), g).toBe(false);
    for (const v of ["help", "something", "Tell me something interesting", "?", "I have a question"])
      expect(isVague(v), v).toBe(true);
    for (const v of ["What is CRISPR?", "help me with photosynthesis"]) expect(isVague(v), v).toBe(false);
  });

  it("classifies in the order arithmetic, greeting, vague, needs a model", () => {
    expect(classifyQuestion("hey, what is 3 x 4?")).toMatchObject({
      kind: "arithmetic",
      calc: { ok: true, value: "12" },
    });
    expect(classifyQuestion("hello")).toEqual({ kind: "greeting" });
    expect(classifyQuestion("help")).toEqual({ kind: "vague" });
    expect(classifyQuestion("What is the capital of France?")).toEqual({ kind: "needs_model" });
  });
});

describe("classifyQuestion remembers recent questions", () => {
  it("returns the same frozen class for the same question, and classifies another afresh", () => {
    const a = classifyQuestion("What is 12345 * 7 + 0.1?");
    expect(classifyQuestion("What is 12345 * 7 + 0.1?")).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(a.kind === "arithmetic" && Object.isFrozen(a.calc)).toBe(true);
    expect(classifyQuestion("What is 12346 * 7 + 0.1?")).not.toBe(a);
    expect(classifyQuestion("What is 12346 * 7 + 0.1?")).toMatchObject({
      kind: "arithmetic",
      source: "12346 * 7 + 0.1",
    });
  });

  it("keeps a bounded number of questions: an old one is classified again, to an equal class", () => {
    const first = classifyQuestion("What is 1 + 99999?");
    for (let i = 0; i < 300; i++) classifyQuestion(`What is ${i} + 2?`);
    const again = classifyQuestion("What is 1 + 99999?");
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  });
});
