// No panic, ever, from hostile objects (issue 7, item 1): Proxies whose traps
// throw and getters that throw, passed as configs, limits, keys, counts and
// batches. JavaScript then throws while the WebAssembly core is running. The
// core must catch every such exception: one that unwinds through WebAssembly
// frames skips the code that restores the core's shadow stack, and after about
// a thousand of them the instance fails every call with "memory access out of
// bounds" (an outage). 10,000 of each, then the same instance decides right.
//
// A file of its own: a broken instance takes down every later test in the
// same process, and the ordinary failures (no-panic.test.mjs) should not be
// reported broken because of these.
import { after } from "node:test";
import { RateLimiter, calculateRateLimit, SECOND } from "../../pkg/dist/node.js";
import { Tally } from "./helpers.mjs";
import { LIMITS, defineStorm, revoked, trapGet, trapKeys } from "./storm.mjs";

const tally = new Tally("no panic: 10,000 hostile objects of each kind");
after(() => tally.flush());

const bucket = { kind: "token bucket", rate: 3, period: SECOND };

const kinds = [
  ["a config whose getter throws", ({ limiter }) => limiter.limit("oneOff", { config: { kind: "token bucket", period: SECOND, get rate() { throw new Error("getter"); } } }), null],
  ["a config whose ownKeys trap throws", ({ limiter }) => limiter.limit("oneOff", { config: trapKeys({ ...bucket }) }), null],
  ["limits whose ownKeys trap throws", ({ store }) => new RateLimiter(store, trapKeys({ ...LIMITS })), null],
  ["a revoked Proxy as the key", ({ limiter }) => limiter.limit("send", { key: revoked }), null],
  ["a revoked Proxy as the count", ({ limiter }) => limiter.limit("send", { count: revoked }), null],
  ["a revoked Proxy as the config", ({ limiter }) => limiter.limit("oneOff", { config: revoked }), null],
  ["a revoked Proxy as the limits", ({ store }) => new RateLimiter(store, revoked), null],
  ["calculateRateLimit of a revoked Proxy", () => calculateRateLimit(null, revoked, 0), null],
  ["a limitAll array whose items throw", ({ limiter }) => limiter.limitAll(trapGet([{ name: "send" }])), null],
];

defineStorm("10,000 calls with each kind of hostile object leave the instance deciding exactly right", { kinds, storeKinds: [], tally });
