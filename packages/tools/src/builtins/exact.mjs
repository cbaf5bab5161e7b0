// The exact arithmetic evaluator: decimal arithmetic with 64 significant digits over a
// restricted syntax, with guards against inputs that are cheap to write and expensive to compute.
// It exists once: the calculator tool's worker evaluates with it (off the event loop), and the
// roles' offline behaviours classify and answer arithmetic with it. Plain JavaScript, so the
// worker runs it without a TypeScript loader; its types are in exact.d.mts.
import { createRequire } from "node:module";

/** Significant digits every offline computation carries. */
export const CALC_PRECISION = 64;

// Guards against inputs that are cheap to write and expensive to compute or print: a long
// expression, a result with an enormous exponent (10^10^10 is fast to compute but would print a
// 10-billion-character string), or a trig argument that needs huge precision to reduce.
const MAX_EXPRESSION_CHARS = 500;
const MAX_DEPTH = 40;
const MAX_DECIMAL_EXPONENT = 100_000;
const MAX_TRIG_ARGUMENT = 1e6;
const PLAIN_NOTATION_MAX_EXPONENT = 80;
const PLAIN_NOTATION_MIN_EXPONENT = -30;

/**
 * mathjs for the evaluator, loaded on the first evaluation: its one-file build
 * (`mathjs/lib/browser/math.js`, UMD, which Node loads as CommonJS). The package's ESM entry is
 * hundreds of modules and about a second of CPU to load, this file a few tens of ms, and importing
 * the tools package (every agent process does) loads neither. The build is minified, so mathjs'
 * `typeOf` names its classes wrongly; the evaluator never asks (the calculator's worker, which
 * does, imports the package). The build's default instance carries `create` bound to every
 * factory, so `create(config)` is a fresh, fully featured instance.
 */
function loadMathjs() {
  return createRequire(import.meta.url)("mathjs/lib/browser/math.js");
}

/** The evaluator's mathjs instance and its parser, made by `ready()` on the first evaluation. */
let math;
let parse;

function ready() {
  if (math) return;
  const instance = loadMathjs().create({ number: "BigNumber", precision: CALC_PRECISION });
  // Keep our own handle on the parser before the instance's dangerous entry points are disabled.
  parse = instance.parse.bind(instance);
  const refuse = (name) => () => {
    throw new Error(`${name} is disabled in the exact evaluator`);
  };
  // Defence in depth: the evaluator below never compiles a node, so these are unreachable from an
  // expression anyway; disabling them means a future change that does compile cannot reach them.
  instance.import(
    Object.fromEntries(
      [
        "import",
        "createUnit",
        "evaluate",
        "parse",
        "compile",
        "simplify",
        "derivative",
        "resolve",
        "reviver",
        "chain",
      ].map((n) => [n, refuse(n)]),
    ),
    { override: true },
  );
  math = instance;
}

const big = (v) => math.bignumber(v);

const UNARY = {
  unaryMinus: (x) => x.neg(),
  unaryPlus: (x) => x,
};

const BINARY = {
  add: (x, y) => x.plus(y),
  subtract: (x, y) => x.minus(y),
  multiply: (x, y) => x.times(y),
  divide: (x, y) => {
    if (y.isZero()) throw new CalcError("division by zero is undefined");
    return x.div(y);
  },
  mod: (x, y) => {
    if (y.isZero()) throw new CalcError("modulo by zero is undefined");
    // Floored modulo (the sign follows the divisor), as mathjs and most calculators define it.
    return math.mod(x, y);
  },
  pow: power,
};

/** Functions an expression may call, with their arity; nothing else is callable. */
const FUNCTIONS = {
  sqrt: { arity: [1], fn: ([x]) => nonNegative(x, "sqrt").sqrt() },
  cbrt: { arity: [1], fn: ([x]) => (x.isNeg() ? x.neg().cbrt().neg() : x.cbrt()) },
  abs: { arity: [1], fn: ([x]) => x.abs() },
  exp: { arity: [1], fn: ([x]) => bounded(x, MAX_DECIMAL_EXPONENT * 2.3, "exp").exp() },
  ln: { arity: [1], fn: ([x]) => positive(x, "ln").ln() },
  log: {
    arity: [1, 2],
    fn: ([x, b]) => (b ? positive(x, "log").log(positive(b, "log base")) : positive(x, "log").ln()),
  },
  log10: { arity: [1], fn: ([x]) => positive(x, "log10").log(10) },
  log2: { arity: [1], fn: ([x]) => positive(x, "log2").log(2) },
  floor: { arity: [1], fn: ([x]) => x.floor() },
  ceil: { arity: [1], fn: ([x]) => x.ceil() },
  round: { arity: [1, 2], fn: ([x, d]) => (d ? x.toDecimalPlaces(smallInt(d, "round digits")) : x.round()) },
  sin: { arity: [1], fn: ([x]) => bounded(x, MAX_TRIG_ARGUMENT, "sin").sin() },
  cos: { arity: [1], fn: ([x]) => bounded(x, MAX_TRIG_ARGUMENT, "cos").cos() },
  tan: { arity: [1], fn: ([x]) => bounded(x, MAX_TRIG_ARGUMENT, "tan").tan() },
  asin: { arity: [1], fn: ([x]) => bounded(x, 1, "asin").asin() },
  acos: { arity: [1], fn: ([x]) => bounded(x, 1, "acos").acos() },
  atan: { arity: [1], fn: ([x]) => x.atan() },
};

const CONSTANTS = {
  pi: () => math.bignumber(math.pi),
  e: () => math.bignumber(math.e),
};

/** Names an expression may mention: the callable functions and the constants. */
export const CALC_NAMES = new Set([...Object.keys(FUNCTIONS), ...Object.keys(CONSTANTS), "mod"]);

/** A refusal the user should see (bad input), as opposed to a bug. */
class CalcError extends Error {}
/** Input that is not plain arithmetic (units, matrices, assignments, other functions): not for this evaluator. */
class NotArithmetic extends CalcError {}

function nonNegative(x, what) {
  if (x.isNeg()) throw new CalcError(`${what} of a negative number is not a real number`);
  return x;
}
function positive(x, what) {
  if (!x.gt(0)) throw new CalcError(`${what} is only defined for positive numbers`);
  return x;
}
function bounded(x, limit, what) {
  if (x.abs().gt(limit)) throw new CalcError(`${what} argument is outside the supported range (|x| ≤ ${limit})`);
  return x;
}
function smallInt(x, what) {
  if (!x.isInteger() || x.isNeg() || x.gt(CALC_PRECISION))
    throw new CalcError(`${what} must be an integer from 0 to ${CALC_PRECISION}`);
  return x.toNumber();
}

function power(x, y) {
  if (x.isZero() && y.isNeg()) throw new CalcError("zero to a negative power is undefined");
  if (x.isNeg() && !y.isInteger()) throw new CalcError("a negative number to a fractional power is not a real number");
  // Estimate the size of the result before computing it: |x^y| = 10^(y·log10|x|).
  if (!x.isZero() && !x.abs().eq(1)) {
    const digits = y.times(x.abs().log(10)).abs();
    if (digits.gt(MAX_DECIMAL_EXPONENT))
      throw new CalcError(`the result has about 10^${digits.toFixed(0)} magnitude, too large to compute`);
  }
  return x.pow(y);
}

function evalNode(node, depth) {
  if (depth > MAX_DEPTH) throw new CalcError("the expression is nested too deeply");
  switch (node.type) {
    case "ConstantNode": {
      const value = node.value;
      if (math.isBigNumber(value)) return value;
      // The parser writes the 100 of a percentage ("15%") as a plain number.
      if (typeof value === "number" && Number.isFinite(value)) return big(String(value));
      throw new NotArithmetic("only numbers are allowed");
    }
    case "ParenthesisNode":
      return evalNode(node.content, depth + 1);
    case "SymbolNode": {
      const name = node.name;
      const constant = Object.hasOwn(CONSTANTS, name) ? CONSTANTS[name] : undefined;
      if (!constant) throw new NotArithmetic(`unknown name "${name}"`);
      return constant();
    }
    case "OperatorNode": {
      const { fn, args } = node;
      const values = args.map((a) => evalNode(a, depth + 1));
      if (values.length === 1 && Object.hasOwn(UNARY, fn)) return UNARY[fn](values[0]);
      if (values.length === 2 && Object.hasOwn(BINARY, fn)) return BINARY[fn](values[0], values[1]);
      throw new NotArithmetic(`the operator "${node.op}" is not supported`);
    }
    case "FunctionNode": {
      const { fn, args } = node;
      const name = fn.type === "SymbolNode" ? fn.name : "";
      const def = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
      if (!def) throw new NotArithmetic(`the function "${name || fn.toString()}" is not allowed`);
      if (!def.arity.includes(args.length)) throw new CalcError(`${name} takes ${def.arity.join(" or ")} argument(s)`);
      return def.fn(args.map((a) => evalNode(a, depth + 1)));
    }
    default:
      // Assignments, accessors, objects, matrices, ranges, blocks, conditionals, strings: refused.
      throw new NotArithmetic(`"${node.type}" is not allowed in arithmetic`);
  }
}

/** Formats a value: plain decimal notation unless its exponent is extreme. */
function formatValue(v) {
  const exponent = v.e;
  if (exponent <= PLAIN_NOTATION_MAX_EXPONENT && exponent >= PLAIN_NOTATION_MIN_EXPONENT) return v.toFixed();
  return v.toExponential();
}

/** Prints numbers in plain notation so the normalised expression reads like the question. */
function printConstant(node) {
  if (node.type !== "ConstantNode") return undefined;
  const value = node.value;
  return math.isBigNumber(value) ? formatValue(value) : undefined;
}

/**
 * Evaluates an arithmetic expression exactly (decimal arithmetic with CALC_PRECISION significant
 * digits, so 0.1 + 0.2 is 0.3 and 18-digit products are exact). Only numbers, + - * / ^ % mod,
 * parentheses, pi, e and a short list of functions are allowed; everything else is refused.
 */
export function evaluateExact(input) {
  ready();
  const source = input.trim();
  if (source.length === 0)
    return { ok: false, expression: source, reason: "the expression is empty", arithmetic: true };
  if (source.length > MAX_EXPRESSION_CHARS)
    return { ok: false, expression: source.slice(0, 80), reason: "the expression is too long", arithmetic: false };
  let node;
  try {
    node = parse(source);
  } catch (err) {
    return {
      ok: false,
      expression: source,
      reason: `it is not a valid expression (${err.message})`,
      arithmetic: false,
    };
  }
  const expression = node.toString({ handler: printConstant });
  try {
    const value = evalNode(node, 0);
    if (!value.isFinite())
      return { ok: false, expression, reason: "the result is not a finite number", arithmetic: true };
    // A value that fills every significant digit was (almost certainly) rounded: 1/3, sqrt(2).
    const digits = value.isZero() ? 0 : value.sd();
    return { ok: true, expression, value: formatValue(value), exact: digits < CALC_PRECISION };
  } catch (err) {
    if (err instanceof CalcError)
      return { ok: false, expression, reason: err.message, arithmetic: !(err instanceof NotArithmetic) };
    return { ok: false, expression, reason: `it could not be evaluated (${err.message})`, arithmetic: true };
  }
}

/** True when two decimal strings denote the same number (used to check a stated answer). */
export function sameNumber(a, b) {
  ready();
  try {
    return big(a).eq(big(b));
  } catch {
    return false;
  }
}
