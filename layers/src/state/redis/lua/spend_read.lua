-- KEYS: spend. {total or false, ms until the period ends}.
return { redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]) }
