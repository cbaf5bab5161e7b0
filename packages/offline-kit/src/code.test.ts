import { describe, expect, it } from "vitest";
import { findCode, guessLanguage } from "./code.js";

describe("findCode", () => {
  it("takes a tagged block's language from its tag (python, py, python3, js, javascript, node)", () => {
    expect(findCode("Run this:\n```python\nprint(sum(range(10)))\n```")).toEqual({
      language: "python",
      code: "print(sum(range(10)))",
    });
    expect(findCode("```py\nx = 1\nprint(x)\n```")).toEqual({ language: "python", code: "x = 1\nprint(x)" });
    expect(findCode("```Python3\nprint(1)\n```")?.language).toBe("python");
    expect(findCode("```js\nconsole.log(6 * 7)\n```")).toEqual({ language: "javascript", code: "console.log(6 * 7)" });
    expect(findCode("```javascript\nlet a = 2\n```")?.language).toBe("javascript");
    expect(findCode("```node\n1 + 1\n```")?.language).toBe("javascript");
  });

  it("guesses an untagged block's language: Python unless it has a mark of JavaScript", () => {
    expect(findCode("```\nfor i in range(3):\n    print(i)\n```")).toEqual({
      language: "python",
      code: "for i in range(3):\n    print(i)",
    });
    expect(findCode("```\nconst xs = [1, 2, 3];\nconsole.log(xs.map((x) => x * 2));\n```")?.language).toBe(
      "javascript",
    );
    expect(findCode("~~~\nprint('tilde fence')\n~~~")).toEqual({ language: "python", code: "print('tilde fence')" });
  });

  it("skips blocks it cannot run (other tags, blank, untagged data) and takes the first it can", () => {
    const text =
      "Data:\n```csv\na,b\n1,2\n```\nand\n```\n[1, 2]\n```\n```\nx,y\n3,4\n```\n```python\n\n```\n```bash\nls\n```\n```js\nconsole.log('second')\n```\n```python\nprint('third')\n```";
    expect(findCode(text)).toEqual({ language: "javascript", code: "console.log('second')" });
  });

  it("is null without a fenced block, or with an unclosed one", () => {
    expect(findCode("Write a function that reverses a string")).toBeNull();
    expect(findCode("print('inline code is not a block')")).toBeNull();
    expect(findCode("```python\nprint('never closed')")).toBeNull();
  });
});

describe("guessLanguage", () => {
  it("sees JavaScript in console calls, declarations, arrows, strict equality and semicolons", () => {
    for (const js of ["console.log(1)", "let x = 1", "function f() {}", "[1].map(x => x)", "a === b", "x = 1;"])
      expect(guessLanguage(js), js).toBe("javascript");
    for (const py of ["print(1)", "def f():\n    return 1", "import json\njson.dumps({})", "x = [i for i in range(3)]"])
      expect(guessLanguage(py), py).toBe("python");
  });
});
