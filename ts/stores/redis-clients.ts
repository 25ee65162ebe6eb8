/**
 * Redis clients ratebound/redis takes as they are beside node-redis, ioredis and `@upstash/redis`:
 * Bun's built-in `RedisClient` and valkey-glide (`GlideClient`). Each is told by what it is and
 * presented as the node-redis shape ({@link NodeRedisLike}: `get`, `evalSha`, `eval` with
 * `{ keys, arguments }`), which the store already runs on.
 *
 * - **Bun's `RedisClient`** (`new RedisClient(url)` from `"bun"`): an instance of
 *   `globalThis.Bun.RedisClient`. It has `evalsha` and `eval` of its own, but they take ioredis's
 *   flat arguments, every one a string or bytes: ratebound sends `EVALSHA` and `EVAL` through its
 *   `send(command, args)` with the key count as a string.
 * - **valkey-glide** (`GlideClient.createClient({ addresses })`): it has no `evalsha`; ratebound
 *   sends both through `customCommand([...])`, the client's documented way to run any command,
 *   and reads its `NoScriptError` as the `NOSCRIPT` it is.
 * @module
 */
import type { NodeRedisLike } from "./redis-commands.js";

/** Bun's built-in Redis client (`import { RedisClient } from "bun"`), as ratebound uses it. */
export interface BunRedisClientLike {
  /** GET. */
  get(key: string): Promise<string | null>;
  /** Sends any command, its arguments as strings. */
  send(command: string, args: string[]): Promise<any>;
}

/** A valkey-glide standalone client (`GlideClient`), as ratebound uses it. */
export interface GlideClientLike {
  /** GET. */
  get(key: string, options?: any): Promise<unknown>;
  /** Sends any command, as its words. */
  customCommand(args: string[], options?: any): Promise<unknown>;
}

/** `client` as the node-redis shape when it is Bun's `RedisClient` or a valkey-glide client, else `client` itself. */
export function fromRedisClient<T>(client: T | BunRedisClientLike | GlideClientLike): T | NodeRedisLike {
  if (typeof client !== "object" || client === null) return client as T;
  const BunRedis = (globalThis as { Bun?: { RedisClient?: abstract new (...args: never[]) => unknown } }).Bun?.RedisClient;
  if (typeof BunRedis === "function" && client instanceof BunRedis) {
    const bun = client as BunRedisClientLike;
    return {
      get: (key) => bun.get(key),
      evalSha: (sha, { keys, arguments: args }) => bun.send("EVALSHA", [sha, String(keys.length), ...keys, ...args]),
      eval: (script, { keys, arguments: args }) => bun.send("EVAL", [script, String(keys.length), ...keys, ...args]),
    };
  }
  const any = client as Record<string, unknown>;
  if (typeof any.customCommand === "function" && typeof any.get === "function" && typeof any.invokeScript === "function") {
    const glide = client as GlideClientLike;
    return {
      get: (key) => glide.get(key),
      // glide words an unknown script "NoScriptError": the store loads it on NOSCRIPT.
      evalSha: (sha, { keys, arguments: args }) =>
        glide.customCommand(["EVALSHA", sha, String(keys.length), ...keys, ...args]).catch((error: unknown) => {
          if (error instanceof Error && /NoScriptError/.test(error.message)) throw new Error(`NOSCRIPT ${error.message}`, { cause: error });
          throw error;
        }),
      eval: (script, { keys, arguments: args }) => glide.customCommand(["EVAL", script, String(keys.length), ...keys, ...args]),
    };
  }
  return client as T;
}
