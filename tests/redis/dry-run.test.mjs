// Dry runs on a real redis-server (the decision runs in the script, next to the data): the
// scenarios of tests/js/dry-run-scenarios.mjs, each on a prefix of its own.
import { after, before, describe } from "node:test";
import { createClient } from "redis";
import { redisStore } from "../../pkg/dist/redis.js";
import { dryRunScenarios } from "../js/dry-run-scenarios.mjs";
import { startRedis } from "./servers.mjs";

describe("dry runs on a real redis-server", () => {
  let server;
  let client;
  before(async () => {
    server = await startRedis();
    client = createClient({ url: server.url });
    await client.connect();
  });
  after(() => {
    if (client?.isOpen) client.destroy();
    server?.stop();
  });
  dryRunScenarios((tag) => redisStore(client, { prefix: `${tag}:` }));
});
