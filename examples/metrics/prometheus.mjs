// docs/metrics.md's example: a limiter's decisions as Prometheus metrics, through OpenTelemetry.
// ratebound/otel's hook records them on a MeterProvider whose reader is the Prometheus exporter,
// which serves them on a loopback port. tests/js/otel.test.mjs runs it and scrapes /metrics.
//
//   PORT=9464 node prometheus.mjs   # then: curl http://127.0.0.1:9464/metrics
import { MINUTE, MemoryStore, RateLimiter } from "ratebound";
import { otelMetrics } from "ratebound/otel";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";

const port = Number(process.env.PORT ?? 9464);
// Started below, once the decisions are made (its server does not hold the process open: see the end).
const exporter = new PrometheusExporter({ host: "127.0.0.1", port, preventServerStart: true });
const provider = new MeterProvider({ readers: [exporter] });
// One hook per process is enough: every limiter can share it.
const onDecision = otelMetrics({ meter: provider.getMeter("ratebound") });

const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 3, period: MINUTE } }, { onDecision });
// A store that is down (it refuses each read after 30 ms), under the "open" policy: its calls are
// admitted undecided, counted as degraded, and their 30 ms show in the store's latency.
const refused = () => new Promise((_, reject) => setTimeout(() => reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")), 30));
const down = { read: refused, write: () => Promise.resolve() };
const search = new RateLimiter(down, { search: { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" } }, { onDecision });

// Five calls for one user on a limit of three: three allowed, two refused; one check; two searches while the store is down.
for (let call = 0; call < 5; call++) await limiter.limit("api", { key: "ada" });
await limiter.check("api", { key: "grace" });
await search.limit("search", { key: "ada" });
await search.limit("search", { key: "grace" });

await exporter.startServer();
console.log(`metrics at http://127.0.0.1:${port}/metrics`);
// Serves until stopped (Ctrl-C, or the test's SIGTERM): the exporter's server is unref'd, so a timer keeps the process up.
const alive = setInterval(() => {}, 60_000);
process.on("SIGTERM", () => {
  clearInterval(alive);
  void exporter.shutdown();
});
