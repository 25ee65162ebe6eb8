/**
 * `limitAll` and `checkAll`: the requests checked into calls (all or
 * nothing), planned, and run under the batch's failure policy (the
 * strictest of its limits').
 * @module
 */
import { checkFlag } from "./call.js";
import { laneOf } from "./coalesce.js";
import { isBatchAnswer } from "./decided.js";
import type { Probe } from "./decision-hook.js";
import { plan, run, type BatchAnswer, type Call, type Decided } from "./driver.js";
import { invalidRequest, mustBe, unknownField, wrongArgument } from "./errors.js";
import type { Internals } from "./limits.js";
import { BATCH_OPTIONS, checkedOptions, own, refusal, type BatchRequest } from "./options.js";
import { runRemote } from "./remote.js";
import { ownField } from "./store-call.js";
import type { RateLimitFigures, RateLimitResult, RateLimitStore } from "./types.js";

const BATCH_FIELDS = ["name", "key", "count", "reserve", "config"];

/**
 * `limitAll` (write) or `checkAll`, under the batch's failure policy.
 *
 * @param limiter The limiter's internals.
 * @param requests The limits, as given.
 * @param options `throws`, `figures`, as given.
 * @param write `limitAll` (true) or `checkAll`.
 * @param recorded The probe, when a hook is told.
 * @returns One result for the whole batch.
 */
export async function batchCall(
  limiter: Internals,
  requests: ReadonlyArray<BatchRequest>,
  options: { throws?: boolean; figures?: boolean },
  write: boolean,
  recorded: Probe | undefined,
): Promise<RateLimitResult & { figures?: RateLimitFigures[] }> {
  const fn = write ? "limitAll" : "checkAll";
  const checked = checkedOptions(fn, options, BATCH_OPTIONS);
  const throws = own<boolean>(checked, "throws");
  const figures = checkFlag(fn, "figures", own(checked, "figures"));
  let isArray = false;
  try {
    isArray = Array.isArray(requests);
  } catch {
    isArray = false;
  }
  if (!isArray) throw wrongArgument(fn, "requests", mustBe("requests", "an array of limits", requests));
  const { requests: core, policy } = limiter.failure.batchPolicy(requests);
  const calls: Call[] = [];
  for (const request of core as unknown[]) {
    if (typeof request !== "object" || request === null) throw wrongArgument(fn, "requests", mustBe("requests", "an array of objects", request));
    let names: string[];
    try {
      names = Object.keys(request);
    } catch {
      throw wrongArgument(fn, "requests", "requests must be an array of plain objects (listing a request's fields threw) (got an object)");
    }
    for (const field of names) if (!BATCH_FIELDS.includes(field)) throw invalidRequest(fn, field, unknownField(field, BATCH_FIELDS, "field", " of a limitAll item"));
    // Own fields only: an inherited one (a polluted Object.prototype.count) is never read.
    const field = (name: string) => ownField(request, name)?.[1];
    calls.push(limiter.call(field("name"), { key: field("key"), count: field("count"), reserve: field("reserve") }, field("config"), write));
  }
  const planned = plan(calls, true, figures);
  if (recorded !== undefined) {
    recorded.calls = calls;
    recorded.policy = policy;
    recorded.batchSize = calls.length;
    recorded.start = performance.now();
  }
  // A batch with a sliding window runs in the store's transaction (the ports decide the other kinds).
  const remote = limiter.remote && !calls.some((call) => call.limit.sliding);
  const answer = await limiter.failure.run<BatchAnswer | RateLimitResult>(
    policy,
    (store) => (remote ? runRemote(store as Required<RateLimitStore>, planned) : run(store, planned)),
    (fallback) => (write ? fallback.limitAll(core, { figures }) : fallback.checkAll(core, { figures })),
    remote,
    calls.map((call) => laneOf(call.name, call.key)),
  );
  if (recorded !== undefined) {
    recorded.end = performance.now();
    recorded.result = isBatchAnswer(answer) ? answer.batch : answer;
    if (isBatchAnswer(answer) && answer.batchSize !== undefined) recorded.batchSize = answer.batchSize;
  }
  const names = calls.map((call) => call.name).join(", ");
  if (!isBatchAnswer(answer)) return refusal(names, answer, throws);
  const result: RateLimitResult & { figures?: RateLimitFigures[] } = figures
    ? { ...answer.batch, figures: answer.each.map((decided) => (decided as Decided).figures!) }
    : answer.batch;
  return refusal(names, result, throws);
}
