// The traffic of the coalescing tests (issue 22 item 3), shared by every host that cannot decide
// next to its data (Deno KV in Node and Deno, D1 in workerd, Convex in convex-test): not a test file
// itself, and it imports nothing, so the same file runs in every runtime.
//
// A host fires the calls at once on one key (`atOnce`) and one after another on a fresh key
// (`oneAtATime`), each run on a clock that moves one second per call made, so the two runs see the
// same instants: coalesced, the answers are equal call for call.

/** The clock's start. */
export const NOW = 1_700_000_000_000;

/**
 * `hot` holds 10 tokens (one a day back), and may go 4 into debt for callers that reserve;
 * `hotWindow` is the same as a fixed window; `hotSliding` is a sliding window of 10 per 20 s
 * (the clock below crosses its windows, so the previous window's weight is in play).
 */
export const COALESCE_LIMITS = {
  hot: { kind: "token bucket", rate: 10, period: 86_400_000, maxReserved: 4 },
  hotWindow: { kind: "fixed window", rate: 10, period: 86_400_000, start: 0, maxReserved: 4 },
  hotSliding: { kind: "sliding window", rate: 10, period: 20_000 },
};

/** Every limit the coalescing tests run, by name. */
export const COALESCE_NAMES = Object.keys(COALESCE_LIMITS);

/** A clock that moves one second per reading: the n-th call made sees `NOW + n s` in every run. */
export function steppingClock() {
  let now = NOW;
  return () => (now += 1000);
}

/** `n` calls that each take one token of `name` for `key`. */
export function plainCalls(n, key, name = "hot") {
  return Array.from({ length: n }, () => ({ op: "limit", name, options: { key } }));
}

/**
 * `n` calls of every kind on `name` for `key`: limits of 1 to 3 tokens, some reserving (up to the
 * debt allowed; a sliding window never reserves), some checks (which write nothing), some asking for figures.
 */
export function mixedCalls(n, key, name = "hot") {
  return Array.from({ length: n }, (_, index) => ({
    op: index % 5 === 3 ? "check" : "limit",
    name,
    options: {
      key,
      count: 1 + (index % 3),
      ...(index % 4 === 1 && COALESCE_LIMITS[name]?.kind !== "sliding window" ? { reserve: true } : {}),
      ...(index % 6 === 0 ? { figures: true } : {}),
    },
  }));
}

/** A call's answer as plain data, or its error's code. */
const settled = (promise) =>
  promise.then(
    (result) => JSON.parse(JSON.stringify(result)),
    (error) => ({ error: error?.code ?? error?.data?.code ?? String(error?.message ?? error) }),
  );

/** `calls` on `key`, all made at once (`limiterFor(index)` makes or shares each call's limiter). */
export function atOnce(limiterFor, calls) {
  return Promise.all(calls.map((call, index) => settled(limiterFor(index)[call.op](call.name, call.options))));
}

/** The same calls one after another, each awaited before the next is made. */
export async function oneAtATime(limiterFor, calls) {
  const answers = [];
  for (const [index, call] of calls.entries()) answers.push(await settled(limiterFor(index)[call.op](call.name, call.options)));
  return answers;
}

/** Calls with another key (for a serial run beside the concurrent one). */
export const withKey = (calls, key) => calls.map((call) => ({ ...call, options: { ...call.options, key } }));

/** How many answers admitted. */
export const admitted = (answers) => answers.filter((answer) => answer.ok === true).length;
