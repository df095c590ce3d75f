-- KEYS: outcome ticks, outcome counts. ARGV: resolution µs, span ticks, successes, failures to add.
-- {successes, failures} in the window, these included.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local ds, df = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_us()
local s, f = win_prune(KEYS[1], KEYS[2], math.floor(now / res), span)
win_add(KEYS[1], KEYS[2], math.ceil(now / res), ds, df, math.ceil((span + 2) * res / 1000))
return { s + ds, f + df }
