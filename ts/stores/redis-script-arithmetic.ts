/**
 * The decision script's arithmetic: the core's decision, shards and `full_at`, ported function by
 * function to Lua (each names the Rust it ports), with what Lua lacks (`next_up`, Rust's and
 * JavaScript's `min`/`max`).
 * Part of `DECIDE_SCRIPT` (`ts/stores/redis-script.ts`, which documents the script): its text is
 * the parts joined in order, byte for byte.
 * @module
 */

/** The script's arithmetic: from `finite` through `full_at`. */
export const ARITHMETIC = `local function finite(x) return x == x and x ~= huge and x ~= -huge end

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

-- src/decision.rs wait_until: the least wait whose end, as a caller computes it (now + wait), is
-- not before later.
local function wait_until(now, later)
  local wait = later - now
  while now + wait < later do wait = next_up(wait) end
  return wait
end

-- src/fixed_window.rs advance_calendar, at c.now only (the window that holds it is c's): a
-- calendar period's windows passed, counted in mean lengths, and its wait, in longest windows
-- past the current window's end.
local function advance_calendar(c, value, ts, now, count)
  local k = 0
  if ts < c.window_start then k = rust_max(floor((c.window_start - ts) / c.period + 0.5), 1) end
  local v = js_min(value + c.rate * k, c.capacity) - count
  local t = ts
  if k > 0 then t = c.window_start end
  local retry
  if v < 0 then
    local first_end = t + c.longest
    if t == c.window_start then first_end = c.window_end end
    retry = wait_until(now, first_end + (ceil(-v / c.rate) - 1) * c.longest)
  end
  return v, t, retry
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
  if c.window_start then return advance_calendar(c, value, ts, now, count) end
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

-- src/decision.rs honest_wait: lengthen wait until replaying the next call then is not short.
local function honest_wait(c, replay, now, wait)
  if c.window_start then return wait end -- a calendar wait is counted in whole windows already
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
  if c.window_start then
    -- src/fixed_window.rs calendar_filled_at: n longest windows for a shortfall of n windows.
    if value >= c.capacity then return ts end
    local n = ceil((c.capacity - value) / c.rate)
    local at = ts + n * c.longest
    if finite(at) and value + c.rate * n >= c.capacity then return at end
    at = ts + (n + 1) * c.longest
    if finite(at) and value + c.rate * (n + 1) >= c.capacity then return at end
    return huge
  end
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

`;
