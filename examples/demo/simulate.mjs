#!/usr/bin/env node
// ratebound demo: three simulated minutes of traffic against four limits kept
// in a MemoryStore, on a simulated clock with seeded randomness, so every run
// with the same seed prints the same thing.
//
//   node examples/demo/simulate.mjs [--seed N]
//
// It prints a timeline of the interesting moments and a summary that puts the
// most each limit admitted in any period, measured from the run's own log,
// next to the bound its config promises. It exits 1 if a bound was exceeded.

import { RateLimiter, MemoryStore, calculateRateLimit, SECOND, MINUTE } from "../../pkg/dist/node.js";
import { SimClock, mulberry32, maxInSlidingWindow, maxInFixedWindows, parseArgs, at, secs, int, pad } from "./measure.mjs";
import { ASSISTANT, assistantScenario, assistantFigures } from "./settle.mjs";

const args = parseArgs(process.argv.slice(2));
if (args.help || args.error) {
  if (args.error) console.error(args.error);
  console.log("usage: node examples/demo/simulate.mjs [--seed N]");
  process.exit(args.error ? 2 : 0);
}
const { seed } = args;

const colour = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code) => (text) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
const [green, red, dim, bold] = [paint(32), paint(31), paint(2), paint(1)];

// ─── the limits ────────────────────────────────────────────────────────────
const LIMITS = {
  // Per user: a burst of 3, then one message every 6 s.
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  // Global: 5 signups per 10 s window; no `start`, so the limiter picks one at random.
  signups: { kind: "fixed window", rate: 5, period: 10 * SECOND },
  // Global and hot: spread over 10 shards (4,000 tokens each).
  llmTokens: { kind: "token bucket", rate: 40_000, period: MINUTE, shards: 10 },
  // Global: background batch work; the big report reserves from it.
  batchTokens: { kind: "token bucket", rate: 20_000, period: MINUTE },
  // Per team: LLM completions taken as estimates, settled to what replies used (settle.mjs).
  assistant: ASSISTANT,
};

const EPOCH = Date.UTC(2025, 0, 6, 9, 0, 0); // t = 0
const DURATION = 3 * MINUTE;
const TICK = 30 * SECOND;

const clock = new SimClock(EPOCH);
const rng = mulberry32(seed); // the scenario: arrivals, sizes, jitter
const limiterRandom = mulberry32(seed ^ 0x5bd1e995); // the limiter: shard choice, window start

/** A MemoryStore that notes which shards a call wrote. */
class TracingStore {
  #inner = new MemoryStore();
  written = [];
  read(ref) {
    return this.#inner.read(ref);
  }
  write(ref, state) {
    if (state !== null) this.written.push(ref.shard);
    this.#inner.write(ref, state);
  }
}
const store = new TracingStore();
const limiter = new RateLimiter(store, LIMITS, { now: clock.now, random: limiterRandom });

// ─── the log ───────────────────────────────────────────────────────────────
const log = []; // every limit() call
const lines = []; // the timeline: { t, order, who, limit, text }
const line = (t, who, limit, text, order = 0) => lines.push({ t, order, seq: lines.length, who, limit, text });

/** limit(), recorded. `runAt` is when the admitted work may run: now, or after a reservation's wait. */
async function limit(who, name, options = {}, meta = {}) {
  store.written = [];
  const t = clock.t;
  const result = await limiter.limit(name, options);
  const wait = result.ok && result.retryAfter !== undefined ? Math.ceil(result.retryAfter) : 0;
  const entry = {
    t, who, name, key: options.key, count: options.count ?? 1, reserve: options.reserve === true,
    ok: result.ok, retryAfter: result.retryAfter, shards: [...store.written], runAt: t + wait, ...meta,
  };
  log.push(entry);
  return entry;
}

const uniform = (lo, hi) => lo + (hi - lo) * rng();
const exponential = (mean) => -Math.log(1 - rng()) * mean;
const jitter = (max) => Math.floor(rng() * max); // ours: withJitter() draws from the runtime, not from our seed

// ─── sendMessage: alice bursts, bob trickles, carol's script hammers ───────
function aliceBurst(start, size) {
  const burst = { start, size, sent: 0 };
  const send = async (retry) => {
    const e = await limit("alice", "sendMessage", { key: "alice" }, { burst, retry, sole: retry });
    if (e.ok && ++burst.sent < size) clock.at(clock.t + 250, () => send(false));
    else if (e.ok) burst.done = clock.t;
    else clock.at(clock.t + Math.ceil(e.retryAfter), () => send(true)); // she waits as told
  };
  clock.at(start, () => send(false));
}
aliceBurst(3 * SECOND, 6);
aliceBurst(61.5 * SECOND, 4);
aliceBurst(128 * SECOND, 5);

for (let t = 4 * SECOND; t < DURATION; t += Math.round(uniform(7, 9) * SECOND)) {
  clock.at(t, () => limit("bob", "sendMessage", { key: "bob" }));
}

const CAROL = { from: 95 * SECOND, to: 165 * SECOND, every: SECOND };
for (let t = CAROL.from; t <= CAROL.to; t += CAROL.every) {
  clock.at(t, () => limit("carol", "sendMessage", { key: "carol" }));
}

// ─── signups: a trickle of visitors, and a rush after a newsletter ─────────
let windowStart = null; // as the limiter picked it, relative to t = 0
async function visitor(retry) {
  const e = await limit("visitor", "signups", {}, { retry });
  if (windowStart === null) {
    const { config } = await limiter.getValue("signups");
    windowStart = config.start - EPOCH;
    line(clock.t, "visitor", "signups", `first signup; random window start: config.start = t=${at(windowStart)}`);
  }
  // Refused visitors come back once, when told (plus up to 2 s of their own dawdling).
  if (!e.ok && !retry) clock.at(clock.t + Math.ceil(e.retryAfter) + jitter(2 * SECOND), () => visitor(true));
}
for (let t = exponential(4 * SECOND); t < DURATION; t += exponential(4 * SECOND)) {
  clock.at(Math.round(t), () => visitor(false));
}
const RUSH = 100 * SECOND;
clock.at(RUSH, () => line(RUSH, "mailer", "signups", "newsletter goes out: 14 visitors in the next ~6 s", -0.5));
for (let i = 0, t = RUSH; i < 14; i++, t += exponential(0.45 * SECOND)) {
  clock.at(Math.round(t), () => visitor(false));
}

// ─── llmTokens: a summariser's big call, then workers with busy spells ─────
clock.at(0.5 * SECOND, async () => {
  const e = await limit("summary", "llmTokens", { count: 6000 });
  const how = e.shards.length === 2
    ? `ok, shards ${e.shards[0]} + ${e.shards[1]} together` : e.ok ? `ok on shard ${e.shards[0]}` : `refused, retry in ${secs(e.retryAfter)}`;
  line(e.t, "summary", "llmTokens", `${int(e.count)} tokens (a shard holds ${int(SHARD_CAPACITY)}): ${how}`);
});
const SHARD_CAPACITY = LIMITS.llmTokens.rate / LIMITS.llmTokens.shards;
const BUSY = { from: 20 * SECOND, to: 120 * SECOND, rate: 1.2 }; // requests per second
const llmRate = (t) => (t >= BUSY.from && t < BUSY.to ? BUSY.rate : 0.4);
const MEAN_TOKENS = (3000 - 300) / Math.log(3000 / 300); // of a log-uniform 300 … 3,000
let firstLlmRefusal = true;
async function llmRequest(count, tries) {
  const e = await limit("workers", "llmTokens", { count }, { retry: tries > 0 });
  if (!e.ok && firstLlmRefusal) {
    firstLlmRefusal = false;
    line(e.t, "workers", "llmTokens", `first refusal: ${int(count)} tokens, 2 shards short, retry in ${secs(e.retryAfter)}`);
  }
  if (!e.ok && tries < 2) clock.at(clock.t + Math.ceil(e.retryAfter) + jitter(SECOND), () => llmRequest(count, tries + 1));
}
for (let t = 2 * SECOND; t < DURATION; t += exponential(SECOND / llmRate(t))) {
  const count = Math.round((300 * 10 ** rng()) / 10) * 10; // 300 … 3,000, log-uniform
  clock.at(Math.round(t), () => llmRequest(count, 0));
}
const asked = Math.round((BUSY.rate * 60 * MEAN_TOKENS) / 1000) * 1000;
clock.at(BUSY.from, () => line(BUSY.from, "workers", "llmTokens",
  `busy spell: ~${BUSY.rate} req/s, ~${int(asked)} tokens/min asked of ${int(LIMITS.llmTokens.rate)}/min`, -0.5));
clock.at(BUSY.to, () => line(BUSY.to, "workers", "llmTokens", `busy spell over: back to ~${llmRate(BUSY.to)} req/s`, -0.5));

// ─── batchTokens: an indexer, and a report that reserves ahead of it ───────
const report = { count: 20_000, at: 46 * SECOND };
async function indexer(retry) {
  const e = await limit("indexer", "batchTokens", { count: 3000 }, { retry, sole: retry });
  if (e.ok) {
    clock.at(clock.t + 5 * SECOND, () => indexer(false));
  } else {
    if (report.runAt !== undefined && e.t < report.runAt) {
      line(e.t, "indexer", "batchTokens", `${int(e.count)} tokens refused, retry in ${secs(e.retryAfter)}: the reservation comes first`);
    }
    clock.at(clock.t + Math.ceil(e.retryAfter), () => indexer(true));
  }
}
clock.at(0, () => indexer(false));
clock.at(report.at, async () => {
  const asked = await limiter.check("batchTokens", { count: report.count });
  line(clock.t, "report", "batchTokens",
    `check ${int(report.count)} tokens: ${asked.ok ? "ok" : `refused, retry in ${secs(asked.retryAfter)}`} (writes nothing)`);
  const e = await limit("report", "batchTokens", { count: report.count, reserve: true });
  report.runAt = e.runAt;
  line(e.t, "report", "batchTokens",
    e.ok && e.retryAfter !== undefined
      ? `reserve ${int(report.count)} tokens: ok, retryAfter ${secs(e.retryAfter)} → scheduled at t=${at(e.runAt)}`
      : `reserve ${int(report.count)} tokens: ${e.ok ? "ok at once, nothing to wait for" : "refused"}`);
  if (!e.ok) return;
  const { value } = await limiter.getValue("batchTokens");
  line(e.t, "", "", `bucket now ${int(value)}: later callers wait behind the reservation`);
  clock.at(e.runAt, async () => {
    const { value, ts, config } = await limiter.getValue("batchTokens");
    const then = calculateRateLimit({ value, ts }, config, clock.now());
    line(clock.t, "report", "batchTokens", `runs on time: ${int(report.count)} tokens of work; bucket now ${int(then.value)} (debt paid)`);
  });
});

// ─── assistant: grants settled to what the model used ──────────────────────
const assistantLog = assistantScenario({ clock, limiter, rng: mulberry32(seed ^ 0x2545f491), line, duration: DURATION });

// ─── run ───────────────────────────────────────────────────────────────────
await clock.run(DURATION);

// Timeline groups: consecutive calls of alice less than 1 s apart
// make one line, so does carol's whole script; bob, visitors, workers and
// the indexer go to the 30 s ticks (plus the few lines the scenario wrote).
function outcomes(entries) {
  const parts = [];
  for (let i = 0; i < entries.length; ) {
    let j = i;
    while (j < entries.length && entries[j].ok && entries[i].ok) j++;
    if (j > i) parts.push(j - i === 1 ? "ok" : `ok ×${j - i}`);
    else parts.push(`refused → retry in ${secs(entries[j++].retryAfter)}`);
    i = j;
  }
  return parts.join(", ");
}

const alice = log.filter((e) => e.who === "alice");
for (let i = 0; i < alice.length; ) {
  let j = i + 1;
  while (j < alice.length && alice[j].t - alice[j - 1].t < SECOND && alice[j].burst === alice[i].burst) j++;
  const group = alice.slice(i, j);
  const { burst } = group[0];
  const head = group[0].retry ? "retry: " : `burst of ${burst.size} messages: `;
  const tail = burst.done !== undefined && group.at(-1).t === burst.done && burst.done > burst.start
    ? ` (all ${burst.size} sent, ${secs(burst.done - burst.start)} after the first)` : "";
  line(group[0].t, "alice", "sendMessage", head + outcomes(group) + tail);
  i = j;
}

const carol = log.filter((e) => e.who === "carol");
if (carol.length > 0) {
  const ok = carol.filter((e) => e.ok).length;
  line(carol[0].t, "carol", "sendMessage",
    `script, 1 call/s for ${secs(CAROL.to - CAROL.from)}, ignores retryAfter: ${ok} ok, ${carol.length - ok} refused`);
}

const signups = log.filter((e) => e.name === "signups");
const signupWindows = new Map();
for (const e of signups) {
  const k = Math.floor((e.t - windowStart) / LIMITS.signups.period);
  if (!signupWindows.has(k)) signupWindows.set(k, []);
  signupWindows.get(k).push(e);
}
for (const [k, entries] of signupWindows) {
  const refused = entries.filter((e) => !e.ok);
  if (refused.length === 0) continue;
  const from = windowStart + k * LIMITS.signups.period;
  const to = from + LIMITS.signups.period;
  const backAt = [...new Set(refused.map((e) => e.t + e.retryAfter))];
  const told = backAt.length === 1 && backAt[0] === to ? "told to retry now" : `told to retry from t=${at(Math.min(...backAt))}`;
  line(to, "visitors", "signups", `window [${at(from)}, ${at(to)}): ${entries.length - refused.length} ok, ${refused.length} refused, ${told}`, -0.2);
}

// Ticks: the quiet traffic of the last 30 s, ok/asked (the last tick includes t = end).
for (let end = TICK; end <= DURATION; end += TICK) {
  const inTick = (e) => e.t >= end - TICK && (e.t < end || (end === DURATION && e.t === end));
  const parts = [["bob", "bob"], ["visitor", "visitors"], ["workers", "workers"], ["indexer", "indexer"]].map(([who, label]) => {
    const entries = log.filter((e) => e.who === who && inTick(e));
    const ok = entries.filter((e) => e.ok);
    const tokens = ok.some((e) => e.count > 1) ? ` (${int(ok.reduce((sum, e) => sum + e.count, 0) / 1000)}k tok)` : "";
    return `${label} ${ok.length}/${entries.length}${tokens}`;
  });
  line(end, null, null, dim(`── ${end / SECOND - TICK / SECOND}–${end / SECOND} s: ${parts.join(" · ")}`), -1);
}

// ─── print ─────────────────────────────────────────────────────────────────
const describe = (c) =>
  `${c.kind}  ${int(c.rate)} per ${secs(c.period)}` +
  (c.capacity !== undefined ? `, capacity ${int(c.capacity)}` : "") +
  (c.shards ? `, ${c.shards} shards` : "") +
  (c.kind === "fixed window" && c.start === undefined ? ", random start" : "");
const scope = { sendMessage: "key = user (alice, bob, carol)", signups: "global", llmTokens: "global", batchTokens: "global", assistant: "key = team, settled grants" };

console.log(bold(`ratebound demo · simulated time, MemoryStore · seed ${seed} (pass --seed N for another run)`));
console.log(`t=0 is ${new Date(EPOCH).toISOString()} · ${secs(DURATION)} simulated · whole-ms clock: clients wait ⌈retryAfter⌉\n`);
for (const [name, config] of Object.entries(LIMITS)) console.log(`  ${pad(name, 12)} ${pad(describe(config), 44)} ${scope[name]}`);
console.log(`\n${bold("timeline")}  ${dim("(bob, signup visitors, LLM workers and the indexer: summed every 30 s, ok/asked)")}`);
lines.sort((a, b) => a.t - b.t || a.order - b.order || a.seq - b.seq);
for (const l of lines) {
  const columns = l.who === null ? "" : `${pad(l.who, 8)} ${pad(l.limit, 12)} `;
  console.log(`${pad(`t=${at(l.t)}`, 11)}  ${columns}${l.text}`);
}

// ─── summary: measured from the log, next to the configured bound ──────────
const admitted = (entries) => entries.filter((e) => e.ok).map((e) => ({ t: e.runAt, amount: e.count }));
const rows = [];
const where = {};
let allHeld = true;
function row(name, most, unit, bound, derivation) {
  const held = most <= bound;
  allHeld &&= held;
  const entries = log.filter((e) => e.name === name);
  const ok = entries.filter((e) => e.ok).length;
  rows.push([name, entries.length, ok, entries.length - ok, `${int(most)} ${unit}`, `${int(bound)} = ${derivation}`, held ? green("✓") : red("✗")]);
}

{
  const { rate, period, capacity } = LIMITS.sendMessage;
  let best = { max: 0, key: "", from: NaN };
  for (const key of ["alice", "bob", "carol"]) {
    const m = maxInSlidingWindow(admitted(log.filter((e) => e.name === "sendMessage" && e.key === key)), period);
    where[key] = m;
    if (m.max > best.max) best = { ...m, key };
  }
  row("sendMessage", best.max, `msgs in ${secs(period)} (${best.key})`, capacity + rate, `${capacity} + ${rate} (per user)`);
}
let sliding10;
{
  const { rate, period } = LIMITS.signups;
  const capacity = LIMITS.signups.capacity ?? rate;
  const m = maxInFixedWindows(admitted(signups), windowStart, period);
  where.signups = m;
  sliding10 = maxInSlidingWindow(admitted(signups), period - 1e-9); // any 10 s, window edges ignored
  row("signups", m.max, "in one window", capacity, "capacity, each window");
}
for (const name of ["llmTokens", "batchTokens"]) {
  const { rate, period } = LIMITS[name];
  const capacity = LIMITS[name].capacity ?? rate;
  const m = maxInSlidingWindow(admitted(log.filter((e) => e.name === name)), period);
  where[name] = m;
  row(name, m.max, `tokens in ${secs(period)}`, capacity + rate, `${int(capacity)} + ${int(rate)}`);
}

{
  const { rate, period, maxReserved } = ASSISTANT;
  const figures = assistantFigures(assistantLog);
  const m = maxInSlidingWindow(figures.admissions, period);
  where.assistant = { ...m, figures };
  const held = m.max <= rate + rate + maxReserved && figures.neverAbove;
  allHeld &&= held;
  rows.push(["assistant", figures.calls, figures.ok, figures.calls - figures.ok, `${int(m.max)} tokens kept in ${secs(period)}`,
    `${int(rate + rate + maxReserved)} = ${int(rate)} + ${int(rate)} + ${int(maxReserved)}`, held ? green("✓") : red("✗")]);
}

const header = ["limit", "calls", "ok", "refused", "most admitted in any period", "configured bound", "held"];
const widths = header.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...String(r[i])].length)));
const right = [false, true, true, true, false, false, false];
const render = (cells) => cells.map((c, i) => pad(c, widths[i], right[i])).join("  ").trimEnd();
console.log(`\n${bold("summary")}`);
console.log(render(header));
console.log(render(widths.map((w) => "─".repeat(w))));
for (const r of rows) console.log(render(r));
console.log(dim("bound: token bucket, capacity + rate in any window one period long (sharded: whole limit);\n" +
  "fixed window, capacity per window. Measured from the log; a reservation counts when its work runs;\n" +
  "a settled grant counts what the limiter kept (estimate - refund + extra), plus maxReserved of debt."));

// Footnotes: what else the log says.
const perUser = ["alice", "bob", "carol"].map((key) => `${key} ${where[key].max}`).join(", ");
console.log(`\n  sendMessage  most in any 60 s, per user: ${perUser}`);
console.log(`  signups      fullest window from t=${at(where.signups.from)}; any 10 s across a window edge: ${sliding10.max}` +
  (sliding10.max > LIMITS.signups.rate ? " (2× can happen)" : ""));
const llm = await limiter.getValue("llmTokens", { sampleShards: 10 });
const twoShard = log.filter((e) => e.name === "llmTokens" && e.shards.length === 2).length;
console.log(`  llmTokens    busiest 60 s from t=${at(where.llmTokens.from)}; ${twoShard} calls served by two shards together;`);
console.log(`               getValue({ sampleShards: 10 }) at the end: ${int(llm.value)} tokens`);
const reserved = log.find((e) => e.reserve);
if (reserved) {
  console.log(`  batchTokens  reserved ${int(reserved.count)} at t=${at(reserved.t)}, told to wait ${secs(reserved.retryAfter ?? 0)}, ran at t=${at(reserved.runAt)}`);
}

{
  const { figures } = where.assistant;
  console.log(`  assistant    ${figures.ok} grants settled: ${int(figures.refunded)} tokens refunded, ${int(figures.charged)} charged beyond estimates; ` +
    (figures.neverAbove ? `no refund above its charge ${green("✓")}` : `a refund above its charge ${red("✗")}`));
}
const soleRetries = log.filter((e) => e.sole);
const soleFailed = soleRetries.filter((e) => !e.ok);
const offEdge = signups.filter((e) => {
  if (e.ok) return false;
  const phase = (((e.t + e.retryAfter - windowStart) % LIMITS.signups.period) + LIMITS.signups.period) % LIMITS.signups.period;
  return Math.min(phase, LIMITS.signups.period - phase) > 1e-6;
});
console.log(`  checks       ${soleRetries.length} retries made when retryAfter said, nobody else on that bucket: ` +
  (soleFailed.length === 0 ? `all ok ${green("✓")}` : `${soleFailed.length} refused ${red("✗")}`));
console.log(`               ${signups.filter((e) => !e.ok).length} signup refusals: retryAfter ends on a window edge ` +
  (offEdge.length === 0 ? `every time ${green("✓")}` : `${offEdge.length} times not ${red("✗")}`));

console.log(allHeld ? `\n${green("every bound held ✓")}` : `\n${red("a bound was exceeded ✗")}`);
process.exitCode = allHeld ? 0 : 1;
