// The headline row of `npm run bench` alone: awaited `limit()` on a MemoryStore (1,000 keys, token
// bucket, unsharded, every call granted and every call refused) against rate-limiter-flexible's
// RateLimiterMemory, timed as ./timing.mjs times it (the same loops, each contender compiled from
// a source text of its own, each with its own install of the package, interleaved rounds), in a
// few seconds instead of the whole bench. Compare the ratios of one run, never ns across runs.
//
//   node scripts/bench/memory-limit.mjs [--pkg DIR] [--also OTHER_PKG_DIR] [--rounds 31]
//
// `--also` times another built package beside it in the same run (say, one built from an older
// commit), as the contender "other".
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fresh, interleave } from "./interleave.mjs";
import { installPackage, packageDir } from "./package.mjs";
import { KEY_COUNT, LOOPS } from "./timing.mjs";

/**
 * The floor: what an awaited one-crossing decision costs with nothing around it (a Map from key
 * to slot, the clock, one numbers-only call into the package's own core, an answer, an await).
 */
const FLOOR = async (context, n) => {
  const { core, slots, keys, config } = context;
  let cursor = context.cursor;
  let granted = 0;
  for (let i = 0; i < n; i++) {
    const status = core.rb_slab_limit(config, slots.get(keys[cursor]), 1, 2 | 16, Date.now(), 0);
    const result = await Promise.resolve(status === 1 ? { ok: true } : { ok: false, retryAfter: 1 });
    if (result.ok) granted++;
    if (++cursor === keys.length) cursor = 0;
  }
  context.cursor = cursor;
  return granted;
};

const at = process.argv.indexOf("--rounds");
const rounds = at > 0 ? Number(process.argv[at + 1]) : 31;
const pkg = packageDir();
const alsoAt = process.argv.indexOf("--also");
const other = alsoAt > 0 ? packageDir(["", "", "--pkg", process.argv[alsoAt + 1]]) : undefined;
const work = mkdtempSync(join(tmpdir(), "ratebound-memory-limit-"));
try {
  const { project } = installPackage(pkg, join(work, "project"));
  let made = 0;
  const copy = (id, copies, from = pkg) => installPackage(from, join(project, "contenders", `${made++}-${id.replace(/[^a-z0-9]+/gi, "-")}`), { copies, link: false });
  const keys = Array.from({ length: KEY_COUNT }, (_, index) => `user:${index}`);
  const contenders = [];
  for (const path of ["allowed", "refused"]) {
    const id = `limit ${path} 1k`;
    const install = copy(`${id} ratebound`, []);
    const { RateLimiter, MemoryStore } = await install.load("ratebound");
    const flexible = copy(`${id} flexible`, ["rate-limiter-flexible"]).require("rate-limiter-flexible");
    const config = path === "allowed" ? { kind: "token bucket", rate: 1e12, period: 1_000 } : { kind: "token bucket", rate: 10, period: 3_600_000 };
    const rb = new RateLimiter(new MemoryStore(), { bench: config });
    const rlm = new flexible.RateLimiterMemory(path === "allowed" ? { points: 1e12, duration: 3_600 } : { points: 10, duration: 3_600 });
    for (const key of keys) {
      for (let taken = 0; taken < (path === "allowed" ? 1 : 10); taken++) {
        await rb.limit("bench", { key });
        await rlm.consume(key).catch(() => {});
      }
    }
    const verify = (granted, n) => {
      if (granted !== (path === "allowed" ? n : 0)) throw new Error(`${id}: ${granted} of ${n} granted`);
    };
    const loop = (name, context) => ({ id: `${id} ${name}`, run: ((body) => (n) => body(context, n))(fresh(LOOPS[name === "flexible" ? "flexibleConsume" : "rateboundLimit"], `${id} ${name}`)), verify });
    contenders.push(loop("ratebound", { limiter: rb, name: "bench", keys, cursor: 0 }));
    if (other !== undefined) {
      const api = await copy(`${id} other`, [], other).load("ratebound");
      const limiter = new api.RateLimiter(new api.MemoryStore(), { bench: config });
      for (const key of keys) for (let taken = 0; taken < (path === "allowed" ? 1 : 10); taken++) await limiter.limit("bench", { key });
      contenders.push(loop("other", { limiter, name: "bench", keys, cursor: 0 }));
    }
    contenders.push(loop("flexible", { limiter: rlm, keys, cursor: 0, RateLimiterRes: flexible.RateLimiterRes }));
    // The floor, on the same install's core and slab (its own slots), when the build has the slab.
    const floorInstall = copy(`${id} floor`, []);
    await floorInstall.load("ratebound");
    const { core } = await import(pathToFileURL(join(floorInstall.dist, "core", "engine.js")).href);
    if (typeof core.rb_slab_limit !== "function") continue;
    const slab = await import(pathToFileURL(join(floorInstall.dist, "core", "slab.js")).href);
    const { compileConfig } = await import(pathToFileURL(join(floorInstall.dist, "core", "config.js")).href);
    const floorConfig = slab.configId(compileConfig("bench", config));
    const slots = new Map(keys.map((key) => [key, slab.allocate(1)]));
    for (const key of keys) for (let taken = 0; taken < (path === "allowed" ? 1 : 10); taken++) core.rb_slab_limit(floorConfig, slots.get(key), 1, 2 | 16, Date.now(), 0);
    const floorBody = fresh(FLOOR, `${id} floor`);
    const floorContext = { core, slots, keys, config: floorConfig, cursor: 0 };
    contenders.push({ id: `${id} floor`, run: (n) => floorBody(floorContext, n), verify });
  }
  // Beside the wall clock, each batch's CPU time: on a shared machine a contender descheduled mid-batch
  // is charged for the wait by the clock, not by the CPU time (the ratios of both are printed).
  const cpu = new Map();
  for (const contender of contenders) {
    const run = contender.run;
    cpu.set(contender.id, []);
    contender.run = (n) => {
      const started = process.cpuUsage();
      const settle = (value) => {
        const used = process.cpuUsage(started);
        cpu.get(contender.id).push(((used.user + used.system) * 1000) / n);
        return value;
      };
      const returned = run(n);
      return returned instanceof Promise ? returned.then(settle) : settle(returned);
    };
  }
  const timing = await interleave(contenders, { rounds, batchMs: 20, warmupMs: 300 });
  const cpuMedian = (id) => {
    const samples = cpu.get(id).slice(-rounds).sort((a, b) => a - b);
    return samples[samples.length >> 1];
  };
  for (const path of ["allowed", "refused"]) {
    const [oursCpu, theirsCpu, floorCpu] = ["ratebound", "flexible", "floor"].map((who) => (cpu.has(`limit ${path} 1k ${who}`) ? cpuMedian(`limit ${path} 1k ${who}`) : NaN));
    const floorText = (floor, theirs) => (Number.isNaN(floor) ? "no floor (this build has no slab)" : `the floor ${floor.toFixed(0)} ns, ${(theirs / floor).toFixed(2)}x`);
    console.log(
      `limit() ${path}, CPU time: ratebound ${oursCpu.toFixed(0)} ns, RateLimiterMemory ${theirsCpu.toFixed(0)} ns: ${(theirsCpu / oursCpu).toFixed(2)}x its speed; ` +
        floorText(floorCpu, theirsCpu),
    );
    if (other !== undefined) {
      const [otherCpu, otherWall] = [cpuMedian(`limit ${path} 1k other`), timing.get(`limit ${path} 1k other`).median];
      console.log(
        `limit() ${path}, ${other}: CPU time ${otherCpu.toFixed(0)} ns, ${(theirsCpu / otherCpu).toFixed(2)}x RateLimiterMemory's speed; ` +
          `wall clock ${otherWall.toFixed(0)} ns, ${(timing.get(`limit ${path} 1k flexible`).median / otherWall).toFixed(2)}x`,
      );
    }
    const ours = timing.get(`limit ${path} 1k ratebound`);
    const theirs = timing.get(`limit ${path} 1k flexible`);
    console.log(
      `limit() ${path}, ${KEY_COUNT} keys, wall clock: ratebound ${ours.median.toFixed(0)} ns, RateLimiterMemory ${theirs.median.toFixed(0)} ns: ` +
        `${(theirs.median / ours.median).toFixed(2)}x its speed; ${floorText(timing.get(`limit ${path} 1k floor`)?.median ?? NaN, theirs.median)}`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
