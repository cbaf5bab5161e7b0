// The OS wall of the Python sandbox on its own, with a shell (or node without its permission
// model) inside instead of the child script: what native code would meet if it got past every
// interpreter layer. Needs bubblewrap like the Python runner; CI sets TOOLS_REQUIRE_SANDBOX=1.
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { dirname } from "node:path";
import { describe, expect, it } from "vitest";
import {
  findBinary,
  killSandbox,
  nodeInSandbox,
  SANDBOX_FSIZE_BYTES,
  SANDBOX_NODE,
  SANDBOX_NPROC,
  spawnSandbox,
  type SandboxPaths,
} from "./sandbox-process.js";
import { SECCOMP_DENIED, seccompProgram } from "./seccomp.js";

const bwrap = findBinary("bwrap");
const prlimit = findBinary("prlimit");
const root = process.getuid?.() === 0;
const UID = 2_000_000_000 + 500 + (process.pid % 400);
const paths: SandboxPaths | null =
  bwrap && prlimit
    ? {
        bwrap,
        prlimit,
        setpriv: findBinary("setpriv"),
        node: process.execPath,
        pyodideDir: "/nonexistent",
        childScript: "/nonexistent",
      }
    : null;

interface Shell {
  readonly out: string;
  readonly code: number | null;
  readonly ms: number;
}

function sh(script: string, killAfterMs = 5000): Promise<Shell> {
  if (!paths) throw new Error("bubblewrap and prlimit are needed");
  const t0 = performance.now();
  const child = spawnSandbox(paths, {
    mode: "run",
    harden: true,
    addressSpaceBytes: 1792 * 2 ** 20,
    cpuSeconds: 10,
    hostUid: UID,
    command: ["/bin/sh", "-c", script],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => killSandbox(child), killAfterMs);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ out, code, ms: performance.now() - t0 });
    }),
  );
}

/** Live (not zombie) processes on this host running as `uid`. */
function processesOf(uid: number): number {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      if (new RegExp(`^Uid:\\s+${uid}\\s`, "m").test(status) && !/^State:\s+Z/m.test(status)) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

describe("the seccomp program", () => {
  it("checks the architecture first and kills on any other", () => {
    for (const arch of ["x64", "arm64"]) {
      const p = seccompProgram(arch);
      expect(p, arch).not.toBeNull();
      const buf = p as Buffer;
      // ld [4] (arch); jeq AUDIT_ARCH, +1; ret KILL_PROCESS
      expect([buf.readUInt16LE(0), buf.readUInt32LE(4)]).toEqual([0x20, 4]);
      expect([buf.readUInt16LE(8), buf.readUInt32LE(12)]).toEqual([0x15, arch === "x64" ? 0xc000003e : 0xc00000b7]);
      expect([buf.readUInt16LE(16), buf.readUInt32LE(20)]).toEqual([0x06, 0x80000000]);
      // every jump stays inside the program, and it ends in a return
      for (let i = 0; i < buf.length / 8; i++) {
        if ((buf.readUInt16LE(i * 8) & 0x07) === 0x05)
          expect(i + 1 + Math.max(buf[i * 8 + 2] as number, buf[i * 8 + 3] as number)).toBeLessThan(buf.length / 8);
      }
      expect(buf.readUInt16LE(buf.length - 8)).toBe(0x06);
    }
    expect(seccompProgram("ia32")).toBeNull();
    expect(SECCOMP_DENIED).toEqual(
      expect.arrayContaining([
        "ptrace",
        "mount",
        "unshare",
        "setns",
        "keyctl",
        "bpf",
        "perf_event_open",
        "process_vm_readv",
        "kexec_load",
        "init_module",
        "userfaultfd",
      ]),
    );
  });
});

it("bubblewrap and prlimit are here when the sandbox is required", () => {
  if (process.env.TOOLS_REQUIRE_SANDBOX === "1") expect(paths).not.toBeNull();
});

describe.runIf(paths)("the sandbox's OS wall (a shell inside)", { timeout: 30_000 }, () => {
  it("seccomp: unshare and a nested user namespace fail with EPERM, an AF_INET socket with EAFNOSUPPORT; V8 and WASM still run", async () => {
    const r = await sh(
      [
        "unshare -U true; echo unshare=$?",
        `${nodeInSandbox(realpathSync(process.execPath))} -e "const s = require('net').connect(9, '127.0.0.1'); s.on('error', (e) => console.log('socket=' + e.code)); new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))); console.log('wasm=ok')"`,
      ].join("\n"),
    );
    expect(r.out).toMatch(/unshare failed: Operation not permitted/);
    expect(r.out).toMatch(/unshare=1/);
    expect(r.out).toMatch(/socket=EAFNOSUPPORT/);
    expect(r.out).toMatch(/wasm=ok/);
  });

  it("the /tmp tmpfs is size-capped: 5 MB files stop at 16 MiB with ENOSPC", async () => {
    const r = await sh(
      "for i in 1 2 3 4 5; do head -c 5000000 /dev/zero > /tmp/f$i || echo failed $i; done; cat /tmp/f* | wc -c",
    );
    expect(r.out).toMatch(/No space left on device/);
    expect(r.out).toMatch(/failed 4/);
    expect(Number(r.out.trim().split("\n").at(-1))).toBeLessThanOrEqual(16 * 1024 * 1024);
  });

  it("RLIMIT_FSIZE: one file stops at 8 MiB", async () => {
    const r = await sh("head -c 10000000 /dev/zero > /tmp/big; wc -c < /tmp/big");
    expect(Number(r.out.trim().split("\n").at(-1))).toBe(SANDBOX_FSIZE_BYTES);
  });

  it.runIf(nodeInSandbox(realpathSync(process.execPath)) === SANDBOX_NODE)(
    "a node outside /usr is seen at one fixed path only, never where it sits on the host",
    async () => {
      const host = realpathSync(process.execPath);
      const r = await sh(`${SANDBOX_NODE} -p process.versions.node; ls ${host} ${dirname(host)} 2>&1`);
      const [version, ...rest] = r.out.trim().split("\n");
      expect(version).toBe(process.versions.node);
      expect(rest).toHaveLength(2);
      for (const line of rest) expect(line).toMatch(/No such file or directory/);
    },
  );

  it("no /proc of the host, no host files, no env, uid 65534", async () => {
    const r = await sh("id -u; env | wc -l; ls /proc /work /root /etc/passwd 2>&1");
    const [uid, env, ...rest] = r.out.trim().split("\n");
    expect(uid).toBe("65534");
    expect(env).toBe("1"); // PWD, set by the shell itself
    expect(rest).toHaveLength(4);
    for (const line of rest) expect(line).toMatch(/No such file or directory/);
  });

  // RLIMIT_NPROC does not bind for uid 0, so as root the sandbox must run as a uid of its own.
  // (Run as another user, the uid is that user's and a process limit would count all of theirs.)
  it.runIf(root)(
    "as root: mass forking hits RLIMIT_NPROC, and once killed at the deadline no process of the sandbox's uid is left",
    async () => {
      let most = 0;
      const poll = setInterval(() => (most = Math.max(most, processesOf(UID))), 100);
      // the forks happen in a subshell; the shell itself then waits without forking (exec)
      const r = await sh(
        "(i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; echo started $i); exec sleep 30",
        2000,
      );
      clearInterval(poll);
      expect(r.out).toMatch(/Cannot fork/);
      expect(r.out).not.toMatch(/started 300/);
      expect(most).toBeGreaterThan(10);
      expect(most).toBeLessThanOrEqual(SANDBOX_NPROC);
      expect(r.ms).toBeLessThan(2000 * 1.2);
      const deadline = performance.now() + 1000;
      while (processesOf(UID) > 0 && performance.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      expect(processesOf(UID)).toBe(0);
    },
  );
});
