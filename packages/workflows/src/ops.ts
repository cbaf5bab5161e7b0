import type { Op, OpInput, OpName, RoleName } from "@agentmesh/contracts";
import type { ResultInput, TaskFields, TaskOf, WorkflowInput } from "./types.js";

/** A task of one op, its input typed by that op's request schema. */
export function task<R extends RoleName, O extends OpName<R>>(
  op: Op<R, O>,
  input: OpInput<R, O>,
  fields: TaskFields,
): TaskOf<R, O> {
  return { ...fields, role: op.role, op: op.op, input };
}

/** True when the input is a result of this op: its `output` is then that op's response type. */
export function isResultOf<R extends RoleName, O extends OpName<R>>(
  input: WorkflowInput,
  op: Op<R, O>,
): input is Extract<ResultInput, { readonly role: R; readonly op: O }> {
  return input.kind === "result" && input.role === op.role && input.op === op.op;
}
