// redisStore takes valkey-glide's GlideClient (in Node) and Bun's built-in RedisClient (in Bun)
// as they are, on a real redis-server: the client scenarios (exact bound under concurrency, a
// refusal's retryAfter, getValue, limitAll, reset). Before, Bun's client was taken for
// @upstash/redis and every call failed, and glide was refused.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GlideClient, Logger } from "@valkey/valkey-glide";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis } from "./servers.mjs";
import { runClientScenarios } from "./client-scenarios.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));
const SCENARIOS = 5;

describe("Redis clients redisStore takes as they are, on a real redis-server", () => {
  let server;
  before(async () => {
    server = await startRedis();
  });
  after(() => server?.stop());

  test("valkey-glide's GlideClient passes every client scenario", async () => {
    Logger.setLoggerConfig("error"); // not a WARN line per NOSCRIPT reply (the store then loads the script)
    const client = await GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port: server.port }], databaseId: 1 });
    try {
      assert.equal((await runClientScenarios(client, { RateLimiter, redisStore })).length, SCENARIOS);
    } finally {
      client.close();
    }
  });

  test("Bun's RedisClient passes every client scenario in Bun", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ratebound-bun-redis-"));
    try {
      mkdirSync(join(dir, "node_modules"));
      // A copy, not a link: under the repository Bun would apply tsconfig.json's paths to pkg/'s own imports.
      cpSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), { recursive: true });
      copyFileSync(join(here, "bun", "bun-client.mjs"), join(dir, "bun-client.mjs"));
      copyFileSync(join(here, "client-scenarios.mjs"), join(dir, "client-scenarios.mjs"));
      const env = { ...process.env, DO_NOT_TRACK: "1", REDIS_URL: `redis://127.0.0.1:${server.port}/2` };
      const { code, stdout, stderr } = await new Promise((resolve, reject) => {
        const child = spawn(join(repo, "node_modules", ".bin", "bun"), ["bun-client.mjs"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
        let [out, err] = ["", ""];
        child.stdout.setEncoding("utf8").on("data", (chunk) => (out += chunk));
        child.stderr.setEncoding("utf8").on("data", (chunk) => (err += chunk));
        const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
        child.on("error", (error) => (clearTimeout(timer), reject(error)));
        child.on("close", (exit, signal) => (clearTimeout(timer), resolve({ code: exit ?? signal, stdout: out, stderr: err })));
      });
      assert.equal(code, 0, stderr || stdout);
      const { runtime, passed } = JSON.parse(stdout.trim().split("\n").at(-1));
      assert.equal(runtime, "bun");
      assert.equal(passed.length, SCENARIOS);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
