// A crawler that honours each host's limit: one request every 200 ms per host (5 a second, never
// two at once), however many pages are queued and however many crawler processes share the
// Redis. `throttle` wraps the fetch; the key is the URL's host, so hosts do not wait for each other.
//
//   node crawler.mjs                                   # two local test hosts, limits in memory
//   REDIS_URL=redis://127.0.0.1:6379 node crawler.mjs  # limits on Redis, shared by every process
import { createServer } from "node:http";
import { createClient } from "redis";
import { MemoryStore, RateLimiter, SECOND, throttle } from "ratebound";
import { redisStore } from "ratebound/redis";

/** Where the limits live: Redis when REDIS_URL is set (every crawler process shares them), else this process. */
async function store() {
  if (!process.env.REDIS_URL) return new MemoryStore();
  const client = createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true });
  client.on("error", (error) => console.error("redis:", error.message));
  return redisStore(await client.connect());
}

const limiter = new RateLimiter(await store(), {
  // Capacity 1: no burst. maxReserved: up to 100 pages of a host may queue for their turn.
  perHost: { kind: "token bucket", rate: 5, period: SECOND, capacity: 1, maxReserved: 100 },
});

/** Fetches a page in its host's turn; a page that would wait more than 30 s is given up (WAIT_TOO_LONG). */
const fetchPage = throttle(limiter, "perHost", async (url) => (await fetch(url)).text(), {
  key: (url) => new URL(url).host,
  maxWait: 30 * SECOND,
});

// Two hosts to crawl, on loopback: each records when every request arrived.
const hosts = await Promise.all(
  ["alpha", "beta"].map(
    (name) =>
      new Promise((resolve) => {
        const arrivals = [];
        const server = createServer((request, response) => {
          arrivals.push(Date.now());
          response.end(`<h1>${name}${request.url}</h1>`);
        });
        server.listen(0, "127.0.0.1", () => resolve({ name, server, arrivals, base: `http://127.0.0.1:${server.address().port}` }));
      }),
  ),
);

// Every page of both hosts queued at once.
const started = Date.now();
const urls = hosts.flatMap(({ base }) => Array.from({ length: 10 }, (_, page) => `${base}/page/${page}`));
const pages = await Promise.all(urls.map((url) => fetchPage(url)));
console.log(`${pages.length} pages in ${Date.now() - started} ms`);

let within = true;
for (const { name, server, arrivals } of hosts) {
  server.close();
  // A token bucket of capacity 1 and 5 a second admits at most 1 + 5 in any second.
  const sorted = arrivals.sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < sorted.length; last++) {
    while (sorted[last] - sorted[first] >= SECOND) first++;
    most = Math.max(most, last - first + 1);
  }
  within &&= most <= 6;
  console.log(`${name}: ${sorted.length} requests, at most ${most} in any second (the limit allows 6)`);
}
process.exit(within ? 0 : 1);
