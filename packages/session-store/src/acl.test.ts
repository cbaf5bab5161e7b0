import { describe, expect, test } from "vitest";
import { redisAccess, renderAclFile } from "./acl.js";
import { SCRIPT_COMMANDS } from "./scripts.js";

describe("Redis ACL users derived from the key layout and the scripts", () => {
  test("every command a script calls is granted to the coordinator (Redis checks scripts' calls too)", () => {
    expect(SCRIPT_COMMANDS).toEqual(
      expect.arrayContaining(["hset", "rpush", "zadd", "zrangebyscore", "set", "pexpire"]),
    );
    const granted = redisAccess("agentmesh").coordinator.commands;
    for (const c of SCRIPT_COMMANDS) expect(granted).toContain(c);
  });

  test("the coordinator may WAIT for replicas (its commits are confirmed before they are acted on); no one else", () => {
    const a = redisAccess("agentmesh");
    expect(a.coordinator.commands).toContain("wait");
    expect(a.gateway.commands).not.toContain("wait");
    expect(a.inspect.commands).not.toContain("wait");
    // a 7.0 server refuses an ACL naming a command it does not have
    expect(a.coordinator.commands).not.toContain("waitaof");
  });

  test("key patterns per kind: own keys read-write, sessions and threads read-only for the gateway, everything read-only for inspect", () => {
    const a = redisAccess("agentmesh");
    expect(a.coordinator.keys).toEqual([
      "~agentmesh:s:{*",
      "~agentmesh:idem:*",
      "~agentmesh:timers",
      "~agentmesh:thread:*",
    ]);
    expect(a.gateway.keys).toEqual(["%R~agentmesh:s:{*", "%R~agentmesh:thread:*", "~agentmesh:rl:*"]);
    expect(a.inspect.keys).toEqual(["%R~agentmesh:*"]);
    for (const k of Object.values(a))
      for (const bad of ["flushall", "flushdb", "keys", "config", "config|set", "acl", "debug", "shutdown"])
        expect(k.commands).not.toContain(bad);
    expect(
      a.inspect.commands.filter((c) => ["set", "del", "hset", "eval", "evalsha", "rpush", "zadd"].includes(c)),
    ).toEqual([]);
  });

  test("the file stores password hashes only; a user without a password cannot log in", () => {
    const file = renderAclFile("agentmesh", [{ kind: "coordinator", password: "s3cret-pw" }, { kind: "inspect" }]);
    expect(file).not.toContain("s3cret-pw");
    expect(file).toMatch(/^user coordinator reset on #[0-9a-f]{64} resetkeys resetchannels -@all ~agentmesh:s:\{\* /m);
    expect(file).toMatch(/^user inspect reset off resetpass /m);
    expect(file).toMatch(/^user default on nopass resetkeys resetchannels -@all \+ping$/m);
    // `aclfile` takes `user` lines only (Redis aborts its start on a comment)
    for (const line of file.trimEnd().split("\n")) expect(line).toMatch(/^user /);
  });
});
