// Dry runs on a real PostgreSQL server (the decision runs in the functions createTable installs,
// next to the data), through a pg Pool: the scenarios of tests/js/dry-run-scenarios.mjs, each
// store on a table of its own.
import { after, before, describe } from "node:test";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { dryRunScenarios, STORE_TAGS } from "../js/dry-run-scenarios.mjs";

const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");

failOnDeprecationWarnings();
const tableOf = (tag) => `dry_${tag.replace(/[^a-z]/g, "_")}`;

describe("dry runs on a real PostgreSQL server", () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres({ maxConnections: 40 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 5 });
    for (const tag of STORE_TAGS) await createTable(pool, { table: tableOf(tag) });
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });
  dryRunScenarios((tag) => postgresStore(pool, { table: tableOf(tag) }));
});
