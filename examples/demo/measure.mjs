// Helpers of the demo: a seeded PRNG, a simulated clock with an event queue,
// and the measurements the summary compares against each limit's bound.

/**
 * mulberry32: a small, fast, seeded PRNG returning numbers in [0, 1).
 * @param {number} seed a 32-bit unsigned integer
 * @returns {() => number}
 */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Simulated time: `now()` is what the limiter sees; `at(t, fn)` schedules an
 * action at `t` ms after the start; `run(until)` plays the actions in order
 * (ties in the order they were scheduled), moving the clock to each one.
 */
export class SimClock {
  constructor(epoch) {
    this.epoch = epoch;
    this.t = 0;
    this.queue = [];
    this.seq = 0;
  }

  now = () => this.epoch + this.t;

  at(t, fn) {
    const event = { t, seq: this.seq++, fn };
    // Sorted insert: a few hundred events, no heap needed.
    let i = this.queue.length;
    while (i > 0 && (this.queue[i - 1].t > t || (this.queue[i - 1].t === t && this.queue[i - 1].seq > event.seq))) i--;
    this.queue.splice(i, 0, event);
  }

  async run(until) {
    while (this.queue.length > 0 && this.queue[0].t <= until) {
      const event = this.queue.shift();
      this.t = event.t;
      await event.fn();
    }
    this.t = until;
  }
}

/**
 * The most admitted in any closed window `[from, from + width]`.
 * A best window can always be slid right until it starts at an admission,
 * so trying every admission as a start is exact.
 * @param {{ t: number, amount: number }[]} admissions
 * @param {number} width
 * @returns {{ max: number, from: number, to: number }}
 */
export function maxInSlidingWindow(admissions, width) {
  const sorted = [...admissions].sort((a, b) => a.t - b.t);
  let best = { max: 0, from: NaN, to: NaN };
  let end = 0;
  let sum = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end].t <= sorted[start].t + width) sum += sorted[end++].amount;
    if (sum > best.max) best = { max: sum, from: sorted[start].t, to: sorted[start].t + width };
    sum -= sorted[start].amount;
  }
  return best;
}

/**
 * The most admitted in one fixed window `[start + k·period, start + (k+1)·period)`.
 * @param {{ t: number, amount: number }[]} admissions
 * @param {number} start the windows' origin (any window start)
 * @param {number} period
 * @returns {{ max: number, from: number, to: number, perWindow: Map<number, number> }}
 */
export function maxInFixedWindows(admissions, start, period) {
  const perWindow = new Map();
  for (const { t, amount } of admissions) {
    const k = Math.floor((t - start) / period);
    perWindow.set(k, (perWindow.get(k) ?? 0) + amount);
  }
  let best = { max: 0, from: NaN, to: NaN };
  for (const [k, sum] of [...perWindow].sort((a, b) => a[0] - b[0])) {
    if (sum > best.max) best = { max: sum, from: start + k * period, to: start + (k + 1) * period };
  }
  return { ...best, perWindow };
}

/** `--seed N` / `--seed=N`, default 42. */
export function parseArgs(argv) {
  let seed = 42;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    let value;
    if (arg === "--seed") value = argv[++i];
    else if (arg.startsWith("--seed=")) value = arg.slice("--seed=".length);
    else if (arg === "--help" || arg === "-h") return { help: true };
    else return { error: `unknown argument: ${arg}` };
    if (value === undefined || !/^\d+$/.test(value) || Number(value) > 0xffffffff) {
      return { error: `--seed needs an integer from 0 to ${0xffffffff} (got ${value ?? "nothing"})` };
    }
    seed = Number(value);
  }
  return { seed };
}

/** Milliseconds as a relative time: `+12.300s`. */
export const at = (ms) => `${ms < 0 ? "-" : "+"}${(Math.abs(ms) / 1000).toFixed(3)}s`;

/** A duration in seconds, without needless decimals: `5.75 s`, `44 s`. */
export const secs = (ms) => `${Number((ms / 1000).toFixed(3))} s`;

/** Thousands separators. */
export const int = (n) => Math.round(n).toLocaleString("en-US");

/** Pads to a width, left- or right-aligned. */
export const pad = (text, width, right = false) => {
  const s = String(text);
  const gap = " ".repeat(Math.max(0, width - [...s].length));
  return right ? gap + s : s + gap;
};
