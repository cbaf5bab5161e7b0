import { describe, expect, it } from "vitest";
import {
  SessionId,
  TaskId,
  ThreadId,
  eventBatchMsgId,
  eventMsgId,
  inputIds,
  madeByTag,
  newSessionId,
  newThreadId,
  newUserInputId,
  parseTaskId,
  parseTimerMember,
  taskId,
  timerMember,
} from "@agentmesh/contracts";

// The one module of ids (packages/contracts/src/ids.ts). Contracts may import nothing but zod,
// so its test lives here.

const HEX32 = /^[0-9a-f]{32}$/;

describe("session and thread ids", () => {
  it("mints 32 lowercase hex digits, fresh each time, that the schemas accept", () => {
    const ids = Array.from({ length: 200 }, () => newSessionId());
    for (const id of ids) {
      expect(id).toMatch(HEX32);
      expect(SessionId.safeParse(id).success).toBe(true);
    }
    expect(new Set(ids).size).toBe(ids.length);
    const thread = newThreadId();
    expect(thread).toMatch(HEX32);
    expect(ThreadId.safeParse(thread).success).toBe(true);
    expect(thread).not.toBe(newThreadId());
  });

  it("still reads every shape stored before: the CLI's and coordinator's hex, the gateway's s + base64url, a client's own", () => {
    for (const stored of [
      "3f2a9c41d0b84e7fa1c2d3e4f5a6b7c8", // CLI: 16 random bytes as hex
      "9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d", // coordinator: a UUID without dashes
      "sAbC-dEf_01234567", // gateway: "s" and 12 random bytes as base64url
      "sesswait00000001", // a client's id (tests, scripts)
      "a".repeat(64),
    ])
      expect(SessionId.safeParse(stored).success, stored).toBe(true);
  });

  it("refuses what cannot be one subject token or Redis hash tag", () => {
    for (const bad of [
      "short",
      "a".repeat(65),
      "has.dot0000",
      "has space00",
      "wild*card00",
      "wild>card00",
      "{tag}00000",
      "",
    ])
      expect(SessionId.safeParse(bad).success, bad).toBe(false);
  });
});

describe("task ids", () => {
  const sid = newSessionId();

  it("round-trips through parseTaskId, with and without the input's digest", () => {
    const made = taskId(sid, 7, 2, 1, inputIds.start(sid));
    expect(made).toBe(`${sid}.7.2.1.${madeByTag(sid, inputIds.start(sid))}`);
    expect(TaskId.safeParse(made).success).toBe(true);
    expect(parseTaskId(made)).toEqual({
      sessionId: sid,
      version: 7,
      index: 2,
      attempt: 1,
      made: madeByTag(sid, inputIds.start(sid)),
    });
    // an id of an earlier release, without the last part
    expect(parseTaskId(taskId(sid, 3, 0, 0))).toEqual({ sessionId: sid, version: 3, index: 0, attempt: 0, made: null });
    expect(parseTaskId("sAbC-dEf_01234567.1.0.0")?.sessionId).toBe("sAbC-dEf_01234567");
  });

  it("mints the same id from the same input and another from another input", () => {
    expect(taskId(sid, 2, 0, 0, inputIds.result("x"))).toBe(taskId(sid, 2, 0, 0, inputIds.result("x")));
    expect(taskId(sid, 2, 0, 0, inputIds.result("x"))).not.toBe(taskId(sid, 2, 0, 0, inputIds.result("y")));
  });

  it("refuses malformed ids, and a session id that is not one", () => {
    for (const bad of [sid, `${sid}.1.0`, `${sid}.1.0.0.0.0`, `${sid}.a.0.0`, `${sid}.1.0.0.UPPER`, `sho.1.0.0`, ""])
      expect(parseTaskId(bad), bad).toBeNull();
    expect(() => taskId("has.dot0000", 1, 0, 0)).toThrow();
  });
});

describe("input ids", () => {
  it("formats each kind of inbox input", () => {
    expect(inputIds.start("s1")).toBe("start:s1");
    expect(inputIds.result("t1")).toBe("result:t1");
    expect(inputIds.timer("t1")).toBe("timer:t1");
    expect(inputIds.sessionTimer("s1")).toBe("timer:session.s1");
    expect(inputIds.user("u1")).toBe("user:u1");
    expect(inputIds.cancel("c1")).toBe("cancel:c1");
    expect(inputIds.clientCancel("s1", "cli")).toBe("cancel:s1-cli");
    expect(inputIds.clientCancel("s1", "gateway")).toBe("cancel:s1-gateway");
  });

  it("mints a fresh id for each reply", () => {
    const a = newUserInputId();
    expect(a).toMatch(/^user:[0-9a-f]{32}$/);
    expect(a).not.toBe(newUserInputId());
  });
});

describe("event message ids", () => {
  it("never gives a batch a bare event's id", () => {
    expect(eventMsgId("s1", 3, 0)).toBe("s1:3:0");
    expect(eventBatchMsgId("s1", 3, 0, 1)).toBe("s1:3:0+1");
    expect(eventBatchMsgId("s1", 3, 0, 1)).not.toBe(eventMsgId("s1", 3, 0));
  });
});

describe("timer members", () => {
  it("names timer members and parses them back", () => {
    const sid = "sess_test_0001";
    const tid = `${sid}.3.0.1`;
    expect(parseTimerMember(timerMember.task(tid))).toEqual({ kind: "task", taskId: tid, sessionId: sid });
    expect(parseTimerMember(timerMember.session(sid))).toEqual({ kind: "session", sessionId: sid });
    for (const bad of ["task:nope", "session:a.b", "other:x", "nocolon"]) expect(parseTimerMember(bad)).toBeNull();
  });
});
