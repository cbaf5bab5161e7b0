import { inputIds, naming as makeNaming, SCHEMA_VERSION } from "@agentmesh/contracts";
import { connectNats, createPublisher, listDeadLetters, provision, startInboxConsumer } from "@agentmesh/messaging";
import { connectRedis, createRedisSessionStore } from "@agentmesh/session-store";
import { testSessionState } from "@agentmesh/session-store/testing";
import { createLogger } from "@agentmesh/service-kit";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, inject, it } from "vitest";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { sessions } from "./commands.js";
import { loadCliConfig } from "./config.js";

const log = createLogger({ service: "cli-test", level: "silent" });

async function stuckRows(
  cfg: ReturnType<typeof loadCliConfig>,
): Promise<{ code: number; rows: Array<{ session_id: string; stuck: string | null }> }> {
  const lines: string[] = [];
  const code = await sessions(
    cfg,
    { stuck: true, limit: 100, graceMs: 60_000, json: true },
    { line: (s) => lines.push(s), write: (s) => lines.push(s), err: (s) => lines.push(s) },
  );
  return { code, rows: JSON.parse(lines.join("\n")) as Array<{ session_id: string; stuck: string | null }> };
}

describe("agentmesh sessions --stuck sees dead-lettered inbox inputs", () => {
  it("a session whose start failed every delivery is listed as stuck, naming the dead letter to re-drive", async () => {
    const prefix = uniquePrefix("cli");
    const naming = makeNaming(prefix);
    const cfg = loadCliConfig({ NATS_URL: inject("natsUrl"), REDIS_URL: inject("redisUrl"), AGENTMESH_PREFIX: prefix });
    const nc = await connectNats({ url: cfg.natsUrl, name: "cli-stuck-test" });
    const redis = await connectRedis(cfg.redisUrl, { name: "cli-stuck-test" });
    const store = createRedisSessionStore(redis, {
      keyPrefix: prefix,
      activeTtlMs: 60_000,
      finishedTtlMs: 60_000,
      idempotencyTtlMs: 60_000,
    });
    try {
      await provision(nc, {
        naming,
        roles: [],
        taskAckWaitMs: 1000,
        taskMaxDeliver: 3,
        inboxAckWaitMs: 1000,
        inboxMaxDeliver: 3,
        eventsMaxAgeMs: 60_000,
        duplicateWindowMs: 10_000,
        maxAckPendingPerRole: 16,
      });
      // a session as submit leaves it: created at version 0, its start on the inbox
      const sid = `stuck${Date.now().toString(36)}`;
      expect(await store.create(testSessionState(sid, 0, Date.now()))).toBe(true);
      expect((await stuckRows(cfg)).rows).toEqual([]);

      // a coordinator that can never apply it (e.g. its store keeps failing)
      const consumer = await startInboxConsumer(nc, {
        naming,
        concurrency: 2,
        ackWaitMs: 1000,
        handler: async () => "retry",
        log,
      });
      await createPublisher(nc, naming, log).publishInbox({
        v: SCHEMA_VERSION,
        kind: "start",
        session_id: sid,
        input_id: inputIds.start(sid),
        workflow: "critic-chain",
        query: "what is 2+2?",
        options: {},
      });
      const until = Date.now() + 15_000;
      while (Date.now() < until && (await listDeadLetters(nc, naming)).length === 0)
        await new Promise((r) => setTimeout(r, 100));
      await consumer.stop(500);
      const [dead] = await listDeadLetters(nc, naming);
      expect(dead).toMatchObject({ kind: "inbox", sessionId: sid });

      const { code, rows } = await stuckRows(cfg);
      expect(code).toBe(1);
      expect(rows).toHaveLength(1);
      expect(rows[0]?.session_id).toBe(sid);
      expect(rows[0]?.stuck).toBe(
        `1 inbox input(s) dead-lettered (re-drive: agentmesh dead-letters --redrive ${dead!.seq})`,
      );
    } finally {
      const jsm = await jetstreamManager(nc);
      for (const s of [...Object.values(naming.streams), `KV_${naming.kv.cancelled}`])
        await jsm.streams.delete(s).catch(() => false);
      await nc.close();
      await store.close().catch(() => undefined);
      await redis.quit().catch(() => undefined);
    }
  });
});
