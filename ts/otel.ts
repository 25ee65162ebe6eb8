/**
 * ratebound's decisions as OpenTelemetry metrics: {@link otelMetrics} makes an
 * `onDecision` hook for a `RateLimiter` that counts decisions by limit and
 * outcome, records the store's latency, and counts failure-policy activations.
 * Only this module imports `@opentelemetry/api` (an optional peer dependency):
 * the main entry never loads it.
 * @module
 */
import { metrics, type Attributes, type Meter } from "@opentelemetry/api";
import type { DecisionEvent, DecisionHook } from "ratebound";
import { wrongArgument } from "ratebound";

/** Options of {@link otelMetrics}. */
export interface OtelMetricsOptions {
  /** The meter to record with; default `metrics.getMeter("ratebound")` from the global MeterProvider. */
  meter?: Meter;
}

/** The store-latency histogram's bucket boundaries, in milliseconds: an in-process store to a slow network. */
export const STORE_DURATION_BUCKETS: readonly number[] = Object.freeze([0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500]);

const OPTIONS = ["meter"];

/**
 * An `onDecision` hook that records every decision of the limiter it is given to:
 *
 * - `ratebound.decisions` (counter): one per decided call, by `ratebound.limit`, `ratebound.outcome`
 *   (`allowed`, `refused`, `error`) and `ratebound.operation` (`limit` or `check`; `limitAll`
 *   counts each of its limits), and for a dry-run limit `ratebound.dry_run` (`allowed` or
 *   `refused`: what enforcing would have answered; its `ratebound.outcome` is `allowed`);
 * - `ratebound.store.duration` (histogram, `ms`): the store's time per call that asked it
 *   (not a refusal the refusal cache repeated), by limit and operation;
 * - `ratebound.degraded` (counter): calls the failure policy answered because the store failed,
 *   by limit, `ratebound.degraded` (`store-error`, `store-timeout`) and `ratebound.fallback`
 *   (`open`, `memory`).
 *
 * Keys are never attributes (one series per user would be unbounded).
 *
 * @param options `meter`, when not the global provider's.
 * @returns The hook, for `new RateLimiter(store, limits, { onDecision })`.
 * @example
 * const limiter = new RateLimiter(store, LIMITS, { onDecision: otelMetrics() });
 */
export function otelMetrics(options: OtelMetricsOptions = {}): DecisionHook {
  if (typeof options !== "object" || options === null) throw wrongArgument("otelMetrics", "options", `options must be an object (got ${options === null ? "null" : typeof options})`);
  for (const field of Object.keys(options)) {
    if (!OPTIONS.includes(field)) throw wrongArgument("otelMetrics", field, `unknown option ${JSON.stringify(field)} (known: ${OPTIONS.join(", ")})`);
  }
  const given = options.meter;
  if (given !== undefined && (typeof given !== "object" || given === null || typeof given.createCounter !== "function" || typeof given.createHistogram !== "function")) {
    throw wrongArgument("otelMetrics", "meter", "meter must be an OpenTelemetry Meter (createCounter, createHistogram)");
  }
  const meter = given ?? metrics.getMeter("ratebound");
  const decisions = meter.createCounter("ratebound.decisions", { description: "Rate limit decisions, by limit and outcome", unit: "{decision}" });
  const duration = meter.createHistogram("ratebound.store.duration", {
    description: "Time the rate limit store took to answer a call",
    unit: "ms",
    advice: { explicitBucketBoundaries: [...STORE_DURATION_BUCKETS] },
  });
  const degraded = meter.createCounter("ratebound.degraded", { description: "Calls answered by the failure policy because the store failed", unit: "{call}" });
  return (event: DecisionEvent) => {
    const operation = event.write ? "limit" : "check";
    const attributes: Attributes = { "ratebound.limit": event.name, "ratebound.outcome": event.outcome, "ratebound.operation": operation };
    if (event.dryRun !== undefined) attributes["ratebound.dry_run"] = event.dryRun;
    decisions.add(1, attributes);
    if (event.fromCache !== true) duration.record(event.storeMs, { "ratebound.limit": event.name, "ratebound.operation": operation });
    if (event.degraded !== undefined) {
      degraded.add(1, { "ratebound.limit": event.name, "ratebound.degraded": event.degraded, "ratebound.fallback": event.fallback ?? "memory" });
    }
  };
}
