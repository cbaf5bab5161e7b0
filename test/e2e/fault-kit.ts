/**
 * Helpers for the end-to-end fault tests: a model proxy in front of one scripted server per session
 * (so one set of agent processes serves many tests, each session with its own script) that sees
 * every HTTP request arrive and every client hang-up; polling; the CLI; process stops.
 */
import { spawn } from "node:child_process";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { parseTaskId, type TransitionLogLine } from "@agentmesh/contracts";
import { serviceArgv, type Cluster, type Proc } from "./harness.js";

const root = join(import.meta.dirname, "../..");

/** One HTTP request to the model, as the proxy saw it. */
export interface ProxiedCall {
  readonly role: string;
  readonly op: string;
  readonly taskId: string;
  /** Date.now() when the request arrived. */
  readonly at: number;
  /** Date.now() when the response was fully sent, or null. */
  endedAt: number | null;
  /** Date.now() when the agent closed the connection before the response was complete, or null. */
  abortedAt: number | null;
  /** HTTP status the scripted server answered (null while pending or when aborted first). */
  status: number | null;
}

/**
 * A loopback HTTP proxy in front of one scripted server per session: `script(sid, entries)`
 * starts a scripted server for that session, and each request is routed by the session id in its
 * task id, so a session left running by a failed test can never eat another test's script. A
 * client that hangs up mid-request is recorded in `abortedAt`, and the hang-up is passed on, so
 * the scripted server sees its connection close.
 */
export interface ModelProxy {
  readonly url: string;
  readonly calls: ProxiedCall[];
  script(sid: string, entries: readonly HttpScriptEntry[]): Promise<ScriptedServer>;
  /** Calls whose task id belongs to `sid`. */
  callsOf(sid: string): ProxiedCall[];
  close(): Promise<void>;
}

export async function startModelProxy(): Promise<ModelProxy> {
  const servers = new Map<string, ScriptedServer>();
  const calls: ProxiedCall[] = [];
  const header = (req: IncomingMessage, name: string) => {
    const v = req.headers[name];
    return (Array.isArray(v) ? v[0] : v) ?? "";
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const call: ProxiedCall = {
      role: header(req, "x-agentmesh-role"),
      op: header(req, "x-agentmesh-op"),
      taskId: header(req, "x-agentmesh-task-id"),
      at: Date.now(),
      endedAt: null,
      abortedAt: null,
      status: null,
    };
    if (req.url?.endsWith("/chat/completions")) calls.push(call);
    const target = servers.get(parseTaskId(call.taskId)?.sessionId ?? "");
    if (!target) {
      call.status = 400;
      // Like the scripted server's unexpected call: a 400 the adapter does not retry.
      const body = JSON.stringify({
        error: {
          message: `model proxy: no script for task ${call.taskId}`,
          type: "scripted_unexpected_call",
          param: null,
          code: null,
        },
      });
      res.writeHead(400, { "content-type": "application/json" }).end(body);
      return;
    }
    const up = httpRequest(
      { host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        call.status = upRes.statusCode ?? null;
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on("finish", () => {
      call.endedAt = Date.now();
    });
    res.on("close", () => {
      if (!res.writableFinished) {
        call.abortedAt = Date.now();
        up.destroy();
      }
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    calls,
    async script(sid, entries) {
      if (servers.has(sid)) throw new Error(`session ${sid} already has a script`);
      const s = await startScriptedOpenAIServer({ script: entries });
      servers.set(sid, s);
      return s;
    },
    callsOf: (sid) => calls.filter((c) => c.taskId.startsWith(`${sid}.`)),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await Promise.all([...servers.values()].map((s) => s.close()));
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined/false, or throws after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 30_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Sends SIGTERM (or `signal`) to a service process and waits for it to exit. */
export async function stopProc(p: Proc, signal: NodeJS.Signals = "SIGTERM", ms = 15_000): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill(signal);
  const done = await Promise.race([p.exited, sleep(ms).then(() => null)]);
  if (done === null) {
    p.child.kill("SIGKILL");
    await p.exited;
  }
}

export const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;

/** Waits until every wanted service answers `$SRV.PING` (after an outage: everyone reconnected). */
export async function waitAnswering(
  cluster: Cluster,
  want: Record<string, number>,
  ms = 30_000,
): Promise<Map<string, number>> {
  return waitFor(
    "every replica to answer $SRV.PING",
    async () => {
      const seen = await cluster.ping().catch(() => new Map<string, number>());
      return Object.entries(want).every(([n, c]) => (seen.get(n) ?? 0) >= c) ? seen : undefined;
    },
    ms,
    250,
  );
}

/** Runs the CLI (`pnpm agentmesh …`) with the cluster's environment. */
export function runCli(
  cluster: Cluster,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string; exitedAt: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, serviceArgv("cli", args), {
      cwd: root,
      env: cluster.env(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    child.once("exit", (code) => resolve({ code, stdout, stderr, exitedAt: Date.now() }));
  });
}

/** The transition log as one readable line per transition (for assertion messages). */
export function describeLog(log: readonly TransitionLogLine[]): string {
  return log.map((l) => `v${l.version} @${l.now} ${l.input_id} -> ${l.status} [${l.commands.join("; ")}]`).join("\n");
}

/** The task id a transition dispatched for `role.op`, or undefined. */
export function dispatched(line: TransitionLogLine | undefined, role: string, op: string): string | undefined {
  const c = line?.commands.find((x) => x.startsWith(`dispatch ${role}.${op} `));
  return c?.split(" ")[2];
}
