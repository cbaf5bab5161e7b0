// Escape cases for native code: a shell under the Python sandbox's OS wall (test-only).
import { realpathSync } from "node:fs";
import { expect } from "vitest";
import { nodeInSandbox } from "../runners/sandbox-process.js";
import { contained, failed, never, text, type EscapeCase, type Outcome } from "./escape-checks.js";

// Native code, as if every interpreter layer had fallen: a shell under the same OS wall.
const syscall = (name: string, x64: number, arm64: number, args: string) =>
  `python3 -c "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); nr = {'x86_64': ${x64}, 'aarch64': ${arm64}}[os.uname().machine]; r = libc.syscall(nr, ${args}); print('${name}', r, os.strerror(ctypes.get_errno()) if r < 0 else 'ALLOWED')"`;
const stdout = (o: Outcome): string => (o.kind === "ran" ? o.r.stdout : "");
const denied =
  (re = /Operation not permitted/) =>
  (o: Outcome) => {
    const t = text(o);
    never(/ALLOWED/)(o);
    expect(t, t).toMatch(re);
  };
/** The `os` cases. */
export const OS_CASES: EscapeCase[] = [
  {
    name: "read the canary file",
    lang: "os",
    code: (t) => `cat ${t.canaryPath}`,
    check: (o) => expect(text(o)).toMatch(/No such file/),
  },
  {
    name: "list / : only what the sandbox mounts",
    lang: "os",
    code: () => "ls /",
    check: never(/\bwork\b|\broot\b|\bhome\b|\bproc\b|\bsys\b/),
  },
  {
    name: "write the host file",
    lang: "os",
    code: (t) => `echo pwned > ${t.pwnedPath}`,
    check: (o) => expect(text(o)).toMatch(/nonexistent|No such file|cannot create/),
  },
  {
    name: "write into /usr",
    lang: "os",
    code: () => "echo x > /usr/pwned",
    check: (o) => expect(text(o)).toMatch(/Read-only|Permission denied|cannot create/),
  },
  {
    name: "the environment is empty",
    lang: "os",
    code: () => "env",
    check: (o) => expect(o.kind === "ran" ? o.r.stdout.trim() : text(o)).toBe("PWD=/tmp"),
  },
  {
    name: "uid 65534, hostname sandbox",
    lang: "os",
    code: () => "id -u; hostname 2>/dev/null || cat /etc/hostname",
    check: (o) => expect(text(o)).toMatch(/^\s*65534\n/),
  },
  {
    name: "/proc and /sys are absent; /dev holds only the basic nodes",
    lang: "os",
    code: () => "ls /proc /sys 2>&1; ls /dev",
    check: (o) => {
      expect(text(o)).toMatch(/cannot access '\/proc'/);
      never(/\bmem\b|\bkmsg\b|\bsda|\bnvme|\bkvm\b/)(o);
    },
  },
  {
    name: "TCP to the loopback listener from node",
    lang: "os",
    code: (t) =>
      `${nodeInSandbox(realpathSync(process.execPath))} -e "require('net').connect(${t.port}, '127.0.0.1').on('error', (e) => console.log(e.code)).on('connect', () => console.log('CONNECTED'))"`,
    check: (o) => expect(text(o)).toMatch(/EAFNOSUPPORT/),
  },
  {
    name: "a netlink socket (interfaces, routes)",
    lang: "os",
    code: () => syscall("socket-netlink", 41, 198, "16, 3, 0"),
    check: denied(/Address family not supported/),
  },
  {
    name: "a packet socket",
    lang: "os",
    code: () => syscall("socket-packet", 41, 198, "17, 3, 0"),
    check: denied(/Address family not supported/),
  },
  {
    name: "an AF_UNIX socket still works (nothing to reach)",
    lang: "os",
    code: () => syscall("socket-unix", 41, 198, "1, 1, 0"),
    check: (o) => expect(text(o)).toMatch(/ALLOWED|python3: not found/),
  },
  { name: "unshare a user namespace", lang: "os", code: () => "unshare -U true", check: denied() },
  {
    name: "unshare mount, net and pid namespaces",
    lang: "os",
    code: () => "unshare -m true; unshare -n true; unshare -p -f true",
    check: (o) => expect(text(o).match(/Operation not permitted/g)?.length).toBe(3),
  },
  {
    name: "clone with CLONE_NEWUSER",
    lang: "os",
    code: () => syscall("clone-newuser", 56, 220, "0x10000000 | 17, 0, 0, 0, 0"),
    check: denied(),
  },
  {
    name: "mount a tmpfs",
    lang: "os",
    code: () => "mount -t tmpfs none /tmp",
    check: (o) => expect(text(o)).toMatch(/permission denied|not permitted|must be superuser/i),
  },
  {
    name: "mount syscall directly",
    lang: "os",
    code: () => syscall("mount", 165, 40, "b'none', b'/tmp', b'tmpfs', 0, 0"),
    check: denied(),
  },
  { name: "chroot", lang: "os", code: () => syscall("chroot", 161, 51, "b'/usr'"), check: denied() },
  {
    name: "setns into pid 1's namespaces",
    lang: "os",
    code: () => "nsenter -t 1 -m -u -n -p true",
    check: (o) => expect(text(o)).toMatch(/No such file|Operation not permitted|cannot open|failed/),
  },
  { name: "ptrace", lang: "os", code: () => syscall("ptrace", 101, 117, "16, 1, 0, 0"), check: denied() },
  {
    name: "strace a child",
    lang: "os",
    code: () => "strace -f true",
    check: (o) => expect(text(o)).toMatch(/Operation not permitted|not found|PTRACE/),
  },
  {
    name: "process_vm_readv",
    lang: "os",
    code: () => syscall("process_vm_readv", 310, 270, "1, 0, 0, 0, 0, 0"),
    check: denied(),
  },
  { name: "keyctl", lang: "os", code: () => syscall("keyctl", 250, 219, "0, -3, 0"), check: denied() },
  {
    name: "add_key",
    lang: "os",
    code: () => syscall("add_key", 248, 217, "b'user', b'k', b'v', 1, -3"),
    check: denied(),
  },
  { name: "bpf", lang: "os", code: () => syscall("bpf", 321, 280, "0, 0, 0"), check: denied() },
  {
    name: "perf_event_open",
    lang: "os",
    code: () => syscall("perf_event_open", 298, 241, "0, 0, -1, -1, 0"),
    check: denied(),
  },
  { name: "userfaultfd", lang: "os", code: () => syscall("userfaultfd", 323, 282, "0"), check: denied() },
  {
    name: "io_uring_setup",
    lang: "os",
    code: () => syscall("io_uring_setup", 425, 425, "8, 0"),
    check: denied(/Function not implemented/),
  },
  {
    name: "init_module / finit_module",
    lang: "os",
    code: () => `${syscall("init_module", 175, 105, "0, 0, b''")}; ${syscall("finit_module", 313, 273, "0, b'', 0")}`,
    check: (o) => expect(text(o).match(/Operation not permitted/g)?.length).toBe(2),
  },
  { name: "kexec_load", lang: "os", code: () => syscall("kexec_load", 246, 104, "0, 0, 0, 0"), check: denied() },
  {
    name: "personality (READ_IMPLIES_EXEC)",
    lang: "os",
    code: () => syscall("personality", 135, 92, "0x0400000"),
    check: denied(),
  },
  {
    name: "TIOCSTI: push input into a terminal",
    lang: "os",
    code: () => syscall("ioctl-tiocsti", 16, 29, "0, 0x5412, b'x'"),
    check: denied(),
  },
  {
    name: "clock_settime and sethostname",
    lang: "os",
    code: () => `${syscall("clock_settime", 227, 112, "0, 0")}; ${syscall("sethostname", 170, 161, "b'x', 1")}`,
    check: (o) => expect(text(o).match(/Operation not permitted/g)?.length).toBe(2),
  },
  { name: "kill every process it can see", lang: "os", code: () => "kill -9 -1; echo after", check: contained() },
  {
    name: "memory: a 2 GB allocation hits RLIMIT_AS",
    lang: "os",
    code: () => "python3 -c 'bytearray(2 * 10**9)'",
    check: (o) => expect(text(o)).toMatch(/MemoryError|python3: not found/),
  },
  {
    name: "disk: filling /tmp stops at its size",
    lang: "os",
    code: () => "for i in 1 2 3 4 5 6; do head -c 4000000 /dev/zero > /tmp/f$i || break; done; cat /tmp/f* | wc -c",
    check: (o) => expect(Number(stdout(o).trim().split("\n").at(-1))).toBeLessThanOrEqual(16 * 1024 * 1024),
  },
  {
    name: "disk: one file stops at RLIMIT_FSIZE",
    lang: "os",
    code: () => "head -c 20000000 /dev/zero > /tmp/big; wc -c < /tmp/big",
    check: (o) => expect(Number(stdout(o).trim().split("\n").at(-1))).toBeLessThanOrEqual(8 * 1024 * 1024),
  },
  { name: "CPU runaway", lang: "os", runaway: true, code: () => "while :; do :; done", check: failed("timeout") },
  { name: "sleep past the limit", lang: "os", runaway: true, code: () => "sleep 100", check: failed("timeout") },
  {
    name: "a detached new session survives nothing",
    lang: "os",
    runaway: true,
    code: () => "setsid sh -c 'sleep 100' & sleep 100",
    check: failed("timeout"),
  },
  {
    name: "fork bomb",
    lang: "os",
    runaway: true,
    code: () => "b() { b & b & wait; }; b 2>/dev/null & exec sleep 100",
    check: failed("timeout"),
  },
];
