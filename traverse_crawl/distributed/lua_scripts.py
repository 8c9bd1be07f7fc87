"""The Lua scripts that run a distributed crawl's frontier inside Redis.

A page's commit reads the seed's state, extends its queue, admits new pages and hands
out a manifest task; a script runs atomically in Redis, so each step is one
indivisible change of the crawl's state, timed by Redis's own clock (docs/architecture.md,
"Distributed crawls"). The frontier steps are a port of ``crawl/frontier.py``, which
stays the reference (``tests/test_distributed_frontier.py`` checks that the two agree).
"""

from __future__ import annotations

# Every script takes the crawl's key prefix as ARGV[1] (all keys of a crawl share it,
# see ``client.Keys``); values are JSON, never pickles. Tasks are "<seed number>:<index>"
# (fetch that page) or "<seed number>:m" (write that seed's manifest). ``ready`` is a
# sorted set scored by depth, then index (breadth first, seeds interleaved); a taken
# task has a lease (``leases``: expiry in Redis ms) and a token (``tokens``); only the
# holder of the current token may commit or renew it, and only before the lease expires.
#
# Shared by every script: Redis time, task scores, putting a task back.
_COMMON = """
local p = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function skey(n, part) return p .. 'seed:' .. n .. ':' .. part end
local function score(task)
  local n, i = string.match(task, '^(%d+):(.+)$')
  if i == 'm' then return -1 end
  local entry = cjson.decode(redis.call('LINDEX', skey(n, 'queue'), tonumber(i)))
  return entry[2] * 4294967296 + tonumber(i)
end
local function requeue(task)
  redis.call('ZREM', p .. 'leases', task)
  redis.call('HDEL', p .. 'tokens', task)
  redis.call('ZADD', p .. 'ready', score(task), task)
end
local function sweep(now)
  local expired = redis.call('ZRANGEBYSCORE', p .. 'leases', '-inf', now, 'LIMIT', 0, 1000)
  for _, task in ipairs(expired) do requeue(task) end
end
-- Frontier.admit: hand out queued URLs up to the page budget.
local function admit(n, st)
  while st.admitted < st.queued and st.admitted < st.max_pages do
    local entry = cjson.decode(redis.call('LINDEX', skey(n, 'queue'), st.admitted))
    redis.call('ZADD', p .. 'ready', entry[2] * 4294967296 + st.admitted, n .. ':' .. st.admitted)
    st.admitted = st.admitted + 1
  end
end
-- Frontier.finished: every admitted page committed, nothing more admissible.
local function check_finished(n, st)
  if st.committed == st.admitted and (st.admitted >= st.max_pages or st.admitted >= st.queued)
     and st.finished == 0 then
    st.finished = 1
    redis.call('ZADD', p .. 'ready', -1, n .. ':m')
  end
end
local function load(n)
  local v = redis.call('HMGET', skey(n, 'state'), 'admitted', 'committed', 'max_pages',
                       'max_depth', 'finished')
  return {admitted = tonumber(v[1]), committed = tonumber(v[2]), max_pages = tonumber(v[3]),
          max_depth = tonumber(v[4]), finished = tonumber(v[5]),
          queued = redis.call('LLEN', skey(n, 'queue'))}
end
-- Hand out up to ``count`` tasks to ``worker`` (expired leases back first), each
-- with a new token; appended to ``out`` as task, token, queue entry ('' for a
-- manifest task).
local function take(now, worker, count, lease, out)
  redis.call('ZADD', p .. 'workers', now, worker)
  sweep(now)
  if count <= 0 then return out end
  local popped = redis.call('ZPOPMIN', p .. 'ready', count)
  for k = 1, #popped, 2 do
    local task = popped[k]
    local token = tostring(redis.call('INCR', p .. 'counter'))
    redis.call('ZADD', p .. 'leases', now + lease, task)
    redis.call('HSET', p .. 'tokens', task, token)
    local n, i = string.match(task, '^(%d+):(.+)$')
    local entry = ''
    if i ~= 'm' then entry = redis.call('LINDEX', skey(n, 'queue'), tonumber(i)) end
    out[#out + 1] = task
    out[#out + 1] = token
    out[#out + 1] = entry
  end
  return out
end
local function save(n, st)
  redis.call('HSET', skey(n, 'state'), 'admitted', st.admitted, 'committed', st.committed,
             'finished', st.finished)
end
"""

# ARGV: prefix, config JSON, then (seed id, seed JSON, frontier URL, max pages,
# max depth, seen key of the frontier URL) per seed. Sets the crawl's config if it
# has none; adds each seed whose id is new (the same id again is a no-op). Returns
# {config as stored, seed ids already present with another seed JSON...}.
JOIN = (
    _COMMON
    + """
redis.call('SET', p .. 'config', ARGV[2], 'NX')
local out = {redis.call('GET', p .. 'config')}
if out[1] ~= ARGV[2] then return out end
for k = 3, #ARGV, 6 do
  local id, seed, url = ARGV[k], ARGV[k + 1], ARGV[k + 2]
  local known = redis.call('HGET', p .. 'seeds', id)
  if known then
    if redis.call('LINDEX', p .. 'seedlist', tonumber(known)) ~= seed then out[#out + 1] = id end
  else
    local n = redis.call('RPUSH', p .. 'seedlist', seed) - 1
    redis.call('HSET', p .. 'seeds', id, n)
    redis.call('RPUSH', skey(n, 'queue'), cjson.encode({url, 0}))
    redis.call('SADD', skey(n, 'seen'), ARGV[k + 5])
    redis.call('HSET', skey(n, 'state'), 'admitted', 0, 'committed', 0,
               'max_pages', ARGV[k + 3], 'max_depth', ARGV[k + 4], 'finished', 0)
    local st = load(n)
    admit(n, st)
    check_finished(n, st)
    save(n, st)
  end
end
return out
"""
)

# ARGV: prefix, worker id, how many, lease ms. Expired leases go back first.
# Returns a flat list: task, token, queue entry JSON ('' for a manifest task).
TAKE = (
    _COMMON
    + """
return take(now_ms(), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), {})
"""
)

# ARGV: prefix, seed number, index, token, page record JSON, links JSON, then
# worker id, how many tasks to take, lease ms (TAKE in the same round trip).
# Frontier.record: store the outcome, commit what is now in order (extending
# the queue with the links of pages above the depth limit), admit. A link is its URL,
# or [URL, seen key, hop count of the linking page] under a crawl policy
# (crawl/scope.py): the seen set holds keys, a queue entry the URL. Returns
# {status, pages committed, finished, tasks taken as TAKE returns them...}:
# status -1 = stale token or expired lease (the result is refused), 0 = a
# duplicate, 1 = kept.
COMMIT = (
    _COMMON
    + """
local n, i, now = ARGV[2], tonumber(ARGV[3]), now_ms()
local function commit()
local task = n .. ':' .. i
local expiry = redis.call('ZSCORE', p .. 'leases', task)
if redis.call('HGET', p .. 'tokens', task) ~= ARGV[4] or not expiry then return {-1, 0, 0} end
if tonumber(expiry) < now then requeue(task) return {-1, 0, 0} end
redis.call('ZREM', p .. 'leases', task)
redis.call('HDEL', p .. 'tokens', task)
local st = load(n)
local pending = skey(n, 'pending')
if i < st.committed or i >= st.admitted or redis.call('HEXISTS', pending, i) == 1 then
  return {0, 0, 0}
end
redis.call('HSET', skey(n, 'records'), i, ARGV[5])
redis.call('HSET', pending, i, ARGV[6])
local before = st.committed
while redis.call('HEXISTS', pending, st.committed) == 1 do
  local links = cjson.decode(redis.call('HGET', pending, st.committed))
  redis.call('HDEL', pending, st.committed)
  local entry = cjson.decode(redis.call('LINDEX', skey(n, 'queue'), st.committed))
  if entry[2] < st.max_depth then  -- Frontier.may_follow
    for _, link in ipairs(links) do  -- Frontier._discover
      local url, key, hop = link, link, 0
      if type(link) == 'table' then url, key, hop = link[1], link[2], link[3] end
      if redis.call('SISMEMBER', skey(n, 'seen'), key) == 0 then
        if st.queued < st.max_pages then
          redis.call('SADD', skey(n, 'seen'), key)
          local queued = {url, entry[2] + 1, entry[1]}
          if hop > 0 then queued[4] = hop end
          redis.call('RPUSH', skey(n, 'queue'), cjson.encode(queued))
          st.queued = st.queued + 1
        else
          redis.call('SADD', skey(n, 'overflow'), string.sub(redis.sha1hex(key), 1, 16))
        end
      end
    end
  end
  st.committed = st.committed + 1
end
if st.committed > before then admit(n, st) end
check_finished(n, st)
save(n, st)
return {1, st.committed - before, st.finished}
end
return take(now, ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), commit())
"""
)

# ARGV: prefix, worker id, lease ms, then (task, token) pairs. Extends the
# leases still held; returns the tasks that are not (expired or taken over).
RENEW = (
    _COMMON
    + """
local now = now_ms()
redis.call('ZADD', p .. 'workers', now, ARGV[2])
local lost = {}
for k = 4, #ARGV, 2 do
  local task, token = ARGV[k], ARGV[k + 1]
  local expiry = redis.call('ZSCORE', p .. 'leases', task)
  if redis.call('HGET', p .. 'tokens', task) == token and expiry and tonumber(expiry) >= now then
    redis.call('ZADD', p .. 'leases', now + tonumber(ARGV[3]), task)
  else
    if redis.call('HGET', p .. 'tokens', task) == token then requeue(task) end
    lost[#lost + 1] = task
  end
end
return lost
"""
)

# ARGV: prefix, worker id, then (task, token) pairs: give the tasks back now
# (a worker that stops gracefully), and say the worker is gone.
RELEASE = (
    _COMMON
    + """
redis.call('ZREM', p .. 'workers', ARGV[2])
local released = 0
for k = 3, #ARGV, 2 do
  if redis.call('HGET', p .. 'tokens', ARGV[k]) == ARGV[k + 1] then
    requeue(ARGV[k])
    released = released + 1
  end
end
return released
"""
)

# ARGV: prefix, seed number, token. The seed's manifest is written: its task
# is done and the crawl counts it. Returns 1, or 0 for a stale token.
MANIFEST_DONE = (
    _COMMON
    + """
local task = ARGV[2] .. ':m'
if redis.call('HGET', p .. 'tokens', task) ~= ARGV[3] then return 0 end
redis.call('ZREM', p .. 'leases', task)
redis.call('HDEL', p .. 'tokens', task)
redis.call('HSET', skey(ARGV[2], 'state'), 'written', 1)
redis.call('INCR', p .. 'written')
return 1
"""
)
