// The one scenario every runtime of the packaging test runs against the installed package:
// a few decisions, a rejection with its retryAfter, a reset, the default clock and randomness,
// and a bad config that must throw a real Error. Plain ECMAScript with no imports, so it runs
// unchanged in Node (ESM and require), Deno, Bun, workerd, Chromium and Convex.
// It throws on the first mismatch and returns what it saw.

/** JSON with sorted keys, so key order never makes two equal answers differ. */
function canonical(value) {
  return JSON.stringify(value, (_key, inner) =>
    inner && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.keys(inner).sort().map((key) => [key, inner[key]]))
      : inner,
  );
}

function expectEqual(actual, expected, what) {
  if (canonical(actual) !== canonical(expected)) {
    throw new Error(`${what}: expected ${canonical(expected)}, got ${canonical(actual)}`);
  }
}

function expect(condition, what) {
  if (!condition) throw new Error(what);
}

/** Runs `body`, which must throw; returns what it threw. */
async function thrownBy(body, what) {
  try {
    await body();
  } catch (error) {
    return error;
  }
  throw new Error(`${what}: expected an error, none was thrown`);
}

/** A thrown value that is an `Error` of this realm, with a message, a stack and a stable code. */
function expectRealError(error, { message, code }, what) {
  expect(error instanceof Error, `${what}: throws an Error, not ${Object.prototype.toString.call(error)} (${String(error)})`);
  expect(Object.prototype.toString.call(error) === "[object Error]", `${what}: the error is a genuine Error object`);
  expect(typeof error.stack === "string", `${what}: the error has a stack`);
  expectEqual({ message: error.message, code: error.code }, { message, code }, what);
}

/**
 * @param {Record<string, any>} api The package `ratebound` as this runtime loaded it (a namespace or a `require` result).
 * @returns {Promise<object>} What the scenario saw, as plain data.
 */
export async function scenario(api) {
  const { RateLimiter, MemoryStore, RateLimitError, isRateLimitError, SECOND, MINUTE, DAY } = api;
  expectEqual([SECOND, MINUTE, DAY], [1000, 60_000, 86_400_000], "time units");
  const seen = [];
  const decide = async (what, promise, expected) => {
    const result = await promise;
    expectEqual(result, expected, what);
    seen.push(result);
  };

  let now = 1_700_000_000_000;
  const limiter = new RateLimiter(
    new MemoryStore(),
    {
      sendMessage: { kind: "token bucket", rate: 2, period: SECOND },
      signups: { kind: "fixed window", rate: 3, period: MINUTE, start: 0 },
    },
    { now: () => now, random: () => 0.5 },
  );

  // Token bucket: two tokens, then a refusal that says when the next one arrives.
  await decide("first message", limiter.limit("sendMessage", { key: "ada" }), { ok: true });
  await decide("second message", limiter.limit("sendMessage", { key: "ada" }), { ok: true });
  await decide("third message is refused", limiter.limit("sendMessage", { key: "ada" }), { ok: false, retryAfter: 500 });
  await decide("another key is independent", limiter.check("sendMessage", { key: "bob" }), { ok: true });
  now += 250;
  await decide("a refusal writes nothing: half a token later", limiter.check("sendMessage", { key: "ada" }), { ok: false, retryAfter: 250 });

  const refusal = await thrownBy(() => limiter.limit("sendMessage", { key: "ada", throws: true }), "throws: true");
  expect(refusal instanceof Error && refusal instanceof RateLimitError, "throws: true throws a RateLimitError");
  expect(isRateLimitError(refusal), "isRateLimitError recognises the refusal");
  expectEqual(refusal.data, { kind: "RateLimited", name: "sendMessage", retryAfter: 250 }, "the refusal's data");

  await limiter.reset("sendMessage", { key: "ada" });
  await decide("after a reset the bucket is full", limiter.limit("sendMessage", { key: "ada", count: 2 }), { ok: true });

  // Fixed window aligned to 0: three per minute, then wait for the next window.
  for (let i = 0; i < 3; i++) await decide(`signup ${i + 1}`, limiter.limit("signups"), { ok: true });
  await decide("fourth signup waits for the next window", limiter.limit("signups"), { ok: false, retryAfter: 39_750 });

  // Errors are real Errors with stable codes, not strings or plain objects.
  const badConfig = await thrownBy(
    () => new RateLimiter(new MemoryStore(), { bad: { kind: "token bucket", rate: -1, period: SECOND } }),
    "a config with a negative rate",
  );
  expectRealError(badConfig, {
    message: 'Rate limit "bad": rate must be a positive finite number (got -1)',
    code: "INVALID_CONFIG",
  }, "a config with a negative rate");
  const tooMany = await thrownBy(() => limiter.limit("sendMessage", { count: 3 }), "a count above capacity");
  expectRealError(tooMany, { message: "Rate limit sendMessage count 3 exceeds 2.", code: "COUNT_EXCEEDS_MAX" }, "a count above capacity");

  // The default clock and randomness (a fixed window's random start is drawn inside the call).
  const daily = new RateLimiter(new MemoryStore(), { daily: { kind: "fixed window", rate: 1, period: DAY } });
  await decide("default clock and randomness: first", daily.limit("daily"), { ok: true });
  const second = await daily.limit("daily");
  expect(second.ok === false && second.retryAfter > 0 && second.retryAfter <= DAY, `default clock: second is refused within a day (got ${canonical(second)})`);

  return { decisions: seen.length, refusal: refusal.data, errors: [badConfig.code, tooMany.code] };
}
