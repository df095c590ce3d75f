-- KEYS: cooldown. ARGV: deployment id. The record message, or a deletion stamped now.
local now_u = now_us()
local now = math.floor(now_u / 1000)
return cd_message(KEYS[1], ARGV[1], now) or cd_deleted(ARGV[1], now, now_u)
