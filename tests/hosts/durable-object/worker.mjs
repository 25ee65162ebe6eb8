// The Worker of the Durable Object host tests: ratebound's ready object class on both storage
// backends (SQLite and key-value), a deliberately racy object, and a probe of the store's keys.
// The test drives it with JSON POSTs; the Worker talks to the objects as an app would.
import { DurableObject } from "cloudflare:workers";
import { DAY, RateLimiter, RateLimitError } from "ratebound";
import { durableObjectStore, rateLimiterClient, rateLimiterObject } from "ratebound/durable-object";

export const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: DAY },
  dailySharded: { kind: "token bucket", rate: 20, period: DAY, shards: 5 },
  perUser: { kind: "token bucket", rate: 3, period: DAY },
  global: { kind: "fixed window", rate: 2, period: DAY, start: 0 },
  sliding: { kind: "sliding window", rate: 10, period: DAY },
};

/** The ready class on a SQLite-backed object (binding LIMITER). */
export class Limiter extends rateLimiterObject(LIMITS) {}
/** The same class on a key-value-backed object (binding LIMITER_KV). */
export class KvLimiter extends rateLimiterObject(LIMITS) {}

/** An app's own RPC object over durableObjectStore, as docs/durable-objects.md shows it (SQLite-backed, binding RPC). */
export class RpcLimiter extends DurableObject {
  limiter = new RateLimiter(durableObjectStore(this.ctx.storage), LIMITS);

  limit(name, options) {
    return this.limiter.limit(name, options);
  }
}

/**
 * A deliberately non-transactional object: its store waits on a timer between reading storage and
 * answering, which lets other requests in (a timer opens the input gate). Concurrent requests then
 * decide on stale reads: the harness must see it admit more than the bound.
 */
export class RacyLimiter {
  constructor(ctx) {
    const storage = durableObjectStore({ get: (key) => ctx.storage.get(key), put: (key, value) => ctx.storage.put(key, value), delete: (key) => ctx.storage.delete(key) });
    const racy = {
      async read(ref) {
        const state = await storage.read(ref);
        await new Promise((resolve) => setTimeout(resolve, 2));
        return state;
      },
      write: (ref, state) => storage.write(ref, state),
    };
    this.limiter = new RateLimiter(racy, LIMITS);
  }
  async fetch(request) {
    const { name, options } = await request.json();
    return Response.json({ result: await this.limiter.limit(name, options) });
  }
}

/** Writes refs through durableObjectStore and reads them all back (SQLite- or key-value-backed). */
class StoreProbe {
  constructor(ctx) {
    this.store = durableObjectStore(ctx.storage);
  }
  async fetch(request) {
    const { refs, states } = await request.json();
    for (const [index, ref] of refs.entries()) await this.store.write(ref, states[index]);
    const answers = refs.map((ref) => this.store.read(ref));
    // A SQLite-backed object answers synchronously (storage.kv); a key-value-backed one with Promises.
    const synchronous = answers.every((answer) => !(answer instanceof Promise));
    return Response.json({ synchronous, states: await Promise.all(answers) });
  }
}
export class Probe extends StoreProbe {}
export class KvProbe extends StoreProbe {}

const stubOf = (env, binding, object) => env[binding].get(env[binding].idFromName(object));

/** Runs one client call; a thrown error comes back as data. */
async function call(client, { op, name, options, requests, batchOptions, config }) {
  try {
    const result =
      op === "limitAll" || op === "checkAll" ? await client[op](requests, batchOptions) : op === "setLimit" ? await client.setLimit(name, config, options) : await client[op](name, options);
    return { result: result ?? null };
  } catch (error) {
    return {
      error: { name: error.name, message: error.message, code: error.code, status: error.status, data: error.data, isRateLimitError: error instanceof RateLimitError },
    };
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    const body = await request.json();
    const { binding = "LIMITER", object = "test" } = body;
    switch (pathname) {
      case "/call": // one call through rateLimiterClient
        return Response.json(await call(rateLimiterClient(stubOf(env, binding, object)), body));
      case "/burst": {
        // n calls to one object at once, from inside workerd
        const client = rateLimiterClient(stubOf(env, binding, object));
        return Response.json(await Promise.all(Array.from({ length: body.n }, () => call(client, body))));
      }
      case "/raw": {
        // a hand-made request to the object, to see its status and body
        const response = await stubOf(env, binding, object).fetch("https://ratebound.internal/", { method: body.method ?? "POST", body: body.raw });
        return Response.json({ status: response.status, body: await response.json() });
      }
      case "/rpc-burst": {
        // n RPC calls to one object at once
        const stub = stubOf(env, "RPC", object);
        return Response.json(await Promise.all(Array.from({ length: body.n }, async () => ({ result: await stub.limit(body.name, body.options) }))));
      }
      case "/racy": {
        const stub = stubOf(env, "RACY", object);
        const results = await Promise.all(
          Array.from({ length: body.n }, async () => (await stub.fetch("https://racy/", { method: "POST", body: JSON.stringify(body) })).json()),
        );
        return Response.json(results.map(({ result }) => ({ result })));
      }
      case "/refs":
        return stubOf(env, binding, object).fetch("https://probe/", { method: "POST", body: JSON.stringify(body) });
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
