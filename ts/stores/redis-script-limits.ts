/**
 * The decision script's first lines: stored limits (`RemoteBatch.limits`,
 * ts/core/stored-limits.ts), checked in the same EVALSHA as the decision.
 *
 * - `ARGV[1]` `x`, `ARGV[2]` the number `j` of records, then the `j` texts
 *   the batch was planned on (`VALUE,TS` as `encodeState` writes it, `""`:
 *   none), for the last `j` keys (which no item reads); then the batch's own
 *   arguments, in the layout `DECIDE_SCRIPT` documents.
 * - When each of those keys holds its text, the check's arguments are taken
 *   off `ARGV` and the script decides as it would without them.
 * - Otherwise nothing is decided or written: it answers `=r`, then what each
 *   of those keys holds (a JSON string literal of `=` and its text; `false`:
 *   nothing), and the limiter plans the batch again on them.
 * @module
 */
export const LIMITS_CHECK = `-- ratebound: stored limits, checked before the decision (ts/stores/redis-script-limits.ts)
if ARGV[1] == 'x' then
  local checks = tonumber(ARGV[2])
  local first = #KEYS - checks
  local held, same = {}, true
  for i = 1, checks do
    held[i] = redis.call('GET', KEYS[first + i])
    if (held[i] or '') ~= ARGV[2 + i] then same = false end
  end
  if not same then
    local reply = { '"=r"' }
    for i = 1, checks do reply[i + 1] = held[i] and cjson.encode('=' .. held[i]) or false end
    return reply
  end
  for _ = 1, checks + 2 do table.remove(ARGV, 1) end
end
`;
