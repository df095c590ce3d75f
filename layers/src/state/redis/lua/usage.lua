-- KEYS: window ticks, window counts. ARGV: resolution µs, span ticks. {a, b} in the window.
local res, span = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_us()
local a, b = win_read(KEYS[1], KEYS[2], math.floor(now / res), span, math.ceil(now / res) .. '')
return { a, b }
