// Preloaded into each service by `pnpm bench --cpu-prof DIR` (NODE_OPTIONS=--import, since Node 20
// refuses --cpu-prof there): samples the process with the in-process inspector and writes
// DIR/CPU.<pid>.cpuprofile when it exits. Plain JS: it loads before tsx is registered.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 500 });
  session.post("Profiler.start");
  // A same-thread inspector session answers synchronously, so this works inside 'exit'.
  process.once("exit", () => {
    session.post("Profiler.stop", (err, res) => {
      if (!err) writeFileSync(join(dir, `CPU.${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
