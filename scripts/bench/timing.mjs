// The timed rows of `npm run bench`: ratebound against its peers in this process, each group of
// contenders interleaved by ./interleave.mjs. Every batch checks that it took the path its row
// names (all granted, or all refused), so a drifting clock or a wrong config cannot quietly
// time something else.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { fresh, interleave } from "./interleave.mjs";

const require = createRequire(import.meta.url);
const HOUR = 3_600_000;
/** An "allowed" limit holds so many tokens that no benchmark can run it out. */
const PLENTY = 1e12;

const allGranted = (granted, n) => {
  if (granted !== n) throw new Error(`expected every decision granted, got ${granted} of ${n}`);
};
const noneGranted = (granted) => {
  if (granted !== 0) throw new Error(`expected every decision refused, got ${granted} granted`);
};

// The loops. Each closes over nothing (see `fresh`) and cycles through `context.keys`.
const LOOPS = {
  rateboundLimit: async (context, n) => {
    const { limiter, name, keys } = context;
    let cursor = context.cursor;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      const result = await limiter.limit(name, { key: keys[cursor] });
      if (result.ok) granted++;
      if (++cursor === keys.length) cursor = 0;
    }
    context.cursor = cursor;
    return granted;
  },
  flexibleConsume: async (context, n) => {
    const { limiter, keys, RateLimiterRes } = context;
    let cursor = context.cursor;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      try {
        await limiter.consume(keys[cursor]);
        granted++;
      } catch (refusal) {
        if (!(refusal instanceof RateLimiterRes)) throw refusal;
      }
      if (++cursor === keys.length) cursor = 0;
    }
    context.cursor = cursor;
    return granted;
  },
  plainAwaited: async (context, n) => {
    const { limiter, keys } = context;
    let cursor = context.cursor;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      const result = await limiter.limit(keys[cursor]);
      if (result.ok) granted++;
      if (++cursor === keys.length) cursor = 0;
    }
    context.cursor = cursor;
    return granted;
  },
  plainSync: (context, n) => {
    const { limiter, keys } = context;
    let cursor = context.cursor;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      const result = limiter.limitSync(keys[cursor]);
      if (result.ok) granted++;
      if (++cursor === keys.length) cursor = 0;
    }
    context.cursor = cursor;
    return granted;
  },
  transition: (context, n) => {
    const { calculate, state, config, now } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += calculate(state, config, now + (i & 1023), 1).value;
    return sum;
  },
  decideInSlab: (context, n) => {
    const { core, index, base, now } = context;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      const answer = core.decideInSlab(index, base, 1, false, now + i * 1e-6, true);
      if (answer !== answer || answer > 0) granted++; // NaN: granted; > 0: granted, reserved
    }
    return granted;
  },
  compiledTransition: (context, n) => {
    const { compiled, state, now } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += compiled.transition(true, state.value, state.ts, now + (i & 1023), 1);
    return sum;
  },
  dateNow: (context, n) => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += Date.now();
    return sum;
  },
  awaitSettled: async (context, n) => {
    const { settled } = context;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      const result = await Promise.resolve(settled);
      if (result.ok) granted++;
    }
    return granted;
  },
  trivialWasmCall: (context, n) => {
    const { slab } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += slab.occupied();
    return sum;
  },
};

/** A contender: a fresh copy of `loop` over `context`, checked by `verify`. */
function contender(id, loop, context, verify) {
  const body = fresh(LOOPS[loop]);
  return { id, run: (n) => body(context, n), verify };
}

/**
 * The plain JavaScript limiter a user might write instead: the reference `calculateRateLimit`
 * over a Map, with the same rule (granted when the value left is >= 0; a refusal writes nothing).
 */
class PlainLimiter {
  constructor(calculate, config) {
    this.calculate = calculate;
    this.config = config;
    this.states = new Map();
  }
  limitSync(key) {
    const next = this.calculate(this.states.get(key) ?? null, this.config, Date.now(), 1);
    if (next.value < 0) return { ok: false, retryAfter: next.retryAfter };
    this.states.set(key, next);
    return { ok: true };
  }
  limit(key) {
    return Promise.resolve(this.limitSync(key));
  }
}

/** Keys the MemoryStore rows cycle through, all with state: the target's "1,000 keys". */
export const KEY_COUNT = 1_000;

/**
 * `decideInSlab` alone, through the glue's internal `RateLimiterCore` (the one wasm call
 * `limit()` makes on a MemoryStore), when the build still has that protocol: a contender, or
 * the reason there is none. Checked before timing: an answer of another shape is no contender.
 */
function slabContender(glue, MemoryStore, config, id, granted) {
  const Core = glue.RateLimiterCore;
  if (typeof Core?.prototype?.decideInSlab !== "function" || typeof Core.prototype.takeAllocatedBase !== "function") {
    return { reason: "the glue has no RateLimiterCore.decideInSlab" };
  }
  try {
    const store = new MemoryStore();
    const core = new Core(store, { bench: config }, undefined);
    core.useSlab(store.slab);
    const index = core.limitIndex("bench");
    const now = Date.now();
    const first = core.decideInSlab(index, -1, 1, false, now, true);
    const base = core.takeAllocatedBase();
    // NaN: granted; > 0: granted, reserved; <= 0 (or -0): refused.
    const ok = (answer) => answer !== answer || answer > 0;
    if (typeof first !== "number" || !ok(first) || !(base >= 0)) return { reason: "decideInSlab answered in a shape this bench does not know" };
    for (let refusalsInARow = 0; !granted && refusalsInARow < 1_000; ) {
      refusalsInARow = ok(core.decideInSlab(index, base, 1, false, now, true)) ? 0 : refusalsInARow + 1;
    }
    if (ok(core.decideInSlab(index, base, 1, false, now, true)) !== granted) return { reason: "decideInSlab did not take the row's path" };
    return { contender: contender(`decideInSlab ${id}`, "decideInSlab", { core, index, base, now }, granted ? allGranted : noneGranted) };
  } catch (error) {
    return { reason: `decideInSlab failed: ${error.message}` };
  }
}

/**
 * The wasm call inside `calculateRateLimit` alone (the glue's internal `CompiledConfig`), when
 * the build has it: a contender, or the reason there is none.
 */
function compiledTransitionContender(glue, kind, config, state, now) {
  if (typeof glue.CompiledConfig?.prototype?.transition !== "function") return { reason: "the glue has no CompiledConfig.transition" };
  try {
    const compiled = new glue.CompiledConfig(config);
    const answered = compiled.transition(true, state.value, state.ts, now, 1);
    if (!(typeof answered === "number" || answered === undefined)) return { reason: "CompiledConfig.transition answered in a shape this bench does not know" };
    return { contender: contender(`CompiledConfig.transition ${kind}`, "compiledTransition", { compiled, state, now }) };
  } catch (error) {
    return { reason: `CompiledConfig.transition failed: ${error.message}` };
  }
}

/**
 * Every contender in one interleaved run, so that every figure of the table saw the same mix of
 * load: ids are "transition <kind> <ratebound|reference>", "limit <allowed|refused> 1k
 * <ratebound|flexible|plain|plain sync>", "limit <kind> <allowed|refused> <1|10>",
 * "decideInSlab <kind> <allowed|refused> <1|10>", and the pieces of limit() and of
 * calculateRateLimit.
 *
 * @param {{ dist: string, rounds: number, batchMs: number, warmupMs: number, log: (line: string) => void }} options
 * @returns {Promise<{ timing: Map<string, object>, skipped: string[] }>} the figures, and why any
 * internal piece was not timed.
 * @example
 * const { timing } = await timeEverything({ dist, rounds: 5, batchMs: 15, warmupMs: 200, log });
 * timing.get("limit allowed 1k ratebound").median; // ns per awaited limit()
 */
export async function timeEverything({ dist, rounds, batchMs, warmupMs, log }) {
  const ratebound = await import(pathToFileURL(join(dist, "node.js")).href);
  // The same module instance node.js loaded, for timing internal pieces alone.
  const glue = await import(pathToFileURL(join(dist, "wasm", "ratebound.js")).href);
  const reference = await import("@convex-dev/rate-limiter");
  const flexible = require("rate-limiter-flexible");
  const { RateLimiter, MemoryStore } = ratebound;
  const contenders = [];
  const skipped = [];
  const add = ({ contender: found, reason }) => (found ? contenders.push(found) : skipped.push(reason));

  // 1. The pure transition, on an existing state.
  const transitionBase = { state: { value: 5, ts: 1_750_000_000_000 }, now: 1_750_000_001_000 };
  for (const kind of ["token bucket", "fixed window"]) {
    const config = kind === "token bucket" ? { kind, rate: 10, period: 60_000 } : { kind, rate: 10, period: 60_000, start: 0 };
    const base = { ...transitionBase, config };
    contenders.push(contender(`transition ${kind} ratebound`, "transition", { ...base, calculate: ratebound.calculateRateLimit }));
    contenders.push(contender(`transition ${kind} reference`, "transition", { ...base, calculate: reference.calculateRateLimit }));
    add(compiledTransitionContender(glue, kind, config, transitionBase.state, transitionBase.now));
  }

  // 2. limit() on a MemoryStore against RateLimiterMemory and the plain limiter, token bucket.
  log(`preparing limit() on ${KEY_COUNT.toLocaleString("en-US")} keys for every contender`);
  const keys = Array.from({ length: KEY_COUNT }, (_, i) => `user:${i}`);
  for (const path of ["allowed", "refused"]) {
    const tokenBucket = path === "allowed" ? { kind: "token bucket", rate: PLENTY, period: 1_000 } : { kind: "token bucket", rate: 10, period: HOUR };
    const rb = new RateLimiter(new MemoryStore(), { bench: tokenBucket });
    // RateLimiterMemory is a fixed window of `duration` seconds holding `points`.
    const rlm = new flexible.RateLimiterMemory(path === "allowed" ? { points: PLENTY, duration: 3_600 } : { points: 10, duration: 3_600 });
    const plain = new PlainLimiter(reference.calculateRateLimit, tokenBucket);
    // Give every key its state (and, to refuse, take all its tokens) before timing.
    for (const key of keys) {
      for (let taken = 0; taken < (path === "allowed" ? 1 : 10); taken++) {
        await rb.limit("bench", { key });
        await rlm.consume(key).catch(() => {});
        plain.limitSync(key);
      }
    }
    const verify = path === "allowed" ? allGranted : noneGranted;
    const id = `limit ${path} 1k`;
    contenders.push(contender(`${id} ratebound`, "rateboundLimit", { limiter: rb, name: "bench", keys, cursor: 0 }, verify));
    contenders.push(contender(`${id} flexible`, "flexibleConsume", { limiter: rlm, keys, cursor: 0, RateLimiterRes: flexible.RateLimiterRes }, verify));
    contenders.push(contender(`${id} plain`, "plainAwaited", { limiter: plain, keys, cursor: 0 }, verify));
    contenders.push(contender(`${id} plain sync`, "plainSync", { limiter: plain, keys, cursor: 0 }, verify));
  }

  // 3. Every case of the native bench through the WebAssembly path, one key: limit() and
  //    decideInSlab alone, plus the pieces of limit() that are not the decision.
  const startMs = Date.now() - 1;
  for (const kind of ["token bucket", "fixed window"]) {
    const window = kind === "fixed window" ? { start: startMs } : {};
    for (const shards of [1, 10]) {
      for (const path of ["allowed", "refused"]) {
        const config = path === "allowed" ? { kind, rate: PLENTY, period: 1_000, shards, ...window } : { kind, rate: 10, period: HOUR, shards, ...window };
        const granted = path === "allowed";
        const id = `${kind} ${path} ${shards}`;
        const limiter = new RateLimiter(new MemoryStore(), { bench: config });
        await limiter.limit("bench", { key: "hot" });
        for (let refusalsInARow = 0; !granted && refusalsInARow < 1_000; ) {
          refusalsInARow = (await limiter.limit("bench", { key: "hot" })).ok ? 0 : refusalsInARow + 1;
        }
        contenders.push(contender(`limit ${id}`, "rateboundLimit", { limiter, name: "bench", keys: ["hot"], cursor: 0 }, granted ? allGranted : noneGranted));
        if (id === "token bucket allowed 1") {
          // The same limit() once more, as a contender of its own: how far two timings of one thing drift.
          const twin = new RateLimiter(new MemoryStore(), { bench: config });
          await twin.limit("bench", { key: "hot" });
          contenders.push(contender(`limit ${id} twin`, "rateboundLimit", { limiter: twin, name: "bench", keys: ["hot"], cursor: 0 }, allGranted));
        }
        add(slabContender(glue, MemoryStore, config, id, granted));
      }
    }
  }
  contenders.push(contender("Date.now()", "dateNow", {}));
  contenders.push(contender("await Promise.resolve(result)", "awaitSettled", { settled: Object.freeze({ ok: true }) }, allGranted));
  const slab = new MemoryStore().slab;
  if (typeof slab?.occupied === "function") contenders.push(contender("trivial wasm call", "trivialWasmCall", { slab }));
  else skipped.push("MemoryStore has no slab.occupied() to time a trivial wasm call");

  for (const reason of new Set(skipped)) log(`not timed: ${reason}`);
  log(`${contenders.length} contenders: warm-up and calibration`);
  return { timing: await interleave(contenders, { rounds, batchMs, warmupMs, log }), skipped: [...new Set(skipped)] };
}
