// The seccomp filter of the Python sandbox, as the classic-BPF program bubblewrap loads with
// `--seccomp <fd>`. A denylist: V8 and WASM keep mmap, mprotect and the rest of what a JIT
// needs, while the calls that widen a process's reach (namespaces, mounts, ptrace, keyrings,
// BPF, perf, kernel modules, io_uring, other processes' memory, sockets other than AF_UNIX, TTY
// input injection) fail. Any other architecture than the one checked kills the process, so a
// 32-bit or x32 syscall cannot slip past a table of 64-bit numbers.

/** The architectures the filter knows the syscall numbers of. */
type Arch = "x64" | "arm64";

interface Table {
  readonly audit: number;
  /** Syscalls that fail with EPERM. */
  readonly deny: readonly number[];
  /** Syscalls that fail with ENOSYS, so that libc and libuv fall back (clone3 → clone, io_uring → threads). */
  readonly enosys: readonly number[];
  readonly clone: number;
  readonly socket: number;
  readonly ioctl: number;
  /** x86-64 only: syscall numbers at or above this are the x32 ABI. */
  readonly x32Bit?: number;
}

// Numbers from the kernel's uapi headers: arch/x86/entry/syscalls/syscall_64.tbl and
// include/uapi/asm-generic/unistd.h (arm64), in the order of DENIED_NAMES.
const DENIED_NAMES = [
  "ptrace",
  "mount",
  "umount2",
  "unshare",
  "setns",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "process_vm_readv",
  "process_vm_writev",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "userfaultfd",
  "pivot_root",
  "chroot",
  "swapon",
  "swapoff",
  "reboot",
  "acct",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "sethostname",
  "setdomainname",
  "quotactl",
  "lookup_dcookie",
  "open_by_handle_at",
  "name_to_handle_at",
  "fanotify_init",
  "personality",
  "open_tree",
  "move_mount",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "pidfd_getfd",
  "kcmp",
  "vhangup",
  "syslog",
] as const;

const TABLES: Record<Arch, Table> = {
  x64: {
    audit: 0xc000003e,
    deny: [
      101, 165, 166, 272, 308, 250, 248, 249, 321, 298, 310, 311, 246, 320, 175, 313, 176, 323, 155, 161, 167, 168, 169,
      163, 164, 227, 305, 159, 170, 171, 179, 212, 304, 303, 300, 135, 428, 429, 430, 431, 432, 433, 442, 438, 312, 153,
      103,
      // x86-only: iopl, ioperm, modify_ldt, uselib
      172, 173, 154, 134,
    ],
    enosys: [435, 425, 426, 427],
    clone: 56,
    socket: 41,
    ioctl: 16,
    x32Bit: 0x40000000,
  },
  arm64: {
    audit: 0xc00000b7,
    deny: [
      117, 40, 39, 97, 268, 219, 217, 218, 280, 241, 270, 271, 104, 294, 105, 273, 106, 282, 41, 51, 224, 225, 142, 89,
      170, 112, 266, 171, 161, 162, 60, 18, 265, 264, 262, 92, 428, 429, 430, 431, 432, 433, 442, 438, 272, 58, 116,
    ],
    enosys: [435, 425, 426, 427],
    clone: 220,
    socket: 198,
    ioctl: 29,
  },
};

const LD_W_ABS = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const RET = 0x06;
const KILL_PROCESS = 0x80000000;
const ALLOW = 0x7fff0000;
const errno = (n: number): number => 0x00050000 | n;
const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;
const AF_UNIX = 1;
// CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
const CLONE_NEW_ANY =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
// struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
const NR = 0;
const ARCH = 4;
const ARG0 = 16;
const ARG1 = 24;

type Insn = readonly [code: number, jt: number, jf: number, k: number];

function program(t: Table): Insn[] {
  const p: Insn[] = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ, 1, 0, t.audit],
    [RET, 0, 0, KILL_PROCESS],
    [LD_W_ABS, 0, 0, NR],
  ];
  if (t.x32Bit !== undefined) p.push([JGE, 0, 1, t.x32Bit], [RET, 0, 0, errno(ENOSYS)]);
  for (const nr of t.deny) p.push([JEQ, 0, 1, nr], [RET, 0, 0, errno(EPERM)]);
  for (const nr of t.enosys) p.push([JEQ, 0, 1, nr], [RET, 0, 0, errno(ENOSYS)]);
  // clone: threads and plain forks yes, new namespaces no
  p.push(
    [JEQ, 0, 4, t.clone],
    [LD_W_ABS, 0, 0, ARG0],
    [JSET, 0, 1, CLONE_NEW_ANY],
    [RET, 0, 0, errno(EPERM)],
    [RET, 0, 0, ALLOW],
  );
  // socket: AF_UNIX only (there is no network in the sandbox's namespace anyway)
  p.push(
    [LD_W_ABS, 0, 0, NR],
    [JEQ, 0, 4, t.socket],
    [LD_W_ABS, 0, 0, ARG0],
    [JEQ, 1, 0, AF_UNIX],
    [RET, 0, 0, errno(EAFNOSUPPORT)],
    [RET, 0, 0, ALLOW],
  );
  // ioctl: no pushing input into a terminal
  p.push(
    [LD_W_ABS, 0, 0, NR],
    [JEQ, 0, 5, t.ioctl],
    [LD_W_ABS, 0, 0, ARG1],
    [JEQ, 1, 0, TIOCSTI],
    [JEQ, 0, 1, TIOCLINUX],
    [RET, 0, 0, errno(EPERM)],
    [RET, 0, 0, ALLOW],
  );
  p.push([RET, 0, 0, ALLOW]);
  return p;
}

/** The architecture of this process as the filter names it, or null if it has no table for it. */
export function seccompArch(arch: string = process.arch): Arch | null {
  return arch === "x64" || arch === "arm64" ? arch : null;
}

/**
 * The filter as bytes (an array of `struct sock_filter`, little-endian), or null on an
 * architecture without a table. Both tables list the same calls (plus x86's own).
 */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  const a = seccompArch(arch);
  if (!a) return null;
  const insns = program(TABLES[a]);
  const buf = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buf;
}

/** How many syscalls the filter denies outright on `arch` (for status text and tests). */
export function deniedSyscallCount(arch: string = process.arch): number {
  const a = seccompArch(arch);
  return a ? TABLES[a].deny.length + TABLES[a].enosys.length : 0;
}

/** The names of the syscalls denied on every architecture (x86 denies four more). */
export const SECCOMP_DENIED: readonly string[] = DENIED_NAMES;
