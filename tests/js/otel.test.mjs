// ratebound/otel (issue 33 item 4): examples/metrics/prometheus.mjs run as a user would, in its own
// process with the package and the OpenTelemetry SDK installed beside it; /metrics scraped over
// HTTP must show the decisions by limit and outcome, the store's latency, and the degraded calls,
// with the values the example's calls make. And the main entry never loads the OpenTelemetry API.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { otelMetrics } from "../../pkg/dist/otel.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** A loopback port free now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** The samples of `metric` in a Prometheus text exposition, as [labels, value]. */
function samples(text, metric) {
  const found = [];
  for (const line of text.split("\n")) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match === null || match[1] !== metric) continue;
    const labels = Object.fromEntries([...match[2].matchAll(/([a-z_]+)="([^"]*)"/g)].map(([, name, value]) => [name, value]));
    found.push([labels, Number(match[3])]);
  }
  return found;
}

/** The value of the one sample of `metric` whose labels include `wanted`. */
function valueOf(text, metric, wanted) {
  const matching = samples(text, metric).filter(([labels]) => Object.entries(wanted).every(([name, value]) => labels[name] === value));
  assert.equal(matching.length, 1, `one ${metric} sample with ${JSON.stringify(wanted)} (got ${matching.length})`);
  return matching[0][1];
}

describe("examples/metrics/prometheus.mjs, scraped over HTTP", () => {
  let dir;
  let child;
  let text;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-example-prometheus-"));
    copyFileSync(join(repo, "examples", "metrics", "prometheus.mjs"), join(dir, "prometheus.mjs"));
    copyFileSync(join(repo, "examples", "metrics", "package.json"), join(dir, "package.json"));
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
    symlinkSync(join(repo, "node_modules", "@opentelemetry"), join(dir, "node_modules", "@opentelemetry"), "dir");
    const port = await freePort();
    child = spawn(process.execPath, ["prometheus.mjs"], { cwd: dir, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const { value } = await lines.next();
    assert.equal(value, `metrics at http://127.0.0.1:${port}/metrics`);
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(response.status, 200);
    text = await response.text();
  });
  after(() => {
    child?.kill("SIGTERM");
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  test("decisions are counted by limit, outcome and operation", () => {
    const count = (limit, outcome, operation) => valueOf(text, "ratebound_decisions_total", { ratebound_limit: limit, ratebound_outcome: outcome, ratebound_operation: operation });
    assert.equal(count("api", "allowed", "limit"), 3);
    assert.equal(count("api", "refused", "limit"), 2);
    assert.equal(count("api", "allowed", "check"), 1);
    assert.equal(count("search", "allowed", "limit"), 2);
    assert.equal(samples(text, "ratebound_decisions_total").length, 4, "no other series");
    assert.doesNotMatch(text, /"ada"|"grace"/, "keys are never labels");
  });

  test("the store's latency is a histogram in ms: the down store's 30 ms show in its buckets", () => {
    const search = { ratebound_limit: "search", ratebound_operation: "limit" };
    assert.equal(valueOf(text, "ratebound_store_duration_count", search), 2);
    assert.ok(valueOf(text, "ratebound_store_duration_sum", search) >= 58, "two calls of at least 30 ms");
    assert.equal(valueOf(text, "ratebound_store_duration_bucket", { ...search, le: "25" }), 0);
    assert.equal(valueOf(text, "ratebound_store_duration_bucket", { ...search, le: "+Inf" }), 2);
    assert.equal(valueOf(text, "ratebound_store_duration_count", { ratebound_limit: "api", ratebound_operation: "limit" }), 5);
    assert.equal(valueOf(text, "ratebound_store_duration_count", { ratebound_limit: "api", ratebound_operation: "check" }), 1);
    assert.match(text, /# UNIT ratebound_store_duration ms/);
  });

  test("the failure policy's activations are counted by cause and by who answered", () => {
    assert.equal(valueOf(text, "ratebound_degraded_total", { ratebound_limit: "search", ratebound_degraded: "store-error", ratebound_fallback: "open" }), 2);
    assert.equal(samples(text, "ratebound_degraded_total").length, 1);
  });
});

describe("otelMetrics", () => {
  test("refuses what is not a meter, or an unknown option, when it is made", () => {
    assert.throws(() => otelMetrics({ meter: {} }), { code: "INVALID_ARGUMENT", field: "meter" });
    assert.throws(() => otelMetrics({ metre: {} }), { code: "INVALID_ARGUMENT", field: "metre" });
  });

  test("records on the global MeterProvider's meter when given none (a no-op until one is registered)", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 1, period: 1000 } }, { onDecision: otelMetrics() });
    assert.equal((await limiter.limit("api")).ok, true);
  });

  test("no module but ratebound/otel's names @opentelemetry: the main entry and the other subpaths never load it", () => {
    const dist = join(repo, "pkg", "dist");
    const modules = readdirSync(dist, { recursive: true }).filter((file) => /\.(c?js)$/.test(file) && !/^otel\./.test(file));
    assert.ok(modules.includes("index.js") && modules.includes("node.js") && modules.includes("browser.js"));
    for (const file of modules) assert.doesNotMatch(readFileSync(join(dist, file), "utf8"), /@opentelemetry/, file);
    assert.match(readFileSync(join(dist, "otel.js"), "utf8"), /from "@opentelemetry\/api"/);
    assert.match(readFileSync(join(dist, "otel.cjs"), "utf8"), /require\("@opentelemetry\/api"\)/);
  });
});
