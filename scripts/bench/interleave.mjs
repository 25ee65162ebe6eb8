// Times contenders side by side in one process: each contender runs batches of its operation,
// the contenders take turns (A, B, C, A, B, C … with the starting one rotating every round),
// and each contender's figure is its median ns/op over the rounds. Ratios are taken between
// medians of the same run; the min–max across rounds is kept to show how noisy the run was.

/** Nanoseconds since an arbitrary origin, as a float. */
const clock = () => Number(process.hrtime.bigint());

/**
 * A copy of `source` (a function that closes over nothing) compiled from a source text of its
 * own: the text carries a comment naming `id`. V8 caches what `eval` compiles by source text and
 * hands every copy of one text the same type feedback, so copies of one loop made for several
 * contenders would go polymorphic and charge each contender for the others' shapes; a text per
 * contender keeps each copy's feedback its own.
 *
 * @param {Function | string} source A function, or its source text.
 * @param {string} id The contender's id; copies with different ids never share feedback.
 * @returns {Function}
 * @example
 * const loop = fresh((context, n) => { let s = 0; for (let i = 0; i < n; i++) s += context.f(i); return s; }, "reference token bucket");
 */
export function fresh(source, id) {
  if (typeof id !== "string" || id.length === 0) throw new TypeError("fresh: every copy needs the id of its contender");
  const label = id.replace(/\*\//g, "* /").replace(/[\r\n]/g, " ");
  return (0, eval)(`(/* contender: ${label} */ ${source.toString()})`);
}

/**
 * The same copy, made as the harness made it before issue 23: one source text for every copy, so
 * every copy shares one feedback vector. Kept only to show, in the harness check, what sharing costs.
 * @param {Function | string} source
 * @returns {Function}
 * @example
 * const shared = sharedText(loop); // never for a timed row
 */
export function sharedText(source) {
  return (0, eval)(`(${source.toString()})`);
}

/**
 * @typedef {object} Contender
 * @property {string} id
 * @property {(n: number) => unknown | Promise<unknown>} run Runs n operations, returns a check value.
 * @property {(checkValue: unknown, n: number) => void} [verify] Throws when the batch took another path.
 */

async function timeBatch(contender, n) {
  const started = clock();
  const returned = contender.run(n);
  const checkValue = returned instanceof Promise ? await returned : returned;
  const elapsed = clock() - started;
  contender.verify?.(checkValue, n);
  return elapsed / n;
}

/**
 * @param {Contender[]} contenders
 * @param {{ rounds: number, batchMs: number, warmupMs: number, log?: (line: string) => void }} options
 * @returns {Promise<Map<string, { median: number, min: number, max: number, samples: number[] }>>}
 * @example
 * const timing = await interleave([{ id: "noop", run: (n) => n }], { rounds: 5, batchMs: 15, warmupMs: 200 });
 */
export async function interleave(contenders, { rounds, batchMs, warmupMs, log = () => {} }) {
  // Warm up and calibrate each: double the batch until one takes a quarter of batchMs, then
  // keep running (warm-up) until warmupMs has passed, and size batches to take ~batchMs.
  const sizes = new Map();
  for (const contender of contenders) {
    let n = 16;
    let nsPerOp = await timeBatch(contender, n);
    while (n * nsPerOp < batchMs * 1e6 / 4) {
      n *= 2;
      nsPerOp = await timeBatch(contender, n);
    }
    const warmupUntil = clock() + warmupMs * 1e6;
    while (clock() < warmupUntil) nsPerOp = await timeBatch(contender, n);
    sizes.set(contender.id, Math.max(16, Math.round((batchMs * 1e6) / nsPerOp)));
  }
  const samples = new Map(contenders.map((contender) => [contender.id, []]));
  log(`${rounds} rounds of ${contenders.length} batches`);
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < contenders.length; turn++) {
      const contender = contenders[(round + turn) % contenders.length];
      samples.get(contender.id).push(await timeBatch(contender, sizes.get(contender.id)));
    }
  }
  return new Map(
    [...samples].map(([id, values]) => [id, { median: median(values), min: Math.min(...values), max: Math.max(...values), samples: values }]),
  );
}

/**
 * The middle value (the mean of the two middle ones for an even count).
 * @param {number[]} values
 * @returns {number}
 * @example
 * median([3, 1, 2]); // 2
 */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
