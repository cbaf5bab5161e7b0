import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { naming, ROLE_NAMES } from "@agentmesh/contracts";
import { natsRouteUrl, natsServerConfig, newUserKey, publicKeyOfSeed, SERVICE_USERS } from "@agentmesh/messaging";

// NATS access control for a deployment: one NKey user per service (every role of ROLE_NAMES,
// coordinator, client, inspect) and the nats-server config granting each only its subjects.
//
//   pnpm nats:keys [--prefix agentmesh] [--out .nats] [--store /data/jetstream]
//                  [--routes host-a:6222,host-b:6222,host-c:6222 [--cluster-name agentmesh]]
//
// writes (the directory is gitignored; seeds are secrets and are never committed):
//   <out>/seeds/<user>.nk                 one seed per user (mode 0600), kept when re-run
//   <out>/nats-server.conf                the server config (public keys and permissions only)
//   <out>/accounts.conf                   its `accounts` block alone, to $include into a config
//                                         another tool writes (the NATS Helm chart's)
//   <out>/k8s/nats-seeds.secret.yaml      Secret `agentmesh-nats-seeds`: mount one key per pod
//   <out>/k8s/nats-config.configmap.yaml  ConfigMap `agentmesh-nats-config`: both of the above
// and with --routes (a cluster whose nodes this config runs, not the Helm chart's):
//   <out>/route.password                  the password every route presents (mode 0600), kept when re-run
//   <out>/cluster/<host>.conf             one node's config: the same accounts and users as every
//                                         other node, its server name (the host), routes to all
// A role added to the registry gets its user the next time this runs. docs/nats-cluster.md.

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  return v ?? fallback;
}

const prefix = arg("prefix", "agentmesh");
const out = resolve(arg("out", ".nats"));
const storeDir = arg("store", "/data/jetstream");
const routes = arg("routes", "")
  .split(",")
  .map((r) => r.trim())
  .filter((r) => r !== "");
const clusterName = arg("cluster-name", prefix);
const n = naming(prefix);
const users = [...ROLE_NAMES, ...SERVICE_USERS];

mkdirSync(join(out, "seeds"), { recursive: true, mode: 0o700 });
mkdirSync(join(out, "k8s"), { recursive: true });
const seeds: Record<string, string> = {};
const keys: Record<string, string> = {};
for (const user of users) {
  const file = join(out, "seeds", `${user}.nk`);
  let seed: string;
  if (existsSync(file)) seed = readFileSync(file, "utf8").trim();
  else {
    seed = newUserKey().seed;
    writeFileSync(file, `${seed}\n`, { mode: 0o600 });
  }
  chmodSync(file, 0o600);
  seeds[user] = seed;
  keys[user] = publicKeyOfSeed(seed);
}

const conf = natsServerConfig({ naming: n, roles: ROLE_NAMES, keys, storeDir, httpPort: 8222 });
writeFileSync(join(out, "nats-server.conf"), conf);
// The same users and permissions as an include file: deploy/infra/nats-values.yaml $includes it.
const accounts = `${JSON.stringify({ accounts: (JSON.parse(conf) as { accounts: unknown }).accounts }, null, 2)}\n`;
writeFileSync(join(out, "accounts.conf"), accounts);

if (routes.length > 0) {
  if (routes.length < 3)
    console.warn(`nats:keys: ${routes.length} routes; replicated streams (R3) need a cluster of at least 3 nodes`);
  const pwFile = join(out, "route.password");
  const password = existsSync(pwFile) ? readFileSync(pwFile, "utf8").trim() : randomBytes(24).toString("base64url");
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  chmodSync(pwFile, 0o600);
  const authorization = { user: "route", password };
  mkdirSync(join(out, "cluster"), { recursive: true, mode: 0o700 });
  for (const route of routes) {
    const host = route.replace(/:\d+$/, "");
    const nodeConf = natsServerConfig({
      naming: n,
      roles: ROLE_NAMES,
      keys,
      storeDir,
      httpPort: 8222,
      serverName: host,
      cluster: {
        name: clusterName,
        listen: `0.0.0.0:${/:(\d+)$/.exec(route)?.[1] ?? "6222"}`,
        routes: routes.map((r) => natsRouteUrl(r, authorization)),
        authorization,
      },
    });
    // the route password is in it: readable by its owner only
    writeFileSync(join(out, "cluster", `${host}.conf`), nodeConf, { mode: 0o600 });
  }
  console.log(`Cluster "${clusterName}": one config per node in ${join(out, "cluster")} (${routes.join(", ")})`);
}

const indent = (text: string, by: string) =>
  text
    .trimEnd()
    .split("\n")
    .map((l) => `${by}${l}`)
    .join("\n");
writeFileSync(
  join(out, "k8s", "nats-config.configmap.yaml"),
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agentmesh-nats-config\ndata:\n  nats-server.conf: |\n${indent(conf, "    ")}\n  accounts.conf: |\n${indent(accounts, "    ")}\n`,
);
writeFileSync(
  join(out, "k8s", "nats-seeds.secret.yaml"),
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: agentmesh-nats-seeds\ntype: Opaque\nstringData:\n${users.map((u) => `  ${u}.nk: ${JSON.stringify(seeds[u])}`).join("\n")}\n`,
  { mode: 0o600 },
);
console.log(`NATS access control for prefix "${prefix}": ${users.length} users (${users.join(", ")}) in ${out}`);
console.log("Run nats-server -c nats-server.conf; give each service NATS_NKEY_SEED_FILE=<its seed file>.");
