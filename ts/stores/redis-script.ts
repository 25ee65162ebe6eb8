/**
 * The decision, next to the data: `decide_batch` of the Rust core
 * (`src/batch.rs`, `src/limiter.rs` `decide_planned`, `src/decision.rs`,
 * `src/shard.rs` `combine`, `src/token_bucket.rs`, `src/fixed_window.rs`,
 * `src/transition.rs` `full_at`) ported to the Lua 5.1 inside Redis, run by
 * one EVALSHA that reads every state, decides and writes atomically.
 *
 * Only what needs the stored states is here. The core validated the call,
 * drew its random numbers, chose the shards, computed each shard's config
 * and the state a missing shard starts from; after the script it replays the
 * same batch on what the script read and answers (messages, figures and
 * errors come from the core). `tests/redis/differential.test.mjs` runs
 * 100,000+ random batches through both and compares every answer and every
 * stored number with `Object.is`.
 *
 * Numbers arrive as JavaScript prints them (`String(x)`, `-0` as `"-0"`),
 * which `tonumber` (C's `strtod`) reads back exactly, and are stored as
 * `VALUE,TS` with `%.17g`, which JavaScript's `Number` reads back exactly.
 * Lua numbers are IEEE doubles and `math.floor`/`math.ceil` are C's, so the
 * arithmetic is the core's, operation for operation; what Lua lacks
 * (`nextafter`, `-0` as a constant, Rust's NaN-ignoring `max`, JavaScript's
 * `Math.min`) is built below.
 * @module
 */

/**
 * The decision script.
 *
 * - `KEYS[r]`: the Redis key of ref `r` (`batch.refs[r - 1]`), each read once.
 * - `ARGV[1]`: `1` all or nothing (`limitAll`), `0` each item its own call.
 * - `ARGV[2]`: the number of items `n`; then 17 arguments per item, in order:
 *   kind (0 token bucket, 1 fixed window), rate, period, capacity,
 *   maxReserved (`""`: unlimited), shards, start (`""`: none), count,
 *   reserve (0/1), write (0/1), now, the first read (a 1-based index into
 *   KEYS), the second read (0: none), and the fresh value and ts of each read
 *   (what it starts from when it has no state). Rate, capacity and
 *   maxReserved are the shard's; shards is the limit's shard count.
 * - Or, for one item on one key (a `limit` or `check` of a limit with one
 *   shard, the common call), 13 arguments: the item's fields from kind to
 *   now, then the fresh value and ts. (A batch of one decides the same all
 *   or nothing as not; the general layout has 19 or more.)
 * - Or many calls (a group commit): `ARGV[1]` is `m`, `ARGV[2]` the number of
 *   calls, then per call either `c`, the 1-based index of its key and the 13
 *   compact arguments, or `g`, all (0/1), its item count n, its key count k,
 *   the k indexes of its keys, and its n items of 17 arguments (their reads
 *   index its own keys, 1-based). Every key is read once; the calls are
 *   decided in order, each on what the earlier ones left, each as it would be
 *   alone (a corrupt state halts only the calls that read it; an error only
 *   its call, or its whole all-or-nothing call); each key is written once, by
 *   its last writer, with that writer's TTL.
 *
 * The common call (compact, its state absent or stored without an exponent,
 * granted without a wait) takes a fast path that computes only what that
 * case needs, with the same operations as the general path; every other
 * call, and every call the fast path turns down, takes the general path.
 *
 * Returns an array of strings each written as a JSON string literal (so that
 * a client that decodes replies as JSON, `@upstash/redis`, decodes them
 * without an exception, and no client mistakes a stored value for anything
 * else): for each key, what it held (`false`: nothing; else `=` and the raw
 * string, escaped with `cjson.encode` unless it is a state); then `=` and one
 * digit per item, `1` when it writes (`limit`) and its grant was written;
 * then per item its own answer, `=1,WAIT` granted or `=0,WAIT` refused (WAIT
 * `%.17g`, empty when none), `=e,` an error, `=-,` not decided (after an
 * error, or a corrupt state). For many calls, that same reply per call, one
 * after another, each key as that call saw it (what an earlier call wrote, as
 * the text it stores). The driver answers from the core's replay; the
 * answers let the differential test compare every decision.
 *
 * A stored value that is not `VALUE,TS` of two finite numbers is returned as
 * it is, and nothing at all is decided or written. An item whose wait is not
 * finite, or whose state would not be, is an error: it writes nothing (and,
 * all or nothing, neither does the batch). All or nothing, a check's state
 * is written with the batch when another item writes, as the core does. Each
 * written state expires (`PX`, rounded up, at least 1) when it is full again
 * (`full_at`), never when that is infinite or past 9e12 ms.
 */
export const DECIDE_SCRIPT = `-- ratebound: the core's decide_batch, next to the data (ts/stores/redis-script.ts)
local floor, ceil, frexp, ldexp = math.floor, math.ceil, math.frexp, math.ldexp
local huge = math.huge
local zero = 0
local negative_zero = -zero -- a literal -0 would share the constant slot of 0
local nan = zero / zero

-- A state as stored: VALUE,TS with 17 significant digits each (%d prints the same digits as
-- %.17g for a whole ts below 2^53, faster; -0 and 0 go through %.17g).
local function state_text(value, ts)
  if ts == floor(ts) and ts ~= 0 and ts < 9007199254740992 and ts > -9007199254740992 then
    return string.format('%.17g,%d', value, ts)
  end
  return string.format('%.17g,%.17g', value, ts)
end

-- The common decision, with nothing computed or allocated that it does not need: one item on one
-- state of a limit with one shard, granted without a wait, its state finite. It computes exactly what
-- the general path below does for that case, operation for operation (advance, then full_at). Returns
-- the new value and ts, and the PX in ms (false: none; nil when not written); or nil when the call is
-- not that case (a debt, a wait, a state that would not be finite): then the general path decides.
local function level(token_bucket, rate, period, capacity, value, ts, at, count)
  local x, t
  if token_bucket then
    local since = at - ts
    local elapsed = 0
    if since > 0 then elapsed = since end
    x = value + elapsed * (rate / period)
    t = at
    if ts > at then t = ts end
  else
    local k = floor((at - ts) / period)
    if not (k > 0) then k = 0 end
    x = value + rate * k
    t = ts + k * period
  end
  -- js_min(x, capacity)
  if x ~= x or capacity ~= capacity then x = nan
  elseif capacity < x or (not (x < capacity) and not (x == 0 and 1 / x < 0)) then x = capacity end
  return x - count, t
end

local function quick(token_bucket, start, rate, period, capacity, count, now, value, ts, write)
  local v, t = level(token_bucket, rate, period, capacity, value, ts, now, count)
  if not (v >= 0 and v - v == 0 and t - t == 0) then return nil end
  if not write then return v, t end
  -- full_at: one shard, so never infinite by rule but for a fixed window with a random start.
  local full = huge
  if token_bucket or start ~= '' then
    local candidate
    if v >= capacity then
      candidate = t
    elseif token_bucket then
      candidate = t + (capacity - v) / (rate / period)
    else
      candidate = t + ceil((capacity - v) / rate) * period
    end
    if candidate - candidate == 0 and level(token_bucket, rate, period, capacity, v, t, candidate, 0) >= capacity then
      full = candidate
    else
      local later = ceil(candidate) + 1
      if later - later == 0 and level(token_bucket, rate, period, capacity, v, t, later, 0) >= capacity then full = later end
    end
  end
  local ms = ceil(full - now)
  if ms <= 9e12 then
    if ms < 1 then ms = 1 end
    return v, t, ms
  end
  return v, t, false
end

-- The fields of a compact item (kind, rate, period, capacity, maxReserved, shards, start, count,
-- reserve, write, now, fresh value, fresh ts) from args[at], each number read with number: what
-- quick takes, or nil when the item is not quick's (a sharded limit, an argument not a number).
local function quick_fields(args, at, number)
  local kind = args[at]
  if not ((kind == '0' or kind == '1') and args[at + 5] == '1') then return nil end
  local start = args[at + 6]
  local rate, period, capacity, count, now = number(args[at + 1]), number(args[at + 2]), number(args[at + 3]), number(args[at + 7]), number(args[at + 10])
  if not (rate and period and capacity and count and now and (start == '' or number(start))) then return nil end
  return kind == '0', start, rate, period, capacity, count, now
end

local function ms_text(ms) return string.format('%d', ms) end

-- One item on one state (a call on a limit with one shard) comes in a layout of its own, 13
-- arguments: the item's fields from kind to now, then the fresh value and ts (see above).
local compact = #ARGV == 13 and #KEYS == 1

-- The common case first: a compact call, its state stored in the plain form (or absent), granted
-- without a wait, its state finite. Anything else (a debt, a wait, an exponent in the stored text,
-- a corrupt state) falls through to the general path, which reads again and decides from the
-- start (nothing was written yet). It reads only the arguments it needs (the driver sends numbers;
-- the general path checks each).
if compact then
  local token_bucket, start, rate, period, capacity, count, now = quick_fields(ARGV, 1, tonumber)
  if token_bucket ~= nil then
    local raw = redis.call('GET', KEYS[1])
    local value, ts
    if raw then
      -- -?D+(.D+)? on each side of the comma: a subset of what the general path accepts.
      local value_text, ts_text = string.match(raw, '^(%-?%d+%.?%d*),(%-?%d+%.?%d*)$')
      if value_text and string.byte(value_text, -1) ~= 46 and string.byte(ts_text, -1) ~= 46 then
        value, ts = tonumber(value_text), tonumber(ts_text)
        if not (value - value == 0 and ts - ts == 0) then value = nil end
      end
    else
      value, ts = tonumber(ARGV[12]), tonumber(ARGV[13])
    end
    if value and ts then
      local write = ARGV[10] == '1'
      local v, t, ms = quick(token_bucket, start, rate, period, capacity, count, now, value, ts, write)
      if v then
        if write then
          if ms then
            redis.call('SET', KEYS[1], state_text(v, t), 'PX', ms_text(ms))
          else
            redis.call('SET', KEYS[1], state_text(v, t))
          end
        end
        -- raw matched the pattern above: nothing in it needs escaping as JSON.
        return { raw and ('"=' .. raw .. '"') or false, write and '"=1"' or '"=0"', '"=1,"' }
      end
    end
  end
end

local function finite(x) return x == x and x ~= huge and x ~= -huge end

-- JavaScript's Math.min of two numbers: NaN wins, -0 is less than 0.
local function js_min(a, b)
  if a ~= a or b ~= b then return nan end
  if a < b then return a end
  if b < a then return b end
  if a == 0 and 1 / a < 0 then return a end
  return b
end

-- Rust's f64::max: a NaN argument is ignored.
local function rust_max(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if b > a then return b end
  return a
end

-- Rust's f64::min: a NaN is ignored.
local function rust_min(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if b < a then return b end
  return a
end

-- Rust's f64::next_up: the least number greater than x.
local function next_up(x)
  if x ~= x or x == huge then return x end
  if x == -huge then return -1.7976931348623157e308 end
  if x == 0 then return 4.9406564584124654e-324 end
  local m, e = frexp(x)
  local step = e - 53
  if m == -0.5 then step = e - 54 end
  if step < -1074 then step = -1074 end
  local up = x + ldexp(1, step)
  if up == 0 then return negative_zero end
  return up
end

-- src/token_bucket.rs and src/fixed_window.rs: value, ts and retryAfter (nil: none).
local function advance(c, value, ts, now, count)
  if c.kind == 0 then
    local refill = c.rate / c.period
    local since = now - ts
    local elapsed = 0
    if since > 0 then elapsed = since end
    local v = js_min(value + elapsed * refill, c.capacity) - count
    local back = ts > now
    local t = now
    if back then t = ts end
    local retry
    if v < 0 then
      retry = -v / refill
      if back then retry = retry + (t - now) end
    end
    return v, t, retry
  end
  local k = floor((now - ts) / c.period)
  if not (k > 0) then k = 0 end
  local v = js_min(value + c.rate * k, c.capacity) - count
  local t = ts + k * c.period
  local retry
  if v < 0 then retry = t + c.period * ceil(-v / c.rate) - now end
  return v, t, retry
end

-- src/decision.rs decide_as_reference: ok, retryAfter, next value, next ts.
local function decide_reference(c, value, ts, now, count)
  local v, t, retry = advance(c, value, ts, now, count)
  local refused = false
  if v < 0 then
    if not c.reserve then
      refused = true
    elseif c.max_reserved then
      refused = count > advance(c, value, ts, now, 0) + c.max_reserved
    end
  end
  local unstorable = not (finite(v) and finite(t))
  if unstorable and (retry == nil or retry ~= retry) then retry = huge end
  return not refused and not unstorable, retry, v, t
end

-- src/decision.rs wait_until: the least wait whose end, as a caller computes it (now + wait), is
-- not before later.
local function wait_until(now, later)
  local wait = later - now
  while now + wait < later do wait = next_up(wait) end
  return wait
end

-- src/decision.rs honest_wait: lengthen wait until replaying the next call then is not short.
local function honest_wait(c, replay, now, wait)
  for _ = 1, 8 do
    local at = now + wait
    local short_by = -replay(at)
    if not (short_by > 0) then return wait end
    local later
    if c.kind == 1 then
      later = at + c.period
    else
      later = rust_max(at + short_by / (c.rate / c.period), next_up(at))
    end
    wait = wait_until(now, later)
  end
  return wait
end

-- src/decision.rs within_reach: whether one shard alone can ever grant count.
local function within_reach(c, count)
  if not c.reserve then return count <= c.capacity end
  if c.max_reserved then return count <= c.capacity + c.max_reserved end
  return true
end

-- src/decision.rs decide: the reference's decision with an honest wait.
local function decide(c, value, ts, now, count)
  local ok, retry, v, t = decide_reference(c, value, ts, now, count)
  if retry == nil then return ok, retry, v, t end
  if ok or within_reach(c, count) then
    local replay
    if ok then
      replay = function(at) return (advance(c, v, t, at, 0)) end
    elseif c.reserve and c.max_reserved then
      replay = function(at) return advance(c, value, ts, at, 0) + c.max_reserved - count end
    else
      replay = function(at) return (advance(c, value, ts, at, count)) end
    end
    retry = honest_wait(c, replay, now, retry)
  end
  return ok, retry, v, t
end

-- src/shard.rs level_shares: the shares of count that leave both shards at the same value.
local function level_shares(next1, next2, count)
  local balance = next1 + next2 + count
  return next1 + count - balance / 2, next2 + count - balance / 2
end

-- src/math.rs fract: x - trunc(x).
local function fract(x)
  if x >= 0 then return x - floor(x) end
  return x - ceil(x)
end

-- src/shard.rs pair_refill_ms: an estimate of when the pair, holding a and b at ts1 and ts2, holds need.
local function pair_refill_ms(c, a, ts1, b, ts2, now, need)
  local capacity = c.capacity
  local together, a_full, b_full = need - a - b, need - capacity - b, need - capacity - a
  if c.kind == 0 then
    local refill = c.rate / c.period
    return rust_max(rust_max(rust_max(together / (2 * refill), a_full / refill), b_full / refill), 0)
  end
  local function windows(tokens)
    local exact = tokens / c.rate
    local magnitude = exact
    if magnitude < 0 then magnitude = -magnitude end
    return rust_max(ceil(exact - 1e-9 * rust_max(magnitude, 1)), 0)
  end
  local both, of_b, of_a = windows(together), windows(a_full), windows(b_full)
  local period = c.period
  local edge1, edge2 = ts1 + period, ts2 + period
  local function nth_edge(edge, n)
    if n > 0 then return edge + (n - 1) * period end
    return -huge
  end
  local early, late = edge2, edge1
  if edge1 <= edge2 then early, late = edge1, edge2 end
  local merged
  if both == 0 then
    merged = -huge
  elseif late - early > period then
    merged = -huge
  elseif fract(both / 2) ~= 0 then
    merged = early + (both - 1) / 2 * period
  else
    merged = late + (both / 2 - 1) * period
  end
  return rust_max(rust_max(rust_max(merged, nth_edge(edge1, of_a)), nth_edge(edge2, of_b)), now) - now
end

-- src/shard.rs combined_wait: the least wait after which the pair, combined, grants count.
local function combined_wait(c, v1, t1, v2, t2, now, count)
  local function grants(at)
    local _, _, n1 = decide_reference(c, v1, t1, at, count)
    local _, _, n2 = decide_reference(c, v2, t2, at, count)
    local share1, share2 = level_shares(n1, n2, count)
    return (decide_reference(c, v1, t1, at, share1)) and (decide_reference(c, v2, t2, at, share2))
  end
  local debt_each = 0
  if c.reserve and c.max_reserved then debt_each = c.max_reserved end
  local need = count - 2 * debt_each
  local a, ts1 = advance(c, v1, t1, now, 0)
  local b, ts2 = advance(c, v2, t2, now, 0)
  local estimate = wait_until(now, now + rust_max(pair_refill_ms(c, a, ts1, b, ts2, now, need), 0))
  if grants(now + estimate) then return estimate end
  local refused = now + estimate
  local magnitude = refused
  if magnitude < 0 then magnitude = -magnitude end
  local step = next_up(magnitude) - magnitude
  local granted = refused + step
  while not grants(granted) do
    refused, step = granted, step * 2
    granted = refused + step
    if not finite(granted) then return huge end
  end
  while true do
    local middle = refused + (granted - refused) / 2
    if middle <= refused or middle >= granted then return wait_until(now, granted) end
    if grants(middle) then granted = middle else refused = middle end
  end
end

-- src/transition.rs full_at: from when the state is full again (and may be dropped).
local function full_at(c, value, ts)
  if c.shards >= 3 or (c.kind == 1 and not c.start) then return huge end
  local candidate
  if value >= c.capacity then
    candidate = ts
  elseif c.kind == 0 then
    candidate = ts + (c.capacity - value) / (c.rate / c.period)
  else
    candidate = ts + ceil((c.capacity - value) / c.rate) * c.period
  end
  if finite(candidate) and advance(c, value, ts, candidate, 0) >= c.capacity then return candidate end
  local later = ceil(candidate) + 1
  if finite(later) and advance(c, value, ts, later, 0) >= c.capacity then return later end
  return huge
end

-- src/limiter.rs decide_planned: ok (nil: an error), and the writes { read, value, ts }.
local function decide_item(c, current)
  local now, count = c.now, c.count
  local first = current[c.reads[1]]
  local v1, t1 = c.fresh[1], c.fresh[2]
  if first then v1, t1 = first[1], first[2] end
  local ok1, retry1, nv1, nt1 = decide(c, v1, t1, now, count)
  local ok, retry, writes
  if c.reads[2] == nil or (ok1 and (first == nil or c.shards < 3)) then
    ok, retry, writes = ok1, retry1, { { 1, nv1, nt1 } }
  else
    local second = current[c.reads[2]]
    local v2, t2 = c.fresh[3], c.fresh[4]
    if second then v2, t2 = second[1], second[2] end
    local ok2, retry2, nv2, nt2 = decide(c, v2, t2, now, count)
    if ok1 and (not ok2 or nv1 > nv2) then
      ok, retry, writes = true, retry1, { { 1, nv1, nt1 } }
    elseif ok2 then
      ok, retry, writes = true, retry2, { { 2, nv2, nt2 } }
    else
      -- src/shard.rs combine: shares that leave both shards at the same value.
      local share1, share2 = level_shares(nv1, nv2, count)
      local okA, _, vA, tA = decide_reference(c, v1, t1, now, share1)
      local okB, _, vB, tB = decide_reference(c, v2, t2, now, share2)
      ok = okA and okB
      if ok then
        -- Each share's wait made a promise (src/decision.rs checked).
        local _, retryA = decide(c, v1, t1, now, share1)
        local _, retryB = decide(c, v2, t2, now, share2)
        if retryA ~= nil or retryB ~= nil then retry = rust_max(retryA or 0, retryB or 0) end
      else
        retry = combined_wait(c, v1, t1, v2, t2, now, count)
        if within_reach(c, count) then
          if retry1 ~= nil then retry = rust_min(retry, retry1) end
          if retry2 ~= nil then retry = rust_min(retry, retry2) end
        end
      end
      writes = { { 1, vA, tA }, { 2, vB, tB } }
    end
  end
  if not ok then
    -- A refusal always has a wait; one no clock can keep is an error.
    if retry == nil or not finite(retry) then return nil end
    return false, {}, retry
  end
  if retry ~= nil and not finite(retry) then return nil end
  for _, write in ipairs(writes) do
    if not (finite(write[2]) and finite(write[3])) then return nil end
  end
  return true, writes, retry
end

local function is_number_text(text)
  local _, last = string.find(text, '^%-?%d+')
  if not last then return false end
  local _, fraction = string.find(text, '^%.%d+', last + 1)
  if fraction then last = fraction end
  local _, exponent = string.find(text, '^e[%+%-]%d+', last + 1)
  if exponent then last = exponent end
  return last == #text
end

-- A stored VALUE,TS: the two numbers, or nil (not a state).
local function decode(raw)
  local comma = string.find(raw, ',', 1, true)
  if not comma then return nil end
  local value_text, ts_text = string.sub(raw, 1, comma - 1), string.sub(raw, comma + 1)
  if not (is_number_text(value_text) and is_number_text(ts_text)) then return nil end
  local value, ts = tonumber(value_text), tonumber(ts_text)
  if not (finite(value) and finite(ts)) then return nil end
  return { value, ts }
end

-- Every key, read once: its raw text (false: absent), its state (nil: absent or not a state), and
-- whether it holds something that is not a state (bad: nothing is decided on it or written to it).
local raw_of, current, bad, any_bad = {}, {}, {}, false
for r = 1, #KEYS do
  local raw = redis.call('GET', KEYS[r])
  raw_of[r] = raw
  if raw then
    current[r] = decode(raw)
    if not current[r] then bad[r], any_bad = true, true end
  end
end

-- What this script will write, per key: { value, ts, PX ms (false: none), text (once formatted) }.
local pending = {}

-- The text a key holds now, as a JSON string literal: what an earlier call of this script wrote,
-- or what was read (a state's text has nothing to escape; anything else goes through cjson).
local function held(r)
  local state = pending[r]
  if state then
    if not state[4] then state[4] = state_text(state[1], state[2]) end
    return '"=' .. state[4] .. '"'
  end
  local raw = raw_of[r]
  if raw then
    if bad[r] then return cjson.encode('=' .. raw) end
    return '"=' .. raw .. '"'
  end
  return false
end

-- A written state's PX: ceil(full_at - now), at least 1; false when past 9e12 ms or never full.
local function expiry(full, now)
  local ms = ceil(full - now)
  if ms <= 9e12 then
    if ms < 1 then ms = 1 end
    return ms
  end
  return false
end

-- One call (a group of items, decided as the core's decide_batch): the items from args[at], 17
-- arguments each, whose reads index refs (1-based) and refs maps to KEYS. Decides them in order
-- over current and records what they write in pending, unless halt (a state that is not a state:
-- nothing is decided). All or nothing, writes only when every item is granted and one writes, and
-- an error decides nothing more. Returns the digits of wrote ('0'/'1' per item) and the answers.
local function run_group(args, at, all, count, refs, halt)
  local function number(i)
    local x = tonumber(args[i])
    if x == nil then error('ratebound: argument ' .. i .. ' is not a number') end
    return x
  end
  local function optional(i)
    if args[i] == '' then return nil end
    return number(i)
  end
  local wrote, answers, all_ok, any_write = {}, {}, true, false
  local saved = {} -- all or nothing: per key, what current and pending held before the group wrote it
  for i = 1, count do
    wrote[i], answers[i] = '0', '"=-,"'
    if not halt then
      local c = {
        kind = number(at), rate = number(at + 1), period = number(at + 2), capacity = number(at + 3),
        max_reserved = optional(at + 4), shards = number(at + 5), start = optional(at + 6),
        count = number(at + 7), reserve = args[at + 8] == '1', write = args[at + 9] == '1', now = number(at + 10),
        reads = { refs[number(at + 11)] }, fresh = { number(at + 13), number(at + 14), number(at + 15), number(at + 16) },
      }
      if args[at + 12] ~= '0' then c.reads[2] = refs[number(at + 12)] end
      if c.reads[1] == nil or (args[at + 12] ~= '0' and c.reads[2] == nil) then error('ratebound: item ' .. i .. ' reads no key') end
      local ok, writes, retry = decide_item(c, current)
      if ok == nil then
        answers[i] = '"=e,"'
        if all then halt = true end -- an error: the batch writes nothing
      else
        -- src/result.rs caller_wait: an answer's wait is whole ms, rounded up.
        answers[i] = (ok and '"=1,' or '"=0,') .. (retry and string.format('%.17g', ceil(retry)) or '') .. '"'
        all_ok = all_ok and ok
        any_write = any_write or c.write
        if ok and (c.write or all) then
          for _, write in ipairs(writes) do
            local r = c.reads[write[1]]
            if all and saved[r] == nil then saved[r] = { current[r] or false, pending[r] or false } end
            current[r] = { write[2], write[3] }
            pending[r] = { write[2], write[3], expiry(full_at(c, write[2], write[3]), c.now) }
          end
          if c.write then wrote[i] = '1' end
        end
      end
    end
    at = at + 17
  end
  if halt or (all and not (all_ok and any_write)) then
    for i = 1, count do wrote[i] = '0' end
    for r, before in pairs(saved) do
      current[r] = before[1] or nil
      pending[r] = before[2] or nil
    end
  end
  return table.concat(wrote), answers
end

local reply = {}
if ARGV[1] == 'm' then
  -- Many calls: ARGV[2] groups, each a call of its own, decided in order, each seeing what the
  -- earlier ones wrote. Per group, its state texts as it saw them, its wrote digits, its answers.
  -- Calls of one limit repeat the same argument strings (Lua interns strings): each is read once.
  local numbers = {}
  local function number(text)
    local x = numbers[text]
    if x == nil then
      x = tonumber(text) or false
      numbers[text] = x
    end
    return x or nil
  end
  local at = 3
  for _ = 1, tonumber(ARGV[2]) do
    if ARGV[at] == 'c' then
      -- One item on one key of a limit with one shard: the key's index, then the compact fields.
      local r = tonumber(ARGV[at + 1])
      reply[#reply + 1] = held(r)
      local handled = bad[r]
      if handled then
        reply[#reply + 1] = '"=0"'
        reply[#reply + 1] = '"=-,"'
      else
        local token_bucket, start, rate, period, capacity, count, now = quick_fields(ARGV, at + 2, number)
        if token_bucket ~= nil then
          local state = current[r]
          local value, ts
          if state then value, ts = state[1], state[2] else value, ts = number(ARGV[at + 13]), number(ARGV[at + 14]) end
          local write = ARGV[at + 11] == '1'
          if value and ts then
            local v, t, ms = quick(token_bucket, start, rate, period, capacity, count, now, value, ts, write)
            if v then
              if write then
                -- In place: no other reference to these tables outlives a group.
                if state then state[1], state[2] = v, t else current[r] = { v, t } end
                local written = pending[r]
                if written then
                  written[1], written[2], written[3], written[4] = v, t, ms, nil
                else
                  pending[r] = { v, t, ms }
                end
              end
              reply[#reply + 1] = write and '"=1"' or '"=0"'
              reply[#reply + 1] = '"=1,"'
              handled = true
            end
          end
        end
        if not handled then
          local a = at + 2
          local args = { ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], '1', '0', ARGV[a + 11], ARGV[a + 12], '0', '0' }
          local wrote, answers = run_group(args, 1, false, 1, { r }, false)
          reply[#reply + 1] = '"=' .. wrote .. '"'
          reply[#reply + 1] = answers[1]
        end
      end
      at = at + 15
    else
      -- 'g': all (0/1), the item count n, the ref count k, k key indexes, then 17 arguments per item.
      local all, count, refs_count = ARGV[at + 1] == '1', tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
      local refs, halt = {}, false
      for j = 1, refs_count do
        local r = tonumber(ARGV[at + 3 + j])
        refs[j] = r
        reply[#reply + 1] = held(r)
        if bad[r] then halt = true end
      end
      local wrote, answers = run_group(ARGV, at + 4 + refs_count, all, count, refs, halt)
      reply[#reply + 1] = '"=' .. wrote .. '"'
      for i = 1, count do reply[#reply + 1] = answers[i] end
      at = at + 4 + refs_count + 17 * count
    end
  end
else
  -- One call: the general layout, or a compact call spelled out as a batch of one.
  local args = ARGV
  if compact then
    args = { '1', '1', ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], '1', '0', ARGV[12], ARGV[13], '0', '0' }
  end
  local refs = {}
  for r = 1, #KEYS do
    refs[r] = r
    reply[r] = held(r)
  end
  local count = tonumber(args[2])
  local wrote, answers = run_group(args, 3, args[1] == '1', count, refs, any_bad)
  reply[#KEYS + 1] = '"=' .. wrote .. '"'
  for i = 1, count do reply[#KEYS + 1 + i] = answers[i] end
end

for r = 1, #KEYS do
  local state = pending[r]
  if state then
    local stored = state[4] or state_text(state[1], state[2])
    if state[3] then
      redis.call('SET', KEYS[r], stored, 'PX', ms_text(state[3]))
    else
      redis.call('SET', KEYS[r], stored)
    end
  end
end
return reply
`;
