-- KEYS: usage ticks, usage counts. ARGV: resolution µs, span ticks, rpm, tpm (-1: none), tokens.
-- Admitted: {1, tick, requests, tokens} (after); full: {0, wait µs, requests, tokens}.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local rpm, tpm, tokens = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_us()
local tick_now = math.ceil(now / res)
local t = tick_now .. ''
local a, b, ta, tb, o, x = win_read(KEYS[1], KEYS[2], math.floor(now / res), span, t)
if (rpm < 0 or a < rpm) and (tpm < 0 or b + tokens <= tpm) then
  win_add(KEYS[1], KEYS[2], tick_now, t, a, b, ta, tb, o, x, 1, tokens, res, span)
  return { 1, tick_now, a + 1, b + tokens }
end
return { 0, win_room(KEYS[1], KEYS[2], a, b, rpm, tpm, tokens, now, res, span, tick_now), a, b }
