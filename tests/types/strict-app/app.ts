// A small app as a user writes it, against the built package's published
// types: strict, with its libraries' declarations checked (skipLibCheck false).
import { RateLimiter, MemoryStore, calculateRateLimit, decideRateLimit, isRateLimitError, withJitter, MINUTE } from "ratebound";
import type { RateLimitResult, RateLimitStore, RateLimitState, StateRef, WriteInfo } from "ratebound";
import { RateLimitPreview } from "ratebound/preview";

const limits = {
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  signUp: { kind: "fixed window", rate: 100, period: 60 * MINUTE },
} as const;

class MapStore implements RateLimitStore {
  readonly #states = new Map<string, RateLimitState>();
  read(ref: StateRef): RateLimitState | null {
    return this.#states.get(`${ref.name}/${ref.key ?? ""}/${ref.shard}`) ?? null;
  }
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    const id = `${ref.name}/${ref.key ?? ""}/${ref.shard}`;
    if (state === null || info?.fullAt === -Infinity) this.#states.delete(id);
    else this.#states.set(id, state);
  }
}

export async function handle(userId: string): Promise<string> {
  const limiter = new RateLimiter(new MemoryStore({ maxKeys: 1000 }), limits, { now: () => Date.now() });
  const custom = new RateLimiter(new MapStore(), limits);
  const status: RateLimitResult = await limiter.limit("sendMessage", { key: userId });
  await custom.check("signUp");
  if (!status.ok) return `retry in ${Math.ceil(withJitter(status.retryAfter, 1000) / 1000)} s`;
  const next = calculateRateLimit({ value: 1, ts: 0 }, limits.sendMessage, Date.now(), 1);
  const decision = decideRateLimit(null, limits.sendMessage, Date.now(), { count: 1 });
  const preview = new RateLimitPreview(await limiter.getValue("sendMessage", { key: userId }));
  try {
    await limiter.limit("signUp", { throws: true });
  } catch (error) {
    if (isRateLimitError(error)) return String(error.data.retryAfter);
  }
  return `${next.value} ${decision.ok} ${String(preview)}`;
}
