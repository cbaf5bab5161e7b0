import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";

/** Where the binaries and files of the Python sandbox are on the host. */
export interface SandboxPaths {
  readonly bwrap: string;
  readonly prlimit: string;
  readonly node: string;
  readonly pyodideDir: string;
  readonly childScript: string;
}

/** Limits and mounts of one sandboxed process. */
export interface SandboxSpawn {
  readonly mode: "probe" | "snapshot" | "run";
  readonly harden: boolean;
  /** Address-space cap (RLIMIT_AS) of the whole process. */
  readonly addressSpaceBytes: number;
  /** CPU-seconds cap (RLIMIT_CPU): a backstop should the parent's kill ever not come. */
  readonly cpuSeconds: number;
  /** Read-only snapshot file to mount at /sandbox/snapshot.bin. */
  readonly snapshot?: string | null;
  /** Writable directory mounted at /out (snapshot mode only). */
  readonly outDir?: string;
}

const BIN_DIRS = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"];

/** The first of the usual system directories holding `name` (no PATH lookup: libraries do not read env). */
export function findBinary(name: string): string | null {
  for (const d of BIN_DIRS) if (existsSync(`${d}/${name}`)) return `${d}/${name}`;
  return null;
}

// Top-level system directories the dynamic loader may need; merged-/usr systems have them as
// symlinks into /usr, which are recreated as symlinks rather than bound.
const SYSTEM_DIRS = ["/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"];

/**
 * bubblewrap arguments. Every namespace is new (user, mount, pid, net, ipc, uts, cgroup): the
 * process sees a filesystem of read-only /usr, the node binary, the Pyodide files and a tmpfs,
 * has no network interface but its own empty loopback, no environment, no capabilities, runs as
 * uid 65534, and dies with its parent.
 */
export function bwrapArgs(p: SandboxPaths, s: SandboxSpawn): string[] {
  const a = [
    "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
    "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL", "--hostname", "sandbox",
    "--ro-bind", "/usr", "/usr",
  ];
  for (const d of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(d);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) a.push("--symlink", readlinkSync(d), d);
    else if (st.isDirectory()) a.push("--ro-bind", d, d);
  }
  const node = realpathSync(p.node);
  if (!node.startsWith("/usr/")) a.push("--ro-bind", node, node);
  a.push("--ro-bind", realpathSync(p.pyodideDir), "/sandbox/pyodide", "--ro-bind", realpathSync(p.childScript), "/sandbox/child.mjs");
  if (s.snapshot) a.push("--ro-bind", s.snapshot, "/sandbox/snapshot.bin");
  if (s.outDir) a.push("--bind", s.outDir, "/out");
  a.push("--tmpfs", "/tmp", "--dev", "/dev", "--chdir", "/tmp");
  return a;
}

/**
 * Node flags inside the sandbox. The permission model is a second wall: reads only under
 * /sandbox, no writes (but /out when making a snapshot), no child processes, workers, addons or
 * WASI. Without the WASM trap handler V8 does not reserve ~10 GB of address space per memory,
 * which is what lets RLIMIT_AS cap the process.
 */
export function nodeArgs(s: SandboxSpawn): string[] {
  const a = ["--disable-wasm-trap-handler", "--experimental-permission", "--allow-fs-read=/sandbox/", "--no-warnings", "--max-old-space-size=256"];
  if (s.mode === "snapshot") a.push("--allow-fs-write=/out/");
  a.push("/sandbox/child.mjs", s.mode, s.harden ? "harden" : "open");
  return a;
}

/** Starts one sandboxed process (prlimit → bwrap → node), in its own process group with an empty env. */
export function spawnSandbox(p: SandboxPaths, s: SandboxSpawn): ChildProcessWithoutNullStreams {
  const args = [
    `--as=${Math.floor(s.addressSpaceBytes)}`, `--cpu=${Math.ceil(s.cpuSeconds)}`, "--core=0",
    "--", p.bwrap, ...bwrapArgs(p, s), "--", realpathSync(p.node), ...nodeArgs(s),
  ];
  const child = spawn(p.prlimit, args, { env: {}, stdio: ["pipe", "pipe", "pipe"], detached: true });
  // a failed spawn or a write to a process that already died must not become an uncaught
  // 'error' event: the caller sees the closed stdout and reports that instead
  child.on("error", () => undefined);
  child.stdin.on("error", () => undefined);
  return child;
}

/** SIGKILLs the sandbox's process group; the sandboxed node dies with bwrap (--die-with-parent). */
export function killSandbox(child: ChildProcessWithoutNullStreams): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}
