// The Worker of the workerd settle suites (tests/hosts/settle-durable-object.test.mjs and
// tests/sql/settle-d1.test.mjs): it runs a scenario of ./scenarios.mjs inside workerd, on D1
// (d1Store: each settle one batch that re-checks what it read) or on a Durable Object (each call
// one request to the object through rateLimiterClient), and answers what the scenario saw.
import { RateLimiter } from "ratebound";
import { RateLimiterObject, rateLimiterClient, rateLimiterObject } from "ratebound/durable-object";
import { createTable, d1Store, d1Transaction } from "ratebound/sqlite";
import * as scenarios from "./scenarios.mjs";

const DAY = 86_400_000;
const TAG = { "token bucket": "TokenBucket", "fixed window": "FixedWindow" };

/** The ready object with the scenarios' limits, one class per algorithm and storage backend. */
export class SettleTokenBucket extends rateLimiterObject(scenarios.settleLimits("token bucket", DAY)) {}
export class SettleFixedWindow extends rateLimiterObject(scenarios.settleLimits("fixed window", DAY)) {}
export class SettleTokenBucketKv extends rateLimiterObject(scenarios.settleLimits("token bucket", DAY)) {}
export class SettleFixedWindowKv extends rateLimiterObject(scenarios.settleLimits("fixed window", DAY)) {}

/**
 * The same object over storage whose reads wait on a timer before answering: a timer opens the
 * input gate, so concurrent requests decide on what they read before any of them writes.
 */
function racy(kind) {
  const limits = scenarios.settleLimits(kind, DAY);
  return class extends RateLimiterObject {
    constructor(ctx, env) {
      const { storage } = ctx;
      const slow = {
        get: async (key) => {
          const value = await storage.get(key);
          await new Promise((resolve) => setTimeout(resolve, 5));
          return value;
        },
        put: (key, value) => storage.put(key, value),
        delete: (key) => storage.delete(key),
      };
      super({ storage: slow }, env, limits);
    }
  };
}
/** Calendar quotas (scenarios.calendarQuota): a year from Feb 29, 2024. */
export class SettleCalendar extends rateLimiterObject(scenarios.calendarLimits("fixed window", scenarios.CALENDAR_ANCHOR)) {}
export class SettleCalendarKv extends rateLimiterObject(scenarios.calendarLimits("fixed window", scenarios.CALENDAR_ANCHOR)) {}

export class RacyTokenBucket extends racy("token bucket") {}
export class RacyFixedWindow extends racy("fixed window") {}

/** What a scenario runs on: D1, or one Durable Object per run. */
function harness(env, { host, kind, backend }) {
  if (host === "d1") {
    const clock = { now: 1_700_000_000_000 };
    const options = { now: () => clock.now };
    return {
      kind,
      clock,
      connect: (limits) => new RateLimiter(d1Store(env.DB, { maxAttempts: 100 }), limits, options),
      bare: (limits) => new RateLimiter(scenarios.bareStore(d1Store(env.DB)), limits, options),
      /** A grant taken in a d1Transaction whose body then throws: its data, its batch never sent. */
      rollBack: async (limits, name, given) => {
        let data;
        const failed = await d1Transaction(env.DB, async (tx) => {
          data = (await new RateLimiter(tx, limits, options).limit(name, given)).grant?.data;
          throw new Error("the app failed after the grant");
        }).catch((error) => error);
        if (failed?.message !== "the app failed after the grant") throw failed ?? new Error("the transaction did not fail");
        return data;
      },
    };
  }
  const object = `run-${crypto.randomUUID()}`;
  const stub = (binding) => env[binding].get(env[binding].idFromName(object));
  const binding = `SETTLE_${TAG[kind]}${backend === "kv" ? "_KV" : ""}`;
  return {
    kind,
    connect: () => rateLimiterClient(stub(binding)),
    bare: () => rateLimiterClient(stub(`RACY_${TAG[kind]}`)),
    calendar: { connect: () => rateLimiterClient(stub(`SETTLE_Calendar${backend === "kv" ? "_KV" : ""}`)) },
  };
}

/** The ready object's raw answers to settle ops: status, and result or error code. */
async function statuses(env) {
  const stub = env.SETTLE_TokenBucket.get(env.SETTLE_TokenBucket.idFromName(`raw-${crypto.randomUUID()}`));
  const send = async (request) => {
    const response = await stub.fetch("https://ratebound.internal/", { method: "POST", body: JSON.stringify(request) });
    const { result, error } = await response.json();
    return { status: response.status, result, code: error?.code };
  };
  const granted = await send({ op: "limit", name: "llm", options: { key: "raw", count: 300, grant: true } });
  const grant = granted.result.grant;
  return {
    granted,
    plain: await send({ op: "limit", name: "llm", options: { key: "raw", count: 1 } }),
    badGrant: await send({ op: "settle", grant: "not data", actual: 0 }),
    negative: await send({ op: "settle", grant, actual: -1 }),
    settled: await send({ op: "settle", grant, actual: 100 }),
    again: await send({ op: "settle", grant, actual: 0 }),
  };
}

export default {
  async fetch(request, env) {
    const body = await request.json();
    try {
      if (body.setup) return Response.json({ result: await createTable(env.DB) ?? null });
      if (body.statuses) return Response.json({ result: await statuses(env) });
      const scenario = scenarios[body.scenario];
      if (typeof scenario !== "function") throw new Error(`no scenario ${body.scenario}`);
      const seen = await scenario(harness(env, body));
      if (seen === undefined || typeof seen === "number") return Response.json({ result: seen ?? null });
      return Response.json({ result: { won: seen.won.length, codes: seen.codes, refunded: seen.refunded } });
    } catch (error) {
      return Response.json({ error: { message: String(error?.message ?? error), stack: String(error?.stack ?? "") } });
    }
  },
};
