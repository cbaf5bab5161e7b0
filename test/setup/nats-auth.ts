import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROLE_NAMES, naming } from "@agentmesh/contracts";
import { natsServerConfig, newUserKey, SERVICE_USERS } from "@agentmesh/messaging";
import { freePort, NATS_SERVER_ENV, natsServerBinary, waitForLine } from "./infra.js";

export { natsServerBinary };

/** A nats-server of our own, started with the generated access-control config for one prefix. */
export interface AuthNats {
  readonly url: string;
  readonly dir: string;
  /** The seed file of a service user (a role, coordinator, client, inspect) or of the unrestricted `admin`. */
  seedFile(user: string): string;
  /** Public key of a user. */
  publicKey(user: string): string;
  stop(): Promise<void>;
}

/**
 * Starts nats-server on a free loopback port with the config `natsServerConfig` generates for
 * `prefix` (every role of ROLES, the service users, and an `admin` user for the test's own
 * inspection), one fresh NKey per user written to a seed file (mode 0600) in a temp dir.
 */
export async function startAuthNats(prefix: string, roles: readonly string[] = ROLE_NAMES): Promise<AuthNats> {
  const bin = natsServerBinary();
  if (!bin) {
    throw new Error(
      "the e2e and permission tests need the nats-server binary (apt-get install nats-server, or set NATS_SERVER_BIN) to run a server with the generated access-control config",
    );
  }
  const dir = mkdtempSync(join(tmpdir(), "agentmesh-authnats-"));
  const keys: Record<string, { seed: string; publicKey: string }> = {};
  for (const user of [...roles, ...SERVICE_USERS, "admin"]) {
    const k = newUserKey();
    keys[user] = k;
    const file = join(dir, `${user}.nk`);
    writeFileSync(file, `${k.seed}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  const port = await freePort();
  const conf = join(dir, "nats-server.conf");
  writeFileSync(
    conf,
    natsServerConfig({
      naming: naming(prefix),
      roles,
      keys: Object.fromEntries(Object.entries(keys).map(([u, k]) => [u, k.publicKey])),
      admin: keys.admin?.publicKey,
      listen: `127.0.0.1:${port}`,
      storeDir: join(dir, "js"),
    }),
  );
  const proc: ChildProcess = spawn(bin, ["-c", conf], {
    env: { ...process.env, ...NATS_SERVER_ENV },
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    await waitForLine(proc, /Server is ready/);
  } catch (err) {
    proc.kill("SIGKILL");
    throw err;
  }
  const get = (user: string) => {
    const k = keys[user];
    if (!k) throw new Error(`no NATS user ${user}`);
    return k;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    dir,
    seedFile: (user) => (get(user), join(dir, `${user}.nk`)),
    publicKey: (user) => get(user).publicKey,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
