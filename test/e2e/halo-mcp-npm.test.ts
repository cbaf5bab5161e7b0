import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { Capability, HaloData, SpecialistOutput } from "@agentmesh/contracts";
import { startScriptedOpenAIServer, type HttpScriptEntry, type ScriptedServer } from "@agentmesh/llm/testing";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, assertAppliedOnce, type Proc } from "./harness.js";

// halo's mcp role (its own process) against the reference MCP servers from npm: the filesystem
// server over stdio (spawned by the role, confined to a temp directory) and the everything
// server over streamable HTTP (its own process, on a free port of 127.0.0.1). With a scripted
// model choosing two-argument tools, and offline, where a tool is called only when the question
// alone fills every required argument. A call the server refuses fails at once as
// invalid_tool_input, not after the task's redeliveries.

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FILESYSTEM = join(root, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING = join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const LOOPBACK = join(root, "test/e2e/loopback-listen.mjs");

interface EverythingServer {
  readonly url: string;
  readonly address: string;
  kill(): Promise<void>;
}

/** The everything server's streamable HTTP transport on port 0, its listen bound to 127.0.0.1. */
async function startEverything(): Promise<EverythingServer> {
  const child: ChildProcess = spawn(process.execPath, ["--import", LOOPBACK, EVERYTHING, "streamableHttp"], {
    env: { PATH: process.env.PATH, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the everything server did not listen:\n${out}`)), 30_000);
    const onData = (b: Buffer): void => {
      out += b.toString();
      const m = /loopback-listen (\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the everything server exited (${code}):\n${out}`)));
  });
  return {
    url: `http://${address}/mcp`,
    address,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

const MCP_ROLES = ["mcp"] as const;

async function mcpCluster(
  name: string,
  servers: unknown,
  llmBaseUrl?: string,
): Promise<{ cluster: Cluster; mcp: Proc }> {
  const cluster = new Cluster({
    natsUrl: inject("natsUrl"),
    redisUrl: inject("redisUrl"),
    prefix: uniquePrefix(name),
    ...(llmBaseUrl ? { llmBaseUrl } : {}),
    extraEnv: { AGENTMESH_HALO_JOIN_DEADLINE_MS: "20000", AGENTMESH_MCP_SERVERS: JSON.stringify(servers) },
  });
  await cluster.open();
  cluster.start("coordinator");
  await cluster.waitReady({ coordinator: 1 }, 90_000);
  const mcp = cluster.start("mcp");
  await cluster.waitReady(Object.fromEntries(MCP_ROLES.map((r) => [r, 1])), 120_000);
  return { cluster, mcp };
}

/** One halo session with one MCP capability; the specialist's output and the session's time. */
async function askOne(cluster: Cluster, sid: string, query: string, capability: Capability) {
  const submittedAt = Date.now();
  await cluster.submit(query, sid, { workflow: "halo", options: { capabilities: [capability] } });
  const { state, log } = await cluster.waitDone(sid, 60_000);
  assertAppliedOnce(log, state.meta.version);
  if (state.data.workflow !== "halo") throw new Error("expected a halo session");
  const data: HaloData = state.data;
  const output = data.outputs.find((o) => o.capability === capability) as SpecialistOutput;
  return { state, data, output, wallMs: Date.now() - submittedAt };
}

let dir: string;
let notesFile: string;
let everything: EverythingServer;

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "agentmesh-mcp-fs-")));
  mkdirSync(join(dir, "notes"));
  notesFile = join(dir, "notes", "her2-dimers.txt");
  writeFileSync(notesFile, "HER2 forms heterodimers with HER3.\n");
  writeFileSync(join(dir, "notes", "unrelated.txt"), "Nothing to see.\n");
  everything = await startEverything();
}, 60_000);

afterAll(async () => {
  await everything?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const filesystem = (allow: unknown) => ({ command: process.execPath, args: [FILESYSTEM, dir], allow: { mcp: allow } });

test("the everything server listens on 127.0.0.1 only, on the free port it was given", () => {
  expect(everything.address).toMatch(/^127\.0\.0\.1:\d+$/);
  expect(everything.address).not.toMatch(/:3001$/);
});

describe("with a scripted model: two-argument tools of the npm servers, and calls the server refuses", () => {
  let cluster: Cluster;
  let mcp: Proc;
  let llm: ScriptedServer;
  const choose = (tool: string, args: unknown): HttpScriptEntry => ({
    role: "mcp",
    op: "answer",
    output: { tool, arguments_json: JSON.stringify(args) },
  });

  beforeAll(async () => {
    llm = await startScriptedOpenAIServer({
      script: [
        choose("search_files", { path: dir, pattern: "**/*her2*" }),
        choose("get-sum", { a: 2, b: 3 }),
        // the server refuses: outside its allowed directory (its own error result)
        choose("search_files", { path: "/etc", pattern: "**/*" }),
        // the reviewer's call: the pattern missing
        choose("search_files", { path: dir }),
      ],
    });
    ({ cluster, mcp } = await mcpCluster(
      "halomcpm",
      { llama_mcp: filesystem("*"), biomcp: { url: everything.url, allow: { mcp: ["echo", "get-sum"] } } },
      llm.url,
    ));
  }, 240_000);

  afterAll(async () => {
    await cluster?.close();
    await llm?.close();
  });

  test("filesystem over stdio: the model's search_files with path and pattern finds the file, and the answer names it", async () => {
    const { state, output } = await askOne(cluster, "halomcpfs0000000001x", "Which notes mention HER2?", "llama_mcp");
    expect(state.meta.status).toBe("completed");
    expect(output).toMatchObject({ status: "answered" });
    expect(output.response_str).toContain(notesFile);
    expect(output.response_str).not.toContain("unrelated.txt");
  });

  test("everything over streamable HTTP: the model's get-sum with a and b answers the sum", async () => {
    const { output } = await askOne(cluster, "halomcpev0000000001x", "What is 2 plus 3?", "biomcp");
    expect(output).toMatchObject({ status: "answered", response_str: "The sum of 2 and 3 is 5." });
  });

  test("a call the server refuses (its error result) is invalid_tool_input at once, with the server's message", async () => {
    const { output, wallMs } = await askOne(cluster, "halomcpno0000000001x", "List everything in /etc", "llama_mcp");
    console.log(`refused by the server: ${output.error_code} after ${output.latency_ms} ms (session ${wallMs} ms)`);
    expect(output).toMatchObject({ status: "unavailable", error_code: "invalid_tool_input" });
    expect(output.latency_ms).toBeLessThan(2000);
    expect(mcp.output()).toContain("refused the call: Access denied - path outside allowed directories");
  });

  test("arguments missing a required one are invalid_tool_input at once, naming it", async () => {
    const { output, wallMs } = await askOne(cluster, "halomcpar0000000001x", "Which notes mention HER2?", "llama_mcp");
    console.log(`pattern missing: ${output.error_code} after ${output.latency_ms} ms (session ${wallMs} ms)`);
    expect(output).toMatchObject({ status: "unavailable", error_code: "invalid_tool_input" });
    expect(output.latency_ms).toBeLessThan(2000);
    expect(mcp.output()).toContain("must have required property 'pattern'");
  });
});

describe("offline: a tool is called only when the question fills every required argument", () => {
  let cluster: Cluster;
  let mcp: Proc;

  beforeAll(async () => {
    ({ cluster, mcp } = await mcpCluster("halomcpo", {
      llama_mcp: filesystem(["search_files", "move_file", "list_allowed_directories"]),
      biomcp: { url: everything.url, allow: { mcp: ["get-sum", "echo"] } },
    }));
  }, 240_000);

  afterAll(async () => {
    await cluster?.close();
  });

  test("filesystem over stdio: no tool the role may call can be filled from the question, so it says so at once and calls none", async () => {
    const { state, data, output, wallMs } = await askOne(
      cluster,
      "halomcpof0000000001x",
      "Search files matching HER2",
      "llama_mcp",
    );
    console.log(`offline, nothing callable: ${output.error_code} after ${output.latency_ms} ms (session ${wallMs} ms)`);
    expect(state.meta.status).toBe("completed");
    expect(output).toMatchObject({ status: "unavailable", error_code: "needs_model" });
    // the first use spawns the server (about a second); the task's redeliveries took 8 s
    expect(output.latency_ms).toBeLessThan(4000);
    expect(data.response_str).toContain("The llama_mcp specialist is unavailable right now.");
    const log = mcp.output();
    expect(log).toContain(
      'no tool can be called with the question alone (move_file also needs \\"destination\\"; search_files also needs \\"pattern\\"; list_allowed_directories takes no text argument)',
    );
    expect(log).not.toContain("refused the call");
  });

  test("everything over streamable HTTP: echo is the tool the question fills; get-sum's numbers it cannot give", async () => {
    const { output } = await askOne(cluster, "halomcpoe0000000001x", "Echo the word HER2 back to me", "biomcp");
    expect(output).toMatchObject({ status: "answered", response_str: "Echo: Echo the word HER2 back to me" });
  });
});
