// What adding an agent role costs: scaffolds a sample model-only role in a temporary worktree of
// HEAD, renders the deployment, proves the role complete (typecheck, lint, the registry, deploy and
// architecture tests), and counts every file added or edited anywhere and its lines, split into
// the role's schemas (contracts), hand-written files and generated files.
//
//   pnpm count:role            prints the table; exits 1 if the scaffolded role is not complete
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ROLE = "sample";
const GENERATED = new Set(["deploy/base/agents.generated.yaml", "docker-compose.yml"]);
const SCHEMAS = "packages/contracts/src/roles.ts";

const ROLE_TS = `import { defineAgent } from "@agentmesh/agent-kit";
import { classifyQuestion } from "@agentmesh/offline-kit";

/** A sample role: answers a question in one sentence. */
export default defineAgent({
  role: "sample",
  description: "Answers a question in one sentence",
  ops: {
    answer: {
      contract: "sample.answer",
      render: (i) => \`Question: \${i.question}\`,
      summarize: (o) => o.answer.slice(0, 120),
      offline: (i, ctx) => {
        const q = classifyQuestion(i.question);
        return { answer: q.kind === "arithmetic" && q.calc.ok ? \`\${q.calc.expression} = \${q.calc.value}\` : \`This needs a language model. \${ctx.configHint}\` };
      },
    },
  },
});
`;

const PROMPT = {
  id: "sample.answer",
  version: 1,
  focus: "Answer the question in one sentence.",
  system: [
    "You answer the user's question in one clear sentence.",
    "Say plainly when you do not know; never invent facts.",
  ],
};

const SCHEMA = `  sample: {
    answer: op("Answer a question in one sentence", z.object({ question: Text }), z.object({ answer: Text })),
  },
`;

function run(cwd: string, cmd: string, args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, CI: "true" } });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

const dir = mkdtempSync(join(tmpdir(), "agentmesh-role-"));
execFileSync("git", ["worktree", "add", "--detach", dir, "HEAD"], { cwd: ROOT, stdio: "ignore" });
try {
  process.stdout.write(`scaffolding role "${ROLE}" in ${dir}\n`);
  // the role's schemas: one entry in the registry
  const roles = readFileSync(join(dir, SCHEMAS), "utf8");
  const at = roles.indexOf("} as const;\n\nexport type Roles");
  if (at < 0) throw new Error(`${SCHEMAS}: the end of ROLES was not found`);
  writeFileSync(join(dir, SCHEMAS), roles.slice(0, at) + SCHEMA + roles.slice(at));
  // the role's folder: its definition with offline behaviour, and its prompt file
  mkdirSync(join(dir, "services", ROLE));
  writeFileSync(join(dir, "services", ROLE, "role.ts"), ROLE_TS);
  writeFileSync(join(dir, "services", ROLE, `${ROLE}.answer.v1.json`), `${JSON.stringify(PROMPT, null, 2)}\n`);

  const steps: Array<[string, string, string[]]> = [
    ["install", "pnpm", ["install", "--frozen-lockfile", "--offline"]],
    ["render the deployment", "pnpm", ["deploy:render"]],
    ["typecheck", "pnpm", ["typecheck"]],
    ["lint", "pnpm", ["exec", "eslint", "services/sample", "packages/contracts"]],
    [
      "registry, deploy and architecture tests",
      "pnpm",
      [
        "exec",
        "vitest",
        "run",
        "--project",
        "unit",
        "test/unit/roles.test.ts",
        "test/unit/deploy.test.ts",
        "test/unit/architecture.test.ts",
      ],
    ],
  ];
  let complete = true;
  for (const [what, cmd, args] of steps) {
    const r = run(dir, cmd, args);
    process.stdout.write(`  ${r.ok ? "ok  " : "FAIL"} ${what}\n`);
    if (!r.ok) {
      complete = false;
      process.stdout.write(`${r.out.split("\n").slice(-40).join("\n")}\n`);
      break;
    }
  }

  execFileSync("git", ["add", "-A"], { cwd: dir });
  const rows = execFileSync("git", ["diff", "--cached", "--numstat", "HEAD"], { cwd: dir, encoding: "utf8" })
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [added = "0", removed = "0", file = ""] = l.split("\t");
      const kind = file === SCHEMAS ? "schemas" : GENERATED.has(file) ? "generated" : "hand-written";
      return { file, added: Number(added), removed: Number(removed), kind };
    });
  process.stdout.write("\nfiles added or edited by a new model-only role\n");
  for (const r of rows)
    process.stdout.write(
      `  ${r.kind.padEnd(12)} +${String(r.added).padStart(4)} -${String(r.removed).padStart(3)}  ${r.file}\n`,
    );
  const sum = (kind: string) =>
    rows
      .filter((r) => r.kind === kind)
      .reduce((a, r) => ({ files: a.files + 1, lines: a.lines + r.added + r.removed }), { files: 0, lines: 0 });
  const hand = sum("hand-written");
  const gen = sum("generated");
  const schemas = sum("schemas");
  process.stdout.write(
    `\nhand-written besides schemas: ${hand.files} files, ${hand.lines} lines | generated (pnpm deploy:render): ${gen.files} files, ${gen.lines} lines | schemas: ${schemas.lines} lines\n` +
      `all files besides schemas: ${hand.files + gen.files}\n`,
  );
  process.exitCode = complete ? 0 : 1;
} finally {
  execFileSync("git", ["worktree", "remove", "--force", dir], { cwd: ROOT, stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
}
