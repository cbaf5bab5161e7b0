import { readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";

/** Linux USER_HZ: /proc times are in these ticks (100 on every mainstream kernel build). */
const TICKS_PER_SECOND = 100;

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** Resident set size of a process in KiB (VmRSS from /proc/<pid>/status), null when it is gone. */
export function rssKiB(pid: number): number | null {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(read(`/proc/${pid}/status`) ?? "");
  return m ? Number(m[1]) : null;
}

/** Peak resident set size of a process so far in KiB (VmHWM from /proc/<pid>/status), null when it is gone. */
export function hwmKiB(pid: number): number | null {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(read(`/proc/${pid}/status`) ?? "");
  return m ? Number(m[1]) : null;
}

/** CPU time (user + system) a process has used so far, in ms; null when it is gone. */
export function cpuMs(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return null;
  // the command name (field 2) is in parentheses and may contain spaces: split after the last ')'
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime + stime) ? ((utime + stime) * 1000) / TICKS_PER_SECOND : null;
}

/** Machine-wide CPU counters (all cores) from /proc/stat, in ticks. */
export interface MachineCpu {
  readonly busy: number;
  readonly total: number;
  /** Context switches since boot, all cores (`ctxt`): every wake-up of a process or thread. */
  readonly ctxt: number;
}

export function machineCpu(): MachineCpu {
  const stat = read("/proc/stat") ?? "";
  const line = stat.split("\n")[0] ?? "";
  const ctxt = Number(/^ctxt (\d+)$/m.exec(stat)?.[1] ?? Number.NaN);
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = v;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait, ctxt };
}

/** Percentage of all cores busy between two readings (100 = every core busy the whole time). */
export function busyPercent(a: MachineCpu, b: MachineCpu): number {
  const total = b.total - a.total;
  return total > 0 ? (100 * (b.busy - a.busy)) / total : Number.NaN;
}

/**
 * Finds a server process by its binary name and a port on its command line (how infra.ts starts
 * nats-server and redis-server), or a config file path given as a string (how nats-auth.ts starts
 * nats-server: `-c <dir>/nats-server.conf`); null when there is none (e.g. NATS_URL/REDIS_URL).
 */
export function findServerPid(binary: string, portOrConfig: number | string): number | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    // redis-server rewrites its title to "redis-server 127.0.0.1:<port>": split on spaces too
    const argv = (read(`/proc/${e}/cmdline`) ?? "").split(/[\0 ]/).filter(Boolean);
    if (argv.length === 0 || basename(argv[0]!) !== binary) continue;
    if (typeof portOrConfig === "string") {
      if (argv.includes(portOrConfig)) return Number(e);
      continue;
    }
    if (argv.includes(String(portOrConfig)) || argv.some((a) => a.endsWith(`:${portOrConfig}`))) return Number(e);
  }
  return null;
}
