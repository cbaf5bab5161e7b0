#!/usr/bin/env node
// The preflight that `npm test`, `npm run ask`, `npm run web` and CI go through before anything
// else, so that each works as the first command on a fresh machine (docs/preflight.md):
//   1. Node: older than 24, the pinned Node 24 is obtained from the npm registry (its sha512
//      checked against the one stored in scripts/preflight-rules.mjs), cached in .agentmesh/node/,
//      and the command runs again under it, with it first on PATH (pnpm, vitest, tsx use it too).
//   2. The workspace's dependencies (pnpm install --frozen-lockfile, pnpm installed with npm first).
//   3. The system tools the command needs: installed with apt-get when root, else one line that
//      names them and the command that installs them, and exit 1.
// Usage: node scripts/ensure-deps.mjs <test|ask|web> [--only node|deps|tools] [-- <shell command>]
//        node scripts/ensure-deps.mjs node-dir      (prints the folder of the Node to run under)
// Node built-ins only: this runs before dependencies are installed.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createConnection } from "node:net";
import { constants as osConstants, tmpdir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  NEEDS,
  NODE_PIN,
  TEST_NATS,
  TOOLS,
  integrityMatches,
  missingTools,
  needsPinnedNode,
  nodeNotice,
  nodePackageFor,
  planTestNats,
  planTools,
} from "./preflight-rules.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Set in the environment of the command re-run under the pinned Node: it must not loop. */
const REEXEC = "AGENTMESH_PREFLIGHT_NODE";
const COMMANDS = { test: "npm test", ask: "npm run ask", web: "npm run web" };
/** Where `npm run ask` and `npm run web` find NATS and Redis when NATS_URL/REDIS_URL are unset. */
const LOCAL_URLS = { nats: "nats://127.0.0.1:4222", redis: "redis://127.0.0.1:6379" };

const say = (s) => process.stderr.write(`[setup] ${s}\n`);

/** A failure that is already the one line to print. */
class Stop extends Error {}

/** True when the binary exists: an absolute path that is executable, or a name on PATH. */
function has(bin) {
  if (isAbsolute(bin)) {
    try {
      accessSync(bin, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  return spawnSync("sh", ["-c", 'command -v "$1"', "sh", bin], { stdio: "ignore" }).status === 0;
}

/** PATH with this Node's folder first, then node_modules/.bin (vitest, tsx), then the rest. */
function pathWith(nodeBin) {
  return [dirname(nodeBin), join(root, "node_modules", ".bin"), process.env.PATH ?? ""].join(delimiter);
}

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal})`);
}

function versionOf(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim().replace(/^v/, "") : null;
}

/**
 * The pinned Node's binary in .agentmesh/node/<version>/bin/node, obtained with `npm pack` from
 * the registry (the ordinary client, its configuration and cache) when not cached yet. The
 * package's sha512 must equal the pinned one, and the binary must report the pinned version.
 */
export function obtainNode() {
  const dir = join(root, ".agentmesh", "node", NODE_PIN.version);
  const bin = join(dir, "bin", "node");
  if (existsSync(bin) && versionOf(bin) === NODE_PIN.version) return { bin, downloaded: false };
  const pkg = nodePackageFor(process.platform, process.arch);
  if (!pkg) {
    throw new Stop(
      `Node ${process.versions.node} is older than 24 and no Node package is pinned for ${process.platform}-${process.arch}: install Node 24 (e.g. \`nvm install 24\`), then run it again.`,
    );
  }
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = mkdtempSync(join(dirname(dir), ".fetch-"));
  try {
    const packed = spawnSync("npm", ["pack", pkg.spec, "--pack-destination", tmp, "--json"], {
      cwd: tmp,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (packed.status !== 0)
      throw new Stop(
        `could not fetch ${pkg.spec} with npm (exit ${packed.status}); install Node 24 yourself, then run it again.`,
      );
    const file = join(tmp, JSON.parse(packed.stdout)[0].filename);
    if (!integrityMatches(readFileSync(file), pkg.integrity)) {
      throw new Stop(`${pkg.spec} from the registry does not have the pinned sha512 integrity: refusing to run it.`);
    }
    run("tar", ["-xzf", file, "-C", tmp, "package/bin/node"]);
    const got = join(tmp, "package", "bin", "node");
    if (versionOf(got) !== NODE_PIN.version)
      throw new Stop(`${pkg.spec} does not run here (it reports ${versionOf(got)}).`);
    mkdirSync(join(dir, "bin"), { recursive: true });
    renameSync(got, bin);
    return { bin, downloaded: true };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * With Node older than 24: obtains the pinned one and runs this same command under it, then
 * exits with its status (never returns). With Node 24 or newer: returns at once.
 */
export async function useSupportedNode() {
  if (!needsPinnedNode(process.versions.node)) return;
  if (process.env[REEXEC])
    throw new Stop(`${process.env[REEXEC]} reports Node ${process.versions.node}, not ${NODE_PIN.version}.`);
  const { bin, downloaded } = obtainNode();
  say(nodeNotice(process.versions.node, NODE_PIN.version, downloaded));
  const env = { ...process.env, PATH: pathWith(bin), [REEXEC]: bin };
  process.exit(await runForwarding(bin, [...process.execArgv, ...process.argv.slice(1)], env));
}

/**
 * Runs a child with this terminal and resolves with its exit status (128 + signal number when
 * a signal ended it). Signals sent to this process go on to the child, which decides when to end.
 */
async function runForwarding(cmd, args, env) {
  const child = spawn(cmd, args, { cwd: process.cwd(), stdio: "inherit", env });
  const forward = (sig) => child.kill(sig);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, forward);
  const [code, signal] = await once(child, "exit");
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.off(sig, forward);
  return code ?? 128 + (osConstants.signals[signal] ?? 0);
}

/** The version a nats-server binary reports ("2.10.27"), or null when it does not run. */
function natsVersionOf(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? (/(\d+\.\d+\.\d+)/.exec(r.stdout)?.[1] ?? null) : null;
}

const natsCache = join(root, ".agentmesh", "nats-server");

/**
 * Fetches Debian's nats-server package of the release named in TEST_NATS with apt-get (its own
 * source list and lists in a temp dir, checked against Debian's archive keyring as apt checks
 * any package) and keeps the binary in .agentmesh/nats-server/<version>/nats-server.
 */
function fetchTestNats() {
  if (!has("apt-get") || !has("dpkg-deb")) {
    throw new Stop(
      `the tests need nats-server ${TEST_NATS.min} or newer and this machine has none: install one and set NATS_SERVER_BIN to it.`,
    );
  }
  const tmp = mkdtempSync(join(tmpdir(), "agentmesh-nats-"));
  try {
    for (const d of ["lists/partial", "cache/archives/partial", "x"]) mkdirSync(join(tmp, d), { recursive: true });
    const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg";
    writeFileSync(
      join(tmp, "sources.list"),
      `deb [signed-by=${keyring}] http://deb.debian.org/debian ${TEST_NATS.suite} main\n`,
    );
    const opts = [
      `-o=Dir::Etc::sourcelist=${join(tmp, "sources.list")}`,
      "-o=Dir::Etc::sourceparts=-",
      `-o=Dir::State::Lists=${join(tmp, "lists")}`,
      `-o=Dir::Cache=${join(tmp, "cache")}`,
      "-o=APT::Sandbox::User=root",
      "-qq",
    ];
    say(`fetching nats-server ${TEST_NATS.min}+ for the tests (Debian ${TEST_NATS.suite}'s package, apt-get download)`);
    const quiet = { cwd: tmp, stdio: ["ignore", "ignore", "inherit"] };
    for (const args of [["update"], ["download", TEST_NATS.package]]) {
      const r = spawnSync("apt-get", [...opts, ...args], quiet);
      if (r.status !== 0)
        throw new Stop(
          `apt-get ${args[0]} for Debian ${TEST_NATS.suite}'s nats-server failed (exit ${r.status}); set NATS_SERVER_BIN to a nats-server ${TEST_NATS.min} or newer.`,
        );
    }
    const deb = readdirSync(tmp).find((f) => f.endsWith(".deb"));
    if (!deb) throw new Stop(`apt-get download left no package in ${tmp}`);
    run("dpkg-deb", ["-x", join(tmp, deb), join(tmp, "x")]);
    const got = join(tmp, "x", TEST_NATS.binary);
    const version = natsVersionOf(got);
    if (!version)
      throw new Stop(`Debian ${TEST_NATS.suite}'s nats-server does not run on this machine; set NATS_SERVER_BIN.`);
    const dir = join(natsCache, version);
    mkdirSync(dir, { recursive: true });
    renameSync(got, join(dir, "nats-server"));
    return join(dir, "nats-server");
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The nats-server the tests start their own servers and clusters with, put in NATS_SERVER_BIN
 * for the command that follows (docs/preflight.md): the given one, the system's when new enough,
 * the cached one, else Debian's newer package fetched once.
 */
export function ensureTestNats() {
  const given = process.env.NATS_SERVER_BIN || undefined;
  const cached = existsSync(natsCache) ? readdirSync(natsCache).map((v) => join(natsCache, v, "nats-server")) : [];
  const bins = [...new Set([...(given ? [given] : []), ...TOOLS.nats.bins, ...cached])];
  const found = bins.map((bin) => ({ bin, version: natsVersionOf(bin) }));
  const plan = planTestNats({ given, found });
  if (plan.kind === "stop") throw new Stop(plan.message);
  const bin = plan.kind === "use" ? plan.bin : fetchTestNats();
  process.env.NATS_SERVER_BIN = bin;
  return bin;
}

/** Runs `pnpm install --frozen-lockfile` (installing pnpm 10 with npm first) if node_modules is missing. */
export function ensureDeps() {
  if (existsSync(join(root, "node_modules", ".modules.yaml"))) return;
  const env = { ...process.env, PATH: pathWith(process.execPath) };
  if (!has("pnpm")) {
    say("installing pnpm (npm i -g pnpm@10)");
    run("npm", ["i", "-g", "pnpm@10"], env);
  }
  say("installing dependencies (pnpm install)");
  run("pnpm", ["install", "--frozen-lockfile"], env);
}

/** True when something accepts TCP connections at the URL's host and port within 800 ms. */
function reachable(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 4222));
  return new Promise((resolve) => {
    const s = createConnection({ host: u.hostname.replace(/^\[|\]$/g, ""), port });
    const done = (ok) => {
      clearTimeout(t);
      s.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), 800);
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

/**
 * Makes sure the system tools `purpose` needs are here: installs the missing ones as root with
 * apt-get, else stops with one line naming them and the install command.
 */
export async function ensureTools(purpose) {
  const answering = new Set();
  for (const id of NEEDS[purpose] ?? []) {
    const t = TOOLS[id];
    if (!t?.urlEnv) continue;
    // `npm test` uses a server at NATS_URL/REDIS_URL when set (else it starts the binaries);
    // `npm run ask`/`web` look at the local defaults too.
    const url = process.env[t.urlEnv] ?? (purpose === "test" ? undefined : LOCAL_URLS[id]);
    if (url && (await reachable(url))) answering.add(id);
  }
  const probe = { has, answers: (id) => answering.has(id), env: (n) => process.env[n] };
  const machine = { root: process.getuid?.() === 0, apt: has("apt-get") };
  const plan = planTools(COMMANDS[purpose], missingTools(purpose, probe), machine);
  if (plan.kind === "ok") return;
  if (plan.kind === "stop") throw new Stop(plan.message);
  say(`installing ${plan.install.slice(3).join(" ")} (${plan.install.join(" ")})`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run(plan.update[0], plan.update.slice(1), env);
  run(plan.install[0], plan.install.slice(1), env);
  const still = missingTools(purpose, probe);
  if (still.length)
    throw new Stop(`${still.map((t) => t.label).join(", ")} still missing after ${plan.install.join(" ")}.`);
}

/**
 * The whole preflight of one command (test, ask or web); `only` runs one step. Under Node older
 * than 24 it does not return: the command runs again under the pinned Node, and this process
 * exits with its status.
 */
export async function preflight(purpose, only) {
  if (!COMMANDS[purpose]) throw new Error(`unknown purpose ${purpose} (one of ${Object.keys(COMMANDS).join(", ")})`);
  try {
    if (!only || only === "node") await useSupportedNode();
    if (!only || only === "deps") ensureDeps();
    if (!only || only === "tools") await ensureTools(purpose);
    if (purpose === "test" && (!only || only === "tools")) ensureTestNats();
  } catch (e) {
    say(e.message);
    process.exit(1);
  }
}

async function main(argv) {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const command = dash < 0 ? "" : argv.slice(dash + 1).join(" ");
  if (own[0] === "node-dir") {
    // The folder holding the Node to run under (CI puts it first on PATH).
    try {
      let bin = process.execPath;
      if (needsPinnedNode(process.versions.node)) {
        const got = obtainNode();
        say(nodeNotice(process.versions.node, NODE_PIN.version, got.downloaded));
        bin = got.bin;
      }
      process.stdout.write(`${dirname(bin)}\n`);
      return 0;
    } catch (e) {
      say(e.message);
      return 1;
    }
  }
  if (own[0] === "test-nats") {
    // The nats-server binary the tests start (CI exports it as NATS_SERVER_BIN for the chaos run).
    try {
      process.stdout.write(`${ensureTestNats()}\n`);
      return 0;
    } catch (e) {
      say(e.message);
      return 1;
    }
  }
  const at = own.indexOf("--only");
  await preflight(own[0] ?? "test", at < 0 ? undefined : own[at + 1]);
  if (!command) return 0;
  return runForwarding("sh", ["-c", command], { ...process.env, PATH: pathWith(process.execPath) });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
