// The Worker of the Durable Object concurrency suite (tests/hosts/concurrency-durable-object.test.mjs):
// it runs a scenario of ./scenarios.mjs inside workerd, each call one request to a ready object
// (rateLimiterObject) through rateLimiterClient: one object per scenario run, SQLite-backed or
// key-value-backed. The racy object reads on a timer (which opens the input gate), so concurrent
// requests decide on what they read before any of them writes: the control.
import { RateLimiterObject, rateLimiterClient, rateLimiterObject } from "ratebound/durable-object";
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

export default {
  async fetch(request, env) {
    const body = await request.json();
    try {
      const scenario = scenarios[body.scenario];
      if (typeof scenario !== "function") throw new Error(`no scenario ${body.scenario}`);
      const object = `run-${crypto.randomUUID()}`;
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
