// ratebound/postgres's decision function (PL/pgSQL, installed by createTable) against the Rust
// core, on a real PostgreSQL server (Debian's, in a temporary directory on a loopback port): more
// than 100,000 random decisions go through `postgresStore(client).decide(batch)` and through the
// core's `rb_plan`/`rb_decide` (the package's own WebAssembly, through its engine module and the
// buffer `src/wasm/io.rs` lays out), and every answer (what each ref held,
// whether each item wrote) and every stored number (value, ts, full_at) must be the same with
// Object.is. Both kinds, reservations, maxReserved (0 included), capacity ≠ rate, 1 to 16 shards,
// all-or-nothing and one-by-one batches, clocks that step back, and states seeded near 0, in
// debt, huge, tiny and corrupt. First, the function's IEEE arithmetic (sums, products and
// quotients that PostgreSQL's own operators refuse) and its nextafter, against JavaScript's.
//
// Reproduce a failure with PG_DIFF_SEED=<seed printed in the message>.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import "../../pkg/dist/node.js"; // instantiates the core
import * as engine from "../../pkg/dist/core/engine.js";
import { CALENDAR_PERIODS, COMPILE_TAG_CALENDAR, PLAN_PERIOD, PLAN_WINDOW_END, PLAN_WINDOW_LONGEST, PLAN_WINDOW_START } from "../../pkg/dist/core/boundary.js";
import { createTable, postgresStore } from "../../pkg/dist/postgres.js";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { randomTools, show } from "../js/helpers.mjs";

failOnDeprecationWarnings();

const SEED = process.env.PG_DIFF_SEED === undefined ? 0x9d1f_2026 : Number(process.env.PG_DIFF_SEED);
const DECISIONS = 100_000;
/** Decisions in groups of calls through a pool's group commit. */
const GROUPED = 50_000;
/** Single calls on limits with one shard: the one-item function's path. */
const ONE_CALLS = 50_000;
const MAX = 1.7976931348623157e308;

/** A number as float8in reads it back exactly. */
const text = (x) => (Object.is(x, -0) ? "-0" : String(x));

/** Rust's f64::next_up, from the bits. */
function nextUp(x) {
  if (Number.isNaN(x) || x === Infinity) return x;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const abs = bits & 0x7fff_ffff_ffff_ffffn;
  view.setBigUint64(0, abs === 0n ? 1n : bits === abs ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/**
 * Rust's f64::max as the core's WebAssembly computes it (measured on a wasm32 build of
 * `a.max(b)` at opt-level z and 3): a NaN operand is ignored; of two equal numbers, the first.
 */
const rustMax = (a, b) => (Number.isNaN(a) ? b : Number.isNaN(b) ? a : b > a ? b : a);

/**
 * The core the package ships (its engine module, instantiated by the Node entry), driven raw:
 * numbers in and out through the buffer `src/wasm/io.rs` lays out.
 */
function loadCore() {
  const core = engine.core;
  const io = engine.io;
  const L = engine.layout;
  const field = (value) => (value === undefined ? [0, 0] : value === null ? [1, 0] : typeof value === "string" ? [COMPILE_TAG_CALENDAR, CALENDAR_PERIODS.indexOf(value)] : [2, value]);
  return {
    /** A validated config's seven numbers and how many draws a decision takes, or null when invalid. */
    compile(config) {
      io[L.EXTRA] = config.kind === "token bucket" ? 0 : 1;
      ["rate", "period", "capacity", "maxReserved", "shards", "start"].forEach((name, index) => {
        [io[L.EXTRA + 1 + 2 * index], io[L.EXTRA + 2 + 2 * index]] = field(config[name]);
      });
      if (core.rb_compile() !== 0) return null;
      return { numbers: Array.from(io.subarray(L.EXTRA, L.EXTRA + 7)), draws: io[L.EXTRA + 7] };
    },
    /** Writes the items' records; plans them; returns each plan, or null for an item that is bad input. */
    plan(items) {
      items.forEach((item, index) => {
        const record = L.ITEMS + index * L.ITEM;
        io.set(item.limit.compiled.numbers, record);
        io.set([item.count, item.reserve ? 1 : 0, item.write ? 1 : 0, item.now, ...item.draws], record + 7);
      });
      core.rb_plan(items.length);
      return items.map((_, index) => {
        const at = L.PLAN + index * L.PLAN_STRIDE;
        if (io[at + 7] !== 0) return null;
        const reads = io[at + 2];
        return {
          shards: [io[at], io[at + 1]].slice(0, reads),
          fresh: [{ value: io[at + 3], ts: io[at + 4] }, { value: io[at + 5], ts: io[at + 6] }].slice(0, reads),
          rate: io[at + 8],
          capacity: io[at + 9],
          maxReserved: Number.isNaN(io[at + 10]) ? null : io[at + 10],
          period: io[at + PLAN_PERIOD],
          window: Number.isNaN(io[at + PLAN_WINDOW_START]) ? null : { start: io[at + PLAN_WINDOW_START], end: io[at + PLAN_WINDOW_END], longest: io[at + PLAN_WINDOW_LONGEST] },
        };
      });
    },
    /**
     * Decides planned items (their records written by the last `plan`) on `stored` (per slot, a
     * state or null); returns the batch's status, each item's status, and per slot what to write.
     */
    decide(items, slotsOfItems, stored, all) {
      items.forEach((_, index) => io.set(slotsOfItems[index], L.MAP + 2 * index));
      stored.forEach((state, slot) => io.set(state === null ? [NaN, NaN] : [state.value, state.ts], L.SLOTS + slot * L.SLOT));
      const status = core.rb_decide(items.length, stored.length, all ? 1 : 0);
      return {
        status,
        items: items.map((_, index) => io[L.OUT + index * L.OUT_STRIDE]),
        writes: stored.map((_, slot) => {
          const at = L.SLOTS + slot * L.SLOT;
          return Number.isNaN(io[at + 2]) ? null : { value: io[at + 2], ts: io[at + 3], fullAt: io[at + 4] };
        }),
      };
    },
  };
}

/** Random limits, calls and states from a seeded generator. */
function generator(seed) {
  const { random, chance, pick, integer, logUniform } = randomTools(seed);
  const unit = () => pick([random, random, random, () => 0, () => 0.9999999999999999, () => 0.5])();

  const config = () => {
    const kind = chance(0.5) ? "token bucket" : "fixed window";
    const rate = pick([() => integer(1, 100), () => logUniform(-3, 7), () => pick([1, 3, 10, 40_000]), () => logUniform(-300, 300), () => random() * 10])();
    const period = pick([() => pick([1, 1000, 60_000, 86_400_000]), () => logUniform(-3, 10), () => logUniform(-300, 300), () => integer(1, 10_000)])();
    const limit = { kind, rate, period };
    if (chance(0.6)) limit.capacity = pick([() => 0, () => -0, () => rate, () => rate * integer(2, 10), () => rate * random(), () => logUniform(-3, 8), () => MAX, () => logUniform(-300, 300)])();
    if (chance(0.5)) limit.maxReserved = pick([() => 0, () => -0, () => random() * 10, () => integer(1, 100), () => logUniform(-300, 300), () => MAX])();
    if (chance(0.5)) limit.shards = pick([() => 2, () => 3, () => integer(1, 16), () => 16])();
    if (kind === "fixed window" && chance(0.5)) limit.start = pick([() => 0, () => 1_700_000_000_000 - integer(0, 1e9), () => -integer(0, 1e12), () => random() * 1e6, () => 9_007_199_254_740_992 * (random() * 2 - 1)])();
    if (kind === "fixed window" && chance(0.25)) {
      // A calendar quota: unsharded, anchored or not (a month end, Feb 29, anywhere).
      limit.period = pick(["day", "week", "month", "year"]);
      delete limit.shards;
      if (chance(0.5)) limit.start = pick([() => Date.UTC(2024, 0, 31), () => Date.UTC(2024, 1, 29, 12), () => 1_700_000_000_000 - integer(0, 1e11), () => -integer(0, 1e12)])();
    }
    return limit;
  };
  /** A period in ms to step clocks by (a calendar period's: a day). */
  const periodMs = (limit) => (typeof limit.period === "number" ? limit.period : 86_400_000);

  const clockBase = () => pick([() => 0, () => 1_700_000_000_000 + integer(0, 1e11), () => random() * 1e6, () => -integer(0, 1e12), () => logUniform(-300, 15.9), () => -logUniform(-300, 15), () => 8.6e15])();
  const step = (period) => pick([() => 0, () => integer(1, 1000), () => random() * period, () => period * integer(1, 5), () => -integer(1, 1e6), () => -random() * period, () => logUniform(-320, 12), () => -logUniform(-320, 12), () => period * integer(1, 100) + random()])();

  const count = (limit) => {
    const max = limit.capacity ?? limit.rate;
    return pick([() => 0, () => -0, () => 1, () => integer(1, Math.max(1, Math.min(1e6, Math.ceil(max) + 2))), () => random() * max * 2, () => random() * max / (limit.shards ?? 1), () => logUniform(-3, 9), () => logUniform(-320, 308), () => max, () => 5e-324])();
  };

  const value = (now) =>
    pick([() => 0, () => -0, () => 5e-324, () => -5e-324, () => 1e-300, () => -1e-300, () => random() * 100, () => -random() * 1e6, () => -1e300, () => -MAX, () => 1e308, () => MAX, () => integer(-5, 50), () => -logUniform(-300, 300), () => now])();
  const timestamp = (now) =>
    pick([() => now, () => now - random() * 1e6, () => now + random() * 1e6, () => 0, () => -0, () => -1e300, () => 1e300, () => 5e-324, () => -8.9e15, () => 8.9e15, () => now - logUniform(-300, 300), () => MAX, () => -MAX])();

  return { random, chance, pick, integer, logUniform, unit, config, periodMs, clockBase, step, count, value, timestamp };
}

describe("the decision function on a real PostgreSQL server, against the core", () => {
  let server;
  let client;
  let store;
  let core;
  const rows = async (sql, params = []) => (await client.query(sql, params)).rows;

  before(async () => {
    core = loadCore();
    server = await startPostgres({ maxConnections: 20 });
    client = new pg.Client(server.connectionString);
    client.on("error", () => {}); // the test's own connection
    await client.connect();
    await client.query("SET extra_float_digits = 3");
    await createTable(client);
    store = postgresStore(client);
  });
  after(async () => {
    await client?.end().catch(() => {});
    server?.stop();
  });

  test("IEEE sums, products and quotients (where PostgreSQL's operators raise), min, max and nextafter equal JavaScript's and Rust's, bit for bit, on 60,000 pairs", async () => {
    const { random, pick, logUniform } = generator(SEED);
    const edges = [0, -0, 5e-324, -5e-324, 2.2250738585072014e-308, 2 ** -1021, 2 ** -1022 + 2 ** -1074, 1, -1, 0.5, 1.5, 2 ** 1023, -(2 ** 1023), MAX, -MAX, Infinity, -Infinity, NaN, 2 ** 53, 2 ** -53, 1e-300, 1e300, 3, 2 ** -900, 2 ** -969, 2 ** -1000];
    const number = () =>
      pick([() => pick(edges), () => (random() < 0.5 ? -1 : 1) * logUniform(-323, 308), () => random() * 100 - 50, () => nextUp(pick(edges)), () => -nextUp(pick(edges)), () => (random() < 0.5 ? -1 : 1) * 2 ** Math.floor(random() * 2098 - 1074)])();
    const pairs = Array.from({ length: 60_000 }, () => [number(), number()]);
    for (const a of edges) for (const b of edges) pairs.push([a, b]);
    const checked = { add: 0, mul: 0, div: 0, min: 0, max: 0, next_up: 0 };
    for (let from = 0; from < pairs.length; from += 10_000) {
      const chunk = pairs.slice(from, from + 10_000);
      const result = await rows(
        `SELECT ratebound_v3_add(a, b)::text AS add, ratebound_v3_mul(a, b)::text AS mul, ratebound_v3_div(a, b)::text AS div,
           ratebound_v3_min(a, b)::text AS min, ratebound_v3_max(a, b)::text AS max, ratebound_v3_next_up(a)::text AS next_up
         FROM unnest($1::float8[], $2::float8[]) WITH ORDINALITY AS u(a, b, o) ORDER BY o`,
        [`{${chunk.map(([a]) => text(a)).join(",")}}`, `{${chunk.map(([, b]) => text(b)).join(",")}}`],
      );
      chunk.forEach(([a, b], index) => {
        const row = result[index];
        const expected = { add: a + b, mul: a * b, div: a / b, min: Math.min(a, b), max: rustMax(a, b), next_up: nextUp(a) };
        for (const [op, want] of Object.entries(expected)) {
          assert.ok(Object.is(Number(row[op]), want), `${op}(${text(a)}, ${text(b)}): PostgreSQL ${row[op]}, JavaScript ${text(want)}`);
          checked[op]++;
        }
      });
    }
    assert.ok(checked.add > 60_000);
  });

  /**
   * Random traffic: groups of calls (`groupSize()` of them, each a batch), sent at once through
   * `decideGroup`, then each checked in order against the core on the states the calls before it
   * left: what the table held (or the calls before it in its group wrote) is what it read, it
   * wrote what the core wrote, and every stored number is the core's.
   */
  async function randomDecisions(t, { from, decisions, groupSize, maxItems, decideGroup }) {
    const g = generator(from);
    const limits = [];
    while (limits.length < 24) {
      const config = g.config();
      const compiled = core.compile(config);
      if (compiled !== null) limits.push({ name: `L${limits.length}`, config, compiled });
    }
    const keys = ["a", "b", undefined];
    /** The database as the core says it must be: ref id → { value, ts, fullAt }. */
    const model = new Map();
    const idOf = (ref) => JSON.stringify([ref.name, ref.key ?? null, ref.shard]);
    const same = (a, b) => (a === null || b === null ? a === b : Object.is(a.value, b.value) && Object.is(a.ts, b.ts));
    const stats = { decisions: 0, batches: 0, all: 0, granted: 0, refused: 0, errors: 0, written: 0, corrupt: 0, seeded: 0, badInput: 0, calendar: 0 };
    const failure = (what, details) => `seed ${from}, batch ${stats.batches}: ${what}\n${show(details)}`;

    /** Writes `states` (ref → state) straight into the table, in one statement, and into the model. */
    async function seed(states) {
      const list = (values) => `{${values.map((value) => JSON.stringify(String(value))).join(",")}}`;
      await client.query(
        `INSERT INTO ratebound (name, key, shard, value, ts, full_at)
           SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::float8[], $5::float8[], $6::float8[])
         ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at`,
        [
          list(states.map(([ref]) => ref.name)),
          list(states.map(([ref]) => ref.key ?? "")),
          list(states.map(([ref]) => ref.shard)),
          list(states.map(([, state]) => text(state.value))),
          list(states.map(([, state]) => text(state.ts))),
          list(states.map(() => "Infinity")),
        ],
      );
      for (const [ref, state] of states) model.set(idOf(ref), { ...state, fullAt: Infinity });
      stats.seeded += states.length;
    }

    async function compareTable() {
      const table = await rows("SELECT name, key, shard, value::text AS value, ts::text AS ts, full_at::text AS full_at FROM ratebound");
      assert.equal(table.length, model.size, failure("the table has another number of rows than the core wrote", { rows: table.length, model: model.size }));
      for (const row of table) {
        const want = model.get(idOf({ name: row.name, key: row.key === "" ? undefined : row.key, shard: row.shard }));
        const got = { value: Number(row.value), ts: Number(row.ts), fullAt: Number(row.full_at) };
        assert.ok(want !== undefined && same(got, want) && Object.is(got.fullAt, want.fullAt), failure("a stored row differs from the core's", { row, want }));
      }
    }

    let clock = g.clockBase();
    while (stats.decisions < decisions) {
      const group = [];
      for (let calls = groupSize(); group.length < calls; ) {
        const call = await nextCall();
        if (call !== undefined) group.push(call);
      }
      const answers = await decideGroup(group.map((call) => call.batch));
      const corrupted = [];
      group.forEach((call, index) => check(call, answers[index], corrupted));
      const repaired = new Map(corrupted.map((ref) => [idOf(ref), ref])); // (several calls can read one)
      if (repaired.size > 0) await seed([...repaired.values()].map((ref) => [ref, { value: 1, ts: 0 }]));
      if (stats.batches % 200 < group.length) await compareTable();
    }
    await compareTable();
    t.diagnostic(`seed ${from}: ${show(stats)}`);
    for (const outcome of ["granted", "refused", "errors", "corrupt", "all", "calendar"]) assert.ok(stats[outcome] > 0, `the traffic had ${outcome}`);
    return stats;

    /** The next call: a batch planned by the core (bad input never reaches the store), its states seeded now and then. */
    async function nextCall() {
      if (g.chance(0.05)) clock = g.clockBase();
      const all = g.chance(0.3);
      const size = all ? g.integer(1, 4) : g.integer(1, maxItems);
      // The calls, planned by the core: bad input never reaches the store.
      let now = (clock += g.step(1000));
      let items = Array.from({ length: size }, () => {
        const limit = g.pick(limits);
        if (!all) now = clock + g.step(g.periodMs(limit.config));
        return {
          limit,
          name: g.chance(0.1) ? g.pick(limits).name : limit.name,
          key: g.pick(keys),
          count: g.count(limit.config),
          reserve: g.chance(0.4),
          write: all ? true : g.chance(0.8),
          now,
          draws: [g.unit(), g.unit(), g.unit(), g.unit()],
        };
      });
      if (all && g.chance(0.3)) items.forEach((item) => (item.write = g.chance(0.2))); // checkAll, and now and then a mixed batch
      let plans = core.plan(items);
      stats.badInput += plans.filter((plan) => plan === null).length;
      items = items.filter((_, index) => plans[index] !== null);
      if (items.length === 0) return undefined;
      plans = core.plan(items);

      const refs = [];
      const slotsOfItems = items.map((item, index) =>
        plans[index].shards.map((shard) => {
          const ref = { name: item.name, ...(item.key === undefined ? {} : { key: item.key }), shard };
          let slot = refs.findIndex((known) => idOf(known) === idOf(ref));
          if (slot < 0) slot = refs.push(ref) - 1;
          return slot;
        }),
      );
      // Now and then, states the traffic alone rarely reaches: near 0, deep in debt, huge, tiny, clocks far off; or corrupt.
      if (g.chance(0.25)) {
        const states = refs
          .filter(() => g.chance(0.5))
          .map((ref) => [ref, g.chance(0.05) ? { value: g.pick([NaN, Infinity, -Infinity]), ts: g.pick([NaN, Infinity, 0]) } : { value: g.value(clock), ts: g.timestamp(clock) }]);
        if (states.length > 0) await seed(states);
      }

      const batch = {
        refs,
        all,
        items: items.map((item, index) => ({
          reads: slotsOfItems[index],
          kind: item.limit.config.kind === "token bucket" ? 0 : 1,
          rate: plans[index].rate,
          period: plans[index].period,
          window: plans[index].window,
          capacity: plans[index].capacity,
          maxReserved: plans[index].maxReserved,
          shards: item.limit.compiled.numbers[5],
          start: Number.isNaN(item.limit.compiled.numbers[6]) ? null : item.limit.compiled.numbers[6],
          count: item.count,
          reserve: item.reserve,
          write: item.write,
          now: item.now,
          fresh: plans[index].fresh,
        })),
      };
      stats.calendar += batch.items.filter((item) => item.window !== null).length;
      return { batch, items, refs, slotsOfItems, all };
    }

    /** Checks one call's answer on the states the calls before it left; a corrupt ref read goes to `corrupted`. */
    function check({ batch, items, refs, slotsOfItems, all }, answer, corrupted) {
      stats.batches++;
      const before = refs.map((ref) => model.get(idOf(ref)) ?? null);
      before.forEach((state, slot) =>
        assert.ok(same(answer.stored[slot], state === null ? null : { value: state.value, ts: state.ts }), failure(`ref ${slot} was read as another state than the table held`, { ref: refs[slot], read: answer.stored[slot], held: state })),
      );
      stats.decisions += items.length;
      stats.all += all ? 1 : 0;

      if (before.some((state) => state !== null && !(Number.isFinite(state.value) && Number.isFinite(state.ts)))) {
        stats.corrupt++;
        assert.deepEqual(answer.wrote, items.map(() => false), failure("a batch that read a corrupt row wrote", { batch, answer }));
        corrupted.push(...refs.filter((ref) => !(Number.isFinite(model.get(idOf(ref))?.value ?? 0) && Number.isFinite(model.get(idOf(ref))?.ts ?? 0))));
        return;
      }

      // The core decides on the item records its last plan wrote: this call's again (the same plan).
      core.plan(items);
      const decided = core.decide(items, slotsOfItems, answer.stored, all);
      const anyWrite = items.some((item) => item.write);
      // As the driver checks it (runRemote): a write item of a granted batch, or a granted write item.
      const wrote = items.map((item, index) => item.write && (all ? decided.status === 1 && anyWrite : decided.items[index] === 1));
      assert.deepEqual(answer.wrote, wrote, failure("the function wrote other items than the core", { batch, stored: answer.stored, core: decided, function: answer.wrote }));
      decided.writes.forEach((write, slot) => {
        if (write !== null) model.set(idOf(refs[slot]), write);
      });
      for (const status of decided.items) {
        if (status === 1) stats.granted++;
        else if (status === 0) stats.refused++;
        else stats.errors++;
      }
      stats.written += decided.writes.filter((write) => write !== null).length;
    }
  }

  test(`${DECISIONS.toLocaleString("en")}+ random decisions from seed ${SEED} (PG_DIFF_SEED): every answer and every stored number equal the core's`, { timeout: 240_000 }, async (t) => {
    // On a client: each call alone, one statement each, in order.
    await randomDecisions(t, {
      from: SEED,
      decisions: DECISIONS,
      groupSize: () => 1,
      maxItems: 100,
      decideGroup: async ([batch]) => [await store.decide(batch)],
    });
  });

  test(`${GROUPED.toLocaleString("en")}+ random decisions in groups of calls on a pool (group commit: many calls in one statement) from seed ${SEED}: every answer and every stored number equal the core's deciding them one by one`, { timeout: 240_000 }, async (t) => {
    await client.query("TRUNCATE ratebound");
    // A pool whose statements are counted: the calls made at once go together in one.
    const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    pool.on("error", () => {});
    const statements = { many: 0, alone: 0 };
    const counted = Object.assign(Object.create(pool), {
      query(text, params) {
        if (/_decide_many_v3"\(/.test(text)) statements.many++;
        else if (/_decide(_one)?_v3"\(/.test(text)) statements.alone++;
        return pool.query(text, params);
      },
    });
    Object.defineProperty(counted, "totalCount", { get: () => pool.totalCount });
    const pooled = postgresStore(counted);
    let groups = 0;
    let calls = 0;
    try {
      const g = generator(SEED ^ 0x9a0);
      const stats = await randomDecisions(t, {
        from: SEED ^ 0x6e0,
        decisions: GROUPED,
        groupSize: () => g.integer(1, 12),
        maxItems: 10,
        decideGroup: async (batches) => {
          const before = { ...statements };
          // Every call at once, in one tick: they go together, in this order.
          const answers = await Promise.all(batches.map((batch) => pooled.decide(batch)));
          const sent = { many: statements.many - before.many, alone: statements.alone - before.alone };
          assert.deepEqual(sent, batches.length === 1 ? { many: 0, alone: 1 } : { many: 1, alone: 0 }, `${batches.length} calls at once took ${show(sent)} statements`);
          groups++;
          calls += batches.length;
          return answers;
        },
      });
      t.diagnostic(`${calls} calls in ${groups} statements (${statements.many} of the many-calls function)`);
      assert.ok(calls > 3 * groups && stats.all > 100, `the groups held ${calls} calls in ${groups} statements, ${stats.all} all or nothing`);
    } finally {
      await pool.end();
    }
  });

  test(`${ONE_CALLS.toLocaleString("en")} single calls on limits with one shard (the one-item function, and the batch function it hands the rest to) from seed ${SEED}: every answer and every stored number equal the core's`, { timeout: 240_000 }, async (t) => {
    const g = generator(SEED ^ 0x5eed);
    await client.query("TRUNCATE ratebound");
    await client.query("SET track_functions = 'pl'");
    const calls = async () => {
      await client.query("SELECT pg_stat_force_next_flush()");
      await client.query("SELECT pg_stat_clear_snapshot()");
      const counted = await rows("SELECT funcname, calls FROM pg_stat_user_functions WHERE funcname IN ('ratebound_decide_v3', 'ratebound_decide_one_v3')");
      return Object.fromEntries(counted.map((row) => [row.funcname, Number(row.calls)]));
    };
    const callsBefore = await calls();
    // Limits a service would declare (the fast path's), and the generator's extreme ones (the batch function's).
    const typical = () => {
      const kind = g.chance(0.5) ? "token bucket" : "fixed window";
      const rate = g.pick([1, 2, 3, 5, 10, 60, 100, 1000, 40_000, 1e9, 0.5, 7.25]);
      const limit = { kind, rate, period: g.pick([1, 1000, 60_000, 3_600_000, 86_400_000, 1500, 7]) };
      if (g.chance(0.5)) limit.capacity = g.pick([0, -0, rate, rate * 3, rate / 2, 1, 12.5]);
      if (g.chance(0.5)) limit.maxReserved = g.pick([0, -0, 1, 5, rate, 2.5]);
      if (kind === "fixed window" && g.chance(0.5)) limit.start = g.pick([0, 1_700_000_000_000, -5000, 1_700_000_000_000 + 0.5]);
      return limit;
    };
    const limits = [];
    while (limits.length < 40) {
      const config = limits.length < 30 ? typical() : g.config();
      delete config.shards;
      const compiled = core.compile(config);
      if (compiled !== null) limits.push({ name: `one${limits.length}`, config, compiled });
    }
    const model = new Map();
    const idOf = (ref) => JSON.stringify([ref.name, ref.key ?? null, ref.shard]);
    const same = (a, b) => (a === null || b === null ? a === b : Object.is(a.value, b.value) && Object.is(a.ts, b.ts));
    const stats = { decisions: 0, granted: 0, refused: 0, errors: 0, written: 0, checks: 0, reserved: 0, firstUse: 0, corrupt: 0, seeded: 0, negativeZero: 0, clockBack: 0, badInput: 0, calendar: 0 };
    const failure = (what, details) => `seed ${SEED} (PG_DIFF_SEED), single call ${stats.decisions}: ${what}\n${show(details)}`;
    let clock = g.chance(0.5) ? 1_700_000_000_000 : g.clockBase();
    while (stats.decisions < ONE_CALLS) {
      if (g.chance(0.01)) clock = g.chance(0.7) ? 1_700_000_000_000 + g.integer(0, 1e11) : g.clockBase();
      const limit = g.pick(limits);
      const key = g.pick(["a", "b", "c", undefined]);
      const now = (clock += g.chance(0.9) ? g.pick([0, 1, g.integer(1, 2000), g.random() * g.periodMs(limit.config)]) : g.step(g.periodMs(limit.config)));
      const item = { limit, name: limit.name, key, count: g.chance(0.7) ? g.pick([1, 1, 2, 0, 0.5, 3]) : g.count(limit.config), reserve: g.chance(0.3), write: g.chance(0.85), now, draws: [g.unit(), g.unit(), g.unit(), g.unit()] };
      const [plan] = core.plan([item]);
      if (plan === null) {
        stats.badInput++;
        continue;
      }
      const ref = { name: item.name, ...(key === undefined ? {} : { key }), shard: plan.shards[0] };
      // Now and then a state seeded straight into the table: typical, -0, extreme, or corrupt.
      if (g.chance(0.08)) {
        const state = g.chance(0.05)
          ? { value: g.pick([NaN, Infinity, -Infinity]), ts: g.pick([NaN, Infinity, 0]) }
          : g.chance(0.5)
            ? { value: g.pick([0, -0, 1, plan.capacity, plan.capacity / 2, -2, 0.25]), ts: g.pick([now, now - 1000, now + 5000, -0, 0]) }
            : { value: g.value(now), ts: g.timestamp(now) };
        await client.query(
          "INSERT INTO ratebound (name, key, shard, value, ts, full_at) VALUES ($1, $2, $3, $4::text::float8, $5::text::float8, 'Infinity') ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at",
          [ref.name, ref.key ?? "", ref.shard, text(state.value), text(state.ts)],
        );
        model.set(idOf(ref), { ...state, fullAt: Infinity });
        stats.seeded++;
      } else if (g.chance(0.02)) {
        await client.query("DELETE FROM ratebound WHERE name = $1 AND key = $2 AND shard = $3", [ref.name, ref.key ?? "", ref.shard]);
        model.delete(idOf(ref));
      }
      const batch = {
        refs: [ref],
        all: true,
        items: [{
          reads: [0],
          kind: limit.config.kind === "token bucket" ? 0 : 1,
          rate: plan.rate,
          period: plan.period,
          window: plan.window,
          capacity: plan.capacity,
          maxReserved: plan.maxReserved,
          shards: limit.compiled.numbers[5],
          start: Number.isNaN(limit.compiled.numbers[6]) ? null : limit.compiled.numbers[6],
          count: item.count,
          reserve: item.reserve,
          write: item.write,
          now,
          fresh: plan.fresh,
        }],
      };
      const before = model.get(idOf(ref)) ?? null;
      const answer = await store.decide(batch);
      stats.decisions++;
      if (plan.window !== null) stats.calendar++; // (the batch function's: the one-item function has no calendar)
      assert.ok(same(answer.stored[0], before === null ? null : { value: before.value, ts: before.ts }), failure("the state was read as another than the table held", { ref, read: answer.stored[0], held: before }));
      if (before === null) stats.firstUse++;
      else if (Object.is(before.value, -0)) stats.negativeZero++;
      if (before !== null && before.ts > now) stats.clockBack++;
      if (!item.write) stats.checks++;
      if (before !== null && !(Number.isFinite(before.value) && Number.isFinite(before.ts))) {
        stats.corrupt++;
        assert.deepEqual(answer.wrote, [false], failure("a call that read a corrupt row wrote", { batch, answer }));
        await client.query("DELETE FROM ratebound WHERE name = $1 AND key = $2 AND shard = $3", [ref.name, ref.key ?? "", ref.shard]);
        model.delete(idOf(ref));
        continue;
      }
      const decided = core.decide([item], [[0]], answer.stored, true);
      const wrote = [item.write && decided.status === 1];
      assert.deepEqual(answer.wrote, wrote, failure("the function wrote other than the core", { batch, stored: answer.stored, core: decided, function: answer.wrote }));
      if (decided.writes[0] !== null) {
        model.set(idOf(ref), decided.writes[0]);
        stats.written++;
      }
      if (decided.items[0] === 1) stats.granted++;
      else if (decided.items[0] === 0) stats.refused++;
      else stats.errors++;
      if (decided.items[0] === 1 && item.reserve && decided.writes[0] !== null && decided.writes[0].value < 0) stats.reserved++;
      if (stats.decisions % 500 === 0) {
        const table = await rows("SELECT name, key, shard, value::text AS value, ts::text AS ts, full_at::text AS full_at FROM ratebound");
        assert.equal(table.length, model.size, failure("the table has another number of rows than the core wrote", { rows: table.length, model: model.size }));
        for (const row of table) {
          const want = model.get(idOf({ name: row.name, key: row.key === "" ? undefined : row.key, shard: row.shard }));
          const got = { value: Number(row.value), ts: Number(row.ts), fullAt: Number(row.full_at) };
          assert.ok(want !== undefined && same(got, want) && Object.is(got.fullAt, want.fullAt), failure("a stored row differs from the core's", { row, want }));
        }
      }
    }
    const callsAfter = await calls();
    const fast = (callsAfter.ratebound_decide_one_v3 ?? 0) - (callsBefore.ratebound_decide_one_v3 ?? 0);
    const handedOn = (callsAfter.ratebound_decide_v3 ?? 0) - (callsBefore.ratebound_decide_v3 ?? 0) - stats.calendar;
    t.diagnostic(`seed ${SEED}: ${show(stats)}; the one-item function decided ${fast - handedOn} and handed ${handedOn} to the batch function`);
    assert.equal(fast, stats.decisions - stats.calendar, "every single call but a calendar quota's went to the one-item function");
    assert.ok(fast - handedOn >= ONE_CALLS / 2 && handedOn >= ONE_CALLS / 50, `the one-item function decided ${fast - handedOn} itself and handed on ${handedOn}`);
    for (const outcome of ["granted", "refused", "errors", "written", "checks", "reserved", "firstUse", "corrupt", "negativeZero", "clockBack", "calendar"]) assert.ok(stats[outcome] >= 20, `the traffic had ${outcome} only ${stats[outcome]} times: ${show(stats)}`);
  });
});
