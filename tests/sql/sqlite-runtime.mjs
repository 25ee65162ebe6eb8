// ratebound/sqlite on the SQLite drivers built into Deno and Bun: `node:sqlite`'s `DatabaseSync`
// (Deno, Bun; Node 22+) and `bun:sqlite` (Bun). For each: a call that owns its transaction admits
// exactly the bound; inside the app's transaction the limit commits with the app's write, and a
// rollback consumes nothing; a table that was never created names createTable; and the same
// concurrent traffic through a store without the transaction (read, then write a moment later)
// over-admits, which shows the exact count comes from the transaction.
// Prints one JSON line `{ runtime, drivers }`, or exits 1 naming the failure;
// tests/sql/sqlite-runtimes.test.mjs runs it under Deno and under Bun.
import { RateLimiter } from "ratebound";
import { createTable, sqliteStore } from "ratebound/sqlite";

const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";
const NOW = 1_700_000_000_000;
const LIMITS = { post: { kind: "token bucket", rate: 3, period: 86_400_000 } };

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** The drivers this runtime has, each as `[name, () => a new in-memory connection]`. */
async function drivers() {
  const found = [];
  const { DatabaseSync } = await import("node:sqlite");
  found.push(["node:sqlite", () => new DatabaseSync(":memory:")]);
  if (runtime === "bun") {
    const { Database } = await import("bun:sqlite");
    found.push(["bun:sqlite", () => new Database(":memory:")]);
  }
  return found;
}

/** A store that reads and writes the same table with no transaction, its reads a moment late. */
function bareStore(db) {
  const read = db.prepare("SELECT value, ts FROM ratebound WHERE name = ? AND key = ? AND shard = ?");
  const write = db.prepare(
    "INSERT INTO ratebound (name, key, shard, value, ts) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts",
  );
  return {
    async read(ref) {
      const row = read.get(ref.name, ref.key ?? "", ref.shard);
      await new Promise((resolve) => setTimeout(resolve, 1));
      return row === undefined || row === null ? null : { value: row.value, ts: row.ts };
    },
    write(ref, state) {
      write.run(ref.name, ref.key ?? "", ref.shard, state.value, state.ts);
    },
  };
}

async function scenario(open) {
  const db = open();
  await createTable(db);
  db.exec("CREATE TABLE posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL)");
  const limiter = new RateLimiter(sqliteStore(db), LIMITS, { now: () => NOW });

  // Calls that own their transaction, all at once: exactly the bound.
  const alone = await Promise.all(Array.from({ length: 6 }, () => limiter.limit("post", { key: "ada" })));
  check(alone.filter((result) => result.ok).length === 3, `own transactions admitted ${alone.filter((r) => r.ok).length} of 6 against 3`);

  // The app's transaction: the limit commits with the post, or rolls back with it.
  const before = (await limiter.getValue("post", { key: "grace" })).value;
  db.exec("BEGIN IMMEDIATE");
  check((await limiter.limit("post", { key: "grace" })).ok, "the first call in the app's transaction is admitted");
  db.prepare("INSERT INTO posts (author) VALUES (?)").run("grace");
  db.exec("ROLLBACK");
  check((await limiter.getValue("post", { key: "grace" })).value === before, "a rolled-back call consumed nothing");
  check(db.prepare("SELECT count(*) AS n FROM posts").get().n === 0, "the rolled-back post is gone");
  db.exec("BEGIN IMMEDIATE");
  check((await limiter.limit("post", { key: "grace" })).ok, "the call in the committed transaction is admitted");
  db.prepare("INSERT INTO posts (author) VALUES (?)").run("grace");
  db.exec("COMMIT");
  check((await limiter.getValue("post", { key: "grace" })).value === before - 1, "a committed call consumed one token");
  check(db.prepare("SELECT count(*) AS n FROM posts").get().n === 1, "the committed post is there");

  // A table nobody created: the error names what to do.
  const absent = new RateLimiter(sqliteStore(db, { table: "absent" }), LIMITS, { now: () => NOW });
  const error = await absent.limit("post", { key: "ada" }).then(() => null, (caught) => caught);
  check(error instanceof Error && typeof error.code === "string" && /createTable\(db\)/.test(error.message), `a missing table's error names createTable (got ${error?.code}: ${error?.message})`);

  // The control: the same traffic without the transaction over-admits.
  const bare = new RateLimiter(bareStore(db), LIMITS, { now: () => NOW });
  const raced = await Promise.all(Array.from({ length: 6 }, () => bare.limit("post", { key: "linus" })));
  const overAdmitted = raced.filter((result) => result.ok).length;
  check(overAdmitted > 3, `the bare store admitted ${overAdmitted} of 6: the control cannot see a failure`);
  db.close();
  return { admitted: 3, controlAdmitted: overAdmitted };
}

try {
  const results = {};
  for (const [name, open] of await drivers()) results[name] = await scenario(open);
  console.log(JSON.stringify({ runtime, drivers: results }));
} catch (error) {
  console.error(`${runtime}: ${error?.stack ?? error}`);
  (globalThis.Deno?.exit ?? process.exit)(1);
}
