// The real servers of the Redis host tests (not a test file itself): a redis-server on a free
// loopback port in a temporary directory, killed after; the Upstash REST bridge in front of it;
// and a connection factory for each client library.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { createClient as createClient5 } from "redis-5";
import IORedis from "ioredis";
import IORedis5 from "ioredis-5";
import { Redis as UpstashRedis } from "@upstash/redis";

const STARTUP_TIMEOUT_MS = 10_000;
const running = new Set();
process.on("exit", () => running.forEach((child) => child.kill("SIGKILL")));

/** A port nothing listens on right now, on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createTcpServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts Debian's redis-server on 127.0.0.1 and a free port, in a fresh temporary directory,
 * without persistence (`--save '' --appendonly no`). Resolves once it accepts connections.
 * `stop()` kills it and removes the directory. With `{ port }`, on that port (a server
 * started again where a stopped one was); `{ args }` are added to the command line.
 */
export async function startRedis(options = {}) {
  for (let tries = 1; ; tries++) {
    const port = options.port ?? (await freePort());
    const dir = mkdtempSync(join(tmpdir(), "ratebound-redis-"));
    const child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "notice", ...(options.args ?? [])],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    running.add(child);
    const stop = () => {
      running.delete(child);
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      await new Promise((resolve, reject) => {
        let output = "";
        const timer = setTimeout(() => reject(new Error(`redis-server did not start within ${STARTUP_TIMEOUT_MS} ms: ${output}`)), STARTUP_TIMEOUT_MS);
        const seen = (chunk) => {
          output += chunk;
          if (/Ready to accept connections/.test(output)) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout.setEncoding("utf8").on("data", seen);
        child.stderr.setEncoding("utf8").on("data", seen);
        child.on("error", (error) => {
          clearTimeout(timer);
          reject(error);
        });
        child.on("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`redis-server exited with ${code}: ${output}`));
        });
      });
      return { port, url: `redis://127.0.0.1:${port}`, stop };
    } catch (error) {
      stop();
      if (tries >= 3) throw error; // the port was taken between the probe and the start
    }
  }
}

/** Base64 of a string's UTF-8, as Upstash's `Upstash-Encoding: base64` answers carry strings. */
const base64 = (text) => Buffer.from(text, "utf8").toString("base64");

/** A reply in Upstash's REST encoding: strings base64 when asked (but the status "OK"), arrays recursively. */
function encoded(reply, asBase64) {
  if (!asBase64) return reply;
  if (typeof reply === "string") return reply === "OK" ? reply : base64(reply);
  if (Array.isArray(reply)) return reply.map((item) => encoded(item, asBase64));
  return reply;
}

/** SHA-1 of a script, as Redis names it for EVALSHA. */
const sha1 = (text) => createHash("sha1").update(text, "utf8").digest("hex");

/**
 * A small HTTP server that speaks Upstash's documented REST protocol and forwards every command
 * to the real redis-server: `POST /` with a JSON array command answers `{ result }` (or status 400
 * and `{ error }`); `POST /pipeline` takes an array of commands and answers an array of those;
 * `POST /multi-exec` runs them in MULTI/EXEC. The bridge only transports: Redis executes every
 * command and script. It counts the HTTP requests it answered (`requests`), the commands it
 * forwarded, by name (`forwarded`), and the bytes of the request and response bodies (`bytesIn`,
 * `bytesOut`; headers not counted), and keeps the last request's body and its answer (`last`).
 *
 * Options, for benchmarks (the defaults change nothing):
 * - `delayMs`: waits that long before handling each HTTP request, as a network round trip would.
 * - `stripShebang`: removes a first line `#!lua …` from every script it forwards (EVAL, EVAL_RO,
 *   SCRIPT LOAD), for scripts that declare flags an older redis-server refuses (Debian's 7.0
 *   refuses `#!lua flags=allow-key-locking`, which @upstash/ratelimit's scripts begin with), and
 *   maps the digest of each script as the client sent it to the digest of the script Redis ran,
 *   so EVALSHA of the client's digest finds it, and SCRIPT LOAD answers the client's digest.
 */
export async function startUpstashBridge(redisUrl, { delayMs = 0, stripShebang = false } = {}) {
  // No offline queue: with redis-server gone, a command fails at once (the client gets `{ error }`).
  const redis = createClient({ url: redisUrl, disableOfflineQueue: true, socket: { reconnectStrategy: false } });
  redis.on("error", () => {});
  await redis.connect();
  const forwarded = new Map();
  const counts = { requests: 0, bytesIn: 0, bytesOut: 0, last: { request: "", response: "" } };
  const digests = new Map(); // the client's digest → the digest of the script Redis ran
  const stripped = (script) => {
    if (!stripShebang || !script.startsWith("#!lua")) return script;
    const body = script.slice(script.indexOf("\n") + 1);
    digests.set(sha1(script), sha1(body));
    return body;
  };
  const run = async (command) => {
    if (!Array.isArray(command) || command.length === 0) throw new Error("ERR the body must be a JSON array: a command and its arguments");
    const args = command.map(String);
    const name = args[0].toUpperCase();
    forwarded.set(name, (forwarded.get(name) ?? 0) + 1);
    if ((name === "EVAL" || name === "EVAL_RO") && args.length > 1) args[1] = stripped(args[1]);
    if ((name === "EVALSHA" || name === "EVALSHA_RO") && digests.has(args[1]?.toLowerCase())) args[1] = digests.get(args[1].toLowerCase());
    if (name === "SCRIPT" && args[1]?.toUpperCase() === "LOAD" && args.length > 2 && args[2] !== stripped(args[2])) {
      await redis.sendCommand(["SCRIPT", "LOAD", stripped(args[2])]);
      return sha1(args[2]);
    }
    return await redis.sendCommand(args);
  };
  const server = createServer(async (request, response) => {
    counts.requests++;
    let body = "";
    for await (const chunk of request) body += chunk;
    counts.bytesIn += Buffer.byteLength(body);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const asBase64 = String(request.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    const reply = (status, json) => {
      const text = JSON.stringify(json);
      counts.bytesOut += Buffer.byteLength(text);
      counts.last = { request: body, response: text };
      response.writeHead(status, { "content-type": "application/json" });
      response.end(text);
    };
    try {
      const parsed = JSON.parse(body);
      const path = new URL(request.url, "http://bridge").pathname;
      if (path === "/pipeline" || path === "/multi-exec") {
        if (!Array.isArray(parsed)) throw new Error("ERR a pipeline is a JSON array of commands");
        if (path === "/multi-exec") {
          const multi = redis.multi();
          for (const command of parsed) multi.addCommand(command.map(String));
          const results = await multi.exec();
          return reply(200, results.map((result) => ({ result: encoded(result, asBase64) })));
        }
        const results = [];
        for (const command of parsed) {
          try {
            results.push({ result: encoded(await run(command), asBase64) });
          } catch (error) {
            results.push({ error: error.message });
          }
        }
        return reply(200, results);
      }
      return reply(200, { result: encoded(await run(parsed), asBase64) });
    } catch (error) {
      return reply(400, { error: error.message });
    }
  });
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    forwarded,
    /** HTTP requests answered so far. */
    get requests() {
      return counts.requests;
    },
    /** Bytes of the request bodies received and of the response bodies sent, so far. */
    get bytesIn() {
      return counts.bytesIn;
    },
    get bytesOut() {
      return counts.bytesOut;
    },
    /** The last request's body and the body answered to it. */
    get last() {
      return counts.last;
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      if (redis.isOpen) redis.destroy();
    },
  };
}

/**
 * How each client library connects: `open(url)` resolves with `{ client, close }`. The Upstash
 * client is pointed at the bridge (`bridgeUrl`), the others at redis-server. node-redis and
 * ioredis come in their current major (6) and the previous one (5), whose APIs differ.
 */
export const CLIENTS = {
  "node-redis": { open: ({ redisUrl }) => openNodeRedis(createClient, redisUrl) },
  ioredis: { open: ({ redisUrl }) => openIoRedis(IORedis, redisUrl) },
  "@upstash/redis": {
    open: async ({ bridgeUrl }) => {
      const client = new UpstashRedis({ url: bridgeUrl, token: "bridge-ignores-it", retry: false, enableTelemetry: false });
      return { client, close: async () => {} };
    },
  },
  "node-redis 5": { open: ({ redisUrl }) => openNodeRedis(createClient5, redisUrl) },
  "ioredis 5": { open: ({ redisUrl }) => openIoRedis(IORedis5, redisUrl) },
};

async function openNodeRedis(create, redisUrl) {
  const client = create({ url: redisUrl, disableOfflineQueue: true, socket: { reconnectStrategy: false } });
  client.on("error", () => {}); // a dropped server must not crash the test process
  await client.connect();
  return { client, close: () => Promise.resolve().then(() => client.quit()).catch(() => client.disconnect?.()).catch(() => {}) };
}

async function openIoRedis(Redis, redisUrl) {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => null });
  client.on("error", () => {});
  await client.connect();
  return { client, close: () => client.quit().catch(() => client.disconnect()) };
}
