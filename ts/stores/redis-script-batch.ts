/**
 * The decision script's batches: an item's decision on the states read, every key read once and
 * decoded, the calls of one EVALSHA (one call, or many of a group commit) decided in order, and
 * each key written once.
 * Part of `DECIDE_SCRIPT` (`ts/stores/redis-script.ts`, which documents the script): its text is
 * the parts joined in order, byte for byte.
 * @module
 */

/** The script from `decide_item` to its end. */
/**
 * The Lua that reads a stored state back, for every script that reads states: `decode(raw)`
 * answers a `VALUE,TS` text's two numbers, or nil when it is not a state (it needs `finite`).
 */
export const DECODE_STATE = `local function is_number_text(text)
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
`;

export const BATCHES = `-- src/limiter.rs decide_planned: ok (nil: an error), and the writes { read, value, ts }.
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

${DECODE_STATE}
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

-- One call (a group of items, decided as the core's decide_batch): the items from args[at], 20
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
        window_start = optional(at + 17), window_end = optional(at + 18), longest = optional(at + 19),
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
    at = at + 20
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
          local args = { ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], '1', '0', ARGV[a + 11], ARGV[a + 12], '0', '0', '', '', '' }
          local wrote, answers = run_group(args, 1, false, 1, { r }, false)
          reply[#reply + 1] = '"=' .. wrote .. '"'
          reply[#reply + 1] = answers[1]
        end
      end
      at = at + 15
    else
      -- 'g': all (0/1), the item count n, the ref count k, k key indexes, then 20 arguments per item.
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
      at = at + 4 + refs_count + 20 * count
    end
  end
else
  -- One call: the general layout, or a compact call spelled out as a batch of one.
  local args = ARGV
  if compact then
    args = { '1', '1', ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], '1', '0', ARGV[12], ARGV[13], '0', '0', '', '', '' }
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
