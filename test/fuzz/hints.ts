import fc from "fast-check";
import { ImageAttachment, SessionEvent, ToolName } from "@agentmesh/contracts";
import type { z } from "zod";
import type { Hints } from "./arbitrary.js";

/** The schema of field `field` of the union option whose `type` literal is `type`. */
function optionField(union: z.ZodType, type: string, field: string): z.ZodType {
  const options = (union as unknown as { _zod: { def: { options: z.ZodObject[] } } })._zod.def.options;
  const option = options.find((o) => (o.shape as Record<string, z.ZodType & { value?: unknown }>).type?.value === type);
  const schema = option?.shape[field] as z.ZodType | undefined;
  if (!schema) throw new Error(`no ${type}.${field} in the union`);
  return schema;
}

/**
 * Where random generation would (almost) never meet a refinement: a plan ends with `summarize`
 * (so tool names come from a short list half the time), a Vega-Lite spec names a view, and an
 * image attachment's url is an http(s) URL.
 * The tools listed are cheap to call and safe to call with any arguments.
 */
export const FUZZ_HINTS: Hints = new Map<z.ZodType, fc.Arbitrary<unknown>>([
  [ToolName, fc.constantFrom("summarize", "calculator", "web_search", "no_such_tool")],
  [optionField(SessionEvent, "visualization", "spec"), fc.record({ mark: fc.constantFrom("bar", "line", "point") })],
  [ImageAttachment.shape.url, fc.webUrl({ validSchemes: ["http", "https"] })],
]);
