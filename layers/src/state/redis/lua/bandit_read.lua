-- KEYS: bandit. Every cell as a flat list {cell, "successes failures age-ms", ...} (strings: a Lua
-- number would reach the client truncated to an integer).
local now = math.floor(now_us() / 1000)
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local ps, pf, pt = string.match(all[i + 1], '^(%S+) (%S+) (%S+)$')
  if ps and pf and tonumber(pt) then
    out[#out + 1] = all[i]
    out[#out + 1] = ps .. ' ' .. pf .. ' ' .. string.format('%d', math.max(0, now - tonumber(pt)))
  end
end
return out
