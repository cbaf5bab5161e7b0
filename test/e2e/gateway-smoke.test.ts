import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster } from "./harness.js";

// Offline engine (no model): critic-chain answers arithmetic through the calculator tool (an executor.call).
const ALICE = generateApiKey();
const BOB = generateApiKey();
let cluster: Cluster;
let url: string;

beforeAll(async () => {
  cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("gws") });
  await cluster.open();
  cluster.start("coordinator");
  for (const r of ["planner", "critic", "researcher", "expert", "finalizer", "executor"] as const) cluster.start(r);
  ({ url } = await cluster.startGateway({
    AGENTMESH_API_KEYS: [apiKeyEntry("alice", ALICE), apiKeyEntry("bob", BOB)].join(","),
  }));
  await cluster.waitReady({
    coordinator: 1,
    planner: 1,
    critic: 1,
    researcher: 1,
    expert: 1,
    finalizer: 1,
    executor: 1,
  });
});

afterAll(async () => {
  await cluster?.close();
});

/** Reads an SSE response to its end into (id, event, data) records. */
async function readSse(res: Response): Promise<Array<{ id: string | null; event: string; data: string }>> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((b) => b.trim() && !b.startsWith(":"))
    .map((block) => {
      const line = (k: string) =>
        block
          .split("\n")
          .find((l) => l.startsWith(`${k}: `))
          ?.slice(k.length + 2) ?? null;
      return { id: line("id"), event: line("event") ?? "message", data: line("data") ?? "" };
    });
}

describe("the gateway as a real process under NATS access control", () => {
  test("a query streams its events to the end; its owner reads it, another key gets 404", async () => {
    const res = await fetch(`${url}/api/v1/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "What is 6 * 7?" }),
    });
    expect(res.status).toBe(200);
    const sid = res.headers.get("x-agentmesh-session");
    const events = await readSse(res);
    expect(events[0]?.event).toBe("session");
    const complete = events.at(-1);
    expect(complete?.event).toBe("complete");
    expect(JSON.parse(complete?.data ?? "{}").final_answer).toMatch(/42/);
    // the expert computed it with the calculator tool, run by the executor
    expect(
      events.filter((e) => e.event === "tool_call").map((e) => JSON.parse(e.data) as { tool: string }),
    ).toMatchObject([{ tool: "calculator" }]);
    const ids = events.filter((e) => e.id !== null).map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const mine = await fetch(`${url}/api/v1/sessions/${sid}`, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(await mine.json()).toMatchObject({ session_id: sid, status: "completed", question: "What is 6 * 7?" });
    const theirs = await fetch(`${url}/api/v1/sessions/${sid}`, { headers: { authorization: `Bearer ${BOB}` } });
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual({ error: { code: "not_found", message: `no session ${sid}`, status: 404 } });
  });
});
