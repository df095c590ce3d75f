-- KEYS: bandit (one hash per adaptive router, a field per cell: "successes failures written-at-ms").
-- ARGV: cell, successes, failures, half-life ms (0: no decay), cap (<= 0: none), ttl ms.
-- Discounts the cell's evidence to now by the half-life, adds, scales down to the cap; returns 1.
local now = math.floor(now_us() / 1000)
local s, f = 0, 0
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
  local ps, pf, pt = string.match(v, '^(%S+) (%S+) (%S+)$')
  ps, pf, pt = tonumber(ps), tonumber(pf), tonumber(pt)
  if ps and pf and pt then
    local hl = tonumber(ARGV[4])
    local k = 1
    if hl > 0 and now > pt then
      k = 0.5 ^ ((now - pt) / hl)
    end
    s, f = ps * k, pf * k
  end
end
s = s + tonumber(ARGV[2])
f = f + tonumber(ARGV[3])
local cap = tonumber(ARGV[5])
if cap > 0 and s + f > cap then
  local r = cap / (s + f)
  s, f = s * r, f * r
end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.17g %.17g %d', s, f, now))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[6]))
return 1
