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
import { ARITHMETIC } from "./redis-script-arithmetic.js";
import { BATCHES } from "./redis-script-batch.js";
import { FAST_PATH } from "./redis-script-fast.js";
import { LIMITS_CHECK } from "./redis-script-limits.js";

/**
 * The decision script.
 *
 * - `KEYS[r]`: the Redis key of ref `r` (`batch.refs[r - 1]`), each read once.
 * - `ARGV[1]`: `1` all or nothing (`limitAll`), `0` each item its own call.
 * - `ARGV[2]`: the number of items `n`; then 20 arguments per item, in order:
 *   kind (0 token bucket, 1 fixed window), rate, period, capacity,
 *   maxReserved (`""`: unlimited), shards, start (`""`: none), count,
 *   reserve (0/1), write (0/1), now, the first read (a 1-based index into
 *   KEYS), the second read (0: none), and the fresh value and ts of each read
 *   (what it starts from when it has no state), and for a calendar period
 *   (`""` otherwise) the start and end of the window that holds now and the
 *   unit's longest window, as the core computed them (the script does no
 *   calendar arithmetic). Rate, capacity and maxReserved are the shard's;
 *   shards is the limit's shard count; a calendar period's period is its
 *   unit's mean length.
 * - Or, for one item on one key (a `limit` or `check` of a limit with one
 *   shard and a period in ms, the common call), 13 arguments: the item's
 *   fields from kind to now, then the fresh value and ts. (A batch of one
 *   decides the same all or nothing as not; the general layout has 22 or more.)
 * - Or many calls (a group commit): `ARGV[1]` is `m`, `ARGV[2]` the number of
 *   calls, then per call either `c`, the 1-based index of its key and the 13
 *   compact arguments, or `g`, all (0/1), its item count n, its key count k,
 *   the k indexes of its keys, and its n items of 20 arguments (their reads
 *   index its own keys, 1-based). Every key is read once; the calls are
 *   decided in order, each on what the earlier ones left, each as it would be
 *   alone (a corrupt state halts only the calls that read it; an error only
 *   its call, or its whole all-or-nothing call); each key is written once, by
 *   its last writer, with that writer's TTL.
 *
 * A batch on stored limits (`RemoteBatch.limits`) comes first with the
 * records it was planned on, checked before anything is decided
 * (`./redis-script-limits.ts`); it goes alone, never in a group commit.
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
export const DECIDE_SCRIPT = LIMITS_CHECK + FAST_PATH + ARITHMETIC + BATCHES;
