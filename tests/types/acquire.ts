// acquire, acquireAll and throttle are typed: limit names are checked, a grant is answered only
// when asked, and a throttled function keeps fn's parameters and result.
import { MemoryStore, RateLimiter, throttle, type Grant } from "ratebound";

const limiter = new RateLimiter(new MemoryStore(), {
  requests: { kind: "token bucket", rate: 10, period: 1_000 },
  tokens: { kind: "token bucket", rate: 1_000, period: 1_000, maxReserved: 1_000 },
});

export async function typed(): Promise<void> {
  const plain: { waited: number } = await limiter.acquire("requests");
  // @ts-expect-error: no grant without grant: true
  plain.grant;
  const { grant } = await limiter.acquire("tokens", { count: 500, grant: true });
  const settled: Grant = grant;
  await settled.settle(200);
  // @ts-expect-error: not one of the limits
  await limiter.acquire("request");
  await limiter.acquire("inline", { config: { kind: "fixed window", rate: 1, period: 1_000 } });
  const { grants } = await limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: 5 }], { grant: true });
  grants.map((each: Grant) => each.data.id);
  // @ts-expect-error: acquire always reserves
  await limiter.acquire("tokens", { reserve: false });

  const complete = throttle(limiter, "tokens", async (prompt: string, maxTokens: number) => prompt.length + maxTokens, {
    key: (prompt) => prompt.slice(0, 8),
    count: (_prompt, maxTokens) => maxTokens,
  });
  const length: number = await complete("hello", 100);
  // @ts-expect-error: fn's parameters
  await complete("hello");
  // @ts-expect-error: not one of the limits
  throttle(limiter, "token", () => 1);
  void length;
}
