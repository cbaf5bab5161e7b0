import { describe, expect, test } from "vitest";
import { replicaWaitCommand } from "./replicas.js";

describe("which command confirms a write on the replicas", () => {
  test("WAIT before 7.2 (this machine's 7.0 included), WAITAOF from 7.2 on, with the primary's own fsync when its AOF is on", () => {
    expect(replicaWaitCommand("redis_version:7.0.15\r\n", "aof_enabled:1\r\n")).toEqual({ kind: "wait" });
    expect(replicaWaitCommand("redis_version:6.2.14\r\n", "aof_enabled:1\r\n")).toEqual({ kind: "wait" });
    expect(replicaWaitCommand("redis_version:7.2.4\r\n", "aof_enabled:1\r\n")).toEqual({
      kind: "waitaof",
      numlocal: 1,
    });
    expect(replicaWaitCommand("redis_version:7.4.0\r\n", "aof_enabled:0\r\n")).toEqual({
      kind: "waitaof",
      numlocal: 0,
    });
    expect(replicaWaitCommand("redis_version:8.0.1\r\n", "aof_enabled:1\r\n")).toEqual({
      kind: "waitaof",
      numlocal: 1,
    });
    // a server that does not say its version gets the command every version has
    expect(replicaWaitCommand("", "")).toEqual({ kind: "wait" });
  });
});
