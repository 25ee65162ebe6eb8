// Dry runs through the HTTP guard (issue 32, item 4): the guard's dryRun option, and a limit whose
// own config is a dry run. A request the limit would refuse proceeds (never a 429), its answer says
// what enforcing would have answered, the RateLimit fields show the would-be refusal's figures
// (read by an RFC 9651 parser), there is no Retry-After, and the limiter's hook sees the would-be
// refusal. Nothing is charged for it.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { parseList } from "structured-headers";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import * as http from "../../pkg/dist/http.js";

const NOW = 1_700_000_000_000;
const API = { kind: "token bucket", rate: 2, period: 60_000 };
const request = () => new Request("http://localhost/", { headers: { "x-user": "ada" } });
const key = (incoming) => incoming.headers.get("x-user") ?? undefined;
const serviceLimits = (headers) => parseList(headers.get("RateLimit")).map(([name, parameters]) => [name, Object.fromEntries(parameters)]);

describe("dry runs through httpGuard", () => {
  for (const [how, limits, options] of [
    ["the guard's dryRun option", { api: API }, { dryRun: true }],
    ["a limit whose config is a dry run", { api: { ...API, dryRun: true } }, {}],
  ]) {
    test(`${how}: a would-be refusal proceeds with its figures in the fields, no Retry-After, and the hook sees it`, async () => {
      const events = [];
      const limiter = new RateLimiter(new MemoryStore(), limits, { now: () => NOW, onDecision: (event) => events.push(event) });
      const guard = http.httpGuard(limiter, "api", { key, headers: "draft-11", ...options });
      const answers = [];
      for (let call = 0; call < 3; call++) answers.push(await guard(request()));
      assert.deepEqual(
        answers.map(({ ok, response, dryRun }) => ({ ok, response, dryRun })),
        [
          { ok: true, response: undefined, dryRun: { ok: true } },
          { ok: true, response: undefined, dryRun: { ok: true } },
          { ok: true, response: undefined, dryRun: { ok: false, retryAfter: 30_000 } },
        ],
      );
      const [, , wouldRefuse] = answers;
      assert.equal(wouldRefuse.headers.get("Retry-After"), null);
      assert.deepEqual(serviceLimits(wouldRefuse.headers).map(([name, { r, t }]) => [name, r, t]), [["api", 0, 30]]);
      assert.deepEqual(wouldRefuse.limits[0].figures.retryAfter, 30);
      assert.deepEqual(events.map(({ outcome, dryRun }) => `${outcome}/${dryRun}`), ["allowed/allowed", "allowed/allowed", "allowed/refused"]);
      // The would-be refusal charged nothing: the state is what two granted requests left.
      assert.equal((await limiter.getValue("api", { key: "ada" })).value, 0);
    });
  }

  test("with refundSuccessful, a would-be refusal has nothing to give back and its finish is a no-op", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { login: { ...API, dryRun: true } }, { now: () => NOW });
    const guard = http.httpGuard(limiter, "login", { key, refundSuccessful: true });
    for (let call = 0; call < 2; call++) await guard(request());
    const answer = await guard(request());
    assert.deepEqual([answer.ok, answer.dryRun], [true, { ok: false, retryAfter: 30_000 }]);
    await answer.finish(200);
    assert.equal((await limiter.getValue("login", { key: "ada" })).value, 0);
  });

  test("the guard's dryRun must be a boolean", () => {
    const limiter = new RateLimiter(new MemoryStore(), { api: API });
    assert.throws(() => http.httpGuard(limiter, "api", { dryRun: "yes" }), { code: "HTTP_GUARD_CONFIG", message: /options\.dryRun must be a boolean/ });
  });
});
