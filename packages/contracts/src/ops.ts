import type { z } from "zod";
import { compiled } from "./compiled.js";
import { formatZodError } from "./errors.js";
import { ROLE_NAMES, ROLES, type OpName, type RoleName, type Roles } from "./roles.js";
import { SubmitReply, SubmitRequest } from "./messages.js";
import type { Naming } from "./subjects.js";

type Schemas<R extends RoleName, O extends OpName<R>> = Roles[R][O] extends {
  request: infer Q extends z.ZodType;
  response: infer S extends z.ZodType;
}
  ? { request: Q; response: S }
  : never;

/** What a caller hands an op (defaults not yet filled). */
export type OpInput<R extends RoleName, O extends OpName<R>> = z.input<Schemas<R, O>["request"]>;
/** What an op's answer is once its response schema accepted it. */
export type OpOutput<R extends RoleName, O extends OpName<R>> = z.output<Schemas<R, O>["response"]>;

/**
 * One op of the role registry as a value: the role that serves it, its name, the subject its
 * tasks go to, and the schemas of what it takes and returns. Dispatch, results and requests are
 * typed by it, so a caller never names an op by two loose strings.
 */
export interface Op<R extends RoleName = RoleName, O extends OpName<R> = OpName<R>> {
  readonly role: R;
  readonly op: O;
  readonly description: string;
  readonly request: Schemas<R, O>["request"];
  readonly response: Schemas<R, O>["response"];
  /** The task subject of this op under a naming table's prefix. */
  subject(names: Pick<Naming, "task">): string;
}

/** Every op value, by role and op name: `OPS.planner.plan`. */
export type Ops = { readonly [R in RoleName]: { readonly [O in OpName<R>]: Op<R, O> } };

/** Any one op of the registry (a union over every role and op). */
export type AnyOp = { [R in RoleName]: { [O in OpName<R>]: Op<R, O> }[OpName<R>] }[RoleName];

/**
 * An op's validated answer, tagged with its role and op: a union over the registry, so checking
 * `role` and `op` narrows `output` to that op's response type.
 */
export type OpResult = {
  [R in RoleName]: {
    [O in OpName<R>]: { readonly role: R; readonly op: O; readonly output: OpOutput<R, O> };
  }[OpName<R>];
}[RoleName];

type LooseOp = { description: string; request: z.ZodType; response: z.ZodType };

function buildOps(): Ops {
  const table: Record<string, Record<string, Op<RoleName, never>>> = {};
  for (const role of ROLE_NAMES) {
    const byOp: Record<string, Op<RoleName, never>> = {};
    for (const [name, def] of Object.entries(ROLES[role] as Record<string, LooseOp>)) {
      byOp[name] = Object.freeze({
        role,
        op: name as never,
        description: def.description,
        request: def.request as never,
        response: def.response as never,
        subject: (names: Pick<Naming, "task">) => names.task(role, name),
      });
    }
    table[role] = Object.freeze(byOp);
  }
  // The mapped type is what the loop above builds, one entry per (role, op) of ROLES.
  return Object.freeze(table) as unknown as Ops;
}

/** The role registry as op values. */
export const OPS: Ops = buildOps();

/** Looks up an op by its role and name (as they travel on the wire); null when either is unknown. */
export function findOp(role: string, op: string): AnyOp | null {
  const byRole: Record<string, AnyOp> | undefined = Object.hasOwn(OPS, role)
    ? (OPS as unknown as Record<string, Record<string, AnyOp>>)[role]
    : undefined;
  if (!byRole || !Object.hasOwn(byRole, op)) return null;
  return byRole[op] ?? null;
}

/**
 * Checks an agent's output against its op's response schema, once, where it enters the
 * coordinator: the result is typed by its op from then on. Unknown ops and invalid output come
 * back as a reason.
 */
export function parseOpOutput(
  role: string,
  op: string,
  output: unknown,
): { readonly ok: true; readonly result: OpResult } | { readonly ok: false; readonly why: string } {
  const def = findOp(role, op);
  if (!def) return { ok: false, why: `no schema for ${role}.${op}` };
  const parsed = compiled<z.ZodType>(def.response).safeParse(output);
  if (!parsed.success) return { ok: false, why: `${role}.${op} output is invalid: ${formatZodError(parsed.error)}` };
  // The response schema of (role, op) accepted it, which is what OpResult pairs with that op.
  return { ok: true, result: { role: def.role, op: def.op, output: parsed.data } as OpResult };
}

/** Every (role, op) pair, for provisioning and discovery. */
export function listOps(): Array<{ role: RoleName; op: string; description: string }> {
  return ROLE_NAMES.flatMap((role) =>
    Object.values(OPS[role] as Record<string, AnyOp>).map((o) => ({ role, op: o.op, description: o.description })),
  );
}

/**
 * A request/reply endpoint: its subject and the schemas of what it takes and answers, so a caller's
 * body is typed and its reply is checked once, by the request itself.
 */
export interface Endpoint<Q extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  readonly subject: string;
  readonly request: Q;
  readonly response: R;
}

/** The coordinator's submit endpoint under a naming table. */
export const submitEndpoint = (names: Pick<Naming, "submit">): Endpoint<typeof SubmitRequest, typeof SubmitReply> => ({
  subject: names.submit,
  request: SubmitRequest,
  response: SubmitReply,
});
