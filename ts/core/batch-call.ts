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
import { asDryRun, reportOf } from "./dry-run.js";
import type { Policy } from "./failure-policy.js";

const BATCH_FIELDS = ["name", "key", "count", "reserve", "config"];

/** One batch's answer: the whole result (with each limit's figures when asked) and the batch it ran in. */
interface BatchOutcome {
  result: RateLimitResult & { figures?: RateLimitFigures[] };
  batchSize: number | undefined;
}

/**
 * `limitAll` (write) or `checkAll`, under the batch's failure policy. A batch whose limits are all
 * dry runs is decided as one and answered as a dry run (`dry-run.ts`). A batch that mixes them: its
 * enforced limits decide, all or none, as a batch of their own; its dry-run limits are then decided
 * as another (charged, all or none, only when the enforced ones granted; else only checked) and
 * reported in the answer's `dryRun`. Two store calls, not one transaction: see docs/concepts.md.
 *
 * @param limiter The limiter's internals.
 * @param requests The limits, as given.
 * @param options `throws`, `figures`, `dryRun`, as given.
 * @param write `limitAll` (true) or `checkAll`.
 * @param recorded The probe, when a hook is told.
 * @returns One result for the whole batch.
 */
export async function batchCall(
  limiter: Internals,
  requests: ReadonlyArray<BatchRequest>,
  options: { throws?: boolean; figures?: boolean; dryRun?: boolean },
  write: boolean,
  recorded: Probe | undefined,
): Promise<RateLimitResult & { figures?: RateLimitFigures[] }> {
  const fn = write ? "limitAll" : "checkAll";
  const checked = checkedOptions(fn, options, BATCH_OPTIONS);
  const throws = own<boolean>(checked, "throws");
  const figures = checkFlag(fn, "figures", own(checked, "figures"));
  const dryRunAll = checkFlag(fn, "dryRun", own(checked, "dryRun"));
  let isArray = false;
  try {
    isArray = Array.isArray(requests);
  } catch {
    isArray = false;
  }
  if (!isArray) throw wrongArgument(fn, "requests", mustBe("requests", "an array of limits", requests));
  const { requests: core, policy, dryRun } = limiter.failure.batchPolicy(requests);
  const dry = dryRun.map((each) => each || dryRunAll);
  const calls: Call[] = [];
  const callOf = (request: unknown, writes: boolean) => {
    const field = (name: string) => ownField(request, name)?.[1];
    return limiter.call(field("name"), { key: field("key"), count: field("count"), reserve: field("reserve") }, field("config"), writes);
  };
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
    calls.push(callOf(request, write));
  }
  const decide = (indexes: readonly number[], writes: boolean): Promise<BatchOutcome> => {
    const some = indexes.map((index) => (writes === write ? calls[index]! : callOf((core as unknown[])[index], writes)));
    const requested = indexes.map((index) => core[index]!);
    return decideBatch(limiter, some, requested, policy, figures, writes);
  };
  const all = calls.map((_, index) => index);
  if (recorded !== undefined) {
    recorded.calls = calls;
    recorded.policy = policy;
    recorded.batchSize = calls.length;
    if (dry.some(Boolean)) recorded.dryRun = dry;
  }
  const names = calls.map((call) => call.name).join(", ");
  if (!dry.some(Boolean) || dry.every(Boolean)) {
    if (recorded !== undefined) recorded.start = performance.now();
    const { result, batchSize } = await decide(all, write);
    if (recorded !== undefined) {
      recorded.end = performance.now();
      recorded.result = result;
      if (batchSize !== undefined) recorded.batchSize = batchSize;
    }
    return dry[0] === true ? asDryRun(result) : refusal(names, result, throws);
  }
  const enforced = all.filter((index) => !dry[index]);
  const dryRuns = all.filter((index) => dry[index]);
  if (recorded !== undefined) recorded.start = performance.now();
  const first = await decide(enforced, write);
  // Enforcing every limit would charge the dry-run ones only if all the batch passed.
  const second = await decide(dryRuns, write && first.result.ok);
  const { figures: _enforced, ...decided } = first.result;
  void _enforced;
  const result: RateLimitResult & { figures?: RateLimitFigures[] } = { ...decided, dryRun: reportOf(second.result) };
  // An open admission (the store failed under "open") decided nothing and has no figures: nor has the batch then.
  if (figures && first.result.figures !== undefined && second.result.figures !== undefined) {
    const each: RateLimitFigures[] = [];
    enforced.forEach((index, at) => (each[index] = first.result.figures![at]!));
    dryRuns.forEach((index, at) => (each[index] = second.result.figures![at]!));
    result.figures = each;
  }
  if (recorded !== undefined) {
    recorded.end = performance.now();
    recorded.result = first.result;
    recorded.results = all.map((index) => (dry[index] ? second.result : first.result));
  }
  return refusal(enforced.map((index) => calls[index]!.name).join(", "), result, throws);
}

/** Runs one batch of calls under the failure policy, its answer shaped as one result. */
async function decideBatch(
  limiter: Internals,
  calls: Call[],
  requests: ReadonlyArray<BatchRequest>,
  policy: Policy,
  figures: boolean,
  write: boolean,
): Promise<BatchOutcome> {
  const planned = plan(calls, true, figures);
  // A batch with a sliding window runs in the store's transaction (the ports decide the other kinds).
  const remote = limiter.remote && !calls.some((call) => call.limit.sliding);
  const answer = await limiter.failure.run<BatchAnswer | RateLimitResult>(
    policy,
    (store) => (remote ? runRemote(store as Required<RateLimitStore>, planned) : run(store, planned)),
    (fallback) => (write ? fallback.limitAll(requests, { figures }) : fallback.checkAll(requests, { figures })),
    remote,
    calls.map((call) => laneOf(call.name, call.key)),
  );
  if (!isBatchAnswer(answer)) return { result: answer, batchSize: undefined };
  const result = figures ? { ...answer.batch, figures: answer.each.map((decided) => (decided as Decided).figures!) } : answer.batch;
  return { result, batchSize: answer.batchSize };
}
