-- KEYS: cooldown, revision. ARGV: channel, deployment id. Ends a cooldown or half-open state:
-- {1 when one was in force else 0, message}.
local now = math.floor(now_us() / 1000)
local h = redis.call('HMGET', KEYS[1], 'u', 'h')
if not h[1] then
  return { 0, cd_deleted(ARGV[2], now, tonumber(redis.call('GET', KEYS[2])) or 0) }
end
local active = (tonumber(h[1]) > now or tonumber(h[2]) == 1) and 1 or 0
redis.call('DEL', KEYS[1])
local msg = cd_deleted(ARGV[2], now, next_rev(KEYS[2]))
redis.call('PUBLISH', ARGV[1], msg)
return { active, msg }
