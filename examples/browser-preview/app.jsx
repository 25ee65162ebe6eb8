// The ratebound playground: a limit you configure, a stand-in server in the
// page, and a send button that previews the server's answer with
// `useRateLimit` (ratebound/react), so requests the server would refuse are
// never sent. Bundled and served by `npm run playground`.
import { Component, StrictMode, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { estimateServerTimeOffset } from "ratebound/preview";
import { useRateLimit } from "ratebound/react";
import { Chart } from "./chart.jsx";
import { StandInServer } from "./server.js";

const DEFAULT_FORM = { kind: "token bucket", rate: "3", period: "10000", capacity: "3", shards: "1" };

/** The form, with any field preset by the address: `?kind=fixed+window&rate=5&period=2000` (also `skew`, `latency`). */
function initialForm() {
  const params = new URLSearchParams(location.search);
  const form = { ...DEFAULT_FORM };
  for (const name of Object.keys(form)) if (params.has(name)) form[name] = params.get(name);
  return form;
}
/** How often the chart reads the server's value, and a held button repeats. */
const SAMPLE_MS = 100;
const HOLD_REPEAT_MS = 150;
const MAX_EVENTS = 200;

function configFrom(form) {
  const config = { kind: form.kind, rate: Number(form.rate), period: Number(form.period), shards: Number(form.shards) };
  if (form.capacity.trim() !== "") config.capacity = Number(form.capacity);
  return config;
}

const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
const tokens = (value) => (Number.isInteger(value) ? String(value) : value.toFixed(2));

function App() {
  const [form, setForm] = useState(initialForm);
  const [throttle, setThrottle] = useState(true);
  const [reserve, setReserve] = useState(false);
  const [network, setNetwork] = useState(() => {
    const params = new URLSearchParams(location.search);
    return { skewMs: params.get("skew") ?? "0", latencyMs: params.get("latency") ?? "0" };
  });
  const [generation, setGeneration] = useState(0);
  const [session, setSession] = useState(null);
  const [error, setError] = useState(null);
  const [events, setEvents] = useState([]);
  const [samples, setSamples] = useState([]);
  const [now, setNow] = useState(() => Date.now());
  const config = useMemo(() => configFrom(form), [form]);
  const skewMs = Number(network.skewMs) || 0;
  const latencyMs = Math.max(0, Number(network.latencyMs) || 0);

  // A new server (an empty limit) whenever the config changes or "reset" is pressed.
  useEffect(() => {
    let server;
    try {
      server = new StandInServer(config, { skewMs, latencyMs });
    } catch (problem) {
      setError(problem.message);
      setSession(null);
      return undefined;
    }
    setError(null);
    setEvents([]);
    setSamples([]);
    let live = true;
    const sentAt = Date.now();
    server.snapshot().then(({ snapshot, serverTime }) => {
      if (!live) return;
      const serverTimeOffset = estimateServerTimeOffset(sentAt, serverTime, Date.now());
      setSession({ server, snapshot, serverTimeOffset, startedAt: sentAt });
    });
    return () => {
      live = false;
    };
    // The network settings are applied to the running server below, without a reset.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [config, generation]);

  useEffect(() => {
    if (!session) return;
    session.server.skewMs = skewMs;
    session.server.latencyMs = latencyMs;
  }, [session, skewMs, latencyMs]);

  // The chart's line: the server's value, read every SAMPLE_MS.
  useEffect(() => {
    if (!session) return undefined;
    const timer = setInterval(async () => {
      const value = await session.server.reading();
      const at = Date.now();
      setNow(at);
      setSamples((previous) => [...previous.filter((sample) => sample.at > at - 5 * 60_000), { at, value }]);
    }, SAMPLE_MS);
    return () => clearInterval(timer);
  }, [session]);

  useEffect(() => {
    document.body.dataset.ready = session ? "true" : "false";
  }, [session]);

  const send = useCallback(async () => {
    if (!session) return;
    const { server } = session;
    const sentAt = Date.now();
    const id = sentAt + Math.random();
    let answer;
    try {
      answer = await server.send({ reserve });
    } catch (problem) {
      setEvents((previous) => [{ id, at: sentAt, kind: "error", message: problem.message }, ...previous].slice(0, MAX_EVENTS));
      return;
    }
    const receivedAt = Date.now();
    const serverTimeOffset = estimateServerTimeOffset(sentAt, answer.serverTime, receivedAt);
    const at = answer.serverTime - serverTimeOffset; // the decision, on the page's clock
    const { result } = answer;
    const kind = !result.ok ? "refused" : result.retryAfter !== undefined ? "reserved" : "admitted";
    const event = { id, at, kind, valueAfter: answer.valueAfter, retryAfter: result.retryAfter };
    if (kind === "reserved") event.runAt = at + result.retryAfter;
    setSession((current) => (current && current.server === server ? { ...current, snapshot: answer.snapshot, serverTimeOffset } : current));
    setEvents((previous) => [event, ...previous].slice(0, MAX_EVENTS));
    setSamples((previous) => [...previous, { at, value: answer.valueBefore }, { at, value: answer.valueAfter }]);
  }, [session, reserve]);

  const field = (name) => ({
    id: name,
    value: form[name],
    onChange: (event) => setForm((previous) => ({ ...previous, [name]: event.target.value })),
  });
  const pastMs = Math.min(120_000, Math.max(15_000, 2 * (config.period || 0)));
  const latest = samples.at(-1);

  return (
    <>
      <header>
        <h1>ratebound playground</h1>
        <p>
          The button asks a <code>RateLimitPreview</code> (through <code>useRateLimit</code>) before it sends: the same
          WebAssembly core that decides on the stand-in server computes the preview, so a request the server would refuse
          is never sent. Hold the button down to send repeatedly.
        </p>
      </header>

      <section className="controls limit">
        <label>
          algorithm
          <select {...field("kind")}>
            <option value="token bucket">token bucket</option>
            <option value="fixed window">fixed window</option>
          </select>
        </label>
        <label>
          rate <input type="number" min="0" step="any" {...field("rate")} />
        </label>
        <label>
          period (ms) <input type="number" min="1" step="any" {...field("period")} />
        </label>
        <label>
          capacity <input type="number" min="0" step="any" placeholder="= rate" {...field("capacity")} />
        </label>
        <label>
          shards <input type="number" min="1" max="1024" step="1" {...field("shards")} />
        </label>
      </section>
      <section className="controls client">
        <label className="toggle">
          <input id="throttle" type="checkbox" checked={throttle} onChange={(event) => setThrottle(event.target.checked)} />
          throttle in the browser
        </label>
        <label className="toggle">
          <input id="reserve" type="checkbox" checked={reserve} onChange={(event) => setReserve(event.target.checked)} />
          reserve (debt, run later)
        </label>
        <label>
          server clock skew (ms)
          <input id="skew" type="number" step="any" value={network.skewMs} onChange={(event) => setNetwork((n) => ({ ...n, skewMs: event.target.value }))} />
        </label>
        <label>
          latency, one way (ms)
          <input id="latency" type="number" min="0" step="any" value={network.latencyMs} onChange={(event) => setNetwork((n) => ({ ...n, latencyMs: event.target.value }))} />
        </label>
        <button type="button" id="reset" onClick={() => setGeneration((n) => n + 1)}>
          reset limit
        </button>
      </section>

      {error && (
        <p id="error" className="error">
          {error}
        </p>
      )}

      {session && (
        <>
          <section className="decide">
            <ErrorBoundary key={`${JSON.stringify(config)}#${generation}`}>
              <SendPanel
                snapshot={session.snapshot}
                serverTimeOffset={session.serverTimeOffset}
                throttle={throttle}
                reserve={reserve}
                onSend={send}
              />
            </ErrorBoundary>
            <dl className="readout">
              <dt>server value now</dt>
              <dd id="server-value" className={latest && latest.value < 0 ? "negative" : ""}>
                {latest ? `${tokens(latest.value)} tokens` : "…"}
              </dd>
              <dt>estimated server clock offset</dt>
              <dd id="offset">{`${session.serverTimeOffset.toFixed(1)} ms`}</dd>
            </dl>
          </section>
          <Chart now={now} pastMs={pastMs} futureMs={pastMs / 3} capacity={config.capacity ?? config.rate} samples={samples} events={events} />
          <p className="legend">
            <span className="key admitted">● admitted</span> <span className="key refused">✕ refused</span>{" "}
            <span className="key reserved">▲ reserved, dashed: when it may run</span>
          </p>
          <EventLog events={events} startedAt={session.startedAt} />
        </>
      )}
    </>
  );
}

/** The button: disabled with a countdown while the preview refuses (when throttling a plain request). */
function SendPanel({ snapshot, serverTimeOffset, throttle, reserve, onSend }) {
  const { status, check } = useRateLimit(snapshot, { count: 1, serverTimeOffset });
  const gated = throttle && !reserve;
  const disabled = gated && !status.ok;

  const attempt = () => {
    if (gated && !check().ok) return; // throttled in the browser: nothing is sent
    void onSend();
  };
  const latest = useRef(attempt);
  latest.current = attempt;
  const hold = useRef(undefined);
  const release = useCallback(() => {
    clearInterval(hold.current);
    hold.current = undefined;
  }, []);
  useEffect(() => {
    window.addEventListener("pointerup", release);
    window.addEventListener("pointercancel", release);
    window.addEventListener("blur", release);
    return () => {
      release();
      window.removeEventListener("pointerup", release);
      window.removeEventListener("pointercancel", release);
      window.removeEventListener("blur", release);
    };
  }, [release]);

  return (
    <div className="send">
      <button
        id="send"
        type="button"
        disabled={disabled}
        data-retry-at={status.ok ? "" : String(status.retryAt)}
        onPointerDown={(event) => {
          if (event.button !== 0) return;
          release();
          latest.current();
          hold.current = setInterval(() => latest.current(), HOLD_REPEAT_MS);
        }}
        onClick={(event) => {
          if (event.detail === 0) latest.current(); // keyboard; pointer clicks were sent on pointerdown
        }}
      >
        {disabled ? <Countdown until={status.retryAt} /> : reserve ? "send (reserve)" : "send"}
      </button>
      <p id="preview-status" className={status.ok ? "ok" : "refused"}>
        {status.ok
          ? "preview: a request now would be admitted"
          : `preview: refused until ${new Date(status.retryAt).toISOString().slice(11, 23)} UTC`}
      </p>
    </div>
  );
}

/** "retry in 2.4 s", counting down to `until` (display only: the button re-enables on the preview's own timer). */
function Countdown({ until }) {
  const [, setTick] = useState(0);
  const remainingMs = Math.max(0, until - Date.now()); // read at render, so a late tick still shows the truth
  useEffect(() => {
    if (remainingMs <= 0) return undefined;
    // The next time the shown tenth changes.
    const timer = setTimeout(() => setTick((tick) => tick + 1), remainingMs % 100 || 100);
    return () => clearTimeout(timer);
  });
  const tenths = Math.ceil(remainingMs / 100);
  return <span className="countdown">{`retry in ${(tenths / 10).toFixed(1)} s`}</span>;
}

function EventLog({ events, startedAt }) {
  const since = (at) => `t+${seconds(at - startedAt)}`;
  const total = (kind) => events.filter((event) => event.kind === kind).length;
  return (
    <ol id="events" reversed data-admitted={total("admitted")} data-refused={total("refused")} data-reserved={total("reserved")}>
      {events.slice(0, 12).map((event) => (
        <li
          key={event.id}
          className={`event ${event.kind}`}
          data-at={event.at}
          data-retry-after={event.retryAfter ?? ""}
        >
          {event.kind === "admitted" && `${since(event.at)} admitted, ${tokens(event.valueAfter)} left`}
          {event.kind === "refused" && `${since(event.at)} refused by the server, retry after ${seconds(event.retryAfter)}`}
          {event.kind === "reserved" &&
            `${since(event.at)} reserved: value ${tokens(event.valueAfter)}, may run at ${since(event.runAt)} (in ${seconds(event.retryAfter)})`}
          {event.kind === "error" && `${since(event.at)} error: ${event.message}`}
        </li>
      ))}
    </ol>
  );
}

class ErrorBoundary extends Component {
  state = { error: null };
  static getDerivedStateFromError(error) {
    return { error };
  }
  render() {
    return this.state.error ? <p className="error">{this.state.error.message}</p> : this.props.children;
  }
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
