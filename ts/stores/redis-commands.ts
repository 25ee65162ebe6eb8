/**
 * The commands ratebound/redis sends, in the dialect of each client it takes
 * (node-redis, ioredis, `@upstash/redis`; Bun's and valkey-glide's through
 * `redis-clients.ts`): GET, and the scripts by EVALSHA with EVAL when the
 * server does not know one yet, each bounded by a timeout, every failure a
 * {@link RedisStoreError}. What the store sends is `redis.ts`'s.
 * @module
 */
import { RedisStoreError, invalidArgument, rawText } from "./redis-codec.js";

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

/** A client `redisStore` accepts. */
export type RedisClientLike = NodeRedisLike | IoRedisLike | UpstashRedisLike;

/**
 * A raw read of every key: per key, its string as `=` .. value written as a
 * JSON string literal, or `false` when absent. One round trip for a
 * transaction's reads; the `=` keeps clients that decode replies as JSON
 * (`@upstash/redis`) from turning a stored `null` or `"1,2"` into something
 * that looks like a state, and the literal lets them decode it without an exception.
 */
export const READ_SCRIPT = `local values = {}
for i = 1, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if value then values[i] = cjson.encode('=' .. value) else values[i] = false end
end
return values
`;

/** A script's SHA-1, as EVALSHA names it (Web Crypto: every runtime has it). */
async function shaOf(script: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(script));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The commands the store sends, in the client's dialect. */
export type Commands = {
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
  if (typeof any.then === "function") return "a Promise (client.connect() returns one): await it, or connect first and pass the client itself";
  return "an object without get, evalsha and eval";
}

/** The three commands ratebound sends, in the dialect of the client given. */
export function commandsOf(client: RedisClientLike): Commands {
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

/** The raw strings at `keys` (`null`: absent), through {@link READ_SCRIPT}: one round trip. */
export async function readRaw(commands: Pick<Commands, "evalsha" | "eval">, keys: string[]): Promise<(string | null)[]> {
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
export function run(commands: Pick<Commands, "evalsha" | "eval">, script: string, keys: string[], args: string[]): Promise<unknown> {
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
export function bounded<T>(what: string, timeoutMs: number, command: () => Promise<T>): Promise<T> {
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
export function storeError(what: string, error: unknown): RedisStoreError {
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
  // node-redis does not connect by itself: a client never connected (or quit) says only this.
  const closed = message === "The client is closed" || (error instanceof Error && error.name === "ClientClosedError");
  const hint = closed ? "; connect the client first (await client.connect(), once, at startup) and keep an 'error' listener on it" : "";
  return new RedisStoreError("REDIS_ERROR", `ratebound/redis: ${what} failed: ${message}${hint}`, { cause: error });
}
