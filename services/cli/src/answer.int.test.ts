import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { Redis } from "ioredis";
import { connectRedis, createRedisSessionStore, type SessionStore } from "@agentmesh/session-store";
import { testCommit, testSessionState } from "@agentmesh/session-store/testing";
import { uniquePrefix } from "../../../test/setup/prefix.js";
import { answerRefusal } from "./commands.js";

const root = join(import.meta.dirname, "../../..");
const redisUrl = inject("redisUrl");

describe("agentmesh answer refuses a session that is not waiting for one", () => {
  const prefix = uniquePrefix("cliansw");
  let redis: Redis;
  let store: SessionStore;
  beforeAll(async () => {
    redis = await connectRedis(redisUrl, { name: "cli-answer-int" });
    store = createRedisSessionStore(redis, {
      keyPrefix: prefix,
      activeTtlMs: 60_000,
      finishedTtlMs: 60_000,
      idempotencyTtlMs: 60_000,
    });
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  // NATS points at a closed port: a refused answer must be decided before anything is published.
  const answer = (sid: string) =>
    spawnSync(process.execPath, ["--import", "tsx", join(root, "services/cli/src/main.ts"), "answer", sid, "Celsius"], {
      cwd: root,
      env: { PATH: process.env.PATH, REDIS_URL: redisUrl, NATS_URL: "nats://127.0.0.1:1", AGENTMESH_PREFIX: prefix },
      encoding: "utf8",
      timeout: 80_000, // a tsx start-up on a loaded machine can take half a minute
    });

  test("an expired (gone) session: exit 1, says so, nothing reported as sent", () => {
    const r = answer("sessgone00000001");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("no session sessgone00000001: it never existed or has expired");
    expect(r.stdout).not.toContain("answer sent");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 90_000);

  test("a finished session: exit 1 naming its status and why it ended", async () => {
    const s = testSessionState("sessdone00000001");
    await store.create(s);
    const c = testCommit(s, "in:end", { terminal: true });
    const ended = {
      ...c,
      state: {
        ...c.state,
        meta: {
          ...c.state.meta,
          status: "failed" as const,
          error: {
            code: "deadline_exceeded" as const,
            message: "the session expired: nobody answered its question within 5 ms",
            retryable: false,
            component: null,
          },
        },
      },
    };
    expect(await store.commit(ended)).toEqual({ ok: true });
    const r = answer("sessdone00000001");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("session sessdone00000001 has already finished (failed: the session expired");
    expect(r.stdout).not.toContain("answer sent");
  }, 90_000);

  test("answerRefusal: only a session awaiting a person takes an answer", () => {
    const s = testSessionState("sesswait00000001");
    expect(answerRefusal("sesswait00000001", s)).toMatch(/is running, not waiting for an answer/);
    expect(answerRefusal("sesswait00000001", { ...s, meta: { ...s.meta, status: "awaiting_user" } })).toBeNull();
  });
});
