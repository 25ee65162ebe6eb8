/**
 * ratebound over Redis (and Valkey, and the servers that speak its protocol):
 * each limiter call is one optimistic transaction. It reads every state it
 * needs with GET (the raw stored string is the version), decides, and commits
 * with ONE Lua script that compares every key read with what was read and then
 * writes all or nothing, so `limitAll` over several limits is atomic. A commit
 * that lost the race reruns the call after a jittered backoff, up to a bound;
 * then the call fails closed with a {@link RedisStoreError} (`REDIS_CONFLICT`).
 *
 * Works with node-redis (`redis` v4/v5), ioredis, and `@upstash/redis`.
 * @module
 */
import type { RateLimitState, StateRef } from "ratebound";
import { OptimisticStore, type OptimisticHost, type OptimisticOptions, type OptimisticTransaction } from "./shared/optimistic.js";
import { OPTIMISTIC_OPTIONS, ownCopy } from "./shared/options.js";

/** What ratebound uses of a node-redis client (v4/v5, single node or cluster). */
export interface NodeRedisLike {
  /** GET. */
  get(key: string): Promise<unknown>;
  /** EVALSHA with `{ keys, arguments }`. */
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** EVAL with `{ keys, arguments }`. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** What ratebound uses of an ioredis client (`Redis` or `Cluster`). */
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

/** What ratebound uses of an `@upstash/redis` client. */
export interface UpstashRedisLike {
  /** GET (the client may deserialize JSON; ratebound's states never parse as JSON). */
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
  /** Prepended to every key; default `"ratebound:"`. A hash tag here (`"{rl}:"`) puts every state in one Cluster slot. */
  prefix?: string;
  /** How long one command may take before the call fails closed with `REDIS_TIMEOUT`, in milliseconds; default 5000. */
  timeoutMs?: number;
}

/** Why a call failed: `REDIS_CONFLICT` (every commit lost the race), `REDIS_TIMEOUT`, or `REDIS_ERROR` (the client or server failed). */
export type RedisErrorCode = "REDIS_CONFLICT" | "REDIS_TIMEOUT" | "REDIS_ERROR";

/**
 * A Redis call that failed closed: nothing was written by it (for
 * `REDIS_TIMEOUT` on the commit itself, the server may still have run it: the
 * call rejects all the same, spending at most what it would have).
 *
 * @example
 * try { await limiter.limit("post", { key: userId }); }
 * catch (error) { if (error instanceof RedisStoreError) return new Response("Busy, retry", { status: 503 }); }
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

/**
 * The commit: KEYS[1..n] are the keys read, ARGV[1] is n, ARGV[1 + i] what
 * key i held ("" absent, "=" .. value present). Any difference: return 0,
 * nothing written. Then every later key is written: ARGV pairs of ("" delete,
 * or "=" .. value) and a TTL in ms ("0": none). Only GET can fail (a key of
 * another type), and only before the first write: all or nothing.
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

let scriptSha: Promise<string> | undefined;
/** The script's SHA-1, as EVALSHA names it (Web Crypto: every runtime has it). */
function commitScriptSha(): Promise<string> {
  scriptSha ??= crypto.subtle.digest("SHA-1", new TextEncoder().encode(COMMIT_SCRIPT)).then((digest) =>
    Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join(""),
  );
  return scriptSha;
}

/** Escapes what the key layout uses as syntax, so that any name and key map to distinct keys. */
const escapePart = (text: string): string => text.replace(/[%:{}]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);

/**
 * The Redis key of a ref's state: `PREFIX{NAME}:SHARD` without a key,
 * `PREFIX{NAME:KEY}:SHARD` with one, where NAME and KEY have `%`, `:`, `{`
 * and `}` percent-escaped. The braces are a Cluster hash tag: every shard of
 * one name and key is in the same slot.
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

/** A number as JavaScript prints it: what {@link encodeState} writes. */
const NUMBER = /^-?\d+(?:\.\d+)?(?:e[+-]\d+)?$/;

/** A state as stored: `VALUE,TS`, each as JavaScript prints the number (which reads back exactly). */
function encodeState(state: RateLimitState): string {
  return `${state.value},${state.ts}`;
}

/** The state in a stored string; anything else is handed on as it is, for the core to reject naming the ref. */
function decodeState(stored: unknown): RateLimitState | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored !== "string") return JSON.stringify(stored) as unknown as RateLimitState;
  const parts = stored.split(",");
  if (parts.length !== 2 || !NUMBER.test(parts[0]!) || !NUMBER.test(parts[1]!)) return stored as unknown as RateLimitState;
  return { value: Number(parts[0]), ts: Number(parts[1]) };
}

type Commands = {
  get(key: string): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
};

/** The three commands ratebound sends, in the dialect of the client given. */
function commandsOf(client: RedisClientLike): Commands {
  const any = client as unknown as Record<string, unknown>;
  if (typeof any !== "object" || any === null || typeof any.get !== "function") {
    throw new TypeError(`ratebound/redis: redisStore(client) needs a node-redis, ioredis or @upstash/redis client (got ${client === null ? "null" : typeof client})`);
  }
  if (typeof any.evalSha === "function") {
    const redis = client as NodeRedisLike;
    return {
      get: (key) => redis.get(key),
      evalsha: (sha, keys, args) => redis.evalSha(sha, { keys, arguments: args }),
      eval: (script, keys, args) => redis.eval(script, { keys, arguments: args }),
    };
  }
  if (typeof any.evalsha === "function" && typeof any.defineCommand === "function") {
    const redis = client as IoRedisLike;
    return {
      get: (key) => redis.get(key),
      evalsha: (sha, keys, args) => redis.evalsha(sha, keys.length, ...keys, ...args),
      eval: (script, keys, args) => redis.eval(script, keys.length, ...keys, ...args),
    };
  }
  if (typeof any.evalsha === "function" && typeof any.eval === "function") {
    const redis = client as UpstashRedisLike;
    return {
      get: (key) => redis.get(key),
      evalsha: (sha, keys, args) => redis.evalsha(sha, keys, args),
      eval: (script, keys, args) => redis.eval(script, keys, args),
    };
  }
  throw new TypeError("ratebound/redis: redisStore(client) needs a node-redis, ioredis or @upstash/redis client (this one has no EVALSHA)");
}

/** A client's reply as text: node-redis and ioredis may answer with bytes when so configured. */
function text(reply: unknown): unknown {
  return reply instanceof Uint8Array ? new TextDecoder().decode(reply) : reply;
}

const isNoScript = (error: unknown): boolean => error instanceof Error && /NOSCRIPT/.test(error.message);

/**
 * Runs one command within `timeoutMs`: its failure or its silence becomes a
 * {@link RedisStoreError}, so the call fails closed.
 */
async function bounded<T>(what: string, timeoutMs: number, command: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = Promise.resolve().then(command);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisStoreError("REDIS_TIMEOUT", `ratebound/redis: ${what} got no answer within ${timeoutMs} ms; the call failed closed`)), timeoutMs);
  });
  pending.catch(() => {}); // a late failure after the timeout is not unhandled
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    if (error instanceof RedisStoreError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: ${what} failed: ${message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** How Redis reads, stores and commits, for the optimistic driver. */
function redisHost(client: RedisClientLike, prefix: string, timeoutMs: number): OptimisticHost<string, string | null> {
  const commands = commandsOf(client);
  return {
    keyId: (key) => key,
    stateKey: (ref) => redisKey(ref, prefix),
    read: async (key) => {
      const value = text(await bounded(`GET ${JSON.stringify(key)}`, timeoutMs, () => commands.get(key)));
      const version = value === null || value === undefined ? null : typeof value === "string" ? value : JSON.stringify(value);
      return { value: value ?? null, version };
    },
    encodeState,
    decodeState,
    commit: async (tx: OptimisticTransaction<string, string | null>) => {
      const { reads, writes } = tx.changes();
      const keys = [...reads.map((read) => read.key), ...writes.map((write) => write.key)];
      const args = [String(reads.length), ...reads.map((read) => (read.version === null ? "" : `=${read.version}`))];
      for (const write of writes) args.push(write.deleted ? "" : `=${String(write.value)}`, String(write.expireInMs ?? 0));
      const sha = await commitScriptSha();
      const answer = await bounded("the commit script", timeoutMs, async () => {
        try {
          return await commands.evalsha(sha, keys, args);
        } catch (error) {
          if (!isNoScript(error)) throw error;
          return await commands.eval(COMMIT_SCRIPT, keys, args); // loads it for the next EVALSHA
        }
      });
      if (answer === 1 || answer === 0) return answer === 1;
      throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: the commit script answered ${JSON.stringify(answer)}, not 0 or 1`);
    },
  };
}

/**
 * A store over Redis: `new RateLimiter(redisStore(client), LIMITS)` makes each
 * call (`limit`, `check`, `limitAll`, `checkAll`, `getValue`, `reset`) one
 * optimistic transaction. States are read with GET and committed by one Lua
 * script that checks every key read and writes all or nothing; a lost race
 * reruns the call after a jittered backoff, at most `maxAttempts` times, then
 * rejects with `REDIS_CONFLICT`. A refusal or a check writes nothing. Each
 * written state expires (PX, rounded up) no earlier than it is full again,
 * never when it is never full again. Keys: see {@link redisKey}.
 *
 * Every failure rejects the call with a {@link RedisStoreError} and writes
 * nothing: an unreachable server or a command slower than `timeoutMs`, a
 * script error. A stored value that is not a state rejects with the core's
 * CORRUPT_STATE error naming the ref, and is left as it was.
 *
 * @param client A connected node-redis (`createClient()`), ioredis (`new Redis()`) or `@upstash/redis` (`Redis.fromEnv()`) client.
 * @param options `prefix`, `timeoutMs`, and the retry bound and backoff.
 * @returns A store for `new RateLimiter(store, limits)`.
 * @example
 * import { createClient } from "redis";
 * const client = await createClient({ url: process.env.REDIS_URL }).connect();
 * const limiter = new RateLimiter(redisStore(client), { post: { kind: "token bucket", rate: 10, period: MINUTE } });
 * const { ok, retryAfter } = await limiter.limit("post", { key: userId });
 */
export function redisStore(client: RedisClientLike, given: RedisStoreOptions = {}): OptimisticStore<string, string | null> {
  const options = ownCopy("redisStore", given, ["prefix", "timeoutMs", ...OPTIMISTIC_OPTIONS]);
  const { prefix = "ratebound:", timeoutMs = 5000, ...retry } = options;
  if (typeof prefix !== "string") throw new TypeError(`ratebound/redis: prefix must be a string (got ${typeof prefix})`);
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw new RangeError(`ratebound/redis: timeoutMs must be a positive finite number (got ${String(timeoutMs)})`);
  }
  return new OptimisticStore(redisHost(client, prefix, timeoutMs), retry, {
    label: "ratebound/redis",
    giveUp: (attempts) =>
      new RedisStoreError(
        "REDIS_CONFLICT",
        `ratebound/redis: the call's commit lost the race to other writers ${attempts} times in a row; nothing was written. ` +
          "Retry later, or shard the limit (shards spread writers over several keys).",
        { attempts },
      ),
  });
}
