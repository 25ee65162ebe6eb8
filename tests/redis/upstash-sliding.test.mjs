// The sliding window against @upstash/ratelimit's own: the same random traffic (random counts,
// random spacing, several keys and limits) through ratebound's `{ kind: "sliding window" }` on
// `redisStore` and through `Ratelimit.slidingWindow` (its single-region Lua script) on the same
// redis-server, at the same instants, and every decision compared: ok/success, remaining, reset.
//
// Upstash reads `Date.now()` inside `limit`; this process replaces `Date.now` with a fake clock
// that both read, so the traffic can jump across windows without waiting. Upstash talks to Redis
// through the REST bridge of tests/redis/servers.mjs (which strips the `#!lua flags=…` line that
// Debian's redis-server 7.0 refuses).
//
// One difference is by design: Upstash adds a call's count (INCRBY) before its second check, so a
// call whose count overshoots what is left is refused *and charged*; ratebound writes nothing on a
// refusal. Both refuse that call; this test then takes Upstash's charge back (DECRBY) so the two
// go on from equal states, and counts how often it happened.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Ratelimit } from "@upstash/ratelimit";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis, startUpstashBridge } from "./servers.mjs";
import { seeded } from "../js/helpers.mjs";

const CALLS = 20_000;
const LIMITS = [
  { name: "perSecond", rate: 10, period: 1_000 },
  { name: "perFive", rate: 7, period: 5_000 },
  { name: "bulk", rate: 100, period: 2_000 },
];
const KEYS = ["ada", "bob", "cy"];

let redis;
let bridge;
let direct;
const realNow = Date.now;

before(async () => {
  redis = await startRedis();
  bridge = await startUpstashBridge(redis.url, { stripShebang: true });
  direct = createClient({ url: redis.url });
  await direct.connect();
});

after(async () => {
  Date.now = realNow;
  await direct?.quit();
  await bridge?.stop();
  redis?.stop();
});

test(`${CALLS} random calls decide as @upstash/ratelimit's slidingWindow: ok, remaining and reset`, async () => {
  const random = seeded(0x51d1);
  let now = 1_764_000_000_000 + Math.floor(random() * 1e6);
  Date.now = () => now;
  const upstash = new UpstashRedis({ url: bridge.url, token: "unused", enableAutoPipelining: false });
  const contenders = LIMITS.map(({ name, rate, period }) => ({
    name,
    rate,
    period,
    prefix: `upstash-${name}`,
    theirs: new Ratelimit({ redis: upstash, limiter: Ratelimit.slidingWindow(rate, `${period} ms`), prefix: `upstash-${name}`, ephemeralCache: false, analytics: false }),
  }));
  const limits = Object.fromEntries(LIMITS.map(({ name, rate, period }) => [name, { kind: "sliding window", rate, period }]));
  const ours = new RateLimiter(redisStore(direct, { prefix: "ours:" }), limits, { now: () => now });
  const seen = { granted: 0, refused: 0, charged: 0, counts: new Set() };
  for (let call = 0; call < CALLS; call++) {
    const limit = contenders[Math.floor(random() * contenders.length)];
    const key = KEYS[Math.floor(random() * KEYS.length)];
    // Mostly steps of a few ms (each key and limit sees a call every ~100 ms), at times a jump over windows.
    const step = random() < 0.99 ? Math.floor(random() * 25) : Math.floor(random() * 3 * limit.period);
    now += step;
    // Counts 0 to rate: mostly 1, often more (Upstash's `rate` option), at times all of it.
    const roll = random();
    const count = roll < 0.6 ? 1 : roll < 0.95 ? Math.floor(random() * (limit.rate / 2)) + 1 : roll < 0.97 ? 0 : limit.rate;
    seen.counts.add(count);
    const currentKey = `${limit.prefix}:${key}:${Math.floor(now / limit.period)}`;
    const before = Number((await direct.get(currentKey)) ?? 0);
    // Different keys of one server: the two may run at once.
    const [theirs, mine] = await Promise.all([limit.theirs.limit(key, { rate: count }), ours.limit(limit.name, { key, count, figures: true })]);
    const where = `call ${call}: ${limit.name} ${key} count ${count} at ${now} (${now % limit.period} ms into its window)`;
    assert.equal(mine.ok, theirs.success, `${where}: ok ${mine.ok}, Upstash ${theirs.success}`);
    assert.equal(mine.figures.limit, theirs.limit, where);
    // Upstash's reset is the end of the current window (ms since the epoch); ours the seconds to it, rounded up.
    assert.equal(mine.figures.reset, Math.ceil((theirs.reset - now) / 1000), `${where}: reset`);
    if (mine.ok) {
      seen.granted++;
      assert.equal(mine.figures.remaining, theirs.remaining, `${where}: remaining ${mine.figures.remaining}, Upstash ${theirs.remaining}`);
      assert.equal(mine.retryAfter, undefined, where);
      continue;
    }
    seen.refused++;
    assert.equal(theirs.remaining, 0, where);
    assert.ok(mine.retryAfter >= 1, where);
    const after = Number((await direct.get(currentKey)) ?? 0);
    if (after === before) {
      // Refused at its first check (the window was full): neither wrote, both show nothing left.
      assert.equal(mine.figures.remaining, 0, `${where}: remaining`);
      continue;
    }
    // Refused at its second check: Upstash charged the count anyway; ours shows what is left, less than asked.
    assert.equal(after, before + count, where);
    assert.ok(mine.figures.remaining < count, `${where}: ${mine.figures.remaining} left`);
    seen.charged++;
    await direct.decrBy(currentKey, count);
  }
  Date.now = realNow;
  // The traffic was what it claims: both answers, and refusals of both kinds, many times.
  assert.ok(seen.granted > 5_000 && seen.refused > 2_000 && seen.charged > 200, JSON.stringify({ ...seen, counts: seen.counts.size }));
  assert.ok(seen.counts.has(0) && seen.counts.has(100), [...seen.counts].join(","));
  console.log(`# granted ${seen.granted}, refused ${seen.refused} (${seen.charged} of them charged by Upstash and taken back)`);
});
