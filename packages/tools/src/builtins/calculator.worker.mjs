// Worker entry of the `calculator` tool (plain JS so it needs no TypeScript loader). mathjs runs
// here, off the agent's event loop; the pool terminates this worker at the call's deadline.
import { parentPort } from "node:worker_threads";
import { evaluateExact } from "./exact.mjs";

// The worker serves every session, so no call may change what a later one computes. mathjs'
// expression parser never calls JS eval, but these functions reach the parser itself or change
// the shared instance (new units, imports); the mathjs security guide disables them by
// overriding them in the instance the expressions see.
const DISABLED = [
  "import",
  "createUnit",
  "reviver",
  "replacer",
  "evaluate",
  "parse",
  "compile",
  "simplify",
  "simplifyConstant",
  "simplifyCore",
  "derivative",
  "resolve",
  "rationalize",
  "leafCount",
  "symbolicEqual",
  "chain",
  "help",
  "parser",
];
const disabled = (name) => () => {
  throw new Error(`function ${name} is not available in the calculator`);
};

/**
 * mathjs with every function is ~40 MiB of heap (~70 MiB of RSS in this worker), and plain
 * arithmetic never needs it: it is loaded on the first expression the exact evaluator leaves to
 * it (that call pays the load, ~0.5 s of CPU), once per worker.
 */
let loading = null;
function mathjs() {
  loading ??= import("mathjs").then(({ all, create }) => {
    // BigNumber with 64 significant digits: 0.1 + 0.2 is exactly 0.3 and an 18-digit by 18-digit
    // product keeps all 36 digits.
    const math = create(all, { number: "BigNumber", precision: 64 });
    // Our own handles, kept before the expression language loses them below.
    const evaluate = math.evaluate;
    const setConfig = math.config;
    const baseline = Object.freeze(setConfig());
    const baselineJson = JSON.stringify(baseline);
    math.import(Object.fromEntries(DISABLED.map((n) => [n, disabled(n)])), { override: true });
    return {
      math,
      evaluate,
      // Defence in depth for a route not known today: every call starts from the baseline config.
      resetConfig() {
        if (JSON.stringify(setConfig()) !== baselineJson) setConfig(baseline);
      },
    };
  });
  return loading;
}

// `config` (number type, precision) cannot be overridden the same way: mathjs' own lazily built
// functions and constants read the instance's config through that name (pi turns into a plain
// number). The parser looks a name up in the scope first, so each call's scope shadows it.
const scope = () => new Map([["config", disabled("config")]]);

const FORMAT = { precision: 64, lowerExp: -20, upperExp: 65 };

const clip = (text, maxChars) => ({
  result: text.length > maxChars ? text.slice(0, maxChars) : text,
  truncated: text.length > maxChars,
});

async function run({ expression, maxChars }) {
  // Plain arithmetic goes through the one exact evaluator (the same the offline roles use), so the
  // tool and an offline answer agree digit for digit and its refusals (1/0, 10^10^10) hold here too.
  const exact = evaluateExact(expression);
  if (exact.ok) return { ok: true, value: { ...clip(exact.value, maxChars), type: "BigNumber" } };
  if (exact.arithmetic)
    return { ok: false, code: "invalid_tool_input", message: `cannot evaluate: ${exact.reason}`.slice(0, 1000) };
  // Anything else (units, matrices, other functions) is mathjs' full expression language.
  const { math, evaluate, resetConfig } = await mathjs();
  resetConfig();
  let value;
  try {
    // a fresh scope per call: `x = 3` in one call is not seen by the next
    value = evaluate(expression, scope());
  } catch (err) {
    const message = err instanceof RangeError ? "the expression recursed too deeply" : String(err?.message ?? err);
    return { ok: false, code: "invalid_tool_input", message: `cannot evaluate: ${message}`.slice(0, 1000) };
  }
  const type = math.typeOf(value);
  const shown = type === "ResultSet" ? value.entries.at(-1) : value;
  const text = shown === undefined ? "" : math.format(shown, FORMAT);
  return { ok: true, value: { ...clip(text, maxChars), type } };
}

parentPort.on("message", ({ id, payload }) => {
  // one call at a time per worker (the pool's rule), so an await here reorders nothing
  void run(payload).then((reply) => parentPort.postMessage({ ...reply, id }));
});
