-- KEYS: spend. ARGV: amount, period ms. A period starts with its first spend; the key expires with
-- it. {total, ms until the period ends}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], '0', 'PX', ARGV[2])
end
local total = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
return { total, redis.call('PTTL', KEYS[1]) }
