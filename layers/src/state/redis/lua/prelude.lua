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

-- A sliding window: KEYS zk (sorted set of ticks) and hk (hash: `<tick>a`, `<tick>b`, totals `a`, `b`).
-- An event's tick is rounded up, the current time down: an event counts for the full span.
local function win_prune(zk, hk, passed, span)
  local cut = passed - span
  local old = redis.call('ZRANGEBYSCORE', zk, '-inf', cut)
  if #old > 0 then
    local da, db = 0, 0
    for _, t in ipairs(old) do
      local v = redis.call('HMGET', hk, t .. 'a', t .. 'b')
      da = da + (tonumber(v[1]) or 0)
      db = db + (tonumber(v[2]) or 0)
      redis.call('HDEL', hk, t .. 'a', t .. 'b')
    end
    redis.call('ZREMRANGEBYSCORE', zk, '-inf', cut)
    if redis.call('ZCARD', zk) == 0 then
      redis.call('DEL', hk)
      return 0, 0
    end
    redis.call('HINCRBY', hk, 'a', -da)
    redis.call('HINCRBY', hk, 'b', -db)
  end
  local tot = redis.call('HMGET', hk, 'a', 'b')
  return math.max(tonumber(tot[1]) or 0, 0), math.max(tonumber(tot[2]) or 0, 0)
end

local function win_add(zk, hk, tick, a, b, ttl_ms)
  local t = fmt(tick)
  redis.call('HINCRBY', hk, t .. 'a', a)
  redis.call('HINCRBY', hk, t .. 'b', b)
  redis.call('HINCRBY', hk, 'a', a)
  redis.call('HINCRBY', hk, 'b', b)
  -- A new tick is the newest event: the keys live one window past it (no need to touch the
  -- TTL again for later events in the same tick).
  if redis.call('ZADD', zk, tick, t) == 1 then
    redis.call('PEXPIRE', zk, ttl_ms)
    redis.call('PEXPIRE', hk, ttl_ms)
  end
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
