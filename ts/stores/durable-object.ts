/**
 * ratebound in a Cloudflare Durable Object: the object's own storage holds the
 * state, and the object decides one request at a time, so concurrent requests
 * to one object can never admit more than the bound.
 *
 * - {@link durableObjectStore} is the host callback over `ctx.storage`, for
 *   your own Durable Object class.
 * - {@link rateLimiterObject} makes a ready Durable Object class to export from
 *   your Worker, and {@link rateLimiterClient} calls it from the Worker. Route
 *   one object per key (`idFromName(userId)`) or per key range.
 * @module
 */
import {
  Grant,
  wrongArgument,
  RateLimiter,
  type BatchRequest,
  type GrantData,
  type SettleOptions,
  type SettleResult,
  type GetValueOptions,
  type LimitOptions,
  type RateLimitConfig,
  type RateLimitResult,
  type RateLimitState,
  type RateLimitStore,
  type RateLimitValue,
  type ResetOptions,
  type StateRef,
  type StoredLimit,
  type StoredLimitOptions,
} from "ratebound";
import type { InlineConfig as Inline, RateLimiterClient } from "../core/limiter-client.js";
import { ownCopy } from "./shared/options.js";

export type { RateLimiterClient };

/** The synchronous key-value API of a SQLite-backed Durable Object (`ctx.storage.kv`). */
export interface SyncKvStorageLike {
  /** The stored value, or `undefined`. */
  get(key: string): unknown;
  /** Stores a structured-cloneable value. */
  put(key: string, value: unknown): void;
  /** Deletes the key. */
  delete(key: string): unknown;
}

/** What ratebound uses of a Durable Object's `ctx.storage`. */
export interface DurableObjectStorageLike {
  /** Present on SQLite-backed objects: then every decision runs synchronously. */
  readonly kv?: SyncKvStorageLike;
  /** The stored value, or `undefined`. */
  get(key: string): Promise<unknown>;
  /** Stores a structured-cloneable value. */
  put(key: string, value: unknown): Promise<void>;
  /** Deletes the key. */
  delete(key: string): Promise<unknown>;
}

/** Options of {@link durableObjectStore}. */
export interface DurableObjectStoreOptions {
  /** Prepended to every storage key, to keep ratebound's keys apart from the object's own; default `"ratebound:"`. */
  prefix?: string;
}

/**
 * The storage key of a ref: the prefix, then the JSON array `[name, shard]` or
 * `[name, shard, key]`. JSON quotes and escapes every string, so distinct
 * `(name, key, shard)` triples never share a key (`"a:b"` + `"c"` and `"a"` +
 * `"b:c"` stay apart, and so do no key and `""`).
 */
function storageKey(prefix: string, ref: StateRef): string {
  return prefix + JSON.stringify(ref.key === undefined ? [ref.name, ref.shard] : [ref.name, ref.shard, ref.key]);
}

/**
 * `storage.kv` on a SQLite-backed object; `undefined` on a key-value-backed one, where
 * `storage.kv` exists but every call throws (so one harmless read tells them apart).
 */
function synchronousKv(storage: DurableObjectStorageLike, prefix: string): SyncKvStorageLike | undefined {
  try {
    const kv = storage.kv;
    kv?.get(prefix);
    return kv;
  } catch {
    return undefined;
  }
}

/**
 * The host callback over a Durable Object's `ctx.storage`.
 *
 * On a SQLite-backed object it uses the synchronous `ctx.storage.kv`: a
 * decision reads and writes without yielding, so no other request can run in
 * between, and its writes commit together. On a key-value-backed object it
 * reads with `get` (the object's input gate holds other requests back while a
 * read is pending) and issues its writes without awaiting them, so they are
 * coalesced into one atomic batch and confirmed before any response leaves.
 *
 * @param storage The object's `ctx.storage`.
 * @param options `prefix` for ratebound's storage keys.
 * @returns A {@link RateLimitStore} for `new RateLimiter(store, limits)`.
 * @example
 * import { DurableObject } from "cloudflare:workers";
 * export class Uploads extends DurableObject {
 *   limiter = new RateLimiter(durableObjectStore(this.ctx.storage), { upload: { kind: "fixed window", rate: 10, period: HOUR } });
 *   async upload(userId: string, file: ArrayBuffer) {
 *     const { ok, retryAfter } = await this.limiter.limit("upload", { key: userId });
 *     if (!ok) return { retryAfter };
 *     // … store the file
 *   }
 * }
 */
export function durableObjectStore(storage: DurableObjectStorageLike, given: DurableObjectStoreOptions = {}): RateLimitStore {
  const options = ownCopy("durableObjectStore", given, ["prefix"]);
  const prefix = options.prefix ?? "ratebound:";
  const kv = synchronousKv(storage, prefix);
  if (kv !== undefined) {
    return {
      read: (ref) => (kv.get(storageKey(prefix, ref)) ?? null) as RateLimitState | null,
      write(ref, state) {
        if (state === null) kv.delete(storageKey(prefix, ref));
        else kv.put(storageKey(prefix, ref), { value: state.value, ts: state.ts });
      },
    };
  }
  return {
    read: async (ref) => ((await storage.get(storageKey(prefix, ref))) ?? null) as RateLimitState | null,
    write(ref, state) {
      // Not awaited: writes made in one turn are committed as one batch, and the
      // output gate holds every response until they are durable.
      if (state === null) void storage.delete(storageKey(prefix, ref));
      else void storage.put(storageKey(prefix, ref), { value: state.value, ts: state.ts });
    },
  };
}

/** What a Durable Object's constructor receives first (`ctx`), as far as ratebound uses it. */
export interface DurableObjectStateLike {
  /** The object's storage. */
  readonly storage: DurableObjectStorageLike;
}

/** The body of a request to a {@link RateLimiterObject}, one per operation. */
export type RateLimiterRequest =
  | { op: "limit" | "check"; name: string; options?: Omit<LimitOptions, "throws">; lease?: true }
  | { op: "limitAll" | "checkAll"; requests: BatchRequest[]; options?: { figures?: boolean; dryRun?: boolean } }
  | { op: "getValue"; name: string; options?: GetValueOptions }
  | { op: "reset"; name: string; options?: ResetOptions }
  | { op: "settle"; grant: GrantData; actual: number; options?: SettleOptions }
  | { op: "setLimit"; name: string; config: RateLimitConfig; options?: StoredLimitOptions }
  | { op: "getLimit" | "deleteLimit"; name: string; options?: StoredLimitOptions }
  | { op: "release"; lease: LeaseData }
  | { op: "extend"; lease: LeaseData; ms: number };

/** A concurrency limit's lease as it crosses the wire (`lease.toJSON()`): the client wraps it in a handle. */
export interface LeaseData {
  name: string;
  key?: string;
  id: number;
  slots: number[];
}

/** What the object answers to `limit` with `grant: true`: the grant as its data. */
export type GrantAnswer = RateLimitResult & { grant?: GrantData };

/** The codes of errors that are the caller's fault: answered with status 400. */
const CALLER_ERRORS = new Set(["INVALID_CONFIG", "INVALID_REQUEST", "COUNT_EXCEEDS_MAX", "UNKNOWN_LIMIT", "GRANT_SETTLED", "LEASE_LOST"]);

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function errorResponse(error: unknown): Response {
  const { code, message, field } = (error ?? {}) as { code?: unknown; message?: unknown; field?: unknown };
  const known = typeof code === "string";
  const status = (known && CALLER_ERRORS.has(code)) || error instanceof TypeError ? 400 : 500;
  return json(status, { error: { code: known ? code : status === 400 ? "INVALID_REQUEST" : "INTERNAL", message: String(message ?? error), field } });
}

function badRequest(message: string): Response {
  return json(400, { error: { code: "INVALID_REQUEST", message } });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A ready Durable Object that keeps rate limits in its own storage and answers
 * `POST` requests whose JSON body is a {@link RateLimiterRequest}: `200 { result }`,
 * or `400 { error: { code, message } }` for a bad config or request (nothing
 * changes), `500` when its storage fails. Call it with {@link rateLimiterClient};
 * get a class with named limits from {@link rateLimiterObject}.
 *
 * @typeParam Limits The named limits it knows; others must come with an inline `config`.
 * @example
 * // worker.ts: inline configs only
 * export { RateLimiterObject } from "ratebound/durable-object";
 */
export class RateLimiterObject<Limits extends Record<string, RateLimitConfig> = Record<string, never>> {
  readonly #limiter: RateLimiter<Record<string, RateLimitConfig>>;
  /** The names of its concurrency limits: `acquire` (a `limit` request with `lease: true`) takes only those. */
  readonly #leaseNames: ReadonlySet<string>;

  /**
   * @param ctx The object's state; its `storage` holds the limits.
   * @param env The Worker's bindings (unused).
   * @param limits Named limit configs, validated now.
   */
  constructor(ctx: DurableObjectStateLike, env?: unknown, limits: Limits = {} as Limits) {
    void env;
    // Its named limits decide on the limits stored in the object (setLimit), when there are any.
    this.#limiter = new RateLimiter<Record<string, RateLimitConfig>>(durableObjectStore(ctx.storage), limits, { storedLimits: true });
    this.#leaseNames = new Set(Object.keys(limits).filter((name) => (limits[name] as { kind?: unknown }).kind === "concurrency"));
  }

  /**
   * Decides one {@link RateLimiterRequest}.
   *
   * @param request A `POST` with a JSON {@link RateLimiterRequest} body.
   * @returns `200 { result }`, `400 { error }` for a bad request, `500 { error }` when storage fails.
   * @example
   * const response = await stub.fetch("https://ratebound/", { method: "POST", body: JSON.stringify({ op: "check", name: "api" }) });
   */
  async fetch(request: Request): Promise<Response> {
    if (request.method !== "POST") return json(405, { error: { code: "INVALID_REQUEST", message: "ratebound: POST a JSON body" } });
    let body: unknown;
    try {
      body = await request.json();
    } catch {
      return badRequest("ratebound: the request body is not JSON");
    }
    if (!isObject(body)) return badRequest("ratebound: the request body must be a JSON object");
    try {
      return json(200, { result: (await this.#decide(body)) ?? null });
    } catch (error) {
      return errorResponse(error);
    }
  }

  async #decide(body: Record<string, unknown>): Promise<RateLimitResult | GrantAnswer | RateLimitValue | SettleResult | StoredLimit | void> {
    const limiter = this.#limiter;
    const { op, name, requests } = body;
    const options = (isObject(body.options) ? body.options : {}) as unknown as LimitOptions & Inline;
    const inline = options as GetValueOptions & Inline;
    switch (op) {
      case "limit": {
        if (body.lease === true && !this.#leaseNames.has(name as string)) {
          throw wrongArgument("acquire", "name", `${JSON.stringify(name)} is not one of this object's concurrency limits: acquire waits for a lease`);
        }
        const result = (await limiter.limit(name as string, { ...options, throws: false })) as RateLimitResult & { grant?: unknown; lease?: { toJSON(): LeaseData; expiresAt: number } };
        // A grant or a lease crosses the wire as its data; the client wraps it in a handle again.
        if (result.lease !== undefined) return { ok: true, lease: result.lease.toJSON(), expiresAt: result.lease.expiresAt } as RateLimitResult;
        return result.grant instanceof Grant ? { ...result, grant: result.grant.data } : result;
      }
      case "release":
        return (await limiter.lease(body.lease).release()) as unknown as RateLimitResult;
      case "extend":
        return (await limiter.lease(body.lease).extend(body.ms as number)) as unknown as RateLimitResult;
      case "settle": {
        const settleOptions = (isObject(body.options) ? body.options : undefined) as SettleOptions | undefined;
        return limiter.settle(body.grant as GrantData, body.actual as number, settleOptions);
      }
      case "check":
        return limiter.check(name as string, { ...options, throws: false });
      case "limitAll":
      case "checkAll": {
        if (!Array.isArray(requests)) throw new TypeError(`ratebound: ${op} needs an array of requests`);
        const batch = requests as (BatchRequest & Inline)[];
        // `figures` and `dryRun` pass through, as `limit`'s options do: the object's decision computes them.
        const given = isObject(body.options) ? body.options : {};
        const batchOptions = { ...(given.figures === true ? { figures: true } : {}), ...(given.dryRun === true ? { dryRun: true } : {}) } as { throws?: boolean };
        return op === "limitAll" ? limiter.limitAll(batch, batchOptions) : limiter.checkAll(batch, batchOptions);
      }
      case "getValue":
        return limiter.getValue(name as string, inline);
      case "reset":
        return limiter.reset(name as string, inline);
      case "setLimit":
        return limiter.setLimit(name as string, body.config as RateLimitConfig, body.options as StoredLimitOptions | undefined);
      case "getLimit":
        return limiter.getLimit(name as string, body.options as StoredLimitOptions | undefined);
      case "deleteLimit":
        return limiter.deleteLimit(name as string, body.options as StoredLimitOptions | undefined);
      default:
        throw new TypeError(
          `ratebound: unknown op ${JSON.stringify(op)} (limit, check, limitAll, checkAll, getValue, reset, settle, setLimit, getLimit, deleteLimit, release or extend)`,
        );
    }
  }
}

/** A Durable Object class with named limits, as {@link rateLimiterObject} makes it. */
export interface RateLimiterObjectClass<Limits extends Record<string, RateLimitConfig>> {
  new (ctx: DurableObjectStateLike, env?: unknown): RateLimiterObject<Limits>;
}

/**
 * A Durable Object class that knows your named limits: export it from your
 * Worker (and name it in `wrangler.toml`), then call it with {@link rateLimiterClient}.
 *
 * @param limits Named limit configs, validated when an object starts.
 * @returns The class to export.
 * @example
 * export const LIMITS = { api: { kind: "token bucket", rate: 100, period: MINUTE } } as const;
 * export class ApiLimiter extends rateLimiterObject(LIMITS) {}
 */
export function rateLimiterObject<Limits extends Record<string, RateLimitConfig>>(limits: Limits): RateLimiterObjectClass<Limits> {
  return class extends RateLimiterObject<Limits> {
    constructor(ctx: DurableObjectStateLike, env?: unknown) {
      super(ctx, env, limits);
    }
  };
}

export { rateLimiterClient, type DurableObjectStubLike, type RemoteLease, type RemoteLeasing } from "./durable-object-client.js";
