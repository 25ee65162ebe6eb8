// acquire / acquireAll on a real PostgreSQL server (issue 31, item 1), through a pg Pool: the
// scenarios of tests/js/acquire-scenarios.mjs. Round trips are counted at pg's Client#query,
// which every statement of every pooled connection goes through.
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { scenariosFor } from "../js/acquire-scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");

failOnDeprecationWarnings();
const KINDS = ["token bucket", "fixed window"];

let trips = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  trips++;
  return query.apply(this, args);
};

describe("acquire on a real PostgreSQL server", () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres({ maxConnections: 40 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
    await createTable(pool);
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  for (const kind of KINDS) {
    describe(`through a pg Pool, ${kind}`, () => {
      for (const [name, scenario] of scenariosFor(kind)) {
        test(name, async () => {
          await pool.query("DELETE FROM ratebound");
          const connect = async (limits, options) => new RateLimiter(postgresStore(pool), limits, options);
          await scenario({ kind, connect, roundTrips: () => trips });
        });
      }
    });
  }
});
