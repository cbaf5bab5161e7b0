import { resolveInfra } from "../test/setup/infra.js";
import { uniquePrefix } from "../test/setup/prefix.js";
import { Cluster, AGENT_ROLES } from "../test/e2e/harness.js";
const infra = await resolveInfra();
console.log(infra.source, infra.natsUrl, infra.redisUrl);
const cluster = new Cluster({ natsUrl: infra.natsUrl, redisUrl: infra.redisUrl, prefix: uniquePrefix("probe") });
try {
  await cluster.open();
  const t = Date.now();
  cluster.start("coordinator"); cluster.start("coordinator");
  await cluster.waitReady({ coordinator: 2 }, 90000);
  for (const r of AGENT_ROLES) cluster.start(r);
  await cluster.waitReady({ coordinator: 2, planner: 1, critic: 1, researcher: 1, expert: 1, finalizer: 1 }, 90000);
  console.log("ready in", Date.now() - t);
  const sid = await cluster.submit("What is 12 * 7 + 0.1?", "probe00000000000001");
  const r = await cluster.waitDone(sid);
  for (const e of r.events) console.log(JSON.stringify(e).slice(0, 300));
  console.log(r.state.meta.version, JSON.stringify(r.state.data).slice(0, 500));
} finally {
  await cluster.close();
  await infra.stop();
}
