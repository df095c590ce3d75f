-- KEYS: cooldown, revision. ARGV: channel, deployment id. Gives a probe claim back (no verdict).
local now_u = now_us()
local now = math.floor(now_u / 1000)
if redis.call('HEXISTS', KEYS[1], 'p') == 0 then
  return false
end
redis.call('HSET', KEYS[1], 'p', 0, 'at', next_rev(KEYS[2]))
local msg = cd_message(KEYS[1], ARGV[2], now)
redis.call('PUBLISH', ARGV[1], msg)
return msg
