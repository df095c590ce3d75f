-- KEYS: health. A probe's verdict as {ok, age ms, latency ms, status, reason, ttl ms}, or false.
local h = redis.call('HMGET', KEYS[1], 'ok', 'at', 'lat', 's', 'r')
if not h[1] then
  return false
end
local now = math.floor(now_us() / 1000)
return {tonumber(h[1]), math.max(0, now - tonumber(h[2])), tonumber(h[3]) or 0, h[4] or '', h[5] or '', redis.call('PTTL', KEYS[1])}
