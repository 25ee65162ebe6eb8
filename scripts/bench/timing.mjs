// The timed rows of `npm run bench`: ratebound against its peers in this process, interleaved by
// ./interleave.mjs. Every batch checks that it took the path its row names (all granted, or all
// refused), so a drifting clock or a wrong config cannot quietly time something else.
//
// No two contenders share type feedback. Each contender's loop is compiled from a source text of
// its own (./interleave.mjs `fresh`), and each runs its own copy of the code it times: its own
// install of the package (./package.mjs: a module instance, and a WebAssembly instance, of its
// own), its own copy of rate-limiter-flexible, its own copy of the reference `calculateRateLimit`
// (compiled from the function's source text with the contender's id). Within one copy, calls
// from several contenders would share the library's feedback just as copies of one loop do.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FLOOR_LIMITER, floorInstance, makeFloorCalculate } from "./floor.mjs";
import { fresh, interleave } from "./interleave.mjs";
import { installPackage } from "./package.mjs";

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
export const LOOPS = {
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
  // The probes: today's exports alone, with the fewest numbers around them (see ./probes below).
  probeCalculate: (context, n) => {
    const { core, c, state, now } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += core.rb_calculate(c[0], c[1], c[2], c[3], c[4], c[5], c[6], state.value, state.ts, now + (i & 1023), 1, 0);
    return sum;
  },
  probeCalculateNext: (context, n) => {
    const { core, state, now } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += core.rb_calculate_next(state.value, state.ts, now + (i & 1023), 1, 0);
    return sum;
  },
  probeDecideState: (context, n) => {
    const { core, io, ok, state, now } = context;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      core.rb_decide_state(state.value, state.ts, now + (i & 1023), 1, 0, 0);
      if (io[ok] === 1) granted++;
    }
    return granted;
  },
  probePlanDecide: (context, n) => {
    const { core, io, item, slots, state } = context;
    let granted = 0;
    for (let i = 0; i < n; i++) {
      io[item + 10] = Date.now();
      core.rb_plan(1);
      io[slots] = state.value;
      io[slots + 1] = state.ts;
      if (core.rb_decide_one() === 1) {
        granted++;
        state.value = io[slots + 2];
        state.ts = io[slots + 3];
      }
    }
    return granted;
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
    const { core } = context;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += core.rb_io();
    return sum;
  },
};

/** A contender: its own copy of `loop` over `context`, checked by `verify`. */
function contender(id, loop, context, verify) {
  const body = fresh(LOOPS[loop], id);
  return { id, run: (n) => body(context, n), verify };
}

/**
 * The plain JavaScript limiter a user might write instead: the reference `calculateRateLimit`
 * over a Map, with the same rule (granted when the value left is >= 0; a refusal writes nothing).
 * Each contender compiles its own copy of this class (see {@link ownCopy}).
 */
const PLAIN_LIMITER = class PlainLimiter {
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
};

/**
 * A copy of a self-contained function or class (one that refers to no module-level name, only to
 * globals), compiled from its own source text for contender `id`: the same code with feedback of
 * its own. `probe`, when given, runs on the original and the copy and must give equal results.
 *
 * @param {Function} original
 * @param {string} id
 * @param {(fn: Function) => unknown} [probe]
 * @returns {Function}
 * @example
 * const calculate = ownCopy(reference.calculateRateLimit, "transition token bucket reference", (f) => f(null, config, 0, 1));
 */
export function ownCopy(original, id, probe) {
  const copy = fresh(original, id);
  if (probe && JSON.stringify(probe(copy)) !== JSON.stringify(probe(original))) throw new Error(`the copy of ${original.name} for "${id}" answers differently`);
  return copy;
}

/** Answers of the reference on a few inputs: what a copy of it must reproduce. */
export const referenceProbe = (calculate) =>
  [
    [{ value: 5, ts: 1_000 }, { kind: "token bucket", rate: 10, period: 60_000 }, 31_000, 1],
    [{ value: 5, ts: 1_000 }, { kind: "fixed window", rate: 10, period: 60_000, start: 0 }, 131_000, 20],
    [null, { kind: "token bucket", rate: 3, period: 1_000, capacity: 2 }, 5, 3],
  ].map((args) => calculate(...args));

/**
 * Private copies of the code each contender runs, under `project/contenders/` (so anything else
 * resolves to the project's packages): the package installed anew per contender (its own modules
 * and WebAssembly instance), rate-limiter-flexible copied per contender, the reference compiled
 * anew per contender.
 */
class Copies {
  constructor(pkg, project, reference) {
    this.pkg = pkg;
    this.root = join(project, "contenders");
    this.reference = reference;
    this.made = 0;
    mkdirSync(this.root, { recursive: true });
  }
  #install(id, copies) {
    const dir = join(this.root, `${String(this.made++).padStart(2, "0")}-${id.replace(/[^a-z0-9]+/gi, "-")}`);
    return installPackage(this.pkg, dir, { copies, link: false });
  }
  /** `{ api, wasm }`: the package's main entry, and the path of the `.wasm` its install ships. */
  async ratebound(id) {
    const install = this.#install(id, []);
    const api = await install.load("ratebound");
    return { api, wasm: join(install.dist, "wasm", "ratebound.wasm") };
  }
  flexible(id) {
    return this.#install(id, ["rate-limiter-flexible"]).require("rate-limiter-flexible");
  }
  calculate(id) {
    return ownCopy(this.reference.calculateRateLimit, id, referenceProbe);
  }
  plainLimiter(id, config) {
    const Plain = ownCopy(PLAIN_LIMITER, `${id} (PlainLimiter)`);
    return new Plain(this.calculate(`${id} (its calculateRateLimit)`), config);
  }
}

/** Keys the MemoryStore rows cycle through, all with state: the target's "1,000 keys". */
export const KEY_COUNT = 1_000;

/**
 * A fresh instance of the package's `.wasm` (its own memory and buffer), with the buffer's layout
 * as the module reports it (`rb_layout`, the indices `ts/core/engine.ts` reads).
 */
function packageInstance(wasmPath) {
  const { exports: core } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath)), {});
  const at = (which) => core.rb_layout(which);
  const layout = { ITEMS: at(0), SLOTS: at(3), OUT: at(4), EXTRA: at(5) };
  return { core, io: new Float64Array(core.memory.buffer, core.rb_io(), at(12)), layout };
}

/** A config's seven numbers as the module takes them: kind, rate, period, capacity, maxReserved, shards, start (NaN: none). */
const numbersOf = (config) => [config.kind === "fixed window" ? 1 : 0, config.rate, config.period, config.capacity ?? config.rate, Number.NaN, config.shards ?? 1, config.start ?? Number.NaN];

/**
 * Probes of the package's exports, each alone on an instance of its own, with the fewest numbers
 * around it: `rb_calculate` (twelve numbers a call), `rb_calculate_next` (what `calculateRateLimit`
 * calls: four and a phase, its config loaded once), `rb_decide_state` (the decision on a state the
 * caller holds) and `rb_plan` + `rb_decide_one` (the two calls of a planned decision, the state
 * kept in JavaScript as a store keeps it). Each is checked once before timing: an export missing or
 * answering in a shape this bench does not know is no contender, and says why.
 */
const PROBES = {
  calculate(wasm, id, config, state, now) {
    const { core } = packageInstance(wasm);
    if (typeof core.rb_calculate !== "function") return { reason: "the module has no rb_calculate" };
    const c = numbersOf(config);
    if (!Number.isFinite(core.rb_calculate(...c, state.value, state.ts, now, 1, 0))) return { reason: "rb_calculate answered in a shape this bench does not know" };
    return { contender: contender(id, "probeCalculate", { core, c, state, now }) };
  },
  calculateNext(wasm, id, config, state, now) {
    const { core } = packageInstance(wasm);
    if (typeof core.rb_calculate_next !== "function") return { reason: "the module has no rb_calculate_next" };
    core.rb_calculate_use(...numbersOf(config));
    if (!Number.isFinite(core.rb_calculate_next(state.value, state.ts, now, 1, 0))) return { reason: "rb_calculate_next answered in a shape this bench does not know" };
    return { contender: contender(id, "probeCalculateNext", { core, state, now }) };
  },
  decideState(wasm, id, config, granted) {
    const { core, io, layout } = packageInstance(wasm);
    if (typeof core.rb_decide_state !== "function") return { reason: "the module has no rb_decide_state" };
    io.set(numbersOf(config), layout.EXTRA);
    const now = Date.now();
    const state = granted ? { value: config.rate, ts: now } : { value: 0, ts: now };
    const ok = layout.EXTRA + 8;
    if (core.rb_decide_state(state.value, state.ts, now, 1, 0, 0) !== 0 || io[ok] !== (granted ? 1 : 0)) return { reason: "rb_decide_state did not take the row's path" };
    return { contender: contender(id, "probeDecideState", { core, io, ok, state, now }, granted ? allGranted : noneGranted) };
  },
  planDecide(wasm, id, config, granted) {
    const { core, io, layout } = packageInstance(wasm);
    if (typeof core.rb_plan !== "function" || typeof core.rb_decide_one !== "function") return { reason: "the module has no rb_plan and rb_decide_one" };
    // Item 0 (src/wasm/io.rs): the config's numbers, count 1, no reserve, write, now, four draws, no figures.
    const item = layout.ITEMS;
    io.set([...numbersOf(config), 1, 0, 1, Date.now(), 0.5, 0.5, 0.5, 0.5, 0], item);
    const state = granted ? { value: config.rate, ts: Date.now() } : { value: 0, ts: Date.now() };
    const context = { core, io, item, slots: layout.SLOTS, state };
    if (LOOPS.probePlanDecide(context, 1) !== (granted ? 1 : 0)) return { reason: "rb_plan + rb_decide_one did not take the row's path" };
    return { contender: contender(id, "probePlanDecide", context, granted ? allGranted : noneGranted) };
  },
};

/**
 * Every contender in one interleaved run, so that every figure of the table saw the same mix of
 * load: ids are "transition <kind> <ratebound|reference|floor>", "limit <allowed|refused> 1k
 * <ratebound|flexible|plain|plain sync|floor>", "limit <kind> <allowed|refused> <1|10>",
 * "probe <export> <kind> …" (./floor.mjs, {@link PROBES}), and the pieces of limit() and of
 * calculateRateLimit. Each contender runs its own copies (see the top of this file).
 *
 * @param {{ pkg: string, project: string, floor: { wasm?: string, error?: string }, rounds: number, batchMs: number, warmupMs: number, log: (line: string) => void }} options
 * `pkg`: the built package directory; `project`: a project with it installed (./package.mjs), where
 * the copies go; `floor`: the floor contender's module (./floor.mjs `buildFloor`), or why there is none.
 * @returns {Promise<{ timing: Map<string, object>, skipped: string[] }>} the figures, and why any
 * internal piece was not timed.
 * @example
 * const { timing } = await timeEverything({ pkg, project, floor: {}, rounds: 5, batchMs: 15, warmupMs: 200, log });
 * timing.get("limit allowed 1k ratebound").median; // ns per awaited limit()
 */
export async function timeEverything({ pkg, project, floor, rounds, batchMs, warmupMs, log }) {
  const reference = await import("@convex-dev/rate-limiter");
  const copies = new Copies(pkg, project, reference);
  const contenders = [];
  const skipped = [];
  const add = ({ contender: found, reason }) => (found ? contenders.push(found) : skipped.push(reason));
  if (floor.error) skipped.push(`the floor contender: ${floor.error}`);

  // 1. The pure transition, on an existing state.
  log("installing a copy of the package for every contender");
  const transitionBase = { state: { value: 5, ts: 1_750_000_000_000 }, now: 1_750_000_001_000 };
  for (const kind of ["token bucket", "fixed window"]) {
    const config = kind === "token bucket" ? { kind, rate: 10, period: 60_000 } : { kind, rate: 10, period: 60_000, start: 0 };
    const base = { ...transitionBase, config };
    const ours = `transition ${kind} ratebound`;
    contenders.push(contender(ours, "transition", { ...base, calculate: (await copies.ratebound(ours)).api.calculateRateLimit }));
    const theirs = `transition ${kind} reference`;
    contenders.push(contender(theirs, "transition", { ...base, calculate: copies.calculate(theirs) }));
    if (floor.wasm) {
      const id = `transition ${kind} floor`;
      contenders.push(contender(id, "transition", { ...base, calculate: ownCopy(makeFloorCalculate, id)(floorInstance(floor.wasm, config)) }));
    }
    for (const probe of ["calculate", "calculateNext"]) {
      const id = `probe ${probe === "calculate" ? "rb_calculate" : "rb_calculate_next"} ${kind}`;
      add(PROBES[probe]((await copies.ratebound(id)).wasm, id, config, transitionBase.state, transitionBase.now));
    }
  }

  // 2. limit() on a MemoryStore against RateLimiterMemory and the plain limiter, token bucket.
  log(`preparing limit() on ${KEY_COUNT.toLocaleString("en-US")} keys for every contender`);
  const keys = Array.from({ length: KEY_COUNT }, (_, i) => `user:${i}`);
  for (const path of ["allowed", "refused"]) {
    const tokenBucket = path === "allowed" ? { kind: "token bucket", rate: PLENTY, period: 1_000 } : { kind: "token bucket", rate: 10, period: HOUR };
    const id = `limit ${path} 1k`;
    const { RateLimiter, MemoryStore } = (await copies.ratebound(`${id} ratebound`)).api;
    const rb = new RateLimiter(new MemoryStore(), { bench: tokenBucket });
    // RateLimiterMemory is a fixed window of `duration` seconds holding `points`.
    const flexible = copies.flexible(`${id} flexible`);
    const rlm = new flexible.RateLimiterMemory(path === "allowed" ? { points: PLENTY, duration: 3_600 } : { points: 10, duration: 3_600 });
    const plain = copies.plainLimiter(`${id} plain`, tokenBucket);
    const plainSync = copies.plainLimiter(`${id} plain sync`, tokenBucket);
    const Floor = floor.wasm ? ownCopy(FLOOR_LIMITER, `${id} floor (FloorLimiter)`) : undefined;
    const floorLimiter = Floor ? new Floor(floorInstance(floor.wasm, tokenBucket)) : undefined;
    // Give every key its state (and, to refuse, take all its tokens) before timing.
    for (const key of keys) {
      for (let taken = 0; taken < (path === "allowed" ? 1 : 10); taken++) {
        await rb.limit("bench", { key });
        await rlm.consume(key).catch(() => {});
        plain.limitSync(key);
        plainSync.limitSync(key);
        floorLimiter?.limitSync(key);
      }
    }
    const verify = path === "allowed" ? allGranted : noneGranted;
    contenders.push(contender(`${id} ratebound`, "rateboundLimit", { limiter: rb, name: "bench", keys, cursor: 0 }, verify));
    contenders.push(contender(`${id} flexible`, "flexibleConsume", { limiter: rlm, keys, cursor: 0, RateLimiterRes: flexible.RateLimiterRes }, verify));
    contenders.push(contender(`${id} plain`, "plainAwaited", { limiter: plain, keys, cursor: 0 }, verify));
    contenders.push(contender(`${id} plain sync`, "plainSync", { limiter: plainSync, keys, cursor: 0 }, verify));
    if (floorLimiter) contenders.push(contender(`${id} floor`, "plainAwaited", { limiter: floorLimiter, keys, cursor: 0 }, verify));
  }

  // 3. Every case of the native bench through the WebAssembly path, one key: limit(), and for
  //    unsharded limits the exports it runs on alone (rb_plan + rb_decide_one; rb_decide_state),
  //    plus the pieces of limit() that are not the decision.
  const startMs = Date.now() - 1;
  for (const kind of ["token bucket", "fixed window"]) {
    const window = kind === "fixed window" ? { start: startMs } : {};
    for (const shards of [1, 10]) {
      for (const path of ["allowed", "refused"]) {
        const config = path === "allowed" ? { kind, rate: PLENTY, period: 1_000, shards, ...window } : { kind, rate: 10, period: HOUR, shards, ...window };
        const granted = path === "allowed";
        const id = `${kind} ${path} ${shards}`;
        const oneKey = async (contenderId) => {
          const { RateLimiter, MemoryStore } = (await copies.ratebound(contenderId)).api;
          const limiter = new RateLimiter(new MemoryStore(), { bench: config });
          await limiter.limit("bench", { key: "hot" });
          for (let refusalsInARow = 0; !granted && refusalsInARow < 1_000; ) {
            refusalsInARow = (await limiter.limit("bench", { key: "hot" })).ok ? 0 : refusalsInARow + 1;
          }
          contenders.push(contender(contenderId, "rateboundLimit", { limiter, name: "bench", keys: ["hot"], cursor: 0 }, granted ? allGranted : noneGranted));
        };
        await oneKey(`limit ${id}`);
        // The same limit() once more, as a contender of its own: how far two timings of one thing drift.
        if (id === "token bucket allowed 1") await oneKey(`limit ${id} twin`);
        if (shards === 1) {
          for (const [probe, name] of [["planDecide", "rb_plan+rb_decide_one"], ["decideState", "rb_decide_state"]]) {
            const probeId = `probe ${name} ${id}`;
            add(PROBES[probe]((await copies.ratebound(probeId)).wasm, probeId, config, granted));
          }
        }
      }
    }
  }
  contenders.push(contender("Date.now()", "dateNow", {}));
  contenders.push(contender("await Promise.resolve(result)", "awaitSettled", { settled: Object.freeze({ ok: true }) }, allGranted));
  const trivial = packageInstance((await copies.ratebound("trivial wasm call")).wasm).core;
  if (typeof trivial.rb_io === "function") contenders.push(contender("trivial wasm call", "trivialWasmCall", { core: trivial }));
  else skipped.push("the module has no rb_io to time a trivial wasm call");

  for (const reason of new Set(skipped)) log(`not timed: ${reason}`);
  log(`${contenders.length} contenders: warm-up and calibration`);
  return { timing: await interleave(contenders, { rounds, batchMs, warmupMs, log }), skipped: [...new Set(skipped)] };
}
