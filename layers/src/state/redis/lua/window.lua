-- A sliding window: KEYS zk (sorted set of ticks) and hk (hash: `<tick>a`, `<tick>b` per tick,
-- totals `a`, `b`, `o` the oldest tick and `x` the tick the TTLs were last set at). An event's tick
-- is rounded up, the current time down: an event counts for the full span.
--
-- Every `redis.call` costs about as much as a few string operations in Lua, so the common call is
-- three (TIME, HMGET, HSET), a new tick adds a ZADD, and expiring ticks four per batch of eight
-- plus one write of the totals. Numbers go to
-- `redis.call` as Lua numbers (Redis writes them with %.17g: exact integers, no exponent below
-- 1e17) and into field names as the tick's text (`tick .. ''`, %.14g: exact below 1e14; ticks
-- are µs over a resolution of at least 1 ms, about 1.8e12). Nothing subtracted is ever negated:
-- Lua writes a negated 0 as `-0`, which HINCRBY refuses.

-- How many of the oldest ticks one prune step reads.
local PRUNE_BATCH = 8

-- Drops the ticks that left the window (`tick <= cut`) from the totals `a`, `b`; returns the new
-- totals and oldest tick (nil when nothing is left, then both keys are gone). Written in one HSET.
local function win_prune(zk, hk, cut, a, b)
  while true do
    local ticks = redis.call('ZRANGE', zk, 0, PRUNE_BATCH - 1)
    local fields = {}
    for _, t in ipairs(ticks) do
      if tonumber(t) > cut then
        break
      end
      fields[#fields + 1] = t .. 'a'
      fields[#fields + 1] = t .. 'b'
    end
    local gone = #fields / 2
    if gone > 0 then
      local v = redis.call('HMGET', hk, unpack(fields))
      for i = 1, #v, 2 do
        a = a - (tonumber(v[i]) or 0)
        b = b - (tonumber(v[i + 1]) or 0)
      end
      redis.call('HDEL', hk, unpack(fields))
      redis.call('ZREMRANGEBYRANK', zk, 0, gone - 1)
    end
    if gone < #ticks then
      a, b = math.max(a, 0), math.max(b, 0)
      redis.call('HSET', hk, 'a', a, 'b', b, 'o', ticks[gone + 1])
      return a, b, tonumber(ticks[gone + 1])
    end
    if #ticks < PRUNE_BATCH then
      redis.call('DEL', hk, zk)
      return 0, 0, nil
    end
  end
end

-- The window at `passed` (the current tick rounded down): totals a, b, the counts of tick `t`
-- (text; nil when it has no event yet), the oldest tick, and the tick the TTLs were set at.
local function win_read(zk, hk, passed, span, t)
  local v = redis.call('HMGET', hk, 'a', 'b', 'o', t .. 'a', t .. 'b', 'x')
  local a, b, o = math.max(tonumber(v[1]) or 0, 0), math.max(tonumber(v[2]) or 0, 0), tonumber(v[3])
  if o and o <= passed - span then
    a, b, o = win_prune(zk, hk, passed - span, a, b)
    if not o then
      -- Both keys are gone (the sorted set had lost ticks the hash still held, say to an
      -- eviction): nothing read before the prune holds any more.
      return a, b, nil, nil, nil, nil
    end
  end
  return a, b, tonumber(v[4]), tonumber(v[5]), o, tonumber(v[6])
end

-- Adds (da, db) at `tick` (`t` its text) to a window read by `win_read` (totals a, b; tick counts
-- ta, tb; oldest o; TTL tick x).
local function win_add(zk, hk, tick, t, a, b, ta, tb, o, x, da, db, res, span)
  if ta then
    redis.call('HSET', hk, 'a', a + da, 'b', b + db, t .. 'a', ta + da, t .. 'b', (tb or 0) + db)
    return
  end
  -- A new tick is the newest event: the keys must live a window past it. Their TTL is a quarter
  -- window longer than that and is set again once a quarter window has passed since `x`, not on
  -- every new tick: from any tick before `x + every` the keys still live `span + 2` ticks.
  local every = math.max(math.floor(span / 4), 1)
  if x and tick - x < every then
    redis.call('HSET', hk, 'a', a + da, 'b', b + db, t .. 'a', da, t .. 'b', db, 'o', o or t)
    redis.call('ZADD', zk, tick, t)
    return
  end
  redis.call('HSET', hk, 'a', a + da, 'b', b + db, t .. 'a', da, t .. 'b', db, 'o', o or t, 'x', tick)
  redis.call('ZADD', zk, tick, t)
  local ttl = math.ceil((span + 2 + every) * res / 1000)
  redis.call('PEXPIRE', zk, ttl)
  redis.call('PEXPIRE', hk, ttl)
end

-- How many of the oldest ticks one step of `win_until` reads.
local UNTIL_BATCH = 16

-- Microseconds until the `which` total drops to `target` (0 when it already has), walking the
-- oldest ticks a batch at a time (usually the first batch: the excess is a request or a few).
local function win_until(zk, hk, which, total, target, now, res, span, tick_now)
  local excess = total - target
  if excess <= 0 then
    return 0
  end
  local from = 0
  while true do
    local ticks = redis.call('ZRANGE', zk, from, from + UNTIL_BATCH - 1)
    if #ticks == 0 then
      break
    end
    local fields = {}
    for i, t in ipairs(ticks) do
      fields[i] = t .. which
    end
    local v = redis.call('HMGET', hk, unpack(fields))
    for i, t in ipairs(ticks) do
      excess = excess - (tonumber(v[i]) or 0)
      if excess <= 0 then
        return math.max((tonumber(t) + span) * res - now, 0)
      end
    end
    from = from + UNTIL_BATCH
  end
  return math.max((tick_now + span) * res - now, 0)
end

-- Microseconds until a request of `tokens` fits under rpm/tpm (negative limit: none).
local function win_room(zk, hk, a, b, rpm, tpm, tokens, now, res, span, tick_now)
  local wait = 0
  if rpm >= 0 and a >= rpm then
    if rpm == 0 then
      wait = math.max(wait, span * res)
    else
      wait = math.max(wait, win_until(zk, hk, 'a', a, rpm - 1, now, res, span, tick_now))
    end
  end
  if tpm >= 0 and b + tokens > tpm then
    if tokens > tpm then
      wait = math.max(wait, span * res)
    else
      wait = math.max(wait, win_until(zk, hk, 'b', b, tpm - tokens, now, res, span, tick_now))
    end
  end
  return wait
end
