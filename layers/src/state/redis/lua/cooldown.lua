-- Numbers that leave a script as text (the JSON messages) go through `fmt`: Lua prints large
-- numbers in exponent form otherwise.
local function fmt(n)
  return string.format('%.0f', n)
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
