// What OpenAI's strict structured output (response_format json_schema, strict: true) refuses in a
// schema, so a role test can check the schema its op really sends before a live endpoint does.

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The problems strict mode would refuse, each with its path; empty when it accepts the schema.
 * The root must be an object; every object lists all its properties as required and forbids
 * others (so a free-form object, `additionalProperties: {}`, is refused).
 */
export function strictSchemaProblems(schema: Schema): string[] {
  const problems: string[] = [];
  if (schema.type !== "object") problems.push("$: the root is not an object (an anyOf or oneOf root is refused)");
  const walk = (s: Schema, path: string): void => {
    if (s.type === "object" || isSchema(s.properties)) {
      const props = isSchema(s.properties) ? Object.keys(s.properties) : [];
      if (s.additionalProperties !== false) problems.push(`${path}: additionalProperties is not false`);
      const required = Array.isArray(s.required) ? (s.required as string[]) : [];
      if (props.some((p) => !required.includes(p))) problems.push(`${path}: not every property is required`);
      if (props.length === 0) problems.push(`${path}: an object without properties (free-form)`);
    }
    for (const [k, v] of Object.entries(s)) {
      if (k === "properties" && isSchema(v))
        for (const [name, p] of Object.entries(v)) if (isSchema(p)) walk(p, `${path}.${name}`);
      if ((k === "anyOf" || k === "oneOf") && Array.isArray(v))
        v.forEach((x, i) => isSchema(x) && walk(x, `${path}|${k}[${i}]`));
      if (k === "items" && isSchema(v)) walk(v, `${path}[]`);
    }
  };
  walk(schema, "$");
  return problems;
}
