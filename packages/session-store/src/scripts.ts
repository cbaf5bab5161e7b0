/**
 * Lua sources of the session store's atomic operations. Each runs as one script on the server,
 * so no other client observes or interleaves with a half-done step. Replies are tables with a
 * string tag first, because Lua `false` and empty tables do not survive the trip to the client.
 */

/**
 * The compare-and-set of one transition.
 * KEYS: state hash, applied set, log list, timers zset.
 * ARGV: expectedVersion, newVersion, stateJson, inputId, outboxJson, outboxVersion, logLine,
 *       logCap, ttlMs, logMaxBytes, stateSchema, sessionId, nTimers, then nTimers (due, member)
 *       pairs, then members to clear.
 * Checks, in order: missing session (writes nothing, so no key is created), input already
 * applied (before the version, so a redelivered input is recognised even after later steps),
 * version. Clears run before adds, so a member in both ends up scheduled.
 * The log keeps its first line (the start) and the latest ones within logCap lines and
 * logMaxBytes bytes; `log_bytes` in the state hash is its running size. The session's
 * idempotency key (named in the hash's `idem` field by create) gets the same TTL as the session's
 * keys, while it still names this session, so a retry can never outlive the session it found.
 * Lines are JSON objects, so the non-JSON marker used to delete line 1 by value matches no other.
 */
export const COMMIT_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
if redis.call('SISMEMBER', KEYS[2], ARGV[4]) == 1 then return {'already_applied'} end
local cur = redis.call('HGET', KEYS[1], 'version')
if cur ~= ARGV[1] then return {'conflict', cur or '-1'} end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'state', ARGV[3], 'outbox', ARGV[5], 'outbox_version', ARGV[6], 'schema', ARGV[11])
redis.call('SADD', KEYS[2], ARGV[4])
local n = redis.call('RPUSH', KEYS[3], ARGV[7])
local bytes = redis.call('HINCRBY', KEYS[1], 'log_bytes', string.len(ARGV[7]))
local cap = tonumber(ARGV[8])
local maxBytes = tonumber(ARGV[10])
while n > 2 and (n > cap or bytes > maxBytes) do
  local victim = redis.call('LINDEX', KEYS[3], 1)
  redis.call('LSET', KEYS[3], 1, 'agentmesh:trimmed')
  redis.call('LREM', KEYS[3], 1, 'agentmesh:trimmed')
  bytes = redis.call('HINCRBY', KEYS[1], 'log_bytes', -string.len(victim))
  n = n - 1
end
local nt = tonumber(ARGV[13])
local clearFrom = 14 + 2 * nt
for i = clearFrom, #ARGV do redis.call('ZREM', KEYS[4], ARGV[i]) end
for i = 14, clearFrom - 1, 2 do redis.call('ZADD', KEYS[4], ARGV[i], ARGV[i + 1]) end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ARGV[9]) end
local idem = redis.call('HGET', KEYS[1], 'idem')
if idem and redis.call('GET', idem) == ARGV[12] then redis.call('PEXPIRE', idem, ARGV[9]) end
return {'ok'}
`;

/**
 * Loads a session for one inbox input: the state hash's fields and whether the input was applied,
 * in one round trip. KEYS: state hash, applied set. ARGV: inputId.
 * Replies {'missing'} or {'ok', version, state, outbox or '', schema or '', applied 0/1}: a stored
 * outbox or schema is never the empty string (JSON, a number).
 * With an outbox stored, it also sets the state key's TTL to what it is: a write of this
 * connection after the outbox's commit (whoever made it), so a `WAIT` on this connection then
 * covers that commit before the outbox is published again (docs/redis-failover.md).
 */
export const LOAD_FOR_INPUT_LUA = `
local h = redis.call('HMGET', KEYS[1], 'version', 'state', 'outbox', 'schema')
if not h[2] then return {'missing'} end
if h[3] then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return {'ok', h[1] or '', h[2], h[3] or '', h[4] or '', redis.call('SISMEMBER', KEYS[2], ARGV[1])}
`;

/**
 * Creates a session if its state key is absent.
 * KEYS: state hash, applied set, log list. ARGV: version, stateJson, ttlMs, stateSchema,
 * idempotency key ('' for none), sessionId.
 * Leftover applied/log keys (only possible if someone deleted the state key by hand) are
 * removed so a new session never inherits another's applied markers. The idempotency key, when
 * it names this session, is remembered (see COMMIT_LUA) and gets the session's TTL.
 * A session already there is left as it is, but its state key's TTL is set to what it is: a write
 * of this connection after the create (whoever made it), so a `WAIT` on this connection then
 * covers the create before a retried submit publishes the start.
 */
export const CREATE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'state', ARGV[2], 'schema', ARGV[4])
if ARGV[5] ~= '' and redis.call('GET', ARGV[5]) == ARGV[6] then
  redis.call('HSET', KEYS[1], 'idem', ARGV[5])
  redis.call('PEXPIRE', ARGV[5], ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/**
 * Clears the outbox only if it is still the one written at ARGV[1]: a slow publisher must not
 * clear the outbox of a later transition it never published. HDEL creates no key.
 * KEYS: state hash.
 */
export const CLEAR_OUTBOX_LUA = `
if redis.call('HGET', KEYS[1], 'outbox_version') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'outbox', 'outbox_version')
  return 1
end
return 0
`;

/**
 * Claims up to ARGV[2] timers due at or before ARGV[1], earliest first, and re-arms each at
 * ARGV[3] (now + lease). Range and re-arm in one script, so each member goes to exactly one of
 * many polling coordinators per lease; a claimer that crashes before publishing only delays it.
 * KEYS: timers zset.
 */
export const CLAIM_TIMERS_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for i = 1, #due do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], due[i]) end
return due
`;

/**
 * SET NX PX, answering with the owner either way, in one round trip and without a window in
 * which the key could expire between the SET and the GET.
 * KEYS: idempotency key. ARGV: sessionId, ttlMs.
 */
export const CLAIM_IDEMPOTENCY_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return ARGV[1] end
return redis.call('GET', KEYS[1])
`;

/**
 * Adds a session to a thread, creating the thread when new.
 * KEYS: thread hash, its sessions list, its long-term references. ARGV: threadId, owner ('' = none),
 * sessionId, now, ttlMs, maxSessions.
 * A thread of another owner is refused before anything is written. Adding a listed session only
 * refreshes the TTL, so a retried submit cannot list a session twice. A new thread drops any
 * references left from an expired thread of the same id (another owner's, perhaps).
 */
export const ATTACH_THREAD_LUA = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[2] then return {'owned_by_other'} end
if not owner then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[1], 'thread_id', ARGV[1], 'owner', ARGV[2], 'created_at', ARGV[4])
end
if not redis.call('LPOS', KEYS[2], ARGV[3]) then
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[6]), -1)
  redis.call('HSET', KEYS[1], 'updated_at', ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return {'ok'}
`;

/**
 * Keeps a thread's long-term references: the new ones appended in order, the latest kept.
 * KEYS: thread hash, its references list. ARGV: owner ('' = none), maxRefs, ttlMs, refs...
 * Nothing is written (0) unless the thread exists and is the owner's.
 */
export const KEEP_THREAD_REFS_LUA = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner or owner ~= ARGV[1] then return 0 end
local have = {}
for _, r in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do have[r] = true end
for i = 4, #ARGV do
  if not have[ARGV[i]] then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    have[ARGV[i]] = true
  end
end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`;

/**
 * Every command the scripts call, lower-case, read from their source: Redis checks a script's
 * calls against the caller's ACL, so the coordinator's ACL user (`acl.ts`) is built from this.
 */
export const SCRIPT_COMMANDS: readonly string[] = [
  ...new Set(
    [
      COMMIT_LUA,
      LOAD_FOR_INPUT_LUA,
      CREATE_LUA,
      CLEAR_OUTBOX_LUA,
      CLAIM_TIMERS_LUA,
      CLAIM_IDEMPOTENCY_LUA,
      ATTACH_THREAD_LUA,
      KEEP_THREAD_REFS_LUA,
    ].flatMap((lua) =>
      [...lua.matchAll(/redis\.p?call\(\s*['"]([A-Za-z]+)['"]/g)].map((m) => (m[1] ?? "").toLowerCase()),
    ),
  ),
].sort();
