/**
 * A one-time warning when the Redis server may evict a limit's state: under
 * `maxmemory` with an `allkeys-*` policy, Redis deletes keys that have no TTL
 * too, and a limit whose state is gone starts full again, so its key admits
 * more than its bound. The store asks the server once, on its first command and
 * beside it (never awaited, so no decision waits for it), and emits one
 * warning per store when the policy is `allkeys-*`. Whatever goes wrong asking
 * (CONFIG disabled or renamed, as managed services do; a REST client; a
 * Cluster) is silence, never a failed call.
 * @module
 */

/** The warning's `code` (`process.on("warning", …)` sees it). */
export const EVICTION_WARNING_CODE = "RATEBOUND_REDIS_EVICTION";

/** The commands a store sends, in its client's dialect (see `redis.ts`). */
interface Commands {
  get(key: string): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

/** INFO memory from a script: where CONFIG is refused (it is never allowed in scripts), INFO still answers. */
const INFO_SCRIPT = "return redis.call('INFO', 'memory')";

/**
 * `commands`, which on the first command of any kind also asks the server's
 * `maxmemory-policy`, once, without waiting for the answer.
 *
 * @param client The client given to `redisStore`.
 * @param commands Its commands.
 * @returns The same commands.
 */
export function watchEviction<T extends Commands>(client: unknown, commands: T): T {
  let asked = false;
  const ask = (): void => {
    if (asked) return;
    asked = true;
    evictionPolicy(client, commands).then(warnIfEvicting, () => {});
  };
  return {
    ...commands,
    get: (key) => (ask(), commands.get(key)),
    evalsha: (sha, keys, args) => (ask(), commands.evalsha(sha, keys, args)),
    eval: (script, keys, args) => (ask(), commands.eval(script, keys, args)),
  };
}

/**
 * The server's `maxmemory-policy`: `CONFIG GET` through the client's own command
 * (node-redis `configGet`, ioredis `call`), else, or when that is refused, `INFO
 * memory` through a script (any client that runs scripts: `@upstash/redis` too).
 * `undefined` when neither answers.
 */
async function evictionPolicy(client: unknown, commands: Commands): Promise<string | undefined> {
  try {
    const any = client as Record<string, (...args: unknown[]) => Promise<unknown>>;
    let reply: unknown;
    if (typeof any.configGet === "function") reply = await any.configGet("maxmemory-policy");
    else if (typeof any.call === "function") reply = await any.call("CONFIG", "GET", "maxmemory-policy");
    const policy = configValue(reply, "maxmemory-policy");
    if (policy !== undefined) return policy;
  } catch {
    // CONFIG disabled or renamed: ask INFO.
  }
  const info = text(await commands.eval(INFO_SCRIPT, [], []));
  return typeof info === "string" ? /^maxmemory_policy:(\S+)/m.exec(info)?.[1] : undefined;
}

/** A `CONFIG GET` reply's value for `name`: an array of names and values (RESP2), a Map (RESP3), or an object (node-redis). */
function configValue(reply: unknown, name: string): string | undefined {
  let value: unknown;
  if (Array.isArray(reply)) {
    for (let index = 0; index + 1 < reply.length; index += 2) if (text(reply[index]) === name) value = reply[index + 1];
  } else if (reply instanceof Map) value = reply.get(name);
  else if (typeof reply === "object" && reply !== null) value = (reply as Record<string, unknown>)[name];
  value = text(value);
  return typeof value === "string" ? value : undefined;
}

function text(reply: unknown): unknown {
  return reply instanceof Uint8Array ? new TextDecoder().decode(reply) : reply;
}

/** Emits the warning when `policy` evicts keys without a TTL (`allkeys-lru`, `allkeys-lfu`, `allkeys-random`). */
function warnIfEvicting(policy: string | undefined): void {
  if (policy === undefined || !policy.toLowerCase().startsWith("allkeys-")) return;
  const message =
    `ratebound/redis: the server's maxmemory-policy is ${policy}: at maxmemory, Redis evicts keys without a TTL too, ` +
    "and a limit whose state is evicted starts full again, so its key admits more than its bound. " +
    "Use noeviction or a volatile-* policy for the limiter's database (docs/redis.md, \"Eviction\").";
  try {
    const process = (globalThis as { process?: { emitWarning?: (message: string, options: object) => void } }).process;
    if (typeof process?.emitWarning === "function") process.emitWarning(message, { type: "RateboundWarning", code: EVICTION_WARNING_CODE });
    else console.warn(`${EVICTION_WARNING_CODE}: ${message}`);
  } catch {
    // A runtime that refuses both: the call is not failed for a warning.
  }
}
