#!/usr/bin/env node
// Runs the CLI: from its TypeScript source through tsx in a checkout, or the JavaScript `pnpm build`
// compiled where the sources are not shipped (the image). See docs/deployment.md.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "../src/main.ts");
const argv = existsSync(source) ? ["--import", "tsx", source] : [join(here, "../dist/main.js")];
const r = spawnSync(process.execPath, [...argv, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
