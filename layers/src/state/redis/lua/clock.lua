-- Prepended to every script that reads the time. All times come from the server's clock (TIME),
-- so replicas never compare their own clocks. Each script gets only the parts it calls: every
-- `local function` is a closure made again on every call.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
