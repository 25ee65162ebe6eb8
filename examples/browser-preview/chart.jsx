// A live SVG chart of the server's available tokens over time, with each
// admitted, refused and reserved request marked, and when a reservation runs.
// It only plots: every value it draws was computed by the core.

const WIDTH = 720;
const HEIGHT = 260;
const PAD = { left: 44, right: 12, top: 14, bottom: 26 };

/**
 * @param {{
 *   now: number, pastMs: number, futureMs: number, capacity: number,
 *   samples: { at: number, value: number }[],
 *   events: { id: number, at: number, kind: "admitted" | "refused" | "reserved" | "error", valueAfter?: number, runAt?: number }[],
 * }} props Times are page-clock milliseconds since the epoch.
 */
export function Chart({ now, pastMs, futureMs, capacity, samples, events }) {
  const from = now - pastMs;
  const to = now + futureMs;
  const values = [0, capacity, ...samples.map((s) => s.value), ...events.filter((e) => e.valueAfter !== undefined).map((e) => e.valueAfter)];
  const low = Math.min(...values);
  const high = Math.max(...values);
  const span = high - low || 1;
  const x = (at) => PAD.left + ((at - from) / (to - from)) * (WIDTH - PAD.left - PAD.right);
  const y = (value) => PAD.top + ((high - value) / span) * (HEIGHT - PAD.top - PAD.bottom);
  const visible = samples.filter((s) => s.at >= from - 1000);
  const path = visible.map((s, i) => `${i === 0 ? "M" : "L"}${x(Math.max(s.at, from)).toFixed(1)},${y(s.value).toFixed(1)}`).join(" ");
  const shown = events.filter((e) => e.valueAfter !== undefined && (e.at >= from || (e.runAt ?? 0) >= from));
  const ticks = [];
  const tickMs = pastMs + futureMs > 60_000 ? 10_000 : pastMs + futureMs > 20_000 ? 5_000 : 1_000;
  for (let t = now - Math.floor(pastMs / tickMs) * tickMs; t <= to; t += tickMs) ticks.push(t);

  return (
    <svg id="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label="Available tokens over time">
      <rect x={PAD.left} y={PAD.top} width={WIDTH - PAD.left - PAD.right} height={HEIGHT - PAD.top - PAD.bottom} className="plot" />
      {low < 0 && <rect x={PAD.left} y={y(0)} width={WIDTH - PAD.left - PAD.right} height={y(low) - y(0)} className="debt" />}
      {ticks.map((t) => (
        <g key={t} className="tick">
          <line x1={x(t)} x2={x(t)} y1={PAD.top} y2={HEIGHT - PAD.bottom} />
          <text x={x(t)} y={HEIGHT - 8} textAnchor="middle">{t === now ? "now" : `${t > now ? "+" : ""}${Math.round((t - now) / 1000)} s`}</text>
        </g>
      ))}
      <line className="capacity" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(capacity)} y2={y(capacity)} />
      <text className="axis" x={PAD.left - 6} y={y(capacity) + 4} textAnchor="end">{capacity}</text>
      <line className="zero" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(0)} y2={y(0)} />
      <text className="axis" x={PAD.left - 6} y={y(0) + 4} textAnchor="end">0</text>
      {low < 0 && (
        <text className="axis" x={PAD.left - 6} y={y(low) + 4} textAnchor="end">{low.toFixed(1)}</text>
      )}
      <path className="value" d={path} />
      <line className="now" x1={x(now)} x2={x(now)} y1={PAD.top} y2={HEIGHT - PAD.bottom} />
      {shown.map((event) => (
        <Marker key={event.id} event={event} x={x} y={y} top={PAD.top} bottom={HEIGHT - PAD.bottom} />
      ))}
    </svg>
  );
}

function Marker({ event, x, y, top, bottom }) {
  const cx = x(event.at);
  const cy = y(event.valueAfter);
  if (event.kind === "admitted") return <circle className="marker admitted" cx={cx} cy={cy} r={5} />;
  if (event.kind === "refused") {
    return (
      <path className="marker refused" d={`M${cx - 5},${cy - 5} L${cx + 5},${cy + 5} M${cx - 5},${cy + 5} L${cx + 5},${cy - 5}`} />
    );
  }
  const runX = x(event.runAt);
  return (
    <g className="marker reserved">
      <path d={`M${cx},${cy - 6} L${cx + 6},${cy + 5} L${cx - 6},${cy + 5} Z`} />
      <line className="run-at" x1={runX} x2={runX} y1={top} y2={bottom} />
      <line className="wait" x1={cx} x2={runX} y1={cy} y2={cy} />
    </g>
  );
}
