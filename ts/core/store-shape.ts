/**
 * The store a `RateLimiter` is given, checked: an object with `read` and `write`, or a clear
 * error that names what to wrap a database client in.
 * @module
 */
import { show, wrongArgument } from "./errors.js";
import type { RateLimitStore } from "./types.js";

/**
 * What to wrap `store` in when it is a database client passed where a store belongs (the
 * message's last part), or `""`. Read by method names only; a getter that throws reads as absent.
 */
function storeShapeHint(store: unknown): string {
  const has = (method: string) => {
    try {
      return typeof (store as Record<string, unknown>)[method] === "function";
    } catch {
      return false;
    }
  };
  if (has("evalsha") || has("evalSha") || has("sendCommand")) return "; a Redis client: wrap it in redisStore(client) from ratebound/redis";
  if (has("insert") && has("patch") && has("query")) return "; Convex's ctx.db: use RateLimiter from ratebound/convex, or wrap it in convexStore(ctx.db)";
  if (has("atomic") && has("get")) return "; a Deno KV: wrap it in kvStore(kv) from ratebound/deno-kv";
  if (has("prepare") && (has("exec") || has("batch"))) return "; a SQLite database or D1 binding: wrap it in sqliteStore(db) from ratebound/sqlite";
  if (has("query") || has("unsafe")) return "; a PostgreSQL client: wrap it in postgresStore(db) from ratebound/postgres";
  if (has("transaction") && has("put") && has("get")) return "; a Durable Object's storage: wrap it in durableObjectStore(ctx.storage) from ratebound/durable-object";
  return "";
}

/** Checks that `store` has `read` and `write` methods. */
export function checkStore(store: unknown): RateLimitStore {
  const rule = "an object with read(ref) and write(ref, state) methods";
  // Only an object is a store; a function may be a client (postgres.js's `sql` is one), which the hint names.
  let read: unknown;
  let write: unknown;
  try {
    if (typeof store === "object" && store !== null) ({ read, write } = store as RateLimitStore);
  } catch {
    read = undefined;
  }
  if (typeof read !== "function" || typeof write !== "function") {
    throw wrongArgument("RateLimiter", "store", `store must be ${rule} (got ${show(store)}${storeShapeHint(store)})`);
  }
  return store as RateLimitStore;
}
