/**
 * A concurrency limit's take, release or extend inside Redis, in one EVALSHA: the port of
 * `src/concurrency.rs` (`take_slots`, `release_slots`, `extend_slots`), next to the data. The
 * package checks the call with the core before sending it, replays the core on what the script
 * answers it read, and fails closed (`STORE_MISMATCH`) when the script wrote other slots than the
 * core decides; `tests/redis/concurrency-differential.test.mjs` compares both on random traffic.
 *
 * KEYS: the slots read, in slot order (a take: every slot of the key; a release or an extend: the
 * lease's slots).
 * ARGV[1]: the operation, `take`, `release` or `extend`; ARGV[2]: now (ms); ARGV[3]: the lease id;
 * ARGV[4]: a take's count, an extend's ms; ARGV[5]: a take's lease (ms).
 * Answers one entry per key, its raw text (`"=text"` as a JSON string literal, false: absent),
 * then `"=i,j,…"`: the indexes (from 0) of the keys it wrote.
 * @module
 */
import { FAST_PATH } from "./redis-script-fast.js";
import { ARITHMETIC } from "./redis-script-arithmetic.js";
import { DECODE_STATE } from "./redis-script-batch.js";

const BODY = `
-- src/concurrency.rs, next to the data.
${DECODE_STATE}
local op, now, id = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local answer, current, any_bad = {}, {}, false
for r = 1, #KEYS do
  local raw = redis.call('GET', KEYS[r])
  if raw then
    current[r] = decode(raw)
    if not current[r] then any_bad = true end
    answer[r] = cjson.encode('=' .. raw)
  else
    answer[r] = false
  end
end

-- A slot is held while it has a state whose value is not 0 and whose expiry is after now.
local function held(r)
  local state = current[r]
  return state ~= nil and state[1] ~= 0 and state[2] > now
end

local written = {}
local function write(expiry)
  for _, r in ipairs(written) do
    redis.call('SET', KEYS[r], state_text(id, expiry), 'PX', string.format('%d', ceil(expiry - now)))
  end
end

if not any_bad then
  if op == 'take' then
    local count, lease = tonumber(ARGV[4]), tonumber(ARGV[5])
    local free = {}
    for r = 1, #KEYS do
      if not held(r) and #free < count then free[#free + 1] = r end
    end
    if #free == count then
      written = free
      write(now + lease)
    end
  else
    for r = 1, #KEYS do
      if held(r) and current[r][1] == id then written[#written + 1] = r end
    end
    if op == 'release' then
      for _, r in ipairs(written) do redis.call('DEL', KEYS[r]) end
    elseif #written > 0 then
      local expiry = now + tonumber(ARGV[4])
      local first = current[written[1]][2]
      if first > expiry then expiry = first end
      write(expiry)
    end
  end
end

local indexes = {}
for i, r in ipairs(written) do indexes[i] = tostring(r - 1) end
answer[#KEYS + 1] = '"=' .. table.concat(indexes, ',') .. '"'
return answer
`;

/** The script: the decision script's number helpers (`state_text`, `finite`, `ceil`), then the body above. */
export const CONCURRENCY_SCRIPT = FAST_PATH.slice(0, FAST_PATH.indexOf("-- The common decision")) + ARITHMETIC.slice(0, ARITHMETIC.indexOf("\n") + 1) + BODY;
