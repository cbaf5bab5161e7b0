import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { clipText } from "../text.js";

/** Checks arguments against a tool's JSON Schema: null when they pass, else what is wrong. */
export type ArgsCheck = (args: unknown) => string | null;

// formats are left to the server; unknown keywords are ignored rather than refused
const options = { allErrors: true, strict: false, validateFormats: false, logger: false } as const;
const ajv07 = new Ajv(options);
const ajv2020 = new Ajv2020(options);

/**
 * Compiles an MCP tool's input schema. Servers write draft-07 (the SDK's own) or 2020-12; one
 * without `$schema` is read as draft-07. Throws when the schema cannot be compiled.
 */
export function compileArgsCheck(schema: Readonly<Record<string, unknown>>): ArgsCheck {
  const { $schema, ...rest } = schema;
  const validate: ValidateFunction = typeof $schema === "string" && /2019-09|2020-12/.test($schema) ? ajv2020.compile(rest) : ajv07.compile(rest);
  return (args) => (validate(args) ? null : clipText(ajv07.errorsText(validate.errors, { dataVar: "arguments" }), 900));
}
