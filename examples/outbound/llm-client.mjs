// An LLM client that keeps a provider's requests per minute AND tokens per minute, for every
// process that points at the same Redis together. Each call waits its turn on both limits at
// once (acquireAll: one EVALSHA), charging the request and the prompt's tokens; when the reply
// arrives, its completion tokens are charged too (one EVALSHA), as debt the next calls wait for.
//
//   REDIS_URL=redis://127.0.0.1:6379 WORKERS=4 node llm-client.mjs
//
// The model here is simulated (no API key needed): `model` stands where your SDK's call goes.
// PERIOD_MS is the provider's minute; tests run it shorter (the limits scale with it).
import { pathToFileURL } from "node:url";
import { createClient } from "redis";
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { MAX_PROMPT_TOKENS, MAX_TOKENS, llmLimits } from "./llm-limits.mjs";

const PERIOD = Number(process.env.PERIOD_MS ?? MINUTE);
const limiter = new RateLimiter(redisStore(await connect()), llmLimits(PERIOD));

async function connect() {
  const client = createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true });
  client.on("error", (error) => console.error("redis:", error.message)); // an outage is logged, never a crash
  return await client.connect();
}

/**
 * Asks the model, in turn: never more than the provider allows, over every process.
 *
 * @param {string} prompt
 * @returns {Promise<{ text: string, usage: { prompt_tokens: number, completion_tokens: number } }>}
 */
export async function complete(prompt) {
  const promptTokens = countTokens(prompt);
  await limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: promptTokens }]);
  const admittedAt = Date.now();
  const reply = await model(prompt, MAX_TOKENS);
  // Settle: the reply's completion tokens, charged as a reservation (maxReserved leaves room for
  // every call in flight), so later calls wait for them.
  await limiter.limit("tokens", { count: reply.usage.completion_tokens, reserve: true, throws: true });
  return { ...reply, admittedAt };
}

/** A rough token count (the provider's tokenizer in real code). */
export function countTokens(text) {
  return Math.min(MAX_PROMPT_TOKENS, Math.ceil(text.length / 4));
}

/** The simulated model: answers after 0.5–2 % of a period with up to `maxTokens` completion tokens. */
async function model(prompt, maxTokens) {
  await new Promise((resolve) => setTimeout(resolve, PERIOD * (0.005 + Math.random() * 0.015)));
  const completion = 1 + Math.floor(Math.random() * maxTokens);
  return { text: "…", usage: { prompt_tokens: countTokens(prompt), completion_tokens: completion } };
}

// Run as a process of the example: WORKERS loops until UNTIL (ms since the epoch), printing one
// line per admitted call for llm-measure.mjs: `{"at":…,"tokens":…}`.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const until = Number(process.env.UNTIL ?? Date.now() + 3 * PERIOD);
  const workers = Number(process.env.WORKERS ?? 4);
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (Date.now() < until) {
        const prompt = `Summarise document ${worker}: ${"lorem ipsum ".repeat(10 + Math.floor(Math.random() * 60))}`;
        const { admittedAt, usage } = await complete(prompt);
        console.log(JSON.stringify({ at: admittedAt, tokens: usage.prompt_tokens + usage.completion_tokens }));
      }
    }),
  );
  process.exit(0); // the Redis connection would keep the process alive
}
