/**
 * The decision script's start: its locals, and the fast path of the common call (one item on one
 * state of a limit with one shard, granted without a wait), which answers and returns before the
 * general path is even defined.
 * Part of `DECIDE_SCRIPT` (`ts/stores/redis-script.ts`, which documents the script): its text is
 * the parts joined in order, byte for byte.
 * @module
 */

/** The script from its first line through the fast path. */
export const FAST_PATH = `-- ratebound: the core's decide_batch, next to the data (ts/stores/redis-script.ts)
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

`;
