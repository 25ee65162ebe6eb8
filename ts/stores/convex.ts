/**
 * ratebound inside Convex: the state lives in your app's `rateLimits` table and
 * is read and written through `ctx.db`, so every decision is part of the
 * mutation's own transaction. Concurrent mutations on one key are serialized by
 * Convex (none can admit more than the bound), and a mutation that throws after
 * consuming rolls the tokens back with everything else it wrote.
 *
 * The table has the shape of `@convex-dev/rate-limiter`'s component
 * (`name`, optional `key`, `shard`, `value`, `ts`, index `name` on
 * `[name, key, shard]`), so data written by the component keeps working.
 * @module
 */
import {
  defineTable,
  type DataModelFromSchemaDefinition,
  type GenericDatabaseReader,
  type GenericDatabaseWriter,
  type SchemaDefinition,
} from "convex/server";
import { ConvexError, v } from "convex/values";
import {
  RateLimiter as CoreRateLimiter,
  RateboundTypeError,
  RateLimitError,
  type BatchAnswerOf,
  type BatchOptions,
  type BatchRequest,
  type ConcurrencyConfig,
  type GrantData,
  type GrantResult,
  type SettleOptions,
  type SettleResult,
  type LimitCallOptions,
  type LimitName,
  type LimitOptions,
  type LimitResultOf,
  type RateLimitConfig,
  type RateLimiterOptions,
  type RateLimitResult,
  type RateLimitState,
  type RateLimitStore,
  type ResetOptions,
  type StateRef,
} from "ratebound";

export { isRateLimitError, SECOND, MINUTE, HOUR, DAY, WEEK } from "ratebound";
export type { GrantData, GrantResult, RateLimitConfig, RateLimitResult, RateLimitStore, RateLimitValue, SettleResult, StateRef } from "ratebound";

/** The table ratebound keeps its state in. */
const TABLE = "rateLimits";
/** Its index on `[name, key, shard]`, named as the component names it. */
const INDEX = "name";

/**
 * The `rateLimits` table, to spread into your schema: one document per shard
 * state, `{ name, key?, shard, value, ts }`, indexed on `[name, key, shard]`.
 * A limit's shared state (no key) is stored without a `key` field, so `""` is a
 * key of its own.
 *
 * @example
 * // convex/schema.ts
 * import { defineSchema } from "convex/server";
 * import { rateLimitTables } from "ratebound/convex";
 * export default defineSchema({ ...rateLimitTables, messages: defineTable({ body: v.string() }) });
 */
export const rateLimitTables = {
  rateLimits: defineTable({
    name: v.string(),
    key: v.optional(v.string()), // absent: the limit's shared state
    shard: v.number(), // 0 when unsharded
    value: v.number(), // negative when capacity is reserved ahead of time
    ts: v.number(),
  }).index(INDEX, ["name", "key", "shard"]),
};

/** The slice of an app's data model that ratebound touches. */
type RateLimitDataModel = DataModelFromSchemaDefinition<SchemaDefinition<typeof rateLimitTables, true>>;
/**
 * `ctx.db` of any app (its data model has many tables; ratebound only touches `rateLimits`):
 * a query's reader or a mutation's writer.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ConvexDatabase = GenericDatabaseReader<any>;
type Reader = GenericDatabaseReader<RateLimitDataModel>;
type Writer = GenericDatabaseWriter<RateLimitDataModel>;

/** A {@link RateLimitStore} over `ctx.db`, which knows whether it may write. */
export interface ConvexRateLimitStore extends RateLimitStore {
  /** `true` over a query's `ctx.db`: `check` and `getValue` work, anything that writes throws. */
  readonly readOnly: boolean;
}

/**
 * The ref's document, through the `[name, key, shard]` index. An absent key
 * matches only documents without a `key` field.
 */
function findState(db: Reader, ref: StateRef) {
  return db
    .query(TABLE)
    .withIndex(INDEX, (q) => q.eq("name", ref.name).eq("key", ref.key).eq("shard", ref.shard))
    .unique();
}

/**
 * A write over a query's `ctx.db`: the wrong store for the call, so an argument error
 * (`INVALID_ARGUMENT`), which no `onStoreError` policy turns into an admission.
 */
function writeOutsideMutation(what: string): Error {
  return new RateboundTypeError(
    `ratebound/convex: ${what} writes rate limit state, which needs a mutation; ctx.db is read-only here (a query). ` +
      "In a query, use check or getValue.",
    "store",
  );
}

/**
 * Thrown when `ctx.db` itself fails a read or a write of ratebound's table:
 * `code: "CONVEX_DB_FAILED"`, and `cause` is what `ctx.db` threw. The call fails
 * closed (or answers by its `onStoreError` policy); a mutation that lets it
 * throw rolls back everything it wrote.
 *
 * @example
 * catch (error) { if (error instanceof ConvexStoreError) console.error(error.cause); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#convex_db_failed | docs/errors.md}: every code, what it means, what to do.
 */
export class ConvexStoreError extends Error {
  /** `"CONVEX_DB_FAILED"`. */
  readonly code = "CONVEX_DB_FAILED";

  /**
   * @param operation What failed: `"read"` or `"write"`.
   * @param cause What `ctx.db` threw.
   */
  constructor(operation: "read" | "write", cause: unknown) {
    super(`ratebound/convex: ctx.db failed a ${operation} of the rateLimits table: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "ConvexStoreError";
  }
}

/** Runs an operation on `ctx.db`; what it throws becomes a {@link ConvexStoreError}. */
async function onDb<T>(operation: "read" | "write", run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new ConvexStoreError(operation, error);
  }
}

/**
 * The host callback over Convex's `ctx.db`: reads and writes the `rateLimits`
 * table inside the current function's transaction. Over a query's `ctx.db` it
 * only reads; a write throws a clear error (and the call fails closed).
 *
 * @param db `ctx.db` of a mutation (reads and writes) or of a query (reads only).
 * @returns The store, with `readOnly` telling which it got.
 * @example
 * export const send = mutation({
 *   args: { body: v.string() },
 *   handler: async (ctx, { body }) => {
 *     const userId = await requireUser(ctx);
 *     const limiter = new RateLimiter(convexStore(ctx.db), LIMITS);
 *     await limiter.limit("sendMessage", { key: userId, throws: true });
 *     await ctx.db.insert("messages", { userId, body });
 *   },
 * });
 */
export function convexStore(db: ConvexDatabase): ConvexRateLimitStore {
  // One store per ctx.db: the limiters a function makes share it, so their calls on one key are coalesced.
  const made = STORES.get(db);
  if (made !== undefined) return made;
  const reader = db as Reader;
  const writer = "insert" in db && typeof db.insert === "function" ? (db as Writer) : null;
  const store: ConvexRateLimitStore = {
    readOnly: writer === null,
    /**
     * The function's own transaction holds every call: `body` runs on this store. Being
     * transactional, the store's concurrent `limit` and `check` calls on one key (a
     * `Promise.all` in one mutation) are coalesced into one decision in arrival order, so
     * they never decide on a state another of them is about to write.
     */
    transaction: async <T>(body: (store: RateLimitStore) => Promise<T>): Promise<T> => await body(store),
    async read(ref: StateRef): Promise<RateLimitState | null> {
      const doc = await onDb("read", () => findState(reader, ref));
      return doc === null ? null : { value: doc.value, ts: doc.ts };
    },
    async write(ref: StateRef, state: RateLimitState | null): Promise<void> {
      if (writer === null) throw writeOutsideMutation(state === null ? "reset" : "limit");
      await onDb("write", async () => {
        const doc = await findState(writer, ref);
        if (state === null) {
          if (doc !== null) await writer.delete(doc._id);
        } else if (doc !== null) {
          await writer.patch(doc._id, { value: state.value, ts: state.ts });
        } else {
          const { name, key, shard } = ref;
          await writer.insert(TABLE, key === undefined ? { name, shard, ...state } : { name, key, shard, ...state });
        }
      });
    },
  };
  STORES.set(db, store);
  return store;
}

/** The store of each `ctx.db`. */
const STORES = new WeakMap<object, ConvexRateLimitStore>();

/** Turns a refusal thrown by the core into the `ConvexError` Convex sends to clients. */
async function asConvexError<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof RateLimitError) throw new ConvexError(error.data);
    throw error;
  }
}

type Named<Limits> = Extract<keyof Limits, string>;
type Inline = { config: RateLimitConfig };

/**
 * ratebound's {@link CoreRateLimiter | RateLimiter}, for Convex functions:
 * `throws: true` raises a `ConvexError` whose `data` is
 * `{ kind: "RateLimited", name, retryAfter }` (what Convex clients receive, and
 * what `isRateLimitError` recognises), and over a query's {@link convexStore}
 * `limit`, `limitAll` and `reset` fail at once with a clear error, granted or not.
 *
 * @typeParam Limits The named limits; their names are type-checked.
 * @example
 * const LIMITS = { sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 } } as const;
 * export const send = mutation({
 *   args: {},
 *   handler: async (ctx) => {
 *     await new RateLimiter(convexStore(ctx.db), LIMITS).limit("sendMessage", { key: "ada", throws: true });
 *   },
 * });
 */
export class RateLimiter<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig> = Record<string, never>> extends CoreRateLimiter<Limits> {
  readonly #readOnly: boolean;

  /**
   * @param store Usually `convexStore(ctx.db)`; any {@link RateLimitStore} works.
   * @param limits Named limit configs, validated now.
   * @param options `now` and `random`, for tests and replays.
   */
  constructor(store: RateLimitStore, limits: Limits = {} as Limits, options: RateLimiterOptions = {}) {
    super(store, limits, options);
    // Own field only: an inherited readOnly (a polluted Object.prototype) must not refuse every write.
    this.#readOnly = Object.hasOwn(store, "readOnly") && (store as Partial<ConvexRateLimitStore>).readOnly === true;
  }

  #mustWrite(what: string): void {
    if (this.#readOnly) throw writeOutsideMutation(what);
  }

  /**
   * Consumes `count` tokens if the limit allows; needs a mutation's `ctx.db`.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws`, `config`.
   * @returns `{ ok: true, retryAfter? }` or `{ ok: false, retryAfter }`.
   * @example
   * await limiter.limit("sendMessage", { key: userId, throws: true }); // ConvexError when refused
   */
  // The base's one generic signature (its answer names a grant, figures or a lease by the options and the name).
  override async limit<const Options extends LimitCallOptions = {}, const Name extends LimitName<Limits, Options> = LimitName<Limits, Options>>(
    name: Name,
    options?: Options,
  ): Promise<LimitResultOf<Limits, Name, Options>> {
    this.#mustWrite("limit");
    return asConvexError(() => super.limit(name, options ?? ({} as Options)));
  }

  /**
   * Settles a grant's data at what was really used; needs a mutation's `ctx.db`.
   * A grant taken in one mutation can settle in another (a scheduled function, say).
   *
   * @param data The grant's data (`grant.data`).
   * @param actual Tokens really used (0 cancels).
   * @param options `config`, for a grant of an inline limit.
   * @returns `{ refunded, charged, unpaid, retryAfter? }`.
   * @example
   * await limiter.settle(args.grant, args.usedTokens);
   */
  override async settle(data: GrantData, actual: number, options?: SettleOptions): Promise<SettleResult> {
    this.#mustWrite("settle");
    return asConvexError(() => super.settle(data, actual, options));
  }

  /**
   * What `limit` would answer now, without writing: works in queries too.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options As for `limit`.
   * @returns The same result `limit` would give.
   * @example
   * export const canSend = query({ args: {}, handler: (ctx) => new RateLimiter(convexStore(ctx.db), LIMITS).check("sendMessage", { key: "ada" }) });
   */
  override check(name: string, options: LimitOptions & Inline): Promise<RateLimitResult>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  override check(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  override async check(name: string, options: LimitOptions = {}): Promise<RateLimitResult> {
    return asConvexError(() => super.check(name, options as LimitOptions & Inline));
  }

  /**
   * Consumes several limits together, all or none; needs a mutation's `ctx.db`.
   *
   * @param requests The limits, each with its own `key`, `count`, `reserve`.
   * @param options `throws: true` to throw a `ConvexError` on refusal; `figures: true` for each limit's figures.
   * @returns One result for the whole batch.
   * @example
   * await limiter.limitAll([{ name: "perUser", key: userId }, { name: "global" }], { throws: true });
   */
  override async limitAll<const Options extends BatchOptions = {}>(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options?: Options,
  ): Promise<BatchAnswerOf<Options>> {
    this.#mustWrite("limitAll");
    return asConvexError(() => super.limitAll(requests, options));
  }

  /**
   * What `limitAll` would answer now, without writing: works in queries too.
   *
   * @param requests The limits to check together.
   * @param options `throws: true` to throw a `ConvexError` on refusal; `figures: true` for each limit's figures.
   * @returns One result for the whole batch.
   * @example
   * const { ok } = await limiter.checkAll([{ name: "perUser", key: userId }, { name: "global" }]);
   */
  override async checkAll<const Options extends BatchOptions = {}>(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options?: Options,
  ): Promise<BatchAnswerOf<Options>> {
    return asConvexError(() => super.checkAll(requests, options));
  }

  /**
   * Deletes the limit's state for `key` on every shard; needs a mutation's `ctx.db`.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `config`.
   * @example
   * await limiter.reset("failedLogins", { key: userId });
   */
  override reset(name: string, options: ResetOptions & Inline): Promise<void>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  override reset(name: Named<Limits>, options?: ResetOptions): Promise<void>;
  override async reset(name: string, options: ResetOptions = {}): Promise<void> {
    this.#mustWrite("reset");
    await super.reset(name, options as ResetOptions & Inline);
  }
}
