-- KEYS: cooldown. ARGV: base ms, reason, status ('' none), growth factor ('' none), growth cap ms,
-- half-open linger ms, channel, deployment id. Extends, never shortens. Returns the record message.
local now_u = now_us()
local now = math.floor(now_u / 1000)
local base = tonumber(ARGV[1])
local growth = ARGV[4] ~= ''
local h = redis.call('HMGET', KEYS[1], 'u', 'k', 'r', 's')
local old_until = tonumber(h[1]) or now
local strikes = growth and (tonumber(h[2]) or 0) or 0
local ttl = base
if growth then
  local scaled = base * (tonumber(ARGV[4]) ^ math.min(strikes, 64))
  local cap = tonumber(ARGV[5])
  if scaled ~= scaled or scaled >= cap then
    ttl = cap
  else
    ttl = math.floor(scaled)
  end
end
local new_until = now + ttl
local u, r, s = old_until, h[3] or ARGV[2], h[4] or ARGV[3]
if not h[1] or old_until <= now or old_until < new_until then
  u, r, s = new_until, ARGV[2], ARGV[3]
end
local half = growth and 1 or 0
redis.call('HSET', KEYS[1], 'u', fmt(u), 'r', r, 's', s, 'k', growth and (strikes + 1) or 0, 'h', half, 'p', 0,
  'at', fmt(now_u))
redis.call('PEXPIRE', KEYS[1], math.max(u - now + half * tonumber(ARGV[6]), 1))
local msg = cd_message(KEYS[1], ARGV[8], now)
redis.call('PUBLISH', ARGV[7], msg)
return msg
