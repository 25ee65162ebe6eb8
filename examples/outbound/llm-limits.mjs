// The LLM example's limits, and the provider's they keep (docs/outbound.md, "The bound").

/** The provider's limits: in any minute, 600 requests and 120,000 tokens, for all our processes. */
export const PROVIDER = { requests: 600, tokens: 120_000 };
/** At most this many calls in flight, over every process (10 processes × 4 workers). */
export const IN_FLIGHT = 40;
/** The most tokens one reply may use (the request's max_tokens), and one prompt. */
export const MAX_TOKENS = 800;
export const MAX_PROMPT_TOKENS = 200;

/**
 * Token buckets whose bound is the provider's. A token bucket admits at most capacity + rate in
 * any window of one period; completion tokens are charged when the reply arrives, so up to
 * IN_FLIGHT × MAX_TOKENS may be in use and not charged yet:
 *   requests: 300 + 300 = 600;  tokens: 20,000 + 60,000 + 40 × 800 = 112,000 <= 120,000.
 * A call starts at the later of its two turns, so each capacity keeps room for the other limit's
 * longest wait (maxReserved / rate): requests wait at most 40 / 300 of a period, and tokens'
 * capacity holds 0.33 of a period of tokens; tokens wait at most 40,000 / 60,000 of a period, and
 * requests' capacity holds 1.0 of a period of requests.
 *
 * @param {number} period The provider's minute, in ms (shorter in tests).
 */
export function llmLimits(period) {
  return {
    requests: { kind: "token bucket", rate: 300, period, capacity: 300, maxReserved: IN_FLIGHT },
    tokens: { kind: "token bucket", rate: 60_000, period, capacity: 20_000, maxReserved: IN_FLIGHT * (MAX_PROMPT_TOKENS + MAX_TOKENS) },
  };
}
