-- Shared helpers, prepended to every script. All times come from the server's clock (TIME), so
-- replicas never compare their own clocks. Numbers that leave a script as text go through `fmt`:
-- Lua prints large numbers in exponent form otherwise.
local function fmt(n)
  return string.format('%.0f', n)
end

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- A sliding window: KEYS zk (sorted set of ticks) and hk (hash: `<tick>a`, `<tick>b` per tick,
-- totals `a`, `b`, and `o` the oldest tick). An event's tick is rounded up, the current time down:
-- an event counts for the full span. The common call is three commands (TIME, HMGET, HSET); the
-- sorted set is touched once per new tick and once per expiring tick.

-- Drops the ticks that left the window (`tick <= passed - span`). Rare: at most once per tick.
local function win_prune(zk, hk, cut)
  local old = redis.call('ZRANGEBYSCORE', zk, '-inf', cut)
  local da, db = 0, 0
  for _, t in ipairs(old) do
    local v = redis.call('HMGET', hk, t .. 'a', t .. 'b')
    da = da + (tonumber(v[1]) or 0)
    db = db + (tonumber(v[2]) or 0)
    redis.call('HDEL', hk, t .. 'a', t .. 'b')
  end
  redis.call('ZREMRANGEBYSCORE', zk, '-inf', cut)
  local oldest = redis.call('ZRANGE', zk, 0, 0)
  if #oldest == 0 then
    redis.call('DEL', hk)
    return
  end
  -- Only non-zero deltas: Lua writes the negative of 0 as `-0`, which HINCRBY refuses.
  if da ~= 0 then
    redis.call('HINCRBY', hk, 'a', fmt(-da))
  end
  if db ~= 0 then
    redis.call('HINCRBY', hk, 'b', fmt(-db))
  end
  redis.call('HSET', hk, 'o', oldest[1])
end

-- The window at `passed` (the current tick rounded down): totals a, b, and the counts of tick `t`
-- (nil when it has no event yet), and whether the window holds anything.
local function win_read(zk, hk, passed, span, t)
  local v = redis.call('HMGET', hk, 'a', 'b', 'o', t .. 'a', t .. 'b')
  local o = tonumber(v[3])
  if o and o <= passed - span then
    win_prune(zk, hk, passed - span)
    v = redis.call('HMGET', hk, 'a', 'b', 'o', t .. 'a', t .. 'b')
  end
  return math.max(tonumber(v[1]) or 0, 0), math.max(tonumber(v[2]) or 0, 0), tonumber(v[4]), tonumber(v[5]), v[3]
end

-- Adds (da, db) at `tick` to a window read by `win_read` (totals a, b; tick counts ta, tb; oldest o).
local function win_add(zk, hk, tick, a, b, ta, tb, o, da, db, ttl_ms)
  local t = fmt(tick)
  if ta then
    redis.call('HSET', hk, 'a', fmt(a + da), 'b', fmt(b + db), t .. 'a', fmt(ta + da), t .. 'b', fmt((tb or 0) + db))
    return
  end
  redis.call('HSET', hk, 'a', fmt(a + da), 'b', fmt(b + db), t .. 'a', fmt(da), t .. 'b', fmt(db), 'o', o or t)
  -- A new tick is the newest event: the keys live one window past it.
  redis.call('ZADD', zk, tick, t)
  redis.call('PEXPIRE', zk, ttl_ms)
  redis.call('PEXPIRE', hk, ttl_ms)
end

-- Microseconds until the `which` total drops to `target` (0 when it already has).
local function win_until(zk, hk, which, total, target, now, res, span, tick_now)
  local excess = total - target
  if excess <= 0 then
    return 0
  end
  for _, t in ipairs(redis.call('ZRANGE', zk, 0, -1)) do
    excess = excess - (tonumber(redis.call('HGET', hk, t .. which)) or 0)
    if excess <= 0 then
      return math.max((tonumber(t) + span) * res - now, 0)
    end
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

-- A deployment's cooldown revision: a counter (KEYS[2]) bumped by every change, so replicas apply
-- changes in order whatever the server's clock does. It outlives the record (30 days).
local function next_rev(key)
  local rev = redis.call('INCR', key)
  redis.call('PEXPIRE', key, 2592000000)
  return rev
end

-- A cooldown record (hash: u until ms, r reason, s status, k strikes, h half-open, p probe until ms,
-- at revision) as the JSON message replicas apply; numbers as text.
local function cd_message(key, id, now)
  local h = redis.call('HMGET', key, 'u', 'r', 's', 'k', 'h', 'p', 'at')
  if not h[1] then
    return nil
  end
  return cjson.encode({
    id = id, op = 'set', now = fmt(now), u = h[1], r = h[2] or '', s = h[3] or '', k = h[4] or '0',
    h = h[5] or '0', p = h[6] or '0', at = h[7] or '0',
  })
end

local function cd_deleted(id, now, at)
  return cjson.encode({ id = id, op = 'del', now = fmt(now), at = fmt(at) })
end
