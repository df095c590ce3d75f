-- KEYS: usage ticks, usage counts. ARGV: resolution µs, span ticks, rpm, tpm, tokens.
-- {wait µs, requests, tokens}.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_us()
local tick_now = math.ceil(now / res)
local a, b = win_read(KEYS[1], KEYS[2], math.floor(now / res), span, tick_now .. '')
local wait = win_room(KEYS[1], KEYS[2], a, b, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), now, res,
  span, tick_now)
return { wait, a, b }
