// The RateLimit header fields of drafts 11 and 10 as an independent RFC 9651 parser reads them
// (structured-headers, not the code that writes them): every member and parameter checked against
// the draft, for both algorithms, granted and refused, with a partition key (a keyed limit) and
// without (a limit all keys share). draft-11 (draft-ietf-httpapi-ratelimit-headers-11):
// RateLimit-Policy items are Strings with q (Integer, required), qu (String, optional, default
// "requests"), w (Integer > 0), pk (Byte Sequence); RateLimit items r (Integer >= 0, required),
// t (the effective window, Integer >= 0), pk.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { parseList } from "structured-headers";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import * as http from "../../pkg/dist/http.js";

// NOW is 20 s into a minute: a fixed window that starts at 0 ends in 40 s.
const NOW = 1_700_000_000_000;
const LIMITS = {
  "token bucket": { api: { kind: "token bucket", rate: 2, period: 60_000 }, global: { kind: "token bucket", rate: 100, period: 60_000 } },
  "fixed window": { api: { kind: "fixed window", rate: 2, period: 60_000, start: 0 }, global: { kind: "fixed window", rate: 100, period: 60_000, start: 0 } },
};
// Per algorithm, the api limit's figures after each of three requests (the third refused), and global's after the first.
const EXPECTED = {
  "token bucket": {
    // r: 1, 0, 0. draft-11's t: the next whole token, 30 s away each time (the third: its wait, 30 s).
    // draft-10's t: until full, 30 s then 60 s.
    api: [
      { r: 1, t11: 30, t10: 30 },
      { r: 0, t11: 30, t10: 60 },
      { r: 0, t11: 30, t10: 60, retryAfter: 30 },
    ],
    // 99 left, the next token in 0.6 s (shown as 1), full in 0.6 s.
    global: { r: 99, t11: 1, t10: 1 },
  },
  "fixed window": {
    api: [
      { r: 1, t11: 40, t10: 40 },
      { r: 0, t11: 40, t10: 40 },
      { r: 0, t11: 40, t10: 40, retryAfter: 40 },
    ],
    global: { r: 99, t11: 40, t10: 40 },
  },
};
const USER = "ada@example.com";
/** The documented partition key: the first 12 hex digits of the key's SHA-256, as ASCII bytes. */
const pkOf = (key) => createHash("sha256").update(key).digest("hex").slice(0, 12);
const bytes = (value) => (value instanceof ArrayBuffer ? Buffer.from(value).toString("latin1") : assert.fail(`pk is not a Byte Sequence: ${value}`));

/** One field as an RFC 9651 List: each member's String value and its parameters as an object, in order. */
function members(headers, name) {
  const value = headers.get(name);
  assert.ok(value !== null, `${name} is written`);
  return parseList(value).map(([item, parameters]) => {
    assert.equal(typeof item, "string", `${name}'s items are Strings`);
    return [item, Object.fromEntries(parameters)];
  });
}

function guardOf(algorithm, headers, options = {}) {
  const limiter = new RateLimiter(new MemoryStore(), LIMITS[algorithm], { now: () => NOW });
  return http.httpGuard(limiter, ["api", { name: "global", keyed: false }], { headers, key: (request) => request.headers.get("x-user") ?? undefined, ...options });
}

const request = () => new Request("http://localhost/", { headers: { "x-user": USER } });

for (const algorithm of Object.keys(LIMITS)) {
  describe(`${algorithm}: the header fields through an RFC 9651 parser`, () => {
    test("draft-11: q, w and pk on policies, r, t (the effective window) and pk on service limits, granted and refused", async () => {
      const guard = guardOf(algorithm, "draft-11");
      for (const [index, api] of EXPECTED[algorithm].api.entries()) {
        const answer = await guard(request());
        const headers = answer.ok ? answer.headers : answer.response.headers;
        assert.equal(answer.ok, api.retryAfter === undefined, `request ${index + 1}`);
        assert.deepEqual(members(headers, "RateLimit-Policy"), [
          ["api", { q: 2, w: 60, pk: members(headers, "RateLimit-Policy")[0][1].pk }],
          ["global", { q: 100, w: 60 }],
        ]);
        const limits = members(headers, "RateLimit");
        const global = index === 0 ? EXPECTED[algorithm].global : undefined;
        assert.deepEqual(limits.map(([name, { r, t }]) => [name, r, t]).slice(0, 1), [["api", api.r, api.t11]], `request ${index + 1}`);
        if (global !== undefined) assert.deepEqual(limits[1], ["global", { r: global.r, t: global.t11 }]);
        assert.deepEqual(Object.keys(limits[0][1]), ["r", "t", "pk"]);
        assert.deepEqual(Object.keys(limits[1][1]), ["r", "t"], "a limit all keys share has no partition key");
        // The partition key is a Byte Sequence, the same on both fields, and the documented one.
        assert.equal(bytes(limits[0][1].pk), pkOf(USER));
        assert.equal(bytes(members(headers, "RateLimit-Policy")[0][1].pk), pkOf(USER));
        if (api.retryAfter !== undefined) {
          assert.equal(answer.response.status, 429);
          assert.equal(headers.get("Retry-After"), String(api.retryAfter));
          // §6: Retry-After never names a point earlier than the effective window's end.
          assert.ok(api.retryAfter >= api.t11);
          const problem = await answer.response.json();
          assert.equal(problem.type, "https://iana.org/assignments/http-problem-types#quota-exceeded");
          assert.deepEqual(problem["violated-policies"], ["api"]);
        }
      }
    });

    test("draft-11: a quota unit other than requests is written as qu, a String", async () => {
      const answer = await guardOf(algorithm, "draft-11", { quotaUnit: "content-bytes" })(request());
      const policies = members(answer.headers, "RateLimit-Policy");
      assert.deepEqual(Object.keys(policies[0][1]), ["q", "qu", "w", "pk"]);
      assert.deepEqual(policies.map(([, { qu }]) => qu), ["content-bytes", "content-bytes"]);
      assert.throws(() => guardOf(algorithm, "draft-11", { quotaUnit: "bytes" }), { code: "HTTP_GUARD_CONFIG", message: /quotaUnit must be one of requests, content-bytes, concurrent-requests/ });
    });

    test("draft-11: a refused request's Retry-After is never earlier than any limit's effective window", async () => {
      // api refuses for 30 s (bucket) or 40 s (window); a daily limit's window would say hours.
      const limits = { ...LIMITS[algorithm], daily: { kind: "fixed window", rate: 1000, period: 86_400_000, start: 0 } };
      const limiter = new RateLimiter(new MemoryStore(), limits, { now: () => NOW });
      const guard = http.httpGuard(limiter, ["api", "daily"], { headers: "draft-11", key: (incoming) => incoming.headers.get("x-user") ?? undefined });
      const granted = await guard(request());
      assert.ok(members(granted.headers, "RateLimit")[1][1].t > 3600, "granted: daily's effective window is its window's end");
      await guard(request());
      const refused = await guard(request());
      const retryAfter = Number(refused.response.headers.get("Retry-After"));
      assert.equal(retryAfter, EXPECTED[algorithm].api[2].retryAfter);
      for (const [name, { t }] of members(refused.response.headers, "RateLimit")) assert.ok(t <= retryAfter, `${name}: t=${t} past Retry-After ${retryAfter}`);
    });

    test("draft-10: q and w, r and t (until the limit resets), no partition key", async () => {
      const guard = guardOf(algorithm, "draft-10");
      for (const [index, api] of EXPECTED[algorithm].api.entries()) {
        const answer = await guard(request());
        const headers = answer.ok ? answer.headers : answer.response.headers;
        assert.deepEqual(members(headers, "RateLimit-Policy"), [
          ["api", { q: 2, w: 60 }],
          ["global", { q: 100, w: 60 }],
        ]);
        const limits = members(headers, "RateLimit");
        assert.deepEqual(limits[0], ["api", { r: api.r, t: api.t10 }], `request ${index + 1}`);
        if (index === 0) assert.deepEqual(limits[1], ["global", { r: EXPECTED[algorithm].global.r, t: EXPECTED[algorithm].global.t10 }]);
      }
    });
  });
}
