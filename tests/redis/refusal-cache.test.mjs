// refusalCache on a real redis-server (issue 22 item 4), through node-redis and ioredis: once a
// key is refused with retryAfter, the limiter refuses it locally until the wait ends, and the
// server receives no command meanwhile (counted by the server itself, INFO commandstats, from a
// connection of the test's own). Without the option every call reaches the server (the control).
// When the wait ends the next call goes to the server and is admitted.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "./servers.mjs";

const NOW = 1_700_000_000_000;
const LIMITS = { login: { kind: "token bucket", rate: 5, period: 60_000 } };

/** Commands the server has run since the last reset, but the test's own INFO and CONFIG. */
async function commandsRun(admin) {
  const stats = await admin.sendCommand(["INFO", "commandstats"]);
  let total = 0;
  for (const [, command, calls] of String(stats).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(info|config)/.test(command)) total += Number(calls);
  }
  return total;
}

describe("refusalCache on a real redis-server", () => {
  let server;
  let admin;
  before(async () => {
    server = await startRedis();
    admin = (await CLIENTS["node-redis"].open({ redisUrl: server.url })).client;
  });
  after(async () => {
    await admin?.quit().catch(() => {});
    server?.stop();
  });

  for (const library of ["node-redis", "ioredis"]) {
    test(`${library}: 100 calls on a refused key while its wait runs send the server no command; without the option all 100 reach it`, async () => {
      const { client, close } = await CLIENTS[library].open({ redisUrl: server.url });
      try {
        const clock = { now: NOW };
        const key = `attacker-${library}`;
        const cached = new RateLimiter(redisStore(client), LIMITS, { now: () => clock.now, refusalCache: true });
        assert.equal((await cached.limit("login", { key, count: 5 })).ok, true);
        await admin.sendCommand(["CONFIG", "RESETSTAT"]);
        assert.deepEqual(await cached.limit("login", { key }), { ok: false, retryAfter: 12_000 });
        const first = await commandsRun(admin);
        assert.ok(first > 0, "the first refusal was the server's");
        await admin.sendCommand(["CONFIG", "RESETSTAT"]);
        for (let index = 0; index < 100; index++) {
          clock.now = NOW + index * 100;
          assert.deepEqual(await cached.limit("login", { key }), { ok: false, retryAfter: 12_000 - index * 100 });
        }
        assert.equal(await commandsRun(admin), 0, "no command reached the server while the key was blocked");

        const plain = new RateLimiter(redisStore(client), LIMITS, { now: () => clock.now });
        await admin.sendCommand(["CONFIG", "RESETSTAT"]);
        for (let index = 0; index < 100; index++) assert.equal((await plain.limit("login", { key })).ok, false);
        assert.ok((await commandsRun(admin)) >= 100, "without the option, every call reaches the server");

        clock.now = NOW + 12_000;
        await admin.sendCommand(["CONFIG", "RESETSTAT"]);
        assert.deepEqual(await cached.limit("login", { key }), { ok: true }, "the wait over, the server admits");
        assert.ok((await commandsRun(admin)) > 0);
      } finally {
        await close();
      }
    });
  }
});
