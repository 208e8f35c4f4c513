"""Lua scripts of the Redis store: each is one atomic step a client-side sequence would race."""

# EXISTS then HINCRBY from the client would race a delete and recreate the entry as a hash of
# two counters, which no read can decode.
ADD_HIT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'hits', tonumber(ARGV[2] or '1'))
  redis.call('HSET', KEYS[1], 'last_hit', ARGV[1])
  return 1
end
return 0
"""

# A lease (lifecycle/lease.py): the marker is taken when absent (or expired: Redis dropped it)
# and renewed by its holder; the read and the write in one step, so two claimants never both win.
CLAIM = """
local held = redis.call('GET', KEYS[1])
if held == false or held == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# The due members of the pending set whose hash is still PENDING; the others are stale (the
# hash expired or was deleted, or an older version changed its state without touching the set)
# and leave the set, atomically with the check, so a put of the same id in between is never
# undone. It reads hashes it is not passed as KEYS: fine on one Redis, not on Redis Cluster.
PENDING_DUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local live = {}
for _, id in ipairs(ids) do
  if redis.call('HGET', ARGV[3] .. id, 'state') == 'pending' then
    live[#live + 1] = id
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return live
"""
