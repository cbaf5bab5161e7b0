import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { naming as makeNaming, SCHEMA_VERSION, SubmitRequest, type Naming } from "@agentmesh/contracts";
import { connectNats, createPublisher, provision } from "@agentmesh/messaging";
import { createLogger } from "@agentmesh/service-kit";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { ask } from "./commands.js";
import { loadCliConfig } from "./config.js";

// `agentmesh ask` against a stand-in coordinator on a real NATS server: the live tokens it prints
// come before the final answer, a redelivered task's text once.

const log = createLogger({ service: "cli-test", level: "silent" });
let nc: NatsConnection;
let naming: Naming;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "cli-ask-tokens" });
  naming = makeNaming(uniquePrefix("clitok"));
  await provision(nc, {
    naming,
    roles: [],
    taskAckWaitMs: 1000,
    taskMaxDeliver: 3,
    inboxAckWaitMs: 1000,
    inboxMaxDeliver: 3,
    eventsMaxAgeMs: 60_000,
    duplicateWindowMs: 10_000,
    maxAckPendingPerRole: 4,
  });
});
afterAll(async () => {
  const jsm = await jetstreamManager(nc);
  for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
    await jsm.streams.delete(s).catch(() => false);
  await nc.drain();
});

/** Answers a submit, then streams a task's text (a redelivery sends it again from seq 0) and completes. */
function standInCoordinator(withTokens: boolean) {
  const pub = createPublisher(nc, naming, log);
  return nc.subscribe(naming.submit, {
    callback: (_e, m) => {
      const req = SubmitRequest.parse(m.json());
      const sid = req.session_id ?? "never";
      m.respond(
        JSON.stringify({
          v: SCHEMA_VERSION,
          ok: true,
          session_id: sid,
          created: true,
          thread_id: null,
          replied: false,
        }),
      );
      void (async () => {
        const base = { v: SCHEMA_VERSION, session_id: sid, timestamp: Date.now() } as const;
        await pub.publishEvent({
          ...base,
          version: 1,
          index: 0,
          type: "stage",
          name: "writer",
          status: "running",
          description: "Write",
        });
        await new Promise((r) => setTimeout(r, 200));
        const token = (seq: number, delta: string) =>
          pub.publishTokens({
            ...base,
            version: 1,
            index: 0,
            type: "token",
            task_id: `${sid}.1.0.0`,
            role: "writer",
            op: "write",
            attempt: 0,
            seq,
            delta,
          });
        if (withTokens)
          for (const [seq, delta] of [
            [0, "Live "],
            [1, "text"],
            [0, "Live "],
            [1, "text"],
            [2, " arrives."],
          ] as const)
            await token(seq, delta);
        await nc.flush();
        await new Promise((r) => setTimeout(r, 200));
        await pub.publishEvent({
          ...base,
          version: 2,
          index: 0,
          type: "complete",
          status: "completed",
          final_answer: "Live text arrives.",
          final_reasoning_trace: "written",
        });
      })();
    },
  });
}

async function runAsk(opts: { json: boolean; tokens?: boolean }) {
  const sub = standInCoordinator(true);
  await nc.flush();
  const chunks: string[] = [];
  const cfg = loadCliConfig({ NATS_URL: inject("natsUrl"), AGENTMESH_PREFIX: naming.prefix });
  const out = {
    line: (s: string) => void chunks.push(`${s}\n`),
    write: (s: string) => void chunks.push(s),
    err: (s: string) => void chunks.push(`ERR ${s}\n`),
  };
  try {
    const code = await ask(
      cfg,
      "Write two words",
      {
        workflow: "critic-chain",
        verbose: false,
        json: opts.json,
        timeoutMs: 15_000,
        ...(opts.tokens === undefined ? {} : { tokens: opts.tokens }),
      },
      out,
    );
    return { code, text: chunks.join("") };
  } finally {
    sub.unsubscribe();
  }
}

describe("agentmesh ask prints live tokens", () => {
  it("as they come, once each, ending their line before the final answer", async () => {
    const { code, text } = await runAsk({ json: false });
    expect(code).toBe(0);
    expect(text).toContain(
      "  … writer\n  ✎ writer.write:\n    Live text arrives.\n\nAnswer (completed):\n  Live text arrives.\n",
    );
    expect(text.match(/Live /g)).toHaveLength(2); // once live, once in the answer
  }, 30_000);

  it("--json: token lines between the events; --no-tokens: none", async () => {
    const json = await runAsk({ json: true });
    const types = json.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; seq?: number });
    expect(types.map((t) => `${t.type}${t.seq ?? ""}`)).toEqual(["stage", "token0", "token1", "token2", "complete"]);
    const quiet = await runAsk({ json: false, tokens: false });
    expect(quiet.code).toBe(0);
    expect(quiet.text).not.toContain("✎");
  }, 30_000);
});
