import { ENV_VARS, METRIC_CATALOGUE } from "@agentmesh/service-kit";
import { ERROR_CODES, SessionEvent, WORKFLOW_OPTIONS, WorkflowName, naming } from "@agentmesh/contracts";
import { API_ERRORS, SESSION_RESULT_FIELDS } from "@agentmesh/gateway";

// The reference tables of docs/, generated from the code. test/unit/readme.test.ts checks that each
// page named in DOC_PAGES holds exactly these rows; `pnpm tsx scripts/doc-tables.ts --write`
// rewrites them from the code.

/** Rows of the configuration table. */
export function envRows(): string[] {
  return ENV_VARS.map(
    (v) =>
      `| \`${v.name}\` | ${v.default.startsWith("—") ? v.default : `\`${v.default}\``} | ${v.usedBy.join(", ")} | ${v.description} |`,
  );
}

/** Rows of the error-code table. */
export function errorRows(): string[] {
  return Object.entries(ERROR_CODES).map(
    ([code, d]) => `| \`${code}\` | ${d.fault} | ${d.retryable ? "yes" : "no"} | ${d.summary} |`,
  );
}

/** Rows of the subject table, for the default prefix. */
export function subjectRows(): string[] {
  const n = naming("agentmesh");
  const sid = "SESSIONID";
  const s = (subject: string) => subject.replace(sid, "<sid>");
  return [
    `| submit a query | \`${n.submit}\` | core request/reply, queue group \`coordinators\` |`,
    `| session inbox (sender: a role, \`coordinator\` or \`client\`) | \`${s(n.inbox(sid, "sender")).replace(/\.sender$/, ".<sender>")}\` | JetStream \`${n.streams.inbox}\`, consumer \`${n.consumers.coordinator}\` |`,
    `| agent tasks | \`${n.task("<role>", "<op>")}\` | JetStream \`${n.streams.tasks}\` (work queue), consumer \`${n.consumers.role("<role>")}\` |`,
    `| lifecycle events | \`${s(n.events(sid))}\` | JetStream \`${n.streams.events}\` (replayable) |`,
    `| token deltas (the role that wrote them) | \`${s(n.tokens(sid, "role")).replace(/\.role$/, ".<role>")}\` | JetStream \`${n.streams.events}\` (replayable, in the events' order) |`,
    `| cancel in-flight work | \`${s(n.cancel(sid))}\` | core NATS |`,
    `| direct op call (debugging; off unless \`AGENTMESH_RPC=1\`) | \`${n.rpc("<role>", "<op>")}\` | core request/reply |`,
    `| dead letters | \`${n.deadLetter("<role>")}\`, \`${n.deadLetter("inbox")}\` | JetStream \`${n.streams.dead}\` |`,
    `| cancelled sessions | \`$KV.${n.kv.cancelled}.<sid>\` | JetStream KV bucket \`${n.kv.cancelled}\` (coordinator writes, agents read; TTL \`AGENTMESH_CANCELLED_TTL_MS\`) |`,
  ];
}

/** Rows of the event table: each type of the SessionEvent union and its own fields (the stamp every event has left out). */
export function eventRows(): string[] {
  const stamp = new Set(["v", "session_id", "version", "index", "timestamp", "type"]);
  return SessionEvent.options.map((o) => {
    const fields = Object.keys(o.shape).filter((k) => !stamp.has(k));
    return `| \`${o.shape.type.value}\` | ${fields.map((f) => `\`${f}\``).join(", ")} |`;
  });
}

/** Rows of the gateway's HTTP error table: each code and its status. */
export function gatewayErrorRows(): string[] {
  return Object.entries(API_ERRORS).map(([code, status]) => `| \`${code}\` | ${status} |`);
}

/** Rows of the metrics table: each metric of the catalogue with its type, labels and exporters. */
export function metricRows(): string[] {
  return Object.values(METRIC_CATALOGUE).map(
    (m) =>
      `| \`${m.name}\` | ${m.type} | ${m.labels.length ? m.labels.map((l) => `\`${l}\``).join(", ") : "—"} | ${m.by} | ${m.help} |`,
  );
}

/** Rows of the workflow options table: each option and the workflow it belongs to. */
export function workflowOptionRows(): string[] {
  return Object.entries(WORKFLOW_OPTIONS).map(([option, workflow]) => `| \`${option}\` | \`${workflow}\` |`);
}

/** Rows of a workflow's session result table: each field of its session's `result` and what it holds. */
export function sessionResultRows(workflow: WorkflowName): string[] {
  return Object.entries(SESSION_RESULT_FIELDS[workflow]).map(([field, meaning]) => `| \`${field}\` | ${meaning} |`);
}

const RESULT_TABLES = Object.fromEntries(
  WorkflowName.options.map((w) => [`session-result-${w}`, () => sessionResultRows(w)]),
);

/** Every generated table by its marker name in its page (`<!-- table:NAME -->` … `<!-- /table:NAME -->`). */
export const TABLES: Record<string, () => string[]> = {
  config: envRows,
  errors: errorRows,
  subjects: subjectRows,
  events: eventRows,
  "gateway-errors": gatewayErrorRows,
  metrics: metricRows,
  "workflow-options": workflowOptionRows,
  ...RESULT_TABLES,
};

/** The page, from the repository root, that holds each table of TABLES. */
export const DOC_PAGES: Record<string, string> = {
  config: "docs/configuration.md",
  errors: "docs/errors.md",
  subjects: "docs/subjects-and-streams.md",
  events: "docs/events.md",
  "gateway-errors": "docs/gateway.md",
  metrics: "docs/tracing-and-metrics.md",
  "workflow-options": "docs/session-results.md",
  ...Object.fromEntries(Object.keys(RESULT_TABLES).map((name) => [name, "docs/session-results.md"])),
};

/** `doc` with the rows of table `name` replaced by `rows` (its header and separator lines kept). */
export function writeTable(doc: string, name: string, rows: readonly string[]): string {
  return doc.replace(
    new RegExp(`(<!-- table:${name} -->\\n(?:\\|[^\\n]*\\n){2})(?:\\| [^\\n]*\\n)*`),
    (_m, head: string) => `${head}${rows.join("\n")}\n`,
  );
}

/** The rows between a table's markers in a document; null when the markers are missing. */
export function tableRows(doc: string, name: string): string[] | null {
  const m = new RegExp(`<!-- table:${name} -->\\n([\\s\\S]*?)<!-- /table:${name} -->`).exec(doc);
  if (!m) return null;
  return (m[1] ?? "")
    .split("\n")
    .filter(
      (l) =>
        l.startsWith("| ") && !l.startsWith("| ---") && !/^\| (variable|code|what|type|metric|option|field) \|/.test(l),
    );
}

// `pnpm tsx scripts/doc-tables.ts --write` rewrites the rows in each page of DOC_PAGES from the code.
if (process.argv[1]?.endsWith("doc-tables.ts") && process.argv.includes("--write")) {
  const { readFileSync, writeFileSync } = await import("node:fs");
  for (const [name, rows] of Object.entries(TABLES)) {
    const page = DOC_PAGES[name] as string;
    writeFileSync(page, writeTable(readFileSync(page, "utf8"), name, rows()));
  }
}
