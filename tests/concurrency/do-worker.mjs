// The Worker of the Durable Object concurrency suite (tests/hosts/concurrency-durable-object.test.mjs):
// it runs a scenario of ./scenarios.mjs inside workerd, each call one request to a ready object
// (rateLimiterObject) through rateLimiterClient: one object per scenario run, SQLite-backed or
// key-value-backed. The racy object reads on a timer (which opens the input gate), so concurrent
// requests decide on what they read before any of them writes: the control. `Jobs` is an app's own
// object (RPC) with a RateLimiter over durableObjectStore(ctx.storage): its jobs hold a lease while
// they run; `RacyJobs` is the same object whose store's reads wait on a timer.
import { DurableObject } from "cloudflare:workers";
import { RateLimiter } from "ratebound";
import { RateLimiterObject, durableObjectStore, rateLimiterClient, rateLimiterObject } from "ratebound/durable-object";
import { bareStore } from "../settle/scenarios.mjs";
import * as scenarios from "./scenarios.mjs";

/** The configs the scenarios use (they run in real time here: a lease of 300 ms where they wait for an expiry). */
const CONFIGS = { C2: [2, 60_000], C1short: [1, 300], C1: [1, 60_000], C3: [3, 60_000], C64: [64, 60_000] };
const limitsOf = ([max, lease]) => ({ jobs: { kind: "concurrency", max, lease } });
const bindingOf = (limits) => Object.keys(CONFIGS).find((name) => JSON.stringify(limitsOf(CONFIGS[name])) === JSON.stringify(limits));

export class C2 extends rateLimiterObject(limitsOf(CONFIGS.C2)) {}
export class C1short extends rateLimiterObject(limitsOf(CONFIGS.C1short)) {}
export class C1 extends rateLimiterObject(limitsOf(CONFIGS.C1)) {}
export class C3 extends rateLimiterObject(limitsOf(CONFIGS.C3)) {}
export class C3Kv extends rateLimiterObject(limitsOf(CONFIGS.C3)) {}
export class C2Kv extends rateLimiterObject(limitsOf(CONFIGS.C2)) {}
export class C1shortKv extends rateLimiterObject(limitsOf(CONFIGS.C1short)) {}
export class C1Kv extends rateLimiterObject(limitsOf(CONFIGS.C1)) {}
export class C64 extends rateLimiterObject(limitsOf(CONFIGS.C64)) {}
export class C64Kv extends rateLimiterObject(limitsOf(CONFIGS.C64)) {}

export class Racy extends RateLimiterObject {
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
    super({ storage: slow }, env, limitsOf(CONFIGS.C3));
  }
}

/** The ready class with a concurrency limit and a rate limit: `acquire` takes only the first. */
export class Mixed extends rateLimiterObject({ jobs: { kind: "concurrency", max: 1, lease: 60_000 }, calls: { kind: "token bucket", rate: 1, period: 60_000 } }) {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `work`; a coded error comes back as `{ error: { code, field, message } }` (an RPC error keeps only its message). */
async function coded(work) {
  try {
    return await work();
  } catch (error) {
    if (typeof error?.code === "string") return { error: { code: error.code, field: error.field, message: error.message } };
    throw error;
  }
}
/** An RPC answer, its coded error thrown again with its code. */
const uncoded = (answer) => {
  if (answer?.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code, field: answer.error.field });
  return answer;
};

/**
 * An app's own object: a RateLimiter over its own storage (`durableObjectStore(ctx.storage)`),
 * built per set of limits the caller names (the scenarios use several). `limit`, `release` and
 * `extend` are RPC methods answering a lease as its data; `runJob` holds a lease while the job runs
 * (a timer, which lets other requests in), storing the job beside it, and counts the jobs running.
 */
export class Jobs extends DurableObject {
  #limiters = new Map();
  #running = 0;
  #peak = 0;
  store() {
    return durableObjectStore(this.ctx.storage);
  }
  #limiter(limits) {
    const id = JSON.stringify(limits);
    if (!this.#limiters.has(id)) this.#limiters.set(id, new RateLimiter(this.store(), limits));
    return this.#limiters.get(id);
  }
  limit(limits, name, options) {
    return coded(async () => {
      const answer = await this.#limiter(limits).limit(name, options);
      return answer.ok ? { ok: true, lease: answer.lease.toJSON(), expiresAt: answer.lease.expiresAt } : answer;
    });
  }
  release(limits, data) {
    return coded(() => this.#limiter(limits).lease(data).release());
  }
  extend(limits, data, ms) {
    return coded(() => this.#limiter(limits).lease(data).extend(ms));
  }
  async runJob(limits, key, ms) {
    const answer = await this.#limiter(limits).limit("jobs", { key });
    if (!answer.ok) return { ok: false, retryAfter: answer.retryAfter };
    this.#running += 1;
    this.#peak = Math.max(this.#peak, this.#running);
    try {
      await sleep(ms);
      await this.ctx.storage.put(`job:${answer.lease.id}`, { key, slots: answer.lease.slots });
    } finally {
      this.#running -= 1;
      await answer.lease.release();
    }
    return { ok: true };
  }
  peak() {
    return this.#peak;
  }
  async jobsStored() {
    return (await this.ctx.storage.list({ prefix: "job:" })).size;
  }
}

/** The same object whose store's reads wait on a timer (the input gate opens): the control. */
export class RacyJobs extends Jobs {
  store() {
    return bareStore(durableObjectStore(this.ctx.storage));
  }
}

/** The scenarios' harness over an app's own object: each call one RPC, a lease crossing as its data. */
function ownObjectHarness(stub) {
  const connect = (limits) => {
    const handle = (data, expiresAt) => {
      const lease = {
        id: data.id,
        slots: data.slots,
        expiresAt,
        release: async () => uncoded(await stub.release(limits, data)),
        extend: async (ms) => {
          const extended = uncoded(await stub.extend(limits, data, ms));
          lease.expiresAt = extended.expiresAt;
          return extended;
        },
        toJSON: () => data,
      };
      return lease;
    };
    return {
      lease: (data) => handle(data, Number.NaN),
      async limit(name, options) {
        const { throws, ...rest } = options ?? {};
        const answer = uncoded(await stub.limit(limits, name, rest));
        if (!answer.ok && throws) throw Object.assign(new Error("refused"), { code: "RATE_LIMITED" });
        return answer.ok ? { ok: true, lease: handle(answer.lease, answer.expiresAt) } : answer;
      },
    };
  };
  return { remote: true, connect };
}

/** Checks of the Worker's own (not host-neutral): each answers what it saw. */
const OWN = {
  /** acquire on the client of an object whose name is a rate limit: INVALID_ARGUMENT, and no token taken. */
  async acquireTakesOnlyAConcurrencyLimit(env, object) {
    const client = rateLimiterClient(env.MIXED.get(env.MIXED.idFromName(object)));
    const refused = await client.acquire("calls", { maxWait: 0 }).then(() => null, (error) => error.code);
    const after = await client.limit("calls");
    const held = await client.acquire("jobs", { maxWait: 0 });
    const waiting = await client.acquire("jobs", { maxWait: 50 }).then(() => null, (error) => error.code);
    return { refused, tokenStillThere: after.ok, slots: held.lease.slots, waiting, released: await held.lease.release() };
  },
  /** 12 jobs at once on the app's own object (3 slots, each job 50 ms): how many ran, the peak running, the jobs stored. */
  async ownObjectJobs(env, object, body) {
    const stub = (body.racy ? env.RACY_JOBS : env.JOBS).get((body.racy ? env.RACY_JOBS : env.JOBS).idFromName(object));
    const limits = { jobs: { kind: "concurrency", max: 3, lease: 60_000 } };
    const answers = await Promise.all(Array.from({ length: 12 }, () => stub.runJob(limits, "k", 50)));
    return { ran: answers.filter((answer) => answer.ok).length, peak: await stub.peak(), stored: await stub.jobsStored() };
  },
};

export default {
  async fetch(request, env) {
    const body = await request.json();
    try {
      const object = `run-${crypto.randomUUID()}`;
      if (OWN[body.scenario]) return Response.json({ result: await OWN[body.scenario](env, object, body) });
      const scenario = scenarios[body.scenario];
      if (typeof scenario !== "function") throw new Error(`no scenario ${body.scenario}`);
      if (body.backend === "own") return Response.json({ result: (await scenario(ownObjectHarness(env.JOBS.get(env.JOBS.idFromName(object))))) ?? null });
      const stub = (binding) => env[binding].get(env[binding].idFromName(object));
      const connect = (limits) => {
        const binding = bindingOf(limits);
        if (binding === undefined) throw new Error(`no object class for ${JSON.stringify(limits)}`);
        return rateLimiterClient(stub(`${binding}${body.backend === "kv" ? "_KV" : ""}`));
      };
      const seen = await scenario({ remote: true, connect, bare: () => rateLimiterClient(stub("RACY")) });
      return Response.json({ result: seen ?? null });
    } catch (error) {
      return Response.json({ error: { message: String(error?.message ?? error), stack: String(error?.stack ?? "") } });
    }
  },
};
