// Run by Bun (tests/redis/clients.test.mjs copies it into a scratch project with pkg/ as
// node_modules/ratebound): the client scenarios with Bun's built-in RedisClient as it is, then
// one line of JSON with what passed.
import { RedisClient } from "bun";
import { RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { runClientScenarios } from "./client-scenarios.mjs";

const client = new RedisClient(process.env.REDIS_URL);
await client.connect();
try {
  const passed = await runClientScenarios(client, { RateLimiter, redisStore });
  console.log(JSON.stringify({ runtime: typeof Bun === "object" ? "bun" : "other", passed }));
} finally {
  client.close();
}
