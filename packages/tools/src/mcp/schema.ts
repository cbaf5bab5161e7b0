import { createRequire } from "node:module";
import type { Ajv, ValidateFunction } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { clipText } from "../text.js";

/** Checks arguments against a tool's JSON Schema: null when they pass, else what is wrong. */
export type ArgsCheck = (args: unknown) => string | null;

// formats are left to the server; unknown keywords are ignored rather than refused
const options = { allErrors: true, strict: false, validateFormats: false, logger: false } as const;
let validators: { readonly ajv07: Ajv; readonly ajv2020: Ajv2020 } | null = null;

/**
 * The two validators, made on the first schema: ajv (CommonJS, required here so the call stays
 * synchronous) is loaded only by a process that registers or calls an MCP tool.
 */
function ajvs(): { readonly ajv07: Ajv; readonly ajv2020: Ajv2020 } {
  if (validators) return validators;
  const require = createRequire(import.meta.url);
  const draft07 = require("ajv") as { Ajv: typeof Ajv };
  const draft2020 = require("ajv/dist/2020.js") as { Ajv2020: typeof Ajv2020 };
  validators = { ajv07: new draft07.Ajv(options), ajv2020: new draft2020.Ajv2020(options) };
  return validators;
}

/**
 * Compiles an MCP tool's input schema. Servers write draft-07 (the SDK's own) or 2020-12; one
 * without `$schema` is read as draft-07. Throws when the schema cannot be compiled.
 */
export function compileArgsCheck(schema: Readonly<Record<string, unknown>>): ArgsCheck {
  const { $schema, ...rest } = schema;
  const { ajv07, ajv2020 } = ajvs();
  const validate: ValidateFunction =
    typeof $schema === "string" && /2019-09|2020-12/.test($schema) ? ajv2020.compile(rest) : ajv07.compile(rest);
  return (args) => (validate(args) ? null : clipText(ajv07.errorsText(validate.errors, { dataVar: "arguments" }), 900));
}
