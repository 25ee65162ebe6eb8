// Scenarios of acquire / acquireAll, run on every host (not a test file itself): in memory
// (tests/js/acquire.test.mjs), on a real redis-server (tests/redis/acquire.test.mjs) and a real
// PostgreSQL server (tests/sql/acquire-postgres.test.mjs). A harness is
// `{ kind, connect(limits, options) → RateLimiter, roundTrips() → number }`: `connect` makes a
// limiter on the host (options are the limiter's: `now`), `roundTrips` counts the host's round
// trips so far (a counting wrapper around the client).
import assert from "node:assert/strict";
import { calculateRateLimit } from "../../pkg/dist/node.js";

/** A limit of `kind`: a token bucket, or a fixed window aligned to 0 (its windows are checkable). */
export function limitOf(kind, fields) {
  return kind === "fixed window" ? { kind, start: 0, ...fields } : { kind, ...fields };
}

/** The most admissions at `times` (ms) in any half-open window of `width` ms. */
export function mostInWindow(times, width) {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < sorted.length; last++) {
    while (sorted[last] - sorted[first] >= width) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** The most admissions in any one of the windows `[k * width, (k + 1) * width)` (a fixed window's own, aligned to 0). */
export function mostInAlignedWindow(times, width) {
  const counts = new Map();
  for (const time of times) counts.set(Math.floor(time / width), (counts.get(Math.floor(time / width)) ?? 0) + 1);
  return Math.max(0, ...counts.values());
}

/** A clock that only moves when told: `{ now, read }`. */
function frozenClock() {
  const clock = { now: 1_700_000_000_000 };
  clock.read = () => clock.now;
  return clock;
}

/** Scenarios only token buckets run: pacing several limits at once is a token bucket's job (docs/outbound.md). */
export const TOKEN_BUCKET_ONLY = new Set(["acquireAll paces two limits at once: neither passes its bound in any period"]);

/** The scenarios a limit of `kind` runs, as `[name, scenario]`. */
export function scenariosFor(kind) {
  return Object.entries(SCENARIOS).filter(([name]) => kind === "token bucket" || !TOKEN_BUCKET_ONLY.has(name));
}

export const SCENARIOS = {
  /**
   * 6 workers acquire in a loop for 1.5 s on one key. Every admission time is taken by the
   * limiter's clock when acquire resolves, so an early wake-up would show: a token bucket never
   * admits more than capacity + rate in any period (4 + 10 per 500 ms), a fixed window never more
   * than its rate in one of its windows; and the limit is used, not wasted (at least 80 % of that).
   */
  async "concurrent acquires never pass the bound in any period, and use most of it"({ kind, connect }) {
    const period = 500;
    const limits = { paced: kind === "token bucket" ? limitOf(kind, { rate: 10, period, capacity: 4, maxReserved: 12 }) : limitOf(kind, { rate: 8, period, maxReserved: 16 }) };
    const workers = await Promise.all(Array.from({ length: 6 }, () => connect(limits, { now: Date.now })));
    const admitted = [];
    const started = Date.now();
    const until = started + 1_500;
    await Promise.all(
      workers.map(async (limiter) => {
        while (Date.now() < until) {
          await limiter.acquire("paced", { key: "api.example.com" });
          admitted.push(Date.now());
        }
      }),
    );
    const elapsed = Math.max(...admitted) - started;
    if (kind === "token bucket") {
      assert.ok(mostInWindow(admitted, period) <= 4 + 10, `at most 14 in any ${period} ms (got ${mostInWindow(admitted, period)})`);
      const bound = 4 + (10 * elapsed) / period;
      assert.ok(admitted.length >= 0.8 * bound, `admitted ${admitted.length} of at most ${bound.toFixed(1)} in ${elapsed} ms`);
    } else {
      assert.ok(mostInAlignedWindow(admitted, period) <= 8, `at most 8 in one window (got ${mostInAlignedWindow(admitted, period)})`);
      assert.ok(mostInWindow(admitted, period) <= 16, "at most twice the rate in any period");
      const windows = Math.floor(Math.max(...admitted) / period) - Math.floor(started / period) + 1;
      assert.ok(admitted.length >= 0.8 * 8 * (windows - 1), `admitted ${admitted.length} over ${windows} windows`);
    }
  },

  /**
   * One caller, one token at a time on a limit of capacity 1: at each admission the limit has
   * paid back the reservation (its value, projected to that instant by the limiter's clock, is
   * >= 0: never early); each turn comes no later than a token's time after the last plus a
   * scheduling delay (the core's wait, slept once); each acquire is one round trip.
   */
  async "sequential turns are never early, come one token apart, and cost one round trip each"({ kind, connect, roundTrips }) {
    const config = limitOf(kind, { rate: 1, period: 60, capacity: 1 });
    const limiter = await connect({ spaced: config }, { now: Date.now });
    await limiter.acquire("spaced"); // the first: nothing to wait for (and the store's first contact)
    let trips = 0;
    const times = [Date.now()];
    const values = [];
    for (let turn = 0; turn < 8; turn++) {
      const before = roundTrips();
      await limiter.acquire("spaced");
      const admitted = Date.now();
      trips += roundTrips() - before;
      times.push(admitted);
      const { value, ts } = await limiter.getValue("spaced");
      values.push(calculateRateLimit({ value, ts }, config, admitted).value);
    }
    assert.ok(values.every((value) => value >= 0), `never early: the limit's value at each admission ${values.map((value) => value.toFixed(3)).join(", ")}`);
    // No later than one token's time after the last admission, plus the store's round trip (the
    // wait counts from its answer, so it is never early) and a scheduling delay: the core's wait,
    // slept once. (An admission that was itself late lets the next come sooner.)
    for (let index = 1; index < times.length; index++) {
      const gap = times[index] - times[index - 1];
      assert.ok(gap < 60 + 100, `turn ${index} came ${gap} ms after the last (a token takes 60 ms): ${times.map((time) => time % 60_000).join(", ")}`);
    }
    assert.equal(trips, 8, `8 acquires that each waited: ${trips} round trips`);
  },

  /**
   * acquireAll paces two limits together (requests, and tokens of 1 to 5 per call): a call starts
   * at the later of its two turns, so each limit's capacity keeps headroom for the other's longest
   * wait (docs/outbound.md, "The bound"): requests 10 per 500 ms, capacity 10, waits at most
   * 150 ms (maxReserved 3); tokens 40 per 500 ms, capacity 30, waits at most 125 ms. Neither passes
   * capacity + rate in any 500 ms.
   */
  async "acquireAll paces two limits at once: neither passes its bound in any period"({ kind, connect }) {
    const period = 500;
    const limits = {
      requests: limitOf(kind, { rate: 10, period, capacity: 10, maxReserved: 3 }),
      tokens: limitOf(kind, { rate: 40, period, capacity: 30, maxReserved: 10 }),
    };
    const workers = await Promise.all(Array.from({ length: 4 }, () => connect(limits, { now: Date.now })));
    const admitted = [];
    const until = Date.now() + 1_200;
    let seed = 7;
    await Promise.all(
      workers.map(async (limiter) => {
        while (Date.now() < until) {
          seed = (seed * 48271) % 2147483647;
          const tokens = 1 + (seed % 5);
          await limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: tokens }]);
          admitted.push({ at: Date.now(), tokens });
        }
      }),
    );
    const sorted = admitted.sort((a, b) => a.at - b.at);
    let mostTokens = 0;
    for (let first = 0, last = 0, sum = 0; last < sorted.length; last++) {
      sum += sorted[last].tokens;
      while (sorted[last].at - sorted[first].at >= period) sum -= sorted[first++].tokens;
      mostTokens = Math.max(mostTokens, sum);
    }
    assert.ok(mostInWindow(sorted.map((call) => call.at), period) <= 20, `requests: at most 20 in any ${period} ms (got ${mostInWindow(sorted.map((call) => call.at), period)})`);
    assert.ok(mostTokens <= 70, `tokens: at most 70 in any ${period} ms (got ${mostTokens})`);
    assert.ok(sorted.length >= 20, `${sorted.length} calls admitted`);
  },

  /** A turn past `maxWait` rejects at once with WAIT_TOO_LONG, and the limit holds what it held. */
  async "a turn past maxWait rejects with WAIT_TOO_LONG and charges nothing"({ kind, connect }) {
    const clock = frozenClock();
    const limiter = await connect({ tight: limitOf(kind, { rate: 2, period: 1_000, maxReserved: 10 }) }, { now: clock.read });
    await limiter.acquire("tight", { key: "k", count: 2 });
    await limiter.limit("tight", { key: "k", count: 2, reserve: true }); // reserved: due a period later
    const before = await limiter.getValue("tight", { key: "k" });
    await assert.rejects(limiter.acquire("tight", { key: "k", count: 2, maxWait: 1_500 }), (error) => error.code === "WAIT_TOO_LONG" && error.field === "maxWait");
    await assert.rejects(limiter.acquire("tight", { key: "k", count: 1, maxWait: 0, grant: true }), { code: "WAIT_TOO_LONG" });
    const after = await limiter.getValue("tight", { key: "k" });
    assert.deepEqual([after.value, after.ts], [before.value, before.ts], "the limit holds what it held");
  },

  /** An abort while waiting rejects with ABORTED (the signal's reason as cause) and gives the reservation back. */
  async "an abort while waiting rejects with ABORTED and gives the reservation back"({ kind, connect }) {
    const clock = frozenClock();
    const limiter = await connect({ tight: limitOf(kind, { rate: 1, period: 1_000, maxReserved: 5 }) }, { now: clock.read });
    await limiter.acquire("tight");
    const before = await limiter.getValue("tight");
    const controller = new AbortController();
    const waiting = limiter.acquire("tight", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("shutting down")), 30);
    await assert.rejects(waiting, (error) => error.code === "ABORTED" && error.cause?.message === "shutting down");
    const after = await limiter.getValue("tight");
    assert.deepEqual([after.value, after.ts], [before.value, before.ts]);
    await assert.rejects(limiter.acquire("tight", { signal: AbortSignal.abort() }), { code: "ABORTED" });
    assert.deepEqual(Object.values(await limiter.getValue("tight")).slice(0, 2), [before.value, before.ts]);
  },

  /**
   * A limit without reservations (`maxReserved: 0`) is waited for by deciding again when its
   * refusal says: never early, one decision per refusal, no polling in between.
   */
  async "a limit without reservations is decided again at each refusal's retryAfter, never early"({ kind, connect, roundTrips }) {
    const limiter = await connect({ strict: limitOf(kind, { rate: 2, period: 200, maxReserved: 0 }) }, { now: Date.now });
    await limiter.acquire("strict", { count: 2 });
    const before = roundTrips();
    const asked = Date.now();
    const { waited } = await limiter.acquire("strict", { count: 2 });
    const trips = roundTrips() - before;
    assert.ok(Date.now() - asked >= (kind === "token bucket" ? 200 : 1) && waited <= 200 + 60, `waited ${waited} ms`);
    assert.ok(trips <= 3, `one refusal, then the grant (${trips} round trips)`);
  },

  /**
   * acquireAll: while one limit refuses, the other is not held; the turn is the longest wait;
   * past maxWait neither limit is charged.
   */
  async "acquireAll takes every limit or none, and waits the longest"({ kind, connect }) {
    const clock = frozenClock();
    const limits = { requests: limitOf(kind, { rate: 10, period: 1_000, maxReserved: 10 }), tokens: limitOf(kind, { rate: 100, period: 1_000, maxReserved: 100 }) };
    const limiter = await connect(limits, { now: clock.read });
    await limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: 100 }]);
    const values = async () => Promise.all(["requests", "tokens"].map(async (name) => (await limiter.getValue(name)).value));
    const before = await values();
    await assert.rejects(limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: 100 }], { maxWait: 500 }), { code: "WAIT_TOO_LONG" });
    assert.deepEqual(await values(), before, "past maxWait, neither limit is charged");
    const controller = new AbortController();
    const waiting = limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: 100 }], { signal: controller.signal, grant: true });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(waiting, { code: "ABORTED" });
    assert.deepEqual(await values(), before, "aborted, both are given back");
  },

  /** acquire with `grant: true` answers a grant that settles to what the call used. */
  async "acquire with grant: true settles an estimate down to what was used"({ kind, connect }) {
    const clock = frozenClock(); // settled at the instant of the charge: every unused token comes back
    const limiter = await connect({ tokens: limitOf(kind, { rate: 1_000, period: 60_000, maxReserved: 2_000 }) }, { now: clock.read });
    const { grant } = await limiter.acquire("tokens", { key: "team", count: 800, grant: true });
    const settled = await grant.settle(300);
    assert.equal(settled.refunded, 500);
    assert.equal((await limiter.getValue("tokens", { key: "team" })).value, 700, "300 used of 1,000");
  },
};
