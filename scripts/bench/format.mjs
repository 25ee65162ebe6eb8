// Number formats shared by the table (./report.mjs) and the closing note (./note.mjs).

/**
 * Nanoseconds with as many digits as they deserve.
 * @param {number} value
 * @returns {string}
 * @example
 * ns(123.4); // "123"
 */
export const ns = (value) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));

/**
 * A timed contender's median with its fastest and slowest round.
 * @param {{ median: number, min: number, max: number }} stats
 * @returns {string}
 * @example
 * nsCell({ median: 80, min: 75, max: 99 }); // "80.0 ns (75.0–99.0)"
 */
export const nsCell = (stats) => `${ns(stats.median)} ns (${ns(stats.min)}–${ns(stats.max)})`;

/**
 * Milliseconds to one decimal.
 * @param {number} value
 * @returns {string}
 * @example
 * ms(19.54); // "19.5 ms"
 */
export const ms = (value) => `${value.toFixed(1)} ms`;

/**
 * Bytes as KiB to one decimal.
 * @param {number} bytes
 * @returns {string}
 * @example
 * kib(24 * 1024); // "24.0 KiB"
 */
export const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;

/**
 * A ratio as "N×".
 * @param {number} ratio
 * @returns {string}
 * @example
 * times(0.354); // "0.35×"
 */
export const times = (ratio) => `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)}×`;

/**
 * "peer / ratebound" as a speed-up of ratebound.
 * @param {number} ratio
 * @returns {string}
 * @example
 * speedup(0.5); // "2.00× slower"
 */
export const speedup = (ratio) => (ratio >= 1 ? `${times(ratio)} faster` : `${times(1 / ratio)} slower`);

/**
 * A goal's verdict cell.
 * @param {boolean | undefined} met
 * @returns {string}
 * @example
 * verdict(false); // "**missed**"
 */
export const verdict = (met) => (met === undefined ? "not measured" : met ? "met" : "**missed**");

/**
 * The range of per-round ratios of the peer to ratebound (round r of one against round r of the
 * other), worded like the headline: "3.10–4.20× faster", or "from 1.20× slower to 1.30× faster".
 * @param {{ samples: number[] }} peer
 * @param {{ samples: number[] }} ours
 * @returns {string}
 * @example
 * pairedRange({ samples: [200, 300] }, { samples: [100, 100] }); // "2.00–3.00× faster"
 */
export const pairedRange = (peer, ours) => {
  const ratios = peer.samples.map((value, round) => value / ours.samples[round]);
  const [low, high] = [Math.min(...ratios), Math.max(...ratios)];
  if (low >= 1) return `${times(low).replace("×", "")}–${times(high)} faster`;
  if (high < 1) return `${times(1 / high).replace("×", "")}–${times(1 / low)} slower`;
  return `from ${speedup(low)} to ${speedup(high)}`;
};

/**
 * The range of per-round ratios of ratebound's time to the peer's: "0.30–0.41×".
 * @param {number[]} ratios
 * @returns {string}
 * @example
 * ratioRange([0.3, 0.41]); // "0.30–0.41×"
 */
export const ratioRange = (ratios) => `${times(Math.min(...ratios)).replace("×", "")}–${times(Math.max(...ratios))}`;
