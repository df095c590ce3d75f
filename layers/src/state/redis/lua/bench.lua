-- KEYS: cooldown, revision. ARGV: base ms, reason, status ('' none), growth factor ('' none),
-- growth cap ms, half-open linger ms, channel, deployment id, and for a merge (a replica pushing
-- what it set while Redis was unreachable) its strikes and half-open flag ('' otherwise).
-- Extends, never shortens; a merge never lowers strikes or half-open. Returns the record message.
local now_u = now_us()
local now = math.floor(now_u / 1000)
local base = tonumber(ARGV[1])
local growth = ARGV[4] ~= ''
local merge = ARGV[9] ~= nil and ARGV[9] ~= ''
local h = redis.call('HMGET', KEYS[1], 'u', 'k', 'r', 's', 'h')
local old_until = tonumber(h[1]) or now
local old_strikes = tonumber(h[2]) or 0
local strikes = growth and old_strikes or 0
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
local k, half
if merge then
  k = math.max(old_strikes, tonumber(ARGV[9]))
  half = math.max(tonumber(h[5]) or 0, tonumber(ARGV[10]))
else
  k = growth and (strikes + 1) or 0
  half = growth and 1 or 0
end
redis.call('HSET', KEYS[1], 'u', fmt(u), 'r', r, 's', s, 'k', k, 'h', half, 'p', 0, 'at', next_rev(KEYS[2]))
redis.call('PEXPIRE', KEYS[1], math.max(u - now + half * tonumber(ARGV[6]), 1))
local msg = cd_message(KEYS[1], ARGV[8], now)
redis.call('PUBLISH', ARGV[7], msg)
return msg
