// Summarises the V8 CPU profiles written by `pnpm bench --cpu-prof DIR`:
//   pnpm tsx bench/profile.ts DIR [--window c=64] [--top 20] [--callers-of NAME]
// --callers-of NAME splits the time spent under any frame called NAME (e.g. safeParse) by the
// nearest workspace frame (packages/…, services/…) that called it.
// Only samples inside the measured window(s) count (bench-window.json, CLOCK_MONOTONIC µs), so
// start-up (module loading, transpiling) is left out.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface BenchWindow {
  processes: Record<string, number>;
  windows: Array<{ label: string; startUs: number; endUs: number }>;
}

/** Where a frame's code lives: a workspace package, an npm package, Node itself, or V8 pseudo-frames. */
function bucket(f: CallFrame): string {
  const url = f.url;
  if (!url) return f.functionName.startsWith("(") ? f.functionName : "(native/V8)";
  const pkg = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const ws = /\/((?:packages|services)\/[^/]+)\//.exec(url);
  if (ws) return ws[1]!;
  if (url.startsWith("node:")) return "node internals";
  return url.replace(/^file:\/\//, "");
}

/**
 * A frame in a process bundle (`process.bundle.cjs`, one file holding a whole process) named by the
 * source its code came from, through the bundle's source map, so the buckets name packages again.
 */
const maps = new Map<string, SourceMap | null>();
function unbundle(f: CallFrame): CallFrame {
  if (!f.url.endsWith(".cjs")) return f;
  const file = f.url.startsWith("file:") ? fileURLToPath(f.url) : f.url;
  if (!maps.has(file))
    maps.set(
      file,
      existsSync(`${file}.map`)
        ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")) as ConstructorParameters<typeof SourceMap>[0])
        : null,
    );
  const entry = maps.get(file)?.findEntry(f.lineNumber, f.columnNumber ?? 0) as
    { originalSource?: string; originalLine?: number } | undefined;
  if (!entry?.originalSource) return f;
  const source = entry.originalSource.startsWith("file:")
    ? fileURLToPath(entry.originalSource)
    : resolve(dirname(file), entry.originalSource);
  return { ...f, url: pathToFileURL(source).href, lineNumber: entry.originalLine ?? f.lineNumber };
}

const frameName = (f: CallFrame) =>
  `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?|work\/main\/)/, "")}:${f.lineNumber + 1}`;

const isWorkspace = (f: CallFrame) => /\/(?:packages|services)\/[^/]+\//.test(f.url) && !f.url.includes("node_modules");

function summarise(
  label: string,
  p: CpuProfile,
  inWindow: (t: number) => boolean,
  top: number,
  callersOf: string | undefined,
): void {
  const byId = new Map(p.nodes.map((n) => [n.id, { ...n, callFrame: unbundle(n.callFrame) }]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const selfBucket = new Map<string, number>();
  const incl = new Map<string, number>();
  const callers = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (!inWindow(t)) continue;
    const node = byId.get(p.samples[i]!);
    if (!node || node.callFrame.functionName === "(idle)") continue;
    total += dt;
    self.set(frameName(node.callFrame), (self.get(frameName(node.callFrame)) ?? 0) + dt);
    selfBucket.set(bucket(node.callFrame), (selfBucket.get(bucket(node.callFrame)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (!f.url) continue;
      const k = frameName(f);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + dt);
    }
    if (callersOf !== undefined) {
      let under = false;
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
        const f = byId.get(id)!.callFrame;
        // a method assigned to a property is named after its path (zod's compiled `targetAny.safeParse`)
        if (f.functionName === callersOf || f.functionName.endsWith(`.${callersOf}`)) under = true;
        else if (under && isWorkspace(f)) {
          callers.set(frameName(f), (callers.get(frameName(f)) ?? 0) + dt);
          break;
        }
      }
    }
  }
  const pct = (x: number) => `${((100 * x) / Math.max(total, 1)).toFixed(1).padStart(5)}%`;
  const list = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `    ${pct(v)}  ${k}`)
      .join("\n");
  console.log(`\n== ${label}: ${(total / 1000).toFixed(0)} ms on CPU in the window`);
  console.log(`  self time by where the code lives:\n${list(selfBucket, 12)}`);
  console.log(`  self time by function:\n${list(self, top)}`);
  console.log(`  inclusive time by function:\n${list(incl, top)}`);
  if (callersOf !== undefined)
    console.log(`  time under ${callersOf}, by the workspace frame that called it:\n${list(callers, top)}`);
}

const args = process.argv.slice(2);
const dir = args.find((a) => !a.startsWith("--"));
if (!dir) {
  console.error("usage: pnpm tsx bench/profile.ts DIR [--window c=64] [--top 20] [--callers-of NAME]");
  process.exit(2);
}
const wantWindow = args.includes("--window") ? args[args.indexOf("--window") + 1] : undefined;
const top = args.includes("--top") ? Number(args[args.indexOf("--top") + 1]) : 20;
const callersOf = args.includes("--callers-of") ? args[args.indexOf("--callers-of") + 1] : undefined;
const meta = JSON.parse(readFileSync(join(dir, "bench-window.json"), "utf8")) as BenchWindow;
const windows = meta.windows.filter((w) => !wantWindow || w.label === wantWindow);
if (windows.length === 0) {
  console.error(
    `no window ${wantWindow ?? ""} in bench-window.json (have ${meta.windows.map((w) => w.label).join(", ")})`,
  );
  process.exit(2);
}
const inWindow = (t: number) => windows.some((w) => t >= w.startUs && t <= w.endUs);
const labelOf = new Map(Object.entries(meta.processes).map(([k, v]) => [v, k]));
console.log(`windows: ${windows.map((w) => `${w.label} (${((w.endUs - w.startUs) / 1e6).toFixed(1)} s)`).join(", ")}`);
for (const f of readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .sort()) {
  const pid = Number(/^CPU\.(?:\d+\.\d+\.)?(\d+)\./.exec(f)?.[1]);
  summarise(
    `${labelOf.get(pid) ?? `pid ${pid}`} (${f})`,
    JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile,
    inWindow,
    top,
    callersOf,
  );
}
