/**
 * ratebound: rate limits stored as two numbers per key, decided by one
 * WebAssembly core. This module is the API every runtime entry re-exports;
 * the entries instantiate the `.wasm` first.
 * @module
 */
export type {
  CalendarPeriod,
  DecideOptions,
  FixedWindowConfig,
  FixedWindowKind,
  GrantData,
  GrantShard,
  RateLimitConfig,
  RateLimitDecision,
  RateLimitFigures,
  RateLimiterOptions,
  RateLimitResult,
  RateLimitState,
  RateLimitStore,
  RateLimitTransition,
  RateLimitValue,
  RemoteAnswer,
  RemoteBatch,
  RemoteItem,
  SettleResult,
  SlidingWindowConfig,
  SlidingWindowKind,
  StateRef,
  TokenBucketConfig,
  TokenBucketKind,
  WriteInfo,
} from "./core/types.js";
export type { BatchRequest, GetValueOptions, LimitOptions, ResetOptions, SettleOptions } from "./core/options.js";
export { Grant } from "./core/grant-handle.js";
export type { ConcurrencyValue, Lease, LeaseResult } from "./core/leasing.js";
export type { ConcurrencyConfig } from "./core/types.js";
export type { GrantResult } from "./core/grant-handle.js";
export { RateLimiter } from "./core/limiter.js";
// Waiting for a turn: acquire, acquireAll and throttle (docs/outbound.md).
export { throttle } from "./core/throttle.js";
export type { ThrottleOptions } from "./core/throttle.js";
export type { AcquireAllAnswer, AcquireAllOptions, AcquireAnswer, AcquireOptions, AcquireRequest } from "./core/acquire.js";
export { calculateRateLimit, calculateRateLimits, decideRateLimit, rateLimitFigures, withJitter } from "./core/pure.js";
export { MemoryStore } from "./stores/memory.js";
// For adapters and the package's subpath modules: options read by their own
// fields, and argument errors in the core's one shape (code INVALID_ARGUMENT).
export { ownOptions } from "./core/options.js";
// And a remote limiter's wait for a lease (ratebound/durable-object's client polls the object with it).
export { acquireLease } from "./core/acquire-lease.js";
export type { Leasing } from "./core/acquire-lease.js";
export { invalidArgument, wrongArgument, isRateboundError, RateboundError, RateboundTypeError, RateLimitError, isRateLimitError } from "./core/errors.js";
export type { RateboundErrorCode, RateLimitErrorData } from "./core/errors.js";
export { SECOND, MINUTE, HOUR, DAY, WEEK } from "./core/time.js";
export { StoreTimeoutError, isDegraded } from "./core/failure-policy.js";
export type { Degraded, FailureOptions, LimitConfig, StoreErrorPolicy } from "./core/failure-policy.js";
export type { RefusalCacheOption } from "./core/refusal-cache.js";
export type { LimitSource, StoredLimit, StoredLimitOptions } from "./core/stored-limits.js";
export type { DecisionEvent, DecisionHook } from "./core/decision-hook.js";
export type {
  BatchAnswerOf,
  BatchOptions,
  CheckAnswer,
  FiguredBatchResult,
  FiguredResult,
  LimitAnswer,
  LimitCallOptions,
  LimitName,
  LimitResultOf,
  AcquireResultOf,
  ConcurrencyNames,
  ValueResultOf,
  CheckResultOf,
  MayOpen,
  DecidedWithFigures,
  OpenAdmission,
} from "./core/answers.js";
