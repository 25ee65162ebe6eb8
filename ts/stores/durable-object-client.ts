/**
 * ratebound/durable-object's client: {@link rateLimiterClient} calls a ready
 * object (`RateLimiterObject`) through its stub with the limiter's own methods,
 * and holds the object's leases as handles on their data ({@link RemoteLease});
 * its `acquire` waits for a lease by asking the object again.
 * @module
 */
import {
  Grant,
  RateLimitError,
  acquireLease,
  type BatchRequest,
  type GetValueOptions,
  type GrantData,
  type LimitOptions,
  type RateLimitConfig,
  type RateLimitResult,
  type RateLimitValue,
  type ResetOptions,
  type SettleOptions,
  type SettleResult,
  type StoredLimit,
  type StoredLimitOptions,
} from "ratebound";
import type { RateLimiterClient } from "../core/limiter-client.js";
import type { GrantAnswer, LeaseData, RateLimiterRequest } from "./durable-object.js";

/** A handle on a lease held in the object (from `limit` or `acquire` on a concurrency limit, or `lease(data)`): `release` and `extend` are requests to the object. */
export interface RemoteLease {
  /** The lease's id (the slots hold it). */
  readonly id: number;
  /** The slots it holds. */
  readonly slots: readonly number[];
  /** When it expires unless extended, in ms (NaN for a handle made from data until it extends). */
  expiresAt: number;
  /** Gives the slots back: `{ released }` (0 after a first release, or once the lease expired). */
  release(): Promise<{ released: number }>;
  /** Keeps the slots until `ms` from now at least: `{ expiresAt }`, or `LEASE_LOST`. */
  extend(ms: number): Promise<{ expiresAt: number }>;
  /** The lease's data, for another request, process or later time. */
  toJSON(): LeaseData;
}

/** A {@link rateLimiterClient}'s calls on the object's concurrency limits, beside the limiter's. */
export interface RemoteLeasing {
  /** A handle on a lease from its data (`lease.toJSON()`). */
  lease(data: LeaseData): RemoteLease;
  /**
   * Waits for `count` slots (default 1) of a concurrency limit, as `RateLimiter.acquire` does: it asks
   * the object again after 25 ms, doubling to 1 s, never later than the refusal's `retryAfter`;
   * `WAIT_TOO_LONG` once `maxWait` ms have passed without a slot, `ABORTED` on `signal`. A name
   * that is not one of the object's concurrency limits is `INVALID_ARGUMENT`, and takes nothing.
   */
  acquire(name: string, options?: { key?: string; count?: number; maxWait?: number; signal?: AbortSignal }): Promise<{ waited: number; lease: RemoteLease }>;
}

/** What {@link rateLimiterClient} needs of a Durable Object stub: its `fetch`. */
export interface DurableObjectStubLike {
  /** Sends a request to the object. */
  fetch(input: string, init: { method: string; headers: Record<string, string>; body: string }): Promise<Response>;
}

/**
 * Calls a {@link RateLimiterObject} through its stub, with the limiter's own
 * methods. A `400`/`500` answer becomes a thrown `Error` with the object's
 * `code` (`INVALID_CONFIG`, `COUNT_EXCEEDS_MAX`, …); `throws: true` turns a
 * refusal into a `RateLimitError`, as in-process.
 *
 * @param stub The object's stub, e.g. `env.LIMITER.get(env.LIMITER.idFromName(userId))`.
 * @returns The limiter's methods, each one request to the object.
 * @example
 * const limiter = rateLimiterClient<typeof LIMITS>(env.LIMITER.get(env.LIMITER.idFromName(userId)));
 * const { ok, retryAfter } = await limiter.limit("api", { key: userId });
 * if (!ok) return new Response("Too many requests", { status: 429, headers: { "retry-after": String(Math.ceil(retryAfter / 1000)) } });
 */
export function rateLimiterClient<Limits extends Record<string, RateLimitConfig> = Record<string, never>>(
  stub: DurableObjectStubLike,
): RateLimiterClient<Limits> & RemoteLeasing {
  async function send(request: RateLimiterRequest): Promise<unknown> {
    const response = await stub.fetch("https://ratebound.internal/", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    const body = (await response.json()) as { result?: unknown; error?: { code?: string; message?: string; field?: string } };
    if (response.ok) return body.result;
    const error = body.error ?? {};
    throw Object.assign(new Error(error.message ?? `ratebound: the rate limiter object answered ${response.status}`), {
      code: error.code,
      field: error.field,
      status: response.status,
    });
  }
  const decide = async (name: string, result: RateLimitResult, throws: boolean | undefined): Promise<RateLimitResult> => {
    if (throws === true && !result.ok) throw new RateLimitError(name, result.retryAfter);
    return result;
  };
  const settle = async (data: GrantData, actual: number, options?: SettleOptions) =>
    (await send({ op: "settle", grant: data, actual, ...(options === undefined ? {} : { options }) })) as SettleResult;
  const single = (op: "limit" | "check") => async (name: string, options: LimitOptions = {}) => {
    const { throws, ...rest } = options;
    const answer = (await decide(name, (await send({ op, name, options: rest })) as GrantAnswer, throws)) as GrantAnswer & { lease?: LeaseData; expiresAt?: number };
    if (answer.lease !== undefined) return { ok: true, lease: leaseHandle(answer.lease, answer.expiresAt!) };
    if (answer.grant === undefined) return answer;
    const inline = rest.config === undefined ? undefined : { config: rest.config };
    return { ...answer, grant: new Grant(answer.grant, (data, actual) => settle(data, actual, inline)) };
  };
  const batch = (op: "limitAll" | "checkAll") => async (requests: ReadonlyArray<BatchRequest>, options: { throws?: boolean; figures?: boolean; dryRun?: boolean } = {}) => {
    const { throws, ...rest } = options;
    const answer = await send({ op, requests: [...requests], ...(Object.keys(rest).length === 0 ? {} : { options: rest }) });
    return decide(requests.map((request) => request.name).join(", "), answer as RateLimitResult, throws);
  };
  /** A lease's handle over the wire: `release` and `extend` are requests to the object. */
  const leaseHandle = (data: LeaseData, expiresAt: number): RemoteLease => {
    const handle: RemoteLease = {
      id: data.id,
      slots: Object.freeze([...data.slots]),
      expiresAt,
      release: async () => (await send({ op: "release", lease: data })) as { released: number },
      extend: async (ms: number) => {
        const extended = (await send({ op: "extend", lease: data, ms })) as { expiresAt: number };
        handle.expiresAt = extended.expiresAt;
        return extended;
      },
      toJSON: () => data,
    };
    return handle;
  };
  /** A take for `acquire`: the object refuses a name that is not a concurrency limit before deciding. */
  const take = async (name: string, options: object) => {
    const answer = (await send({ op: "limit", name, options, lease: true })) as RateLimitResult & { lease?: LeaseData; expiresAt?: number };
    return answer.lease !== undefined ? { ok: true as const, lease: leaseHandle(answer.lease, answer.expiresAt!) } : (answer as RateLimitResult & { ok: false });
  };
  return {
    lease: (data: LeaseData) => leaseHandle(data, Number.NaN),
    acquire: (name: string, options?: object) => acquireLease({ limit: take }, () => Date.now(), name, options),
    limit: single("limit"),
    check: single("check"),
    limitAll: batch("limitAll"),
    checkAll: batch("checkAll"),
    getValue: async (name: string, options: GetValueOptions = {}) => (await send({ op: "getValue", name, options })) as RateLimitValue,
    reset: async (name: string, options: ResetOptions = {}) => {
      await send({ op: "reset", name, options });
    },
    settle,
    setLimit: async (name: string, config: RateLimitConfig, options: StoredLimitOptions = {}) => {
      await send({ op: "setLimit", name, config, options });
    },
    getLimit: async (name: string, options: StoredLimitOptions = {}) => (await send({ op: "getLimit", name, options })) as StoredLimit,
    deleteLimit: async (name: string, options: StoredLimitOptions = {}) => {
      await send({ op: "deleteLimit", name, options });
    },
  } as RateLimiterClient<Limits> & RemoteLeasing;
}
