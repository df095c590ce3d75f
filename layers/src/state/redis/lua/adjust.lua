-- KEYS: usage ticks, usage counts. ARGV: tick, token delta. Replaces a reservation's estimate; a
-- no-op once the tick left the window. Never below zero.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local field = ARGV[1] .. 'b'
local old = tonumber(redis.call('HGET', KEYS[2], field)) or 0
local new = math.max(old + tonumber(ARGV[2]), 0)
redis.call('HSET', KEYS[2], field, new)
redis.call('HINCRBY', KEYS[2], 'b', new - old)
return 1
