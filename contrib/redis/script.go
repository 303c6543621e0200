package wardredis

// The scripts are rate.Bucket.Step and rate.Period.Step written again in Lua, operation for
// operation in the same order, so that the server's float64 arithmetic gives the same bits as the
// pure cores (the differential test compares decisions, waits and stored state).
//
// Instants are whole microseconds (TIME's resolution), held exactly in a Lua number up to 2^53.
// A span between two instants is d microseconds, d*1000 nanoseconds: the same correctly rounded
// float64 the pure cores compute from int64 nanoseconds.
//
// A key's state is one string, two numbers and a space ("tokens stamp" for a bucket, "start
// count" for a period), each written with %.17g, which reads back to the same bits; a script
// reads it with one GET and writes it, with its expiry, in one SET ... PX: two server calls per
// decision, as few as a read-modify-write can take.
//
// KEYS[1]: the key. ARGV: op ("take", "lease", "release"), now in µs ("" reads TIME), n (the
// tokens wanted; the most a lease asks for), then the policy (see each script).
//
// Reply: one string of six fields, "ok granted wait now start reset": ok is 1 when the call was
// granted (a call for no token is granted and takes none); granted is how many tokens were taken;
// wait is nanoseconds until the call would pass (-1: never); now is the instant decided at (µs);
// start is the open period's start (µs; "-" for a bucket or when no period is open); reset is
// nanoseconds until the open period ends (period only, 0 otherwise). One string rather than an
// array: the client reads one value instead of six.

// garbagePrefix opens the error the scripts answer a key holding something else with: the only
// error reply that is not a store failure.
const garbagePrefix = "WARDGARBAGE"

// shared is the prologue both scripts begin with.
const shared = `
local key, op, n = KEYS[1], ARGV[1], tonumber(ARGV[3])
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if n < 0 then n = 0 end
local function num(x) return string.format('%.17g', x) end
local function garbage() return redis.error_reply('WARDGARBAGE key ' .. key .. ' holds no ward state') end
local function reply(ok, granted, wait, start, reset)
  return string.format('%d %.0f %s %.0f %s %s', ok, granted, wait, now, start, reset)
end
-- state reads the key: false when absent, the two numbers of its state, or nil when the key
-- holds anything else (another type, or a string that is not two numbers)
local function state()
  local v = redis.pcall('GET', key)
  if not v then return false end
  if type(v) ~= 'string' then return nil end
  local a, b = string.match(v, '^(%S+) (%S+)$')
  a, b = tonumber(a), tonumber(b)
  if not a or not b then return nil end
  return true, a, b
end
`

// bucketSrc is rate.Bucket.Step. ARGV[4]: rate (tokens a second), ARGV[5]: burst, ARGV[6]: how
// long a full key is kept, in ms.
const bucketSrc = shared + `
local rate, burst, keep = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local found, tokens, stamp = state()
if found == nil then return garbage() end
if not found then tokens, stamp = burst, now end
-- refill: a state from a store is held to [0, burst]; a stamp more than MaxSkew (60 s) ahead
-- is pulled back to now, empty; time only moves the state forward.
if tokens ~= tokens then tokens = 0 end
if tokens < 0 then tokens = 0 elseif tokens > burst then tokens = burst end
if stamp - now > 60000000 then
  tokens, stamp = 0, now
elseif now > stamp then
  tokens = math.min(burst, tokens + (now - stamp) * 1000 / 1e9 * rate)
  stamp = now
end
local ok, granted, wait = 1, 0, '0'
if op == 'release' then
  tokens = math.min(burst, tokens + 1)
elseif op == 'lease' then
  granted = math.min(n, math.floor(tokens))
  if granted >= 1 then tokens = tokens - granted else ok, granted, n = 0, 0, 1 end
elseif n <= tokens then
  tokens = tokens - n
  granted = n
else
  ok = 0
end
if ok == 0 then
  if n > burst or rate == 0 then
    wait = '-1'
  else
    local w = math.ceil((n - tokens) / rate * 1e9)
    if not (w < 9223372036854775807) then wait = '-1' else wait = string.format('%.0f', math.max(w, 1)) end
  end
end
-- the key can matter until the bucket is full again: after that, no key reads the same
redis.call('SET', key, num(tokens) .. ' ' .. num(stamp), 'PX', string.format('%.0f', math.ceil((burst - tokens) / rate * 1e3 + math.max(stamp - now, 0) / 1e3) + keep))
return reply(ok, granted, wait, '-', '0')
`

// periodSrc is rate.Period.Step. ARGV[4]: quota, ARGV[5]: period in µs, ARGV[6]: "1" to align
// periods on multiples of the period, ARGV[7]: how long past its end a period's key is kept, ms.
const periodSrc = shared + `
local quota, p, align, keep = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1', tonumber(ARGV[7])
local function open(t)
  if not align then return t end
  local r = math.fmod(t, p)
  if r < 0 then r = r + p end
  return t - r
end
local isopen, start, count = state()
if isopen == nil or (isopen and (start ~= math.floor(start) or count ~= math.floor(count))) then return garbage() end
if not isopen then start, count = 0, 0 elseif count < 0 then count = 0 end
-- current: a start more than MaxSkew ahead is pulled back to open at now, spent; an ended
-- period reads as none open (a now before the start counts in the open period)
if isopen then
  if start - now > 60000000 then
    if op == 'release' then return reply(1, 0, '0', '-', '0') end
    start, count = open(now), quota
  elseif now >= start and now - start >= p then
    isopen, start, count = false, 0, 0
  end
end
local ok, granted, wait = 1, 0, '0'
if op == 'release' then
  if isopen and count > 0 then count = count - 1 end
elseif n > quota then
  ok, wait = 0, '-1'
else
  if n > 0 and not isopen then isopen, start, count = true, open(now), 0 end
  if op == 'lease' then
    granted = math.min(n, quota - count)
    if granted < 1 then ok, granted = 0, 0 end
  elseif n == 0 or count <= quota - n then
    granted = n
  else
    ok = 0
  end
  if ok == 0 then
    if now < start then wait = string.format('%.0f', p * 1000)
    else wait = string.format('%.0f', (p - (now - start)) * 1000) end
  end
  count = count + granted
end
if not isopen then
  redis.call('DEL', key)
  return reply(ok, granted, wait, '-', '0')
end
local left = p - math.max(now - start, 0)
redis.call('SET', key, num(start) .. ' ' .. num(count), 'PX', string.format('%.0f', math.ceil(left / 1e3 + math.max(start - now, 0) / 1e3) + keep))
return reply(ok, granted, wait, num(start), string.format('%.0f', left * 1000))
`

// slidingSrc is rate.Sliding.Take for instants in order: a sorted set of the stamps in the
// window (score: the instant in µs; member: the instant and a number among the stamps of that
// instant, zero-padded so that the lexically last is the newest). ARGV[4]: quota, ARGV[5]: the
// window in µs, ARGV[6]: how long past the window's end the key is kept, in ms. An instant before
// the newest stamp is judged, and stamped, at the newest stamp (the stamps stay in order, so
// every window-long stretch holds at most quota of them); one more than MaxSkew (60 s) before it
// finds the window pulled back, full at the instant, as rate.Sliding does.
const slidingSrc = shared + `
local quota, w, keep = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local top = redis.pcall('ZREVRANGE', key, 0, 0, 'WITHSCORES')
if top.err then return garbage() end
local newest = tonumber(top[2])
if top[1] and (not newest or newest ~= math.floor(newest)) then return garbage() end
-- fill stamps k events at t, numbered after the stamps already at t
local function fill(t, k)
  local c, args = redis.call('ZCOUNT', key, t, t), {}
  for i = 1, k do
    args[#args + 1] = t
    args[#args + 1] = string.format('%.0f:%012d', t, c + i)
    if #args == 1000 or i == k then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
end
local function expire(t)
  redis.call('PEXPIRE', key, string.format('%.0f', math.ceil((t + w - now) / 1e3) + keep))
end
local skewed = newest and newest - now > 60000000
local at = now
if newest and newest > now and not skewed then at = newest end
if op == 'release' then
  if not skewed then
    local m = redis.call('ZREVRANGEBYSCORE', key, at, '-inf', 'LIMIT', 0, 1)
    if m[1] then redis.call('ZREM', key, m[1]) end
  end
  return reply(1, 0, '0', '-', '0')
end
if n > quota then return reply(0, 0, '-1', '-', '0') end
if n == 0 then return reply(1, 0, '0', '-', '0') end
if skewed then
  redis.call('DEL', key)
  fill(now, quota)
  expire(now)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', at - w)
local count = redis.call('ZCARD', key)
if count + n > quota then
  local k = count - quota + n - 1
  local s = redis.call('ZRANGE', key, k, k, 'WITHSCORES')
  return reply(0, 0, string.format('%.0f', (tonumber(s[2]) + w - now) * 1000), '-', '0')
end
fill(at, n)
expire(at)
return reply(1, n, '0', '-', '0')
`
