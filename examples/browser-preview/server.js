// The playground's stand-in for a server: a RateLimiter over a MemoryStore in
// the page, on a clock that may be skewed from the page's, behind a simulated
// network delay. A real app would run the same two calls (`limit`, then
// `getValue` for the client's snapshot) in its API handler.
import { RateLimiter, MemoryStore, calculateRateLimit } from "ratebound";

/** The one limit the playground exercises. */
export const LIMIT_NAME = "send";

/** Resolves after `ms` (at once for 0, so a zero-latency server answers without a timer). */
function delay(ms) {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

export class StandInServer {
  /**
   * @param {import("ratebound").RateLimitConfig} config The limit; an invalid one throws, naming the field.
   * @param {{ skewMs?: number, latencyMs?: number }} network The server clock's lead over the page's, and each leg's delay.
   */
  constructor(config, { skewMs = 0, latencyMs = 0 } = {}) {
    this.config = config;
    this.skewMs = skewMs;
    this.latencyMs = latencyMs;
    this.limiter = new RateLimiter(new MemoryStore(), { [LIMIT_NAME]: config }, { now: () => this.now() });
  }

  /** The server's clock: the page's plus the skew. */
  now() {
    return Date.now() + this.skewMs;
  }

  /** The whole limit, as a client snapshot: every shard sampled, so the value is exact. */
  #snapshot() {
    return this.limiter.getValue(LIMIT_NAME, { sampleShards: this.config.shards ?? 1 });
  }

  /** Tokens available right now, by the server's clock: the snapshot projected by the core. */
  async reading() {
    const snapshot = await this.#snapshot();
    return calculateRateLimit({ value: snapshot.value, ts: snapshot.ts }, snapshot.config, this.now()).value;
  }

  /** GET /limit: the snapshot a page starts its preview from, and the server's time. */
  async snapshot() {
    await delay(this.latencyMs);
    const answer = { snapshot: await this.#snapshot(), serverTime: this.now() };
    await delay(this.latencyMs);
    return answer;
  }

  /**
   * POST /send: one request of one token, decided by the limiter; answers with
   * the decision, the fresh snapshot, the server time of the decision, and the
   * tokens available just before and after it.
   */
  async send({ reserve = false } = {}) {
    await delay(this.latencyMs);
    const valueBefore = await this.reading();
    const result = await this.limiter.limit(LIMIT_NAME, { reserve });
    const serverTime = this.now();
    const answer = { result, snapshot: await this.#snapshot(), serverTime, valueBefore, valueAfter: await this.reading() };
    await delay(this.latencyMs);
    return answer;
  }
}
