// The bad input matrix (issue 7, item 2): every config field and every
// request option against NaN, ±Infinity, negative, zero, -0, huge,
// subnormal, non-integer, strings, null, booleans, objects, arrays,
// functions, bigints, symbols, boxed numbers, extra and inherited fields,
// and names and keys such as "__proto__", "constructor", "", 1024 and 1025
// bytes, and unusual unicode. Every bad input is a real Error with a stable
// `code`, the `field`, and a message naming the field and the value, and
// nothing is read or written; every good one decides and stores two finite
// numbers. Prototype pollution through limits, names or keys is impossible.
//
// Both paths run every request case: a MemoryStore (decided on its slab) and
// a callback store.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, calculateRateLimits, withJitter, SECOND } from "../../pkg/dist/node.js";
import { CheckedStore, KINDS, Tally } from "./helpers.mjs";

const tally = new Tally("bad input matrix");
after(() => tally.flush());

const NOW = 1_700_000_000_000;
const MAX_KEY_BYTES = 1024;

/** How the core shows a value in a message (JavaScript's `String` for numbers, JSON for strings). */
function shown(value) {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value).slice(0, 40);
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "bigint") return "bigint";
  if (typeof value === "symbol") return "symbol";
  if (typeof value === "function") return "function";
  if (Array.isArray(value)) return "array";
  return "object";
}

/** The values every field is tried with: `[label, value]`. */
const VALUES = [
  ["NaN", NaN],
  ["Infinity", Infinity],
  ["-Infinity", -Infinity],
  ["-1", -1],
  ["0", 0],
  ["-0", -0],
  ["0.5", 0.5],
  ["2.5", 2.5],
  ["1e308", 1e308],
  ["Number.MAX_VALUE", Number.MAX_VALUE],
  ["5e-324 (subnormal)", 5e-324],
  ["2^53", 2 ** 53],
  ["2^53 + 2", 2 ** 53 + 2],
  ['"10"', "10"],
  ['""', ""],
  ["null", null],
  ["true", true],
  ["{}", {}],
  ["[]", []],
  ["[10]", [10]],
  ["a function", () => 10],
  ["10n", 10n],
  ["a symbol", Symbol("ten")],
  ["new Number(10)", new Number(10)],
  ["a Date", new Date(0)],
];

const isNumber = (value) => typeof value === "number";
const finite = (value) => isNumber(value) && Number.isFinite(value);

/** Whether `value` is valid for `field` of a `kind` config, by SPEC's rules (`"either"`: valid, or an error naming the field). */
function validity(kind, field, value) {
  switch (field) {
    case "rate":
    case "period":
      return finite(value) && value > 0 ? "valid" : "invalid";
    case "capacity":
    case "maxReserved":
      return finite(value) && value >= 0 ? "valid" : "invalid";
    case "shards":
      return Number.isInteger(value) && value >= 1 && value <= 1024 && !Object.is(value, -0) ? "valid" : "invalid";
    case "start":
      if (kind === "token bucket") return value === null ? "valid" : "invalid";
      // A start far beyond any real time may be refused (a Date's range is ±8.64e15 ms).
      if (finite(value)) return Math.abs(value) <= 8.64e15 ? "valid" : "either";
      return "invalid";
    case "kind":
      return "invalid"; // no value of VALUES is a kind
  }
  throw new Error(field);
}

/** The whole limit's refill per shard per ms must be a positive finite number: checked across fields. */
function refillIsFinite(config) {
  const refill = config.rate / (config.shards ?? 1) / config.period;
  return Number.isFinite(refill) && refill > 0;
}

/** A store that counts every call, so a test can show nothing was read or written. */
class CountingStore extends CheckedStore {
  constructor() {
    super();
    this.reads = 0;
  }
  read(ref) {
    this.reads += 1;
    return super.read(ref);
  }
}

/** Asserts `error` is the core's error for a bad input: a real Error, `code`, `field`, and a message naming both. */
function assertNamed(error, { code, field, value, fields = [field] }) {
  assert.ok(error instanceof Error, `expected an Error, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.ok(fields.includes(error.field), `field ${error.field}, expected ${fields}: ${error.message}`);
  assert.ok(error.message.includes(error.field), `${JSON.stringify(error.message)} should name ${error.field}`);
  if (value !== undefined) assert.ok(error.message.includes(shown(value)), `${JSON.stringify(error.message)} should show ${shown(value)}`);
  return true;
}

describe("every config field against every kind of bad value", () => {
  for (const kind of KINDS) {
    const base = { kind, rate: 10, period: SECOND };
    for (const field of ["rate", "period", "capacity", "maxReserved", "shards", "start", "kind"]) {
      for (const [label, value] of VALUES) {
        const config = { ...base, [field]: value };
        let expected = validity(kind, field, value);
        if (expected === "valid" && !refillIsFinite(config)) expected = "invalid"; // e.g. period 5e-324: rate / period is Infinity
        // capacity 0 (or -0) without maxReserved > 0 could never grant a token: a limiter refuses it
        // (issue 25, item 16), while the pure transition, calculateRateLimit, takes it as the reference does.
        const limiterOnly = field === "capacity" && value === 0;
        if (limiterOnly) expected = "invalid";
        it(`${kind}: ${field} = ${label} is ${expected === "either" ? "refused or works" : expected}`, async () => {
          tally.add("inputs tried");
          const store = new CountingStore();
          const fields = field === "rate" || field === "period" ? ["rate", "period"] : [field];
          let constructed;
          try {
            constructed = new RateLimiter(store, { sendMessage: config }, { now: () => NOW, random: () => 0.5 });
          } catch (error) {
            assert.notEqual(expected, "valid", `a valid config was refused: ${error.message}`);
            assertNamed(error, { code: "INVALID_CONFIG", field, value: fields.length > 1 ? undefined : value, fields });
            assert.ok(error.message.startsWith('Rate limit "sendMessage": '), error.message);
            // The same config inline, and in calculateRateLimit: the same error, and nothing touched.
            const limiter = new RateLimiter(store, {}, { now: () => NOW });
            await assert.rejects(limiter.limit("sendMessage", { config }), (inline) => assertNamed(inline, { code: "INVALID_CONFIG", field: error.field }));
            await assert.rejects(limiter.limitAll([{ name: "sendMessage", config }]), (inline) => assertNamed(inline, { code: "INVALID_CONFIG", field: error.field }));
            if (limiterOnly) assert.ok(calculateRateLimit(null, config, NOW).value === 0);
            else assert.throws(() => calculateRateLimit(null, config, NOW), (pure) => assertNamed(pure, { code: "INVALID_CONFIG", field: error.field }));
            assert.equal(store.reads + store.writes, 0, "a bad config touched the store");
            return;
          }
          assert.notEqual(expected, "invalid", `an invalid config was accepted: ${field} = ${label}`);
          // A good config decides, and what it stores is two finite numbers (CheckedStore asserts it).
          assert.equal((await constructed.limit("sendMessage", { count: 0 })).ok, true);
          await constructed.limit("sendMessage", { reserve: true });
          const state = store.read({ name: "sendMessage", shard: 0 }) ?? [...store.states.values()][0];
          assert.ok(Number.isFinite(state.value) && Number.isFinite(state.ts), JSON.stringify(state));
        });
      }
    }

    it(`${kind}: unknown, odd and prototype-named fields are refused, naming the field`, () => {
      const odd = ["__proto__", "constructor", "toString", "", "Rate", "capcity", "kind ", "ráte", "😀", "x".repeat(300)];
      for (const name of odd) {
        tally.add("inputs tried");
        const config = { ...base };
        Object.defineProperty(config, name, { value: 1, enumerable: true, configurable: true, writable: true });
        assert.throws(
          () => new RateLimiter(new MemoryStore(), { sendMessage: config }),
          (error) => error.code === "INVALID_CONFIG" && error.field === name && error.message.includes("unknown field"),
          `field ${JSON.stringify(name).slice(0, 40)}`,
        );
      }
      // From JSON, "__proto__" is an own field like any other.
      const parsed = JSON.parse(`{"kind":"${kind}","rate":10,"period":1000,"__proto__":{"capacity":1000}}`);
      assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: parsed }), { code: "INVALID_CONFIG", field: "__proto__" });
    });

    it(`${kind}: inherited fields and symbol keys are not fields; a getter that throws is an error naming its field`, async () => {
      tally.add("inputs tried", 4);
      // Inherited: rate comes from the prototype, so the config has no rate.
      const inherited = Object.assign(Object.create({ rate: 10 }), { kind, period: SECOND });
      assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: inherited }), { code: "INVALID_CONFIG", field: "rate" });
      // An inherited capacity does not raise the limit.
      const generous = Object.assign(Object.create({ capacity: 1e9 }), base);
      const limiter = new RateLimiter(new MemoryStore(), { sendMessage: generous }, { now: () => NOW, random: () => 0.5 });
      await assert.rejects(limiter.limit("sendMessage", { count: 11 }), { code: "COUNT_EXCEEDS_MAX" });
      // Symbol-keyed properties are ignored.
      const symbolic = { ...base, [Symbol("capacity")]: 1e9 };
      assert.equal((await new RateLimiter(new MemoryStore(), { s: symbolic }, { now: () => NOW, random: () => 0.5 }).limit("s", { count: 10 })).ok, true);
      // A getter that throws is reported on its field, not thrown raw.
      const throwing = { kind, period: SECOND, get rate() { throw new Error("getter"); } };
      assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: throwing }), (error) => error.code === "INVALID_CONFIG" && error.field === "rate");
    });
  }

  it("a config that is not a plain object (null, a number, a string, an array, a function, a Map) is refused naming config", () => {
    for (const notAConfig of [null, 5, "token bucket", [], () => {}, new Map(), 10n, Symbol("config"), true]) {
      tally.add("inputs tried");
      assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: notAConfig }), (error) => {
        if (notAConfig instanceof Map) return error.code === "INVALID_CONFIG"; // a Map has no own fields: kind is missing
        return error.code === "INVALID_CONFIG" && error.field === "config";
      }, String(typeof notAConfig));
    }
  });
});

/** Both stores a request is decided on: a MemoryStore's slab, and a callback store. */
function limitersFor(limits, options = {}) {
  const memory = new MemoryStore();
  const callbacks = new CountingStore();
  const opts = { now: () => NOW, random: () => 0.5, ...options };
  return [
    { path: "MemoryStore", store: memory, limiter: new RateLimiter(memory, limits, opts), touched: () => memory.size },
    { path: "callback store", store: callbacks, limiter: new RateLimiter(callbacks, limits, opts), touched: () => callbacks.reads + callbacks.writes },
  ];
}

const LIMITS = {
  send: { kind: "token bucket", rate: 10, period: SECOND },
  wide: { kind: "fixed window", rate: 40, period: SECOND, shards: 4, start: 0 },
};

/** Bytes of `text` in UTF-8. */
const utf8Bytes = (text) => Buffer.byteLength(text, "utf8");

const KEYS = [
  ["NaN", NaN],
  ["5", 5],
  ["-0", -0],
  ["null", null],
  ["true", true],
  ["{}", {}],
  ["[]", []],
  ["a function", () => "k"],
  ["5n", 5n],
  ["a symbol", Symbol("k")],
  ['new String("k")', new String("k")],
  ['""', ""],
  ['"__proto__"', "__proto__"],
  ['"constructor"', "constructor"],
  ['"toString"', "toString"],
  ['"hasOwnProperty"', "hasOwnProperty"],
  ["1024 ASCII bytes", "k".repeat(1024)],
  ["1025 ASCII bytes", "k".repeat(1025)],
  ["512 × é (1024 bytes)", "é".repeat(512)],
  ["513 × é (1026 bytes, 513 UTF-16 units)", "é".repeat(513)],
  ["256 × 😀 (1024 bytes)", "😀".repeat(256)],
  ["257 × 😀 (1028 bytes)", "😀".repeat(257)],
  ["341 × 〇 (1023 bytes)", "〇".repeat(341)],
  ["342 × 〇 (1026 bytes, 342 UTF-16 units)", "〇".repeat(342)],
  ["a lone high surrogate", "user\uD800"],
  ["a lone low surrogate", "\uDFFFuser"],
  ["surrogates in the wrong order", "\uDE00\uD83D"],
  ["a NUL", "a\u0000b"],
  ["a right-to-left override", "\u202Eresu"],
  ["a ZWJ family", "👨‍👩‍👧"],
  ["é precomposed", "\u00E9"],
  ["é decomposed", "e\u0301"],
  ["a byte-order mark", "\uFEFFk"],
  ["a newline and a quote", 'a\n"b'],
];

function keyValidity(key) {
  if (key === undefined) return "valid";
  if (typeof key !== "string") return "invalid";
  if (!key.isWellFormed()) return "invalid";
  return utf8Bytes(key) <= MAX_KEY_BYTES ? "valid" : "invalid";
}

describe("every request option against every kind of bad value, on a MemoryStore and on a callback store", () => {
  for (const [label, key] of KEYS) {
    const expected = keyValidity(key);
    it(`key ${label} is ${expected}`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        const calls = [
          () => limiter.limit("send", { key }),
          () => limiter.check("send", { key }),
          () => limiter.getValue("send", { key }),
          () => limiter.reset("send", { key }),
          () => limiter.limitAll([{ name: "send", key }]),
        ];
        if (expected === "invalid") {
          for (const call of calls) {
            await assert.rejects(call(), (error) => assertNamed(error, { code: "INVALID_REQUEST", field: "key" }), `${path}`);
          }
          assert.equal(touched(), 0, `${path}: a bad key touched the store`);
        } else {
          for (const call of calls) await call();
          // The key has a state of its own: ten grants, then a refusal.
          for (let i = 0; i < 9; i++) assert.equal((await limiter.limit("send", { key })).ok, true, `${path}`);
          assert.equal((await limiter.limit("send", { key })).ok, false, `${path}`);
          // Another key, differing in its first character, is untouched.
          const other = key === undefined || key === "" ? "other" : `${key.startsWith("x") ? "y" : "x"}${[...key].slice(1).join("")}`;
          assert.equal((await limiter.limit("send", { key: other })).ok, true, `${path}`);
        }
      }
    });
  }

  it("keys that differ only in normalization, or in a NUL, have states of their own", async () => {
    for (const { path, limiter } of limitersFor(LIMITS)) {
      tally.add("inputs tried", 4);
      await limiter.limit("send", { key: "\u00E9", count: 10 });
      assert.equal((await limiter.limit("send", { key: "e\u0301" })).ok, true, path);
      await limiter.limit("send", { key: "a\u0000b", count: 10 });
      assert.equal((await limiter.limit("send", { key: "a" })).ok, true, path);
      assert.equal((await limiter.limit("send", { key: "ab" })).ok, true, path);
    }
  });

  const COUNTS = [
    ["NaN", NaN, "INVALID_REQUEST"],
    ["Infinity", Infinity, "INVALID_REQUEST"],
    ["-Infinity", -Infinity, "INVALID_REQUEST"],
    ["-1", -1, "INVALID_REQUEST"],
    ["-5e-324", -5e-324, "INVALID_REQUEST"],
    ["1e308", 1e308, "COUNT_EXCEEDS_MAX"],
    ["10.000000000000002", 10.000000000000002, "COUNT_EXCEEDS_MAX"],
    ['"1"', "1", "INVALID_REQUEST"],
    ["null", null, "INVALID_REQUEST"],
    ["true", true, "INVALID_REQUEST"],
    ["{}", {}, "INVALID_REQUEST"],
    ["[1]", [1], "INVALID_REQUEST"],
    ["1n", 1n, "INVALID_REQUEST"],
    ["a symbol", Symbol("1"), "INVALID_REQUEST"],
    ["new Number(1)", new Number(1), "INVALID_REQUEST"],
    ["-0", -0, null],
    ["0", 0, null],
    ["5e-324", 5e-324, null],
    ["0.5", 0.5, null],
    ["10", 10, null],
  ];
  for (const [label, count, code] of COUNTS) {
    it(`count ${label} is ${code ?? "valid"}`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        if (code === null) {
          // Each on a fresh key: a valid count is granted by every call.
          assert.equal((await limiter.check("send", { key: "c1", count })).ok, true, path);
          assert.equal((await limiter.limit("send", { key: "c2", count })).ok, true, path);
          assert.equal((await limiter.limitAll([{ name: "send", key: "c3", count }])).ok, true, path);
          continue;
        }
        const calls = [() => limiter.limit("send", { count }), () => limiter.check("send", { count }), () => limiter.limitAll([{ name: "send", count }])];
        for (const call of calls) {
          await assert.rejects(call(), (error) => assertNamed(error, { code, field: "count", value: code === "INVALID_REQUEST" && typeof count === "number" ? count : undefined }), path);
        }
        assert.equal(touched(), 0, `${path}: a bad count touched the store`);
      }
    });
  }

  for (const [label, reserve] of [['"true"', "true"], ["1", 1], ["0", 0], ["null", null], ["{}", {}], ["[]", []], ["NaN", NaN]]) {
    it(`reserve ${label} is an INVALID_REQUEST naming reserve`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        await assert.rejects(limiter.limit("send", { reserve }), (error) => assertNamed(error, { code: "INVALID_REQUEST", field: "reserve" }), path);
        await assert.rejects(limiter.limitAll([{ name: "send", reserve }]), (error) => assertNamed(error, { code: "INVALID_REQUEST", field: "reserve" }), path);
        assert.equal(touched(), 0, path);
      }
    });
  }

  for (const [label, sampleShards, valid] of [
    ["0", 0, false], ["-1", -1, false], ["-0", -0, false], ["0.5", 0.5, false], ["NaN", NaN, false], ["Infinity", Infinity, false],
    ['"2"', "2", false], ["null", null, false], ["true", true, false], ["{}", {}, false],
    ["1", 1, true], ["4", 4, true], ["2^53", 2 ** 53, true], ["1e308", 1e308, true],
  ]) {
    it(`sampleShards ${label} is ${valid ? "valid" : "an INVALID_REQUEST naming sampleShards"}`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        if (valid) {
          assert.equal((await limiter.getValue("wide", { sampleShards })).value, 40, path);
          continue;
        }
        await assert.rejects(limiter.getValue("wide", { sampleShards }), (error) => assertNamed(error, { code: "INVALID_REQUEST", field: "sampleShards" }), path);
        assert.equal(touched(), 0, path);
      }
    });
  }

  for (const [label, now, valid] of [
    ["NaN", NaN, false], ["Infinity", Infinity, false], ["-Infinity", -Infinity, false], ['"5"', "5", false], ["null", null, false],
    ["undefined", undefined, false], ["{}", {}, false], ["5n", 5n, false],
    ["0", 0, true], ["-0", -0, true], ["2^53", 2 ** 53, true], ["-1e15", -1e15, true],
  ]) {
    it(`a clock reading ${label} is ${valid ? "valid" : "an INVALID_REQUEST naming now"}`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS, { now: () => now })) {
        tally.add("inputs tried");
        if (valid) {
          assert.equal((await limiter.limit("send")).ok, true, path);
          continue;
        }
        for (const call of [() => limiter.limit("send"), () => limiter.check("send"), () => limiter.getValue("send"), () => limiter.limitAll([{ name: "send" }])]) {
          await assert.rejects(call(), (error) => assertNamed(error, { code: "INVALID_REQUEST", field: "now" }), path);
        }
        assert.equal(touched(), 0, path);
      }
    });
  }

  for (const [label, drawn, valid] of [
    ["1", 1, false], ["1.5", 1.5, false], ["-0.1", -0.1, false], ["NaN", NaN, false], ['"0.5"', "0.5", false], ["null", null, false],
    ["0", 0, true], ["-0", -0, true], ["0.9999999999999999", 0.9999999999999999, true],
  ]) {
    it(`a random source returning ${label} is ${valid ? "valid" : "an INVALID_RANDOM error"}`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS, { random: () => drawn })) {
        tally.add("inputs tried");
        if (valid) {
          assert.equal((await limiter.limit("wide", { count: 15 })).ok, true, path);
          continue;
        }
        await assert.rejects(limiter.limit("wide", { count: 15 }), { code: "INVALID_RANDOM" }, path);
        assert.equal(touched(), 0, path);
      }
    });
  }
});

describe("limit names", () => {
  const NAMES = [
    ["5", 5, "INVALID_REQUEST"],
    ["null", null, "INVALID_REQUEST"],
    ["undefined", undefined, "INVALID_REQUEST"],
    ["{}", {}, "INVALID_REQUEST"],
    ["a symbol", Symbol("send"), "INVALID_REQUEST"],
    ["a lone surrogate", "send\uD800", "INVALID_REQUEST"],
    ["1025 bytes", "n".repeat(1025), ["UNKNOWN_LIMIT", "INVALID_REQUEST"]],
    ['"__proto__"', "__proto__", "UNKNOWN_LIMIT"],
    ['"constructor"', "constructor", "UNKNOWN_LIMIT"],
    ['"toString"', "toString", "UNKNOWN_LIMIT"],
    ['"hasOwnProperty"', "hasOwnProperty", "UNKNOWN_LIMIT"],
    ['"valueOf"', "valueOf", "UNKNOWN_LIMIT"],
    ['""', "", "UNKNOWN_LIMIT"],
  ];
  for (const [label, name, code] of NAMES) {
    it(`an undefined name ${label} is ${code}, never a limit found on Object.prototype`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        for (const call of [() => limiter.limit(name), () => limiter.check(name), () => limiter.getValue(name), () => limiter.reset(name), () => limiter.limitAll([{ name }])]) {
          await assert.rejects(call(), (error) => error instanceof Error && [code].flat().includes(error.code), `${path}: ${label}`);
        }
        assert.equal(touched(), 0, path);
      }
    });
  }

  it('limits named "__proto__", "constructor", "toString" and "" are ordinary limits, and pollute nothing', async () => {
    const limits = JSON.parse('{"__proto__": {"kind":"token bucket","rate":1,"period":1000}, "constructor": {"kind":"fixed window","rate":2,"period":1000,"start":0}, "toString": {"kind":"token bucket","rate":3,"period":1000}, "": {"kind":"token bucket","rate":4,"period":1000}}');
    assert.equal(Object.getPrototypeOf(limits), Object.prototype, "JSON.parse made __proto__ an own field");
    for (const { path, limiter } of limitersFor(limits)) {
      tally.add("inputs tried", 4);
      for (const [name, capacity] of [["__proto__", 1], ["constructor", 2], ["toString", 3], ["", 4]]) {
        assert.deepEqual(await limiter.limit(name, { key: "__proto__", count: capacity }), { ok: true }, `${path} ${name}`);
        assert.equal((await limiter.limit(name, { key: "__proto__" })).ok, false, `${path} ${name}`);
        assert.equal((await limiter.getValue(name, { key: "constructor" })).value, capacity, `${path} ${name}`);
      }
    }
    assertPrototypesClean();
  });

  it("a name longer than 1024 bytes is refused when the limiter is made, or by every call, naming its size", async () => {
    const long = "n".repeat(1025);
    tally.add("inputs tried");
    let limiter;
    try {
      limiter = new RateLimiter(new MemoryStore(), { [long]: LIMITS.send });
    } catch (error) {
      assert.equal(error.code, "INVALID_REQUEST");
      assert.ok(error.message.includes("1025") && error.message.includes("1024"), error.message);
      return;
    }
    await assert.rejects(limiter.limit(long), (error) => error.code === "INVALID_REQUEST" && error.message.includes("1025 bytes") && error.message.includes("1024"));
  });

  it("an inline-config call with a name longer than 1024 bytes is an INVALID_REQUEST naming its size", async () => {
    for (const { path, limiter, touched } of limitersFor(LIMITS)) {
      tally.add("inputs tried");
      for (const name of ["n".repeat(1025), "é".repeat(513)]) {
        await assert.rejects(limiter.limit(name, { config: LIMITS.send }), (error) => error.code === "INVALID_REQUEST" && error.message.includes(`${utf8Bytes(name)} bytes`), path);
      }
      assert.equal(touched(), 0, path);
    }
  });

  it("an error never echoes more than a few hundred characters of a caller's name or key", async () => {
    const huge = "n".repeat(1 << 20);
    for (const { path, limiter } of limitersFor(LIMITS)) {
      tally.add("inputs tried");
      for (const call of [() => limiter.limit(huge), () => limiter.limit("send", { key: huge }), () => limiter.limit(huge, { config: LIMITS.send })]) {
        await assert.rejects(call(), (error) => error.message.length < 400, path);
      }
    }
  });
});

/** Asserts Object.prototype and Array.prototype carry no enumerable or new own properties. */
function assertPrototypesClean() {
  const clean = ["constructor", "__defineGetter__", "__defineSetter__", "hasOwnProperty", "__lookupGetter__", "__lookupSetter__", "isPrototypeOf", "propertyIsEnumerable", "toString", "valueOf", "__proto__", "toLocaleString"];
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).filter((name) => !clean.includes(name)), []);
  const probe = {};
  for (const field of ["value", "ts", "rate", "capacity", "count", "config", "polluted", "0"]) assert.equal(probe[field], undefined, `({}).${field} is set`);
}

describe("prototype pollution", () => {
  it("MemoryStore and the limiter keep keys and names like __proto__ and constructor as data, never as prototypes", async () => {
    const hostile = ["__proto__", "constructor", "prototype", "hasOwnProperty", "toString", "valueOf", "__defineGetter__", "0"];
    const limits = Object.fromEntries(hostile.map((name) => [name, { kind: "token bucket", rate: 2, period: SECOND }]));
    Object.defineProperty(limits, "__proto__", { value: { kind: "token bucket", rate: 2, period: SECOND }, enumerable: true });
    const store = new MemoryStore();
    const limiter = new RateLimiter(store, limits, { now: () => NOW });
    for (const name of hostile) {
      for (const key of [undefined, ...hostile]) {
        tally.add("inputs tried");
        assert.equal((await limiter.limit(name, { key, count: 2 })).ok, true, `${name} / ${key}`);
        assert.equal((await limiter.limit(name, { key })).ok, false, `${name} / ${key}`);
      }
    }
    assert.equal(store.size, hostile.length * (hostile.length + 1));
    // Written directly too, then read back: data only.
    store.write({ name: "__proto__", key: "__proto__", shard: 0 }, { value: 1, ts: 2 });
    assert.deepEqual(store.read({ name: "__proto__", key: "__proto__", shard: 0 }), { value: 1, ts: 2 });
    assert.equal(store.read({ name: "__proto__", key: "constructor", shard: 7 }), null);
    assertPrototypesClean();
  });

  it("the refs a callback store is given are plain objects with own fields only", async () => {
    const refs = [];
    const store = { read: (ref) => (refs.push(ref), null), write: (ref) => void refs.push(ref) };
    const limiter = new RateLimiter(store, { __proto__: null, wide: LIMITS.wide }, { now: () => NOW, random: () => 0.5 });
    await limiter.limit("wide", { key: "__proto__", count: 15 });
    tally.add("inputs tried");
    assert.ok(refs.length >= 2);
    for (const ref of refs) {
      assert.equal(Object.getPrototypeOf(ref), Object.prototype);
      assert.deepEqual(Object.keys(ref).sort(), ["key", "name", "shard"]);
      assert.equal(Object.hasOwn(ref, "key") && ref.key, "__proto__");
    }
  });

  it("a polluted Object.prototype does not change configs: inherited rate, capacity or shards are not fields", async () => {
    const pollution = { capacity: 1e9, maxReserved: 1e9, shards: 3, start: 0 };
    try {
      Object.assign(Object.prototype, pollution);
      for (const kind of KINDS) {
        tally.add("inputs tried");
        const limiter = new RateLimiter(new CheckedStore(), { s: { kind, rate: 2, period: SECOND } }, { now: () => NOW, random: () => 0.5 });
        await assert.rejects(limiter.limit("s", { count: 3 }), { code: "COUNT_EXCEEDS_MAX" }, kind);
        assert.deepEqual((await limiter.getValue("s")).config.capacity, 2);
      }
    } finally {
      for (const field of Object.keys(pollution)) delete Object.prototype[field];
    }
    assertPrototypesClean();
  });
});

// ---------------------------------------------------------------------------
// Options objects and the free functions' arguments.

describe("options objects: own fields only, unknown ones an INVALID_REQUEST naming them", () => {
  for (const [label, options] of [
    ["a misspelt field (kye)", { kye: "ada" }],
    ["an unknown field (burst)", { burst: 5 }],
    ['an own "__proto__" field', JSON.parse('{"__proto__": {"count": 0}}')],
  ]) {
    it(`${label} is an INVALID_REQUEST naming it`, async () => {
      for (const { path, limiter, touched } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        await assert.rejects(limiter.limit("send", options), (error) => error.code === "INVALID_REQUEST", path);
        assert.equal(touched(), 0, path);
      }
    });
  }

  it("an inherited count is not a count: Object.create({ count: 0 }) asks for the default 1", async () => {
    for (const { path, limiter } of limitersFor(LIMITS)) {
      tally.add("inputs tried");
      await limiter.limit("send", { count: 10 });
      assert.equal((await limiter.limit("send", Object.create({ count: 0 }))).ok, false, `${path}: an inherited count of 0 was used`);
    }
  });

  it("a polluted Object.prototype.count does not make every call free", async () => {
    try {
      Object.prototype.count = 0;
      for (const { path, limiter } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        await limiter.limit("send", { count: 10 });
        assert.equal((await limiter.limit("send", {})).ok, false, `${path}: Object.prototype.count = 0 was used`);
      }
    } finally {
      delete Object.prototype.count;
    }
  });

  for (const [label, options] of [["null", null], ["5", 5], ['"ada"', "ada"], ["[]", []]]) {
    it(`options ${label} is an INVALID_REQUEST naming options`, async () => {
      for (const { path, limiter } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        await assert.rejects(limiter.limit("send", options), (error) => error.code === "INVALID_REQUEST" && error.field === "options", path);
      }
    });
  }

  for (const [label, throws] of [['"yes"', "yes"], ["1", 1], ["null", null]]) {
    it(`throws ${label} is an INVALID_REQUEST naming throws`, async () => {
      for (const { path, limiter } of limitersFor(LIMITS)) {
        tally.add("inputs tried");
        await assert.rejects(limiter.limit("send", { throws }), (error) => error.code === "INVALID_REQUEST" && error.field === "throws", path);
      }
    });
  }

  it("an unknown field of a limitAll item is an INVALID_REQUEST naming it", async () => {
    for (const { path, limiter } of limitersFor(LIMITS)) {
      tally.add("inputs tried");
      await assert.rejects(limiter.limitAll([{ name: "send", kount: 2 }]), (error) => error.code === "INVALID_REQUEST", path);
    }
  });
});

describe("calculateRateLimits and withJitter arguments: checked, never coerced", () => {
  const config = LIMITS.send;
  for (const [label, call] of [
    ['calculateRateLimits with now "5"', () => calculateRateLimits(new Float64Array([1, 0]), config, "5")],
    ["calculateRateLimits with now null", () => calculateRateLimits(new Float64Array([1, 0]), config, null)],
    ['calculateRateLimits with states "abc"', () => calculateRateLimits("abc", config, NOW)],
    ["calculateRateLimits with an odd number of states", () => calculateRateLimits(new Float64Array([1, 0, 5]), config, NOW)],
    ['withJitter with retryAfter "5"', () => withJitter("5", 10, () => 0.5)],
    ["withJitter with maxJitter null", () => withJitter(5, null, () => 0.5)],
  ]) {
    it(`${label} is an error naming the argument`, () => {
      tally.add("inputs tried");
      assert.throws(call, (error) => error instanceof Error && typeof error.code === "string");
    });
  }

  it("calculateRateLimit checks its arguments already: now and count of the wrong type are errors naming them", () => {
    for (const [now, count, field] of [["5", 0, "now"], [null, 0, "now"], [NOW, "1", "count"], [NOW, -1, "count"], [NOW, NaN, "count"]]) {
      tally.add("inputs tried");
      assert.throws(() => calculateRateLimit(null, config, now, count), (error) => assertNamed(error, { code: "INVALID_REQUEST", field }));
    }
    for (const state of [{ value: NaN, ts: 0 }, { value: 1 }, "full", 5]) {
      tally.add("inputs tried");
      assert.throws(() => calculateRateLimit(state, config, NOW), { code: "CORRUPT_STATE" });
    }
  });
});

describe("the matrix's checks can fail", () => {
  it("an error without a field, or a message that hides the value, is caught", () => {
    const vague = Object.assign(new Error("bad config"), { code: "INVALID_CONFIG", field: "rate" });
    assert.throws(() => assertNamed(vague, { code: "INVALID_CONFIG", field: "rate", value: -1 }), { code: "ERR_ASSERTION" });
    const unnamed = Object.assign(new Error("rate must be positive (got -1)"), { code: "INVALID_CONFIG" });
    assert.throws(() => assertNamed(unnamed, { code: "INVALID_CONFIG", field: "rate", value: -1 }), { code: "ERR_ASSERTION" });
    assert.throws(() => assertNamed("rate -1", { code: "INVALID_CONFIG", field: "rate" }), { code: "ERR_ASSERTION" });
  });

  it("a polluted prototype is caught", () => {
    try {
      Object.prototype.polluted = true;
      assert.throws(() => assertPrototypesClean(), { code: "ERR_ASSERTION" });
    } finally {
      delete Object.prototype.polluted;
    }
  });

  it("a store that stores a non-finite number is caught", () => {
    assert.throws(() => new CheckedStore().write({ name: "x", shard: 0 }, { value: -Infinity, ts: 0 }), { code: "ERR_ASSERTION" });
  });
});
