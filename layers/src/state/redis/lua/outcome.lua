-- KEYS: outcome ticks, outcome counts. ARGV: resolution µs, span ticks, successes, failures to add.
-- {successes, failures} in the window, these included.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local ds, df = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_us()
local tick_now = math.ceil(now / res)
local t = tick_now .. ''
local s, f, ts, tf, o, x = win_read(KEYS[1], KEYS[2], math.floor(now / res), span, t)
win_add(KEYS[1], KEYS[2], tick_now, t, s, f, ts, tf, o, x, ds, df, res, span)
return { s + ds, f + df }
