-- KEYS: window ticks, window counts. ARGV: resolution µs, span ticks. {a, b} in the window.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local a, b = win_prune(KEYS[1], KEYS[2], math.floor(now_us() / res), span)
return { a, b }
