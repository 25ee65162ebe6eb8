/**
 * A limiter's answers as callers see them: a decision shaped into a result,
 * a call's own answer out of a batch, and the hook that is told of each.
 * @module
 */
import type { BatchAnswer, Decided } from "./driver.js";
import { RateboundError } from "./errors.js";
import type { DecisionHook, Probe } from "./decision-hook.js";
import type { RateLimitFigures, RateLimitResult } from "./types.js";

/**
 * The result a caller sees: with its figures when asked.
 *
 * @param decided The driver's decision.
 * @returns The result.
 */
export function shaped(decided: Decided): RateLimitResult & { figures?: RateLimitFigures } {
  return decided.figures === undefined ? decided.result : { ...decided.result, figures: decided.figures };
}

/**
 * A call's own answer out of a batch: its decision, or its error thrown.
 *
 * @param answer The batch's answer.
 * @returns The first call's decision.
 */
export function only(answer: BatchAnswer): Decided {
  const decided = answer.each[0]!;
  if (decided instanceof RateboundError) throw decided;
  return decided;
}

/** The module that records a hooked call, loaded by the first one: an app without a hook never loads it. */
let observer: Promise<typeof import("./observe.js")> | undefined;

/**
 * Runs `call` with a probe and reports it to `hook` once it settles (see observe.ts).
 *
 * @param hook The limiter's `onDecision`.
 * @param write `limit` (true) or `check`.
 * @param call The call, given the probe to fill.
 * @returns What the call answers.
 */
export function hooked<T>(hook: DecisionHook, write: boolean, call: (recorded: Probe) => Promise<T>): Promise<T> {
  return (observer ??= import("./observe.js")).then(({ observe, probe }) => {
    const recorded = probe();
    return observe(hook, write, recorded, call(recorded));
  });
}

/**
 * Whether an answer is one call's decision.
 *
 * @param answer What a road answered.
 * @returns `true` for a {@link Decided}.
 */
export function isDecided(answer: unknown): answer is Decided {
  return typeof answer === "object" && answer !== null && "figures" in answer && "result" in answer;
}

/**
 * Whether a policy's answer is the driver's (not a degraded or fallback result).
 *
 * @param answer What the failure policy answered.
 * @returns `true` for a {@link BatchAnswer}.
 */
export function isBatchAnswer(answer: unknown): answer is BatchAnswer {
  return typeof answer === "object" && answer !== null && Array.isArray((answer as BatchAnswer).each);
}
