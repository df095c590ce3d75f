-- KEYS: cooldown, revision. ARGV: deployment id. The record message, or a deletion at the current
-- revision; `c` carries the current revision, so a replica notices a counter that restarted
-- (Redis flushed) and accepts the read.
local now = math.floor(now_us() / 1000)
local current = tonumber(redis.call('GET', KEYS[2])) or 0
local msg = cd_message(KEYS[1], ARGV[1], now)
if not msg then
  return cjson.encode({ id = ARGV[1], op = 'del', now = fmt(now), at = fmt(current), c = fmt(current) })
end
local decoded = cjson.decode(msg)
decoded.c = fmt(current)
return cjson.encode(decoded)
