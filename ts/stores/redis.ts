/**
 * ratebound over Redis (and Valkey, and the servers that speak its protocol).
 *
 * `limit`, `check` and `limitAll` cost ONE round trip: the store's
 * {@link RedisStore.decide} sends the core's plan to one Lua script
 * (`DECIDE_SCRIPT`, a port of the core's decision) that reads every state,
 * decides and writes atomically inside the server, so callers of a hot key
 * queue in Redis instead of racing. Grants and settles, `getValue` and
 * `reset` stay optimistic transactions: GET every key (the raw stored string
 * is the version), decide in the core, commit with one script that checks
 * every key read and writes all or nothing, retry a lost race after a
 * jittered backoff, and fail closed with `REDIS_CONFLICT` after a bound.
 *
 * Works with node-redis (`redis` v5/v6), ioredis (v5/v6), `@upstash/redis`,
 * and Redis Cluster through node-redis `createCluster` and ioredis `Cluster`.
 * @module
 */
import { RateboundTypeError, type RateLimitState, type RemoteAnswer, type RemoteBatch, type StateRef } from "ratebound";
import { OptimisticStore, type OptimisticHost, type OptimisticOptions, type OptimisticTransaction } from "./shared/optimistic.js";
import { OPTIMISTIC_OPTIONS, ownCopy } from "./shared/options.js";
import { DECIDE_SCRIPT } from "./redis-script.js";
import { GroupCommit } from "./shared/group-commit.js";

export { DECIDE_SCRIPT };

/** What ratebound uses of a node-redis client (v5/v6, single node or cluster). */
export interface NodeRedisLike {
  /** GET. */
  get(key: string): Promise<unknown>;
  /** EVALSHA with `{ keys, arguments }`. */
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** EVAL with `{ keys, arguments }`. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** What ratebound uses of an ioredis client (`Redis` or `Cluster`, v5/v6). */
export interface IoRedisLike {
  /** GET. */
  get(key: string): Promise<unknown>;
  /** EVALSHA sha numkeys ...keys ...args. */
  evalsha(sha1: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** EVAL script numkeys ...keys ...args. */
  eval(script: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** ioredis's own method: tells it apart from `@upstash/redis`. */
  defineCommand(...args: never[]): unknown;
}

/** What ratebound uses of an `@upstash/redis` client (every read goes through a script, so its JSON decoding never sees a stored value). */
export interface UpstashRedisLike {
  /** GET (unused: the client would decode stored values as JSON). */
  get(key: string): Promise<unknown>;
  /** EVALSHA with keys and args as arrays. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVAL with keys and args as arrays. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

/** A client {@link redisStore} accepts. */
export type RedisClientLike = NodeRedisLike | IoRedisLike | UpstashRedisLike;

/** Options of {@link redisStore}. */
export interface RedisStoreOptions extends OptimisticOptions {
  /**
   * Prepended to every key; default `"ratebound:"`. On a Redis Cluster a hash
   * tag here (`"{rl}:"`) puts every state in one slot, which `limitAll` over
   * several limits or keys needs; without one, each name and key has a slot of its own.
   */
  prefix?: string;
  /** How long one command may take before the call fails closed with `REDIS_TIMEOUT`, in milliseconds; default 5000. */
  timeoutMs?: number;
}

/**
 * Why a call failed: `REDIS_CONFLICT` (every commit of a grant, settle,
 * getValue or reset lost the race), `REDIS_TIMEOUT`, `REDIS_CROSSSLOT` (a
 * Cluster call over keys in several slots: use a hash-tagged prefix), or
 * `REDIS_ERROR` (the client or server failed).
 */
export type RedisErrorCode = "REDIS_CONFLICT" | "REDIS_TIMEOUT" | "REDIS_CROSSSLOT" | "REDIS_ERROR";

/**
 * A Redis call that failed closed: nothing was written by it (for
 * `REDIS_TIMEOUT`, the server may still run the command it never answered:
 * the call rejects all the same, spending at most what it would have).
 *
 * @example
 * try { await limiter.limit("post", { key: userId }); }
 * catch (error) { if (error instanceof RedisStoreError) return new Response("Busy, retry", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#redis-redisstoreerror | docs/errors.md}: every code, what it means, what to do.
 */
export class RedisStoreError extends Error {
  /** What failed. */
  readonly code: RedisErrorCode;
  /** For `REDIS_CONFLICT`: how many commits were tried. */
  readonly attempts: number | undefined;

  /**
   * @param code What failed.
   * @param message What happened.
   * @param options `cause`: the client's error; `attempts` for a conflict.
   */
  constructor(code: RedisErrorCode, message: string, options: { cause?: unknown; attempts?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RedisStoreError";
    this.code = code;
    this.attempts = options.attempts;
  }
}

/** What the decision script answers for a {@link RemoteBatch}: the store's answer, and each item's own decision. */
export interface RedisAnswer extends RemoteAnswer {
  /**
   * Per item, the script's own decision (`null`: an error, or not decided):
   * for diagnostics and the differential test; the limiter answers from the core's replay.
   */
  decided: ({ ok: boolean; retryAfter?: number } | null)[];
}

/**
 * The commit of an optimistic transaction: KEYS[1..n] are the keys read,
 * ARGV[1] is n, ARGV[1 + i] what key i held ("" absent, "=" .. value
 * present). Any difference: return 0, nothing written. Then every later key
 * is written: ARGV pairs of ("" delete, or "=" .. value) and a TTL in ms
 * ("0": none). Only GET can fail (a key of another type), and only before
 * the first write: all or nothing.
 *
 * @example
 * await client.scriptLoad(COMMIT_SCRIPT); // optional: the first commit loads it anyway
 */
export const COMMIT_SCRIPT = `local reads = tonumber(ARGV[1])
for i = 1, reads do
  local current = redis.call('GET', KEYS[i])
  local expected = ARGV[i + 1]
  if expected == '' then
    if current then return 0 end
  elseif current ~= string.sub(expected, 2) then
    return 0
  end
end
local arg = reads + 2
for i = reads + 1, #KEYS do
  local value, ttl = ARGV[arg], ARGV[arg + 1]
  arg = arg + 2
  if value == '' then
    redis.call('DEL', KEYS[i])
  elseif ttl == '0' then
    redis.call('SET', KEYS[i], string.sub(value, 2))
  else
    redis.call('SET', KEYS[i], string.sub(value, 2), 'PX', ttl)
  end
end
return 1
`;

/**
 * A raw read of every key: per key, its string as `=` .. value, or `false`
 * when absent. One round trip for a transaction's reads; and the `=` keeps
 * clients that decode replies as JSON (`@upstash/redis`) from turning a
 * stored `null` or `"1,2"` into something that looks like a state.
 */
export const READ_SCRIPT = `local values = {}
for i = 1, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if value then values[i] = '=' .. value else values[i] = false end
end
return values
`;

/** A script's SHA-1, as EVALSHA names it (Web Crypto: every runtime has it). */
async function shaOf(script: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(script));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Escapes what the key layout uses as syntax, so that any name and key map to distinct keys. */
const escapePart = (text: string): string =>
  SYNTAX.test(text) ? text.replace(/[%:{}]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`) : text;
const SYNTAX = /[%:{}]/;

/**
 * The Redis key of a ref's state: `PREFIX{NAME}:SHARD` without a key,
 * `PREFIX{NAME:KEY}:SHARD` with one, where NAME and KEY have `%`, `:`, `{`
 * and `}` percent-escaped. The braces are a Cluster hash tag: every shard of
 * one name and key is in the same slot (unless the prefix has a tag of its
 * own, which then holds every key).
 *
 * @param ref A limit's name, key and shard.
 * @param prefix Prepended as it is; default `"ratebound:"`.
 * @returns The key.
 * @example
 * redisKey({ name: "post", key: "ada", shard: 0 }); // "ratebound:{post:ada}:0"
 * redisKey({ name: "a:b", shard: 2 }, "app:"); // "app:{a%3Ab}:2"
 */
export function redisKey(ref: StateRef, prefix = "ratebound:"): string {
  const tag = ref.key === undefined ? escapePart(ref.name) : `${escapePart(ref.name)}:${escapePart(ref.key)}`;
  return `${prefix}{${tag}}:${ref.shard}`;
}

/** A number as JavaScript prints it or as Lua's `%.17g` does: what states are stored with. */
const NUMBER = /^-?\d+(?:\.\d+)?(?:e[+-]\d+)?$/;

/** A state as stored: `VALUE,TS`, each as JavaScript prints the number (which reads back exactly). */
function encodeState(state: RateLimitState): string {
  return `${numberText(state.value)},${numberText(state.ts)}`;
}

/**
 * The state in a stored string (as this module or the decision script wrote
 * it); anything else is handed on as it is, for the core to reject naming the ref.
 */
function decodeState(stored: unknown): RateLimitState | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored !== "string") return JSON.stringify(stored) as unknown as RateLimitState;
  const parts = STATE.exec(stored);
  if (parts === null) return stored as unknown as RateLimitState;
  return { value: Number(parts[1]), ts: Number(parts[2]) };
}

/** `VALUE,TS`, each a {@link NUMBER}. */
const STATE = /^(-?\d+(?:\.\d+)?(?:e[+-]\d+)?),(-?\d+(?:\.\d+)?(?:e[+-]\d+)?)$/;

/** A number as the scripts read it back exactly: JavaScript's shortest form, `-0` kept. */
function numberText(number: number): string {
  return Object.is(number, -0) ? "-0" : String(number);
}

/** An argument error: the core's `RateboundTypeError` (a `TypeError` with `code: "INVALID_ARGUMENT"`). */
function invalidArgument(field: string, message: string): RateboundTypeError {
  return new RateboundTypeError(`ratebound/redis: ${message}`, field);
}

type Commands = {
  /** The raw stored string, or `null`. */
  get(key: string): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** Whether the client is a Redis Cluster's (one script's keys must share a slot). */
  cluster: boolean;
};

/** What a value passed as the client is, for the error that says what to pass instead. */
function describe(client: unknown): string {
  if (client === null) return "null";
  if (typeof client !== "object" && typeof client !== "function") return typeof client;
  const any = client as Record<string, unknown>;
  if (typeof any.query === "function" && (typeof any.connect === "function" || "totalCount" in any)) {
    return "a PostgreSQL client or pool: use postgresStore(db) from ratebound/postgres";
  }
  if (typeof any.read === "function" && typeof any.write === "function") return "a rate limit store already: pass it to new RateLimiter(store, limits) as it is";
  return "an object without get, evalsha and eval";
}

/** The three commands ratebound sends, in the dialect of the client given. */
function commandsOf(client: RedisClientLike): Commands {
  const any = client as unknown as Record<string, unknown>;
  const needs = "redisStore(client) takes a connected node-redis (createClient, createCluster), ioredis (new Redis, new Cluster) or @upstash/redis (Redis.fromEnv) client";
  if (typeof any !== "object" || any === null || typeof any.get !== "function") throw invalidArgument("client", `${needs}; got ${describe(client)}`);
  if (typeof any.evalSha === "function" && typeof any.eval === "function") {
    const redis = client as NodeRedisLike;
    return {
      get: (key) => redis.get(key),
      evalsha: (sha, keys, args) => redis.evalSha(sha, { keys, arguments: args }),
      eval: (script, keys, args) => redis.eval(script, { keys, arguments: args }),
      cluster: typeof any.getSlotMaster === "function",
    };
  }
  if (typeof any.evalsha === "function" && typeof any.eval === "function" && typeof any.defineCommand === "function") {
    const redis = client as IoRedisLike;
    return {
      get: (key) => redis.get(key),
      evalsha: (sha, keys, args) => redis.evalsha(sha, keys.length, ...keys, ...args),
      eval: (script, keys, args) => redis.eval(script, keys.length, ...keys, ...args),
      cluster: any.isCluster === true,
    };
  }
  if (typeof any.evalsha === "function" && typeof any.eval === "function") {
    const redis = client as UpstashRedisLike;
    const evalsha = (sha: string, keys: string[], args: string[]) => redis.evalsha(sha, keys, args);
    const evalScript = (script: string, keys: string[], args: string[]) => redis.eval(script, keys, args);
    // GET would hand a stored value to the client's JSON decoding: read through the script instead.
    return { get: async (key) => (await readRaw({ evalsha, eval: evalScript }, [key]))[0], evalsha, eval: evalScript, cluster: false };
  }
  throw invalidArgument("client", `${needs}; this one has no EVALSHA and EVAL (ratebound decides inside Redis with a Lua script)`);
}

/** A client's reply as text: node-redis and ioredis may answer with bytes when so configured. */
function text(reply: unknown): unknown {
  return reply instanceof Uint8Array ? new TextDecoder().decode(reply) : reply;
}

/** A script's `=`-marked string reply: the text after the `=`, or `null` for nil. */
function rawText(reply: unknown, what: string): string | null {
  const value = text(reply);
  if (value === null || value === undefined) return null;
  if (typeof value !== "string" || !value.startsWith("=")) {
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: ${what} answered ${JSON.stringify(value)}, not a marked string; the call failed closed`);
  }
  return value.slice(1);
}

/** The raw strings at `keys` (`null`: absent), through {@link READ_SCRIPT}: one round trip. */
async function readRaw(commands: Pick<Commands, "evalsha" | "eval">, keys: string[]): Promise<(string | null)[]> {
  const reply = await run(commands, READ_SCRIPT, keys, []);
  if (!Array.isArray(reply) || reply.length !== keys.length) {
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: the read script answered ${JSON.stringify(reply)} for ${keys.length} keys; the call failed closed`);
  }
  return reply.map((entry) => rawText(entry, "the read script"));
}

const isNoScript = (error: unknown): boolean => error instanceof Error && /NOSCRIPT/.test(error.message);

/** Each script's SHA-1 once known (computed by the first calls), so that a call does not wait a turn for it. */
const knownShas = new Map<string, string>();

/** EVALSHA, falling back to EVAL (which loads the script) when the server does not know it. */
function run(commands: Pick<Commands, "evalsha" | "eval">, script: string, keys: string[], args: string[]): Promise<unknown> {
  const retry = (error: unknown) => {
    if (!isNoScript(error)) throw error;
    return commands.eval(script, keys, args);
  };
  const sha = knownShas.get(script);
  if (sha !== undefined) return commands.evalsha(sha, keys, args).then(undefined, retry);
  return shaOf(script).then((digest) => {
    knownShas.set(script, digest);
    return commands.evalsha(digest, keys, args).then(undefined, retry);
  });
}

/**
 * Runs one command within `timeoutMs`: its failure or its silence becomes a
 * {@link RedisStoreError}, so the call fails closed.
 */
function bounded<T>(what: string, timeoutMs: number, command: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new RedisStoreError("REDIS_TIMEOUT", `ratebound/redis: ${what} got no answer within ${timeoutMs} ms; the call failed closed`)),
      timeoutMs,
    );
    let pending: Promise<T>;
    try {
      pending = command();
    } catch (error) {
      pending = Promise.reject(error);
    }
    // A late answer or failure after the timeout changes nothing (and is not unhandled).
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(storeError(what, error));
      },
    );
  });
}

/** The {@link RedisStoreError} of a command's failure. */
function storeError(what: string, error: unknown): RedisStoreError {
  if (error instanceof RedisStoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/CROSSSLOT/.test(message)) {
    return new RedisStoreError(
      "REDIS_CROSSSLOT",
      `ratebound/redis: ${what} spans several Redis Cluster slots (${message}); nothing was written. ` +
        'A call over several limits or keys needs them in one slot: give the store a hash-tagged prefix, e.g. redisStore(cluster, { prefix: "{rl}:" }).',
      { cause: error },
    );
  }
  return new RedisStoreError("REDIS_ERROR", `ratebound/redis: ${what} failed: ${message}`, { cause: error });
}

/** How Redis reads, stores and commits, for the optimistic driver. */
function redisHost(commands: Commands, prefix: string, timeoutMs: number): OptimisticHost<string, string | null> {
  return {
    keyId: (key) => key,
    stateKey: (ref) => redisKey(ref, prefix),
    read: async (key) => {
      const value = text(await bounded(`GET ${JSON.stringify(key)}`, timeoutMs, () => commands.get(key)));
      const version = value === null || value === undefined ? null : typeof value === "string" ? value : JSON.stringify(value);
      return { value: value ?? null, version };
    },
    readMany: async (keys) => {
      const values = await bounded(`the read script over ${keys.length} keys`, timeoutMs, () => readRaw(commands, keys));
      return values.map((value) => ({ value, version: value }));
    },
    encodeState,
    decodeState,
    commit: async (tx: OptimisticTransaction<string, string | null>) => {
      const { reads, writes } = tx.changes();
      const keys = [...reads.map((read) => read.key), ...writes.map((write) => write.key)];
      const args = [String(reads.length), ...reads.map((read) => (read.version === null ? "" : `=${read.version}`))];
      for (const write of writes) args.push(write.deleted ? "" : `=${String(write.value)}`, String(write.expireInMs ?? 0));
      const answer = await bounded("the commit script", timeoutMs, () => run(commands, COMMIT_SCRIPT, keys, args));
      if (answer === 1 || answer === 0) return answer === 1;
      throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: the commit script answered ${JSON.stringify(answer)}, not 0 or 1`);
    },
  };
}

/** The decision script's arguments for `batch` (see `DECIDE_SCRIPT`). */
function decideArguments(batch: RemoteBatch): string[] {
  const { items } = batch;
  const refCount = batch.refs.length;
  // One item on one ref (a call on a limit with one shard): the compact layout, 13 arguments.
  const compact = items.length === 1 && refCount === 1 && items[0]!.reads?.length === 1;
  const args: string[] = new Array(compact ? 13 : 2 + items.length * 17);
  if (!compact) {
    args[0] = batch.all ? "1" : "0";
    args[1] = String(items.length);
  }
  for (let index = 0, at = compact ? 0 : 2; index < items.length; index++, at += 17) {
    const item = items[index]!;
    const { reads, fresh } = item;
    if (!Array.isArray(reads) || !(reads.length === 1 || reads.length === 2) || !inRange(reads[0], refCount) || (reads.length === 2 && !inRange(reads[1], refCount)) || !Array.isArray(fresh) || fresh.length !== reads.length) {
      throw invalidArgument("batch", `decide: item ${index} must read one or two of the batch's ${refCount} refs, with a fresh state for each`);
    }
    const second = reads.length === 2;
    args[at] = String(item.kind);
    args[at + 1] = numberText(item.rate);
    args[at + 2] = numberText(item.period);
    args[at + 3] = numberText(item.capacity);
    args[at + 4] = item.maxReserved === null ? "" : numberText(item.maxReserved);
    args[at + 5] = String(item.shards);
    args[at + 6] = item.start === null ? "" : numberText(item.start);
    args[at + 7] = numberText(item.count);
    args[at + 8] = item.reserve ? "1" : "0";
    args[at + 9] = item.write ? "1" : "0";
    args[at + 10] = numberText(item.now);
    if (compact) {
      args[11] = numberText(fresh[0]!.value);
      args[12] = numberText(fresh[0]!.ts);
      break;
    }
    args[at + 11] = String(reads[0]! + 1);
    args[at + 12] = second ? String(reads[1]! + 1) : "0";
    args[at + 13] = numberText(fresh[0]!.value);
    args[at + 14] = numberText(fresh[0]!.ts);
    args[at + 15] = second ? numberText(fresh[1]!.value) : "0";
    args[at + 16] = second ? numberText(fresh[1]!.ts) : "0";
  }
  return args;
}

/** Whether `read` indexes one of `refCount` refs. */
const inRange = (read: unknown, refCount: number): boolean => Number.isInteger(read) && (read as number) >= 0 && (read as number) < refCount;

/** The decision script's reply: what each key held, and which items wrote. */
function decideAnswer(reply: unknown, batch: RemoteBatch): RedisAnswer {
  const refCount = batch.refs.length;
  const itemCount = batch.items.length;
  const bad = (what: unknown) =>
    new RedisStoreError("REDIS_ERROR", `ratebound/redis: the decision script answered ${JSON.stringify(what)}, not what it was asked; the call failed closed`);
  if (!Array.isArray(reply) || reply.length !== refCount + 1 + itemCount) throw bad(reply);
  const stored: unknown[] = new Array(refCount);
  for (let ref = 0; ref < refCount; ref++) stored[ref] = decodeState(rawText(reply[ref], "the decision script"));
  const flags = rawText(reply[refCount], "the decision script");
  if (flags === null || flags.length !== itemCount) throw bad(flags);
  const wrote: boolean[] = new Array(itemCount);
  for (let item = 0; item < itemCount; item++) {
    const flag = flags.charCodeAt(item);
    if (flag !== 48 && flag !== 49) throw bad(flags); // "0" or "1"
    wrote[item] = flag === 49;
  }
  const decided: RedisAnswer["decided"] = new Array(itemCount);
  for (let item = 0; item < itemCount; item++) {
    const answer = rawText(reply[refCount + 1 + item], "the decision script");
    if (answer === "1,") {
      decided[item] = { ok: true }; // the common answer: granted, no wait
      continue;
    }
    const [status, wait] = answer === null ? [] : answer.split(",");
    if ((status !== "1" && status !== "0") || wait === undefined) {
      if (status === "e" || status === "-") {
        decided[item] = null;
        continue;
      }
      throw bad(answer);
    }
    if (wait !== "" && !NUMBER.test(wait)) throw bad(answer);
    decided[item] = wait === "" ? { ok: status === "1" } : { ok: status === "1", retryAfter: Number(wait) };
  }
  return { stored, wrote, decided };
}

/**
 * One call's share of a group commit: its batch, its keys, and its arguments in the one-call
 * layout of `DECIDE_SCRIPT` (sent as they are when the call goes alone).
 */
interface Group {
  readonly batch: RemoteBatch;
  readonly keys: string[];
  readonly args: string[];
}

/**
 * The most items one EVALSHA decides: calls that arrive while a round trip is in flight go
 * together in the next, up to this many items (a `limitAll` larger than this goes alone). With
 * at most 23 arguments and two keys per item, an EVALSHA carries at most about 3,000 arguments.
 */
const GROUP_MAX_ITEMS = 128;

/** Whether a group is one item on one key of a limit with one shard (the compact layout). */
const isCompact = (group: Group): boolean => group.keys.length === 1 && group.args.length === 13;

/**
 * The arguments of one EVALSHA deciding `groups` in order (`DECIDE_SCRIPT`'s "many calls"
 * layout): every key once, and per group `c` and its key's index before a compact call's 13
 * arguments, or `g`, all, the item count, the key count and each key's index before its items.
 */
function manyArguments(groups: readonly Group[]): { keys: string[]; args: string[] } {
  const indexes = new Map<string, string>();
  const keys: string[] = [];
  const indexOf = (key: string): string => {
    let index = indexes.get(key);
    if (index === undefined) {
      keys.push(key);
      indexes.set(key, (index = String(keys.length)));
    }
    return index;
  };
  const args = ["m", String(groups.length)];
  for (const group of groups) {
    const own = group.args;
    if (isCompact(group)) {
      args.push("c", indexOf(group.keys[0]!));
      for (let at = 0; at < own.length; at++) args.push(own[at]!);
      continue;
    }
    args.push("g", own[0]!, own[1]!, String(group.keys.length));
    for (const key of group.keys) args.push(indexOf(key));
    for (let at = 2; at < own.length; at++) args.push(own[at]!);
  }
  return { keys, args };
}

/**
 * Each group's answer in the reply of a "many calls" EVALSHA: per group, what each of its keys
 * held when it ran, its wrote digits and its answers. A group whose part is malformed fails alone.
 */
function manyAnswers(reply: unknown, groups: readonly Group[]): (RedisAnswer | Error)[] {
  let total = 0;
  for (const group of groups) total += group.keys.length + 1 + group.batch.items.length;
  if (!Array.isArray(reply) || reply.length !== total) {
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: the decision script answered ${JSON.stringify(reply)} for ${groups.length} calls; the calls failed closed`);
  }
  let at = 0;
  return groups.map((group) => {
    const size = group.keys.length + 1 + group.batch.items.length;
    const part = reply.slice(at, (at += size));
    try {
      return decideAnswer(part, group.batch);
    } catch (error) {
      return error as Error;
    }
  });
}

/** A Redis Cluster key's hash slot: CRC16 (XMODEM) of its hash tag, or of the key, mod 16384. */
function keySlot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of new TextEncoder().encode(key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Lanes of calls over keys in several slots: each goes alone (and fails with `REDIS_CROSSSLOT`). */
let crossSlotCalls = 0;

/** A Cluster call's lane: the slot of its keys, or a lane of its own when they span slots. */
function slotLane(group: Group): string | number {
  const slot = keySlot(group.keys[0]!);
  for (let index = 1; index < group.keys.length; index++) if (keySlot(group.keys[index]!) !== slot) return `cross ${++crossSlotCalls}`;
  return slot;
}

/**
 * A store over Redis (see {@link redisStore}): one EVALSHA per decision
 * through {@link RedisStore.decide}, and optimistic transactions for the rest.
 */
export class RedisStore extends OptimisticStore<string, string | null> {
  readonly #commands: Commands;
  readonly #prefix: string;
  /** Calls that arrive while a decision is in flight go together in the next EVALSHA. */
  readonly #batcher: GroupCommit<Group, RedisAnswer>;

  /**
   * @param commands The client's commands.
   * @param prefix Prepended to every key.
   * @param timeoutMs The bound on each command.
   * @param retry The optimistic transactions' retry bound and backoff.
   */
  constructor(commands: Commands, prefix: string, timeoutMs: number, retry: OptimisticOptions) {
    super(redisHost(commands, prefix, timeoutMs), retry, {
      label: "ratebound/redis",
      giveUp: (attempts) =>
        new RedisStoreError(
          "REDIS_CONFLICT",
          `ratebound/redis: the call's commit lost the race to other writers ${attempts} times in a row; nothing was written. ` +
            "Retry later, or shard the limit (shards spread writers over several keys).",
          { attempts },
        ),
    });
    this.#commands = commands;
    this.#prefix = prefix;
    this.#batcher = new GroupCommit<Group, RedisAnswer>({
      maxSize: GROUP_MAX_ITEMS,
      size: (group) => group.batch.items.length,
      lane: commands.cluster ? slotLane : undefined,
      timeoutMs,
      timeoutError: () => new RedisStoreError("REDIS_TIMEOUT", `ratebound/redis: the decision script got no answer within ${timeoutMs} ms; the call failed closed`),
      send: (groups) => this.#send(groups),
    });
  }

  /**
   * Decides a batch inside Redis, in one EVALSHA: reads every ref, decides
   * the items exactly as the core's `decide_batch`, writes what they grant
   * (each state with a TTL from when it is full again), and answers what each
   * ref held and which items wrote. A stored value that is not a state is
   * returned as it is, and then nothing is written.
   *
   * @param batch The core's plan of the call (docs/internals.md).
   * @returns What each ref held, and per item whether its grant was written.
   * @example
   * const answer = await store.decide({ refs: [{ name: "post", key: "ada", shard: 0 }], all: false, items: [{
   *   reads: [0], kind: 0, rate: 10, period: 60_000, capacity: 10, maxReserved: null, shards: 1, start: null,
   *   count: 1, reserve: false, write: true, now: Date.now(), fresh: [{ value: 10, ts: Date.now() }] }] });
   * // { stored: [null], wrote: [true] }
   */
  async decide(batch: RemoteBatch): Promise<RedisAnswer> {
    const keys = batch.refs.map((ref) => redisKey(ref, this.#prefix));
    // Checked and laid out now: a bad batch fails alone, before it joins a round trip.
    const args = decideArguments(batch);
    return this.#batcher.enqueue({ batch, keys, args });
  }

  /** One EVALSHA for the calls of a group commit: alone in the one-call layout, else all in order. */
  #send(groups: Group[]): Promise<(RedisAnswer | Error)[]> {
    const alone = groups.length === 1 ? groups[0]! : undefined;
    const { keys, args } = alone ?? manyArguments(groups);
    let reply: Promise<unknown>;
    try {
      reply = run(this.#commands, DECIDE_SCRIPT, keys, args);
    } catch (error) {
      reply = Promise.reject(error);
    }
    return reply.then(
      (answer) => {
        if (alone === undefined) return manyAnswers(answer, groups);
        try {
          return [decideAnswer(answer, alone.batch)];
        } catch (error) {
          return [error as Error];
        }
      },
      (error: unknown) => {
        throw storeError("the decision script", error);
      },
    );
  }
}

/** Where the key layout's hash tag would break: a prefix whose first `{` closes at once hashes whole keys, splitting one limit's shards over slots. */
function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== "string") throw invalidArgument("prefix", `prefix must be a string, such as "ratebound:" or "{rl}:" (got ${prefix === null ? "null" : typeof prefix})`);
  const open = prefix.indexOf("{");
  if (open !== -1 && prefix[open + 1] === "}") {
    throw invalidArgument("prefix", `prefix ${JSON.stringify(prefix)} has an empty hash tag "{}", which makes Redis Cluster hash each whole key: put a name inside it ("{rl}:") or drop the braces`);
  }
  return prefix;
}

/**
 * A store over Redis: `new RateLimiter(redisStore(client), LIMITS)`.
 *
 * `limit`, `check` and `limitAll` run as ONE EVALSHA each: the script reads
 * the states, decides exactly as the core and writes, atomically, so a hot
 * key never races (no retries, no `REDIS_CONFLICT`). Grants and settles,
 * `getValue` and `reset` are optimistic transactions (GET, decide, one
 * commit script that checks every key read), retried after a lost race at
 * most `maxAttempts` times, then `REDIS_CONFLICT`. A refusal or a check
 * writes nothing. Each written state expires (PX, rounded up) no earlier than
 * it is full again, never when it is never full again. Keys: see {@link redisKey}.
 *
 * Every failure rejects the call with a {@link RedisStoreError} and writes
 * nothing: an unreachable server or a command slower than `timeoutMs`, a
 * script error, keys in several Cluster slots (`REDIS_CROSSSLOT`). A stored
 * value that is not a state rejects with the core's CORRUPT_STATE error
 * naming the ref, and is left as it was.
 *
 * @param client A connected node-redis (`createClient()`, `createCluster()`), ioredis (`new Redis()`, `new Cluster()`) or `@upstash/redis` (`Redis.fromEnv()`) client.
 * @param options `prefix`, `timeoutMs`, and the transactions' retry bound and backoff.
 * @returns A store for `new RateLimiter(store, limits)`.
 * @throws RateboundTypeError (a `TypeError`, `code: "INVALID_ARGUMENT"`) for anything but such a client, or a bad option.
 * @example
 * import { createClient } from "redis";
 * const client = createClient({ url: process.env.REDIS_URL });
 * client.on("error", (error) => console.error("redis", error)); // without it, an outage kills the process
 * await client.connect();
 * const limiter = new RateLimiter(redisStore(client), { post: { kind: "token bucket", rate: 10, period: MINUTE } });
 * const { ok, retryAfter } = await limiter.limit("post", { key: userId });
 */
export function redisStore(client: RedisClientLike, given: RedisStoreOptions = {}): RedisStore {
  const options = ownCopy("redisStore", given, ["prefix", "timeoutMs", ...OPTIMISTIC_OPTIONS]);
  const { prefix = "ratebound:", timeoutMs = 5000, ...retry } = options;
  const commands = commandsOf(client);
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw invalidArgument("timeoutMs", `timeoutMs must be a positive finite number of milliseconds (got ${String(timeoutMs)})`);
  }
  return new RedisStore(commands, checkPrefix(prefix), timeoutMs, retry);
}
