import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  type Stats,
  statSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Writable } from "node:stream";
import { seccompProgram } from "./seccomp.js";

/** Where the binaries and files of the Python sandbox are on the host. */
export interface SandboxPaths {
  readonly bwrap: string;
  readonly prlimit: string;
  /** util-linux setpriv: when the host runs as root, the sandbox drops to an unprivileged uid with it. */
  readonly setpriv: string | null;
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
  /**
   * Host uid (and gid) the sandbox runs as when this process is root: RLIMIT_NPROC does not bind
   * for uid 0, so without the drop a fork bomb would not be stopped. One per live sandbox.
   */
  readonly hostUid?: number;
  /** Test seam: run this argv inside the sandbox instead of node + the child script. */
  readonly command?: readonly string[];
}

/** Size of the sandbox's /tmp tmpfs. */
export const SANDBOX_TMPFS_BYTES = 16 * 1024 * 1024;
/** RLIMIT_FSIZE of the sandboxed process (not of the snapshot maker, which writes ~20 MB to /out). */
export const SANDBOX_FSIZE_BYTES = 8 * 1024 * 1024;
/** RLIMIT_NPROC of the sandbox's uid: node's own threads (~12) with room, far below a fork bomb. */
export const SANDBOX_NPROC = 48;

// Descriptors the sandbox chain (setpriv → prlimit → bwrap) inherits: the seccomp program, then
// the snapshot. The Pyodide files, the child script and node are bound by path: the unprivileged
// uid must be able to read them (a world-readable install, as node_modules usually is).
const FD_SECCOMP = 3;

const BIN_DIRS = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"];

/** The first of the usual system directories holding `name` (no PATH lookup: libraries do not read env). */
export function findBinary(name: string): string | null {
  for (const d of BIN_DIRS) if (existsSync(`${d}/${name}`)) return `${d}/${name}`;
  return null;
}

/**
 * Where the node binary is inside the sandbox when it is not the system's (one under /usr is
 * bound with /usr): a fixed path, so the sandbox shows nothing of where it sits on the host.
 */
export const SANDBOX_NODE = "/opt/node/bin/node";

/** The path the sandboxed process is started by: the system's node as it is, any other at SANDBOX_NODE. */
export const nodeInSandbox = (hostNode: string): string => (hostNode.startsWith("/usr/") ? hostNode : SANDBOX_NODE);

// Top-level system directories the dynamic loader may need; merged-/usr systems have them as
// symlinks into /usr, which are recreated as symlinks rather than bound.
const SYSTEM_DIRS = ["/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"];

/**
 * bubblewrap arguments. Every namespace is new (user, mount, pid, net, ipc, uts, cgroup): the
 * process sees a filesystem of read-only /usr, the node binary, the Pyodide files and a tmpfs,
 * has no network interface but its own empty loopback, no environment, no capabilities, runs as
 * uid 65534, and dies with its parent.
 */
export function bwrapArgs(p: SandboxPaths, s: SandboxSpawn, fds: BoundFds): string[] {
  const a = [
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--uid",
    "65534",
    "--gid",
    "65534",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--cap-drop",
    "ALL",
    "--hostname",
    "sandbox",
    "--seccomp",
    String(FD_SECCOMP),
    "--ro-bind",
    "/usr",
    "/usr",
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
  if (nodeInSandbox(node) !== node) a.push("--ro-bind", node, SANDBOX_NODE);
  if (!s.command)
    a.push(
      "--ro-bind",
      realpathSync(p.pyodideDir),
      "/sandbox/pyodide",
      "--ro-bind",
      realpathSync(p.childScript),
      "/sandbox/child.mjs",
    );
  for (const [fd, dest] of fds.binds) a.push("--ro-bind-data", String(fd), dest);
  if (s.outDir) a.push("--bind", s.outDir, "/out");
  a.push("--size", String(SANDBOX_TMPFS_BYTES), "--tmpfs", "/tmp", "--dev", "/dev", "--chdir", "/tmp");
  return a;
}

/** Files bound into the sandbox by descriptor: [fd in the child, destination]. */
interface BoundFds {
  readonly binds: ReadonlyArray<readonly [number, string]>;
  /** Host descriptors to hand over (index = child fd - FD_SECCOMP - 1) and close after spawning. */
  readonly host: readonly number[];
}

// The snapshot is handed over as a descriptor and copied in (`--ro-bind-data`): it lives in a
// private 0700 cache that the unprivileged uid the sandbox runs as cannot open by path.
function openBinds(s: SandboxSpawn): BoundFds {
  if (!s.snapshot) return { binds: [], host: [] };
  return { binds: [[FD_SECCOMP + 1, "/sandbox/snapshot.bin"]], host: [openSync(s.snapshot, "r")] };
}

/**
 * Node flags inside the sandbox. The permission model is a second wall: reads only under
 * /sandbox, no writes (but /out when making a snapshot), no child processes, workers, addons or
 * WASI. Without the WASM trap handler V8 does not reserve ~10 GB of address space per memory,
 * which is what lets RLIMIT_AS cap the process.
 */
export function nodeArgs(s: SandboxSpawn): string[] {
  const a = [
    "--disable-wasm-trap-handler",
    "--permission",
    "--allow-fs-read=/sandbox/",
    "--no-warnings",
    "--max-old-space-size=256",
  ];
  // no eval / new Function in the child once it runs guest code: JS reached from Python (through
  // some JsProxy or a WASM import) cannot compile anything; Pyodide itself does not need it
  if (s.mode === "snapshot") a.push("--allow-fs-write=/out/");
  else a.push("--disallow-code-generation-from-strings");
  a.push("/sandbox/child.mjs", s.mode, s.harden ? "harden" : "open");
  return a;
}

/**
 * Starts one sandboxed process ([setpriv →] prlimit → bwrap → node), in its own process group
 * with an empty env. Throws if the seccomp filter has no table for this architecture.
 */
export function spawnSandbox(paths: SandboxPaths, s: SandboxSpawn): ChildProcessWithoutNullStreams {
  let p = paths;
  const filter = seccompProgram();
  if (!filter) throw new Error(`no seccomp filter for the ${process.arch} architecture`);
  const root = process.getuid?.() === 0;
  const drop = root && s.mode !== "snapshot";
  if (drop && (!p.setpriv || s.hostUid === undefined))
    throw new Error("running as root, the sandbox needs setpriv and a uid to drop to");
  if (drop) p = { ...p, node: nodeReadableByDroppedUid(p.node) };
  if (drop && !s.command) p = { ...p, ...readableByDroppedUid(p) };
  const fds = openBinds(s);
  // RLIMIT_FSIZE is set inside, by the sandbox's own prlimit: bwrap itself must still write the
  // ~20 MB snapshot into the sandbox's root before it starts the process
  const inner = [
    ...(s.mode === "snapshot" ? [] : [p.prlimit, `--fsize=${SANDBOX_FSIZE_BYTES}`, "--"]),
    ...(s.command ? s.command : [nodeInSandbox(realpathSync(p.node)), ...nodeArgs(s)]),
  ];
  const limits = [`--as=${Math.floor(s.addressSpaceBytes)}`, `--cpu=${Math.ceil(s.cpuSeconds)}`, "--core=0"];
  // RLIMIT_NPROC counts every process of the real uid: only meaningful for a uid of our own
  if (drop) limits.push(`--nproc=${SANDBOX_NPROC}`);
  const chain = [p.prlimit, ...limits, "--", p.bwrap, ...bwrapArgs(p, s, fds), "--", ...inner];
  const argv = drop
    ? [p.setpriv as string, `--reuid=${s.hostUid}`, `--regid=${s.hostUid}`, "--clear-groups", "--", ...chain]
    : chain;
  let child: ChildProcessWithoutNullStreams;
  try {
    child = spawn(argv[0] as string, argv.slice(1), {
      env: {},
      stdio: ["pipe", "pipe", "pipe", "pipe", ...fds.host],
      detached: true,
    }) as ChildProcessWithoutNullStreams;
  } finally {
    for (const fd of fds.host) closeSync(fd);
  }
  // a failed spawn or a write to a process that already died must not become an uncaught
  // 'error' event: the caller sees the closed stdout and reports that instead
  child.on("error", () => undefined);
  child.stdin.on("error", () => undefined);
  const seccompPipe = child.stdio[FD_SECCOMP] as Writable | null;
  seccompPipe?.on("error", () => undefined);
  seccompPipe?.end(filter);
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

const staged = new Map<string, Pick<SandboxPaths, "pyodideDir" | "childScript">>();

/** True when any uid may read (and so execute) the file: it and every directory above it are open to others. */
function everyoneReaches(file: string): boolean {
  const open = (path: string, bits: number): boolean => {
    let st: Stats;
    try {
      st = statSync(path);
    } catch {
      return false;
    }
    return (st.mode & bits) === bits;
  };
  if (!open(file, 0o005)) return false;
  for (let d = dirname(file); ; d = dirname(d)) {
    if (!open(d, 0o001)) return false;
    if (d === dirname(d)) return true;
  }
}

const stagedNodes = new Map<string, string>();

/**
 * The node binary where the dropped uid can execute it. The system's, or one every uid reaches,
 * is used as it is; one below a directory only root may enter (a Node kept inside a checkout
 * under such a directory) is copied once into a root-owned directory that everyone may read and
 * only root may write, named by the binary's content, and shared by this host's processes.
 */
function nodeReadableByDroppedUid(hostNode: string): string {
  const node = realpathSync(hostNode);
  if (node.startsWith("/usr/") || everyoneReaches(node)) return node;
  const st = statSync(node);
  const seen = `${node}\0${st.size}\0${st.mtimeMs}`;
  const known = stagedNodes.get(seen);
  if (known) return known;
  const key = createHash("sha256").update(readFileSync(node)).digest("hex").slice(0, 16);
  const trusted = (dir: string): boolean => {
    try {
      const d = lstatSync(dir);
      const f = lstatSync(join(dir, "node"));
      return (
        d.isDirectory() && d.uid === 0 && (d.mode & 0o022) === 0 && f.isFile() && f.uid === 0 && f.size === st.size
      );
    } catch {
      return false;
    }
  };
  const shared = join(tmpdir(), `agentmesh-sandbox-node-${key}`);
  if (!trusted(shared)) {
    const fresh = mkdtempSync(join(tmpdir(), "agentmesh-sandbox-tmp-"));
    copyFileSync(node, join(fresh, "node"));
    chmodSync(join(fresh, "node"), 0o755);
    chmodSync(fresh, 0o755);
    try {
      renameSync(fresh, shared);
    } catch {
      // another process won the race (or the name is taken by something we do not trust)
    }
    if (!trusted(shared)) {
      stagedNodes.set(seen, join(fresh, "node"));
      return join(fresh, "node");
    }
    rmSync(fresh, { recursive: true, force: true });
  }
  stagedNodes.set(seen, join(shared, "node"));
  return join(shared, "node");
}

/**
 * The sandbox's own files (Pyodide, the child script) where the dropped uid can read them. bwrap
 * runs as that uid and binds them itself, but a checkout may sit below a directory only root may
 * enter (`mktemp -d` makes 0700 ones) or have private file modes. So they are copied into a
 * root-owned directory that everyone may read and only root may write, named by their content
 * (the Pyodide release and the child script) and shared by every process of this host; a
 * same-named directory that is not exactly that (planted by another user) is never used: a
 * fresh one of its own name is made instead.
 */
function readableByDroppedUid(p: SandboxPaths): Pick<SandboxPaths, "pyodideDir" | "childScript"> {
  const src = { pyodideDir: realpathSync(p.pyodideDir), childScript: realpathSync(p.childScript) };
  const key = createHash("sha256")
    .update(readFileSync(join(src.pyodideDir, "package.json")))
    .update("\0")
    .update(readFileSync(src.childScript))
    .digest("hex")
    .slice(0, 16);
  const known = staged.get(key);
  if (known) return known;
  const at = (dir: string) => ({ pyodideDir: join(dir, "pyodide"), childScript: join(dir, "child.mjs") });
  const trusted = (dir: string): boolean => {
    try {
      const st = lstatSync(dir);
      return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0 && existsSync(join(dir, "child.mjs"));
    } catch {
      return false;
    }
  };
  const shared = join(tmpdir(), `agentmesh-sandbox-${key}`);
  let out = trusted(shared) ? at(shared) : null;
  if (!out) {
    const fresh = mkdtempSync(join(tmpdir(), "agentmesh-sandbox-tmp-"));
    cpSync(src.pyodideDir, join(fresh, "pyodide"), { recursive: true, dereference: true });
    copyFileSync(src.childScript, join(fresh, "child.mjs"));
    const open = (path: string): void => {
      if (lstatSync(path).isDirectory()) {
        chmodSync(path, 0o755);
        for (const name of readdirSync(path)) open(join(path, name));
      } else chmodSync(path, 0o644);
    };
    open(fresh);
    try {
      renameSync(fresh, shared);
    } catch {
      // another process won the race (or the name is taken by something we do not trust)
    }
    out = trusted(shared) ? at(shared) : at(existsSync(fresh) ? fresh : shared);
    if (existsSync(fresh) && out.childScript !== join(fresh, "child.mjs"))
      rmSync(fresh, { recursive: true, force: true });
  }
  staged.set(key, out);
  return out;
}
