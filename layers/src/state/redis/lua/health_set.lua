-- KEYS: health. ARGV: ok (0/1), age ms (how long ago the probe ended), latency ms, status, reason, ttl ms.
-- Stores a probe's verdict unless a newer one is there: 1 when stored, 0 otherwise.
local now = math.floor(now_us() / 1000)
local at = now - tonumber(ARGV[2])
local prev = tonumber(redis.call('HGET', KEYS[1], 'at'))
if prev and prev > at then
  return 0
end
redis.call('HSET', KEYS[1], 'ok', ARGV[1], 'at', at, 'lat', ARGV[3], 's', ARGV[4], 'r', ARGV[5])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[6]))
return 1
