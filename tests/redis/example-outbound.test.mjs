// examples/outbound, copied as a user would (node_modules/ratebound is the built package), against
// a real redis-server (issue 31, item 4): the LLM client in 10 processes of 4 workers, whose
// measurement (from the admitted calls' timestamps and token counts) must stay within the
// provider's requests and tokens in every window of one period, with at most one round trip per
// waiting call plus one per settle; and the crawler, whose hosts see their own limit.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { startRedis } from "./servers.mjs";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));
let redis;
let dir;

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), "ratebound-example-outbound-"));
  for (const file of readdirSync(join(repo, "examples", "outbound"))) copyFileSync(join(repo, "examples", "outbound", file), join(dir, file));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
  symlinkSync(join(repo, "node_modules", "redis"), join(dir, "node_modules", "redis"), "dir");
  symlinkSync(join(repo, "node_modules", "@redis"), join(dir, "node_modules", "@redis"), "dir");
});

after(() => {
  redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the LLM client, 10 processes × 4 workers on one Redis: never more requests or tokens than the provider's in any period, at most 2 round trips a call", async () => {
  // The provider's minute as 2 s, for 3 periods: the same limits, scaled.
  const { stdout } = await run(process.execPath, ["llm-measure.mjs"], { cwd: dir, env: { ...process.env, REDIS_URL: redis.url, PERIOD_MS: "2000", ROUNDS: "3" }, timeout: 60_000 });
  process.stdout.write(stdout.replace(/^/gm, "# "));
  const report = JSON.parse(stdout.trim().split("\n").at(-1));
  assert.ok(report.requests <= report.requestsLimit, `requests: ${report.requests} of ${report.requestsLimit}`);
  assert.ok(report.tokens <= report.tokensLimit, `tokens: ${report.tokens} of ${report.tokensLimit}`);
  // Used, not starved (on a quiet machine the busiest period sees ~95,000 of the 112,000 the limits allow).
  assert.ok(report.tokens >= 40_000, `tokens: ${report.tokens} in the busiest period`);
  // A wait (acquireAll) and a settle (limit), each one EVALSHA at most (group commit shares them),
  // plus the script's first load in each process.
  assert.ok(report.roundTrips <= 2 * report.calls + 10, `${report.roundTrips} round trips for ${report.calls} calls`);
});

test("the crawler: each host sees at most capacity + rate requests in any second, on Redis and in memory", async () => {
  for (const env of [{ REDIS_URL: redis.url }, { REDIS_URL: "" }]) {
    const { stdout } = await run(process.execPath, ["crawler.mjs"], { cwd: dir, env: { ...process.env, ...env }, timeout: 30_000 });
    process.stdout.write(stdout.replace(/^/gm, "# "));
    assert.match(stdout, /alpha: 10 requests, at most [1-6] in any second/);
    assert.match(stdout, /beta: 10 requests, at most [1-6] in any second/);
    const elapsed = Number(/in (\d+) ms/.exec(stdout)[1]);
    assert.ok(elapsed >= 1_800 && elapsed < 4_000, `10 pages a host at 5 a second, hosts in parallel: ${elapsed} ms`);
  }
});
