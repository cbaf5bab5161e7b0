#!/usr/bin/env node
// Installs the workspace's dependencies when they are missing (a fresh clone), so that
// `npm test` and `npm run ask` work as the first command. Node built-ins only.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status})`);
}

/** Runs `pnpm install --frozen-lockfile` (installing pnpm 10 with npm first) if node_modules is missing. */
export function ensureDeps() {
  if (existsSync(join(root, "node_modules", ".modules.yaml"))) return;
  const hasPnpm = spawnSync("sh", ["-c", "command -v pnpm"], { stdio: "ignore" }).status === 0;
  if (!hasPnpm) {
    process.stderr.write("[setup] installing pnpm (npm i -g pnpm@10)\n");
    run("npm", ["i", "-g", "pnpm@10"]);
  }
  process.stderr.write("[setup] installing dependencies (pnpm install)\n");
  run("pnpm", ["install", "--frozen-lockfile"]);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    ensureDeps();
  } catch (e) {
    process.stderr.write(`[setup] ${e.message}\n`);
    process.exit(1);
  }
}
