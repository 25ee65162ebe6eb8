// Compile-time checks of grants: `grant: true` gives a handle on a granted
// result, narrowing on `ok`; settle takes a number and the data is plain.
import { MemoryStore, RateLimiter, MINUTE, type GrantData, type SettleResult } from "../../pkg/dist/index.js";

const limiter = new RateLimiter(new MemoryStore(), {
  llmTokens: { kind: "token bucket", rate: 40_000, period: MINUTE },
});

export async function granted(): Promise<SettleResult | undefined> {
  const result = await limiter.limit("llmTokens", { key: "team", count: 2_000, reserve: true, grant: true });
  if (!result.ok) {
    const wait: number = result.retryAfter;
    // @ts-expect-error a refusal has no grant to settle
    await result.grant.settle(1);
    return wait > 0 ? undefined : undefined;
  }
  const data: GrantData = result.grant.data;
  const copy: GrantData = JSON.parse(JSON.stringify(data)) as GrantData;
  await limiter.settle(copy, 1_000);
  // @ts-expect-error actual is a number
  await result.grant.settle("1000");
  return result.grant.cancel();
}

export async function plain(): Promise<void> {
  const result = await limiter.limit("llmTokens", { key: "team" });
  // @ts-expect-error without `grant: true` there is no handle
  result.grant.settle(1);
}

export async function withFigures(): Promise<number | undefined> {
  const result = await limiter.limit("llmTokens", { key: "team", figures: true, grant: true });
  const remaining: number | undefined = result.figures?.remaining;
  if (result.ok) await result.grant.cancel();
  return remaining;
}
