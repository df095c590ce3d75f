-- KEYS: outcome ticks, outcome counts. ARGV: resolution µs, span ticks, success (1/0).
-- {successes, failures} in the window, this one included.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_us()
local s, f = win_prune(KEYS[1], KEYS[2], math.floor(now / res), span)
local ds = tonumber(ARGV[3]) == 1 and 1 or 0
win_add(KEYS[1], KEYS[2], math.ceil(now / res), ds, 1 - ds, math.ceil((span + 2) * res / 1000))
return { s + ds, f + 1 - ds }
