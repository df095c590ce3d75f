-- KEYS: cooldown, revision. ARGV: hold ms, channel, deployment id. Claims the single probe of a half-open
-- deployment: the record message when claimed, false otherwise.
local now_u = now_us()
local now = math.floor(now_u / 1000)
local h = redis.call('HMGET', KEYS[1], 'u', 'h', 'p')
if not h[1] or tonumber(h[2]) ~= 1 or tonumber(h[1]) > now or (tonumber(h[3]) or 0) > now then
  return false
end
local hold = tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'p', fmt(now + hold), 'at', next_rev(KEYS[2]))
if redis.call('PTTL', KEYS[1]) < hold then
  redis.call('PEXPIRE', KEYS[1], hold)
end
local msg = cd_message(KEYS[1], ARGV[3], now)
redis.call('PUBLISH', ARGV[2], msg)
return msg
