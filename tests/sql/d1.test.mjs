// ratebound/sqlite on Cloudflare D1, in real workerd through Miniflare: D1 has no interactive
// transactions, so a call commits one batch that re-checks every state it read. The app's statement
// commits with the limit or not at all, limitAll is all or nothing, colliding refs stay apart, a
// corrupt row fails closed, 40 calls at once admit exactly the bound (while the same calls without
// the re-check over-admit), and a call that loses every race fails closed with D1_CONFLICT.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { COLLIDING_REFS, stateFor } from "../hosts/collisions.mjs";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";
import { admitted, COALESCE_NAMES } from "../hosts/coalesce-traffic.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const NOW = 1_700_000_000_000;

describe("Cloudflare D1 in workerd (Miniflare)", () => {
  let work;
  let miniflare;
  /** A route of the Worker: its result, or the error it answered with as data. */
  const route = async (path, body = {}) => {
    const { status, body: answer } = await post(miniflare, `/${path}`, body);
    assert.equal(status, 200);
    return answer;
  };
  const sql = async (text, params = []) => (await route("sql", { sql: text, params })).result;
  const rowOf = async (name, key) => (await sql("SELECT value, ts FROM ratebound WHERE name = ? AND key = ?", [name, key]))[0] ?? null;
  const posts = async (author) => (await sql("SELECT body FROM posts WHERE author = ? ORDER BY id", [author])).map((row) => row.body);

  before(async () => {
    work = scratch("d1");
    const outdir = join(work.dir, "bundle");
    const inputs = await bundleWorker(join(here, "d1", "worker.mjs"), outdir);
    assert.ok(inputs.some((input) => input.endsWith("pkg/dist/sqlite.js")), "the bundle took in ratebound/sqlite");
    miniflare = await startMiniflare(workerOptions(outdir, { d1Databases: { DB: "ratebound-test" } }));
    assert.deepEqual(await route("setup"), { result: null });
  });
  after(async () => {
    await miniflare?.dispose();
    work?.remove();
  });

  test("createTable is idempotent and makes the table with its primary key", async () => {
    const columns = await sql("SELECT name, type, pk FROM pragma_table_info('ratebound')");
    assert.deepEqual(
      columns.map((column) => `${column.name} ${column.type} ${column.pk}`),
      ["name TEXT 1", "key TEXT 2", "shard INTEGER 3", "value REAL 0", "ts REAL 0", "full_at REAL 0"],
    );
  });

  test("a transaction whose body throws consumes nothing and its statement is not run", async () => {
    const { error } = await route("post", { key: "rolled", body: "never", count: 2, fail: true });
    assert.equal(error.message, "the app failed after the limit granted");
    assert.equal(await rowOf("perUser", "rolled"), null);
    assert.deepEqual(await posts("rolled"), []);
  });

  test("the app's own insert and the limit commit in one batch, and a refused call inserts nothing", async () => {
    const sent = [];
    for (const id of [1, 2, 3, 4]) sent.push((await route("post", { key: "ada", body: `post ${id}` })).result);
    assert.deepEqual(sent, [true, true, true, false]);
    assert.deepEqual(await posts("ada"), ["post 1", "post 2", "post 3"]);
    assert.deepEqual(await rowOf("perUser", "ada"), { value: 0, ts: NOW });
    const [{ full_at: fullAt }] = await sql("SELECT full_at FROM ratebound WHERE name = 'perUser' AND key = 'ada'");
    assert.equal(fullAt, NOW + 86_400_000, "the write hint's fullAt is stored");
  });

  test("limitAll takes two limits together or not at all", async () => {
    const batch = (user) => route("call", { op: "limitAll", requests: [{ name: "perUser", key: user }, { name: "global", key: "all" }] });
    assert.deepEqual((await batch("u1")).result, { ok: true });
    assert.deepEqual((await batch("u2")).result, { ok: true });
    assert.equal((await batch("u3")).result.ok, false);
    assert.equal(await rowOf("perUser", "u3"), null);
  });

  test("a batch that breaks a constraint writes nothing and fails with a code", async () => {
    await sql("CREATE TRIGGER no_bad_key BEFORE INSERT ON ratebound WHEN NEW.key = 'forbidden' BEGIN SELECT RAISE(ABORT, 'forbidden key'); END");
    try {
      const { error } = await route("call", { op: "limitAll", requests: [{ name: "perUser", key: "fine" }, { name: "perUser", key: "forbidden" }] });
      assert.equal(typeof error.code, "string", JSON.stringify(error));
      assert.match(error.message, /forbidden key/);
      assert.equal(await rowOf("perUser", "fine"), null);
    } finally {
      await sql("DROP TRIGGER no_bad_key");
    }
  });

  test("every colliding (name, key, shard) keeps its own state", async () => {
    const { result } = await route("collide", { refs: COLLIDING_REFS, states: COLLIDING_REFS.map((_, index) => stateFor(index)) });
    assert.deepEqual(result, COLLIDING_REFS.map((_, index) => stateFor(index)));
  });

  test("a corrupt row fails the call with CORRUPT_STATE naming the ref, and stays as it was", async () => {
    await sql("INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('daily', 'corrupt', 0, 'garbage', ?)", [NOW]);
    const { error } = await route("call", { op: "limitAll", requests: [{ name: "perUser", key: "corrupt" }, { name: "daily", key: "corrupt" }] });
    assert.equal(error.code, "CORRUPT_STATE");
    assert.match(error.message, /daily/);
    assert.deepEqual(await rowOf("daily", "corrupt"), { value: "garbage", ts: NOW });
    assert.equal(await rowOf("perUser", "corrupt"), null);
  });

  test("40 calls at once inside the Worker admit exactly the bound of 10 and leave 0", async () => {
    const { result } = await route("burst", { n: 40, key: "burst" });
    assert.deepEqual(result, { admitted: 10, errors: [] });
    assert.equal((await rowOf("daily", "burst")).value, 0);
  });

  test("the same 40 calls without the batch's re-check over-admit (so the test above can fail)", async () => {
    const { result } = await route("burst", { n: 40, key: "bare", bare: true });
    assert.ok(result.admitted > 10, `admitted ${result.admitted} of 10`);
  });

  test("a sliding window: 40 calls at once admit exactly its rate of 10, its window holding 10, and without the re-check over-admit", async () => {
    const { result } = await route("burst", { n: 40, key: "slide", name: "sliding" });
    assert.deepEqual(result, { admitted: 10, errors: [] });
    assert.equal((await rowOf("sliding", "slide")).value, 10);
    const bare = await route("burst", { n: 40, key: "slide-bare", name: "sliding", bare: true });
    assert.ok(bare.result.admitted > 10, `admitted ${bare.result.admitted} of 10`);
  });

  test("coalesced: 60 calls at once on one key through one d1Store admit exactly the bound of 10 in 2 batches, no conflict, as one at a time", async () => {
    const { result } = await route("coalesce", { n: 60, key: "hot-plain" });
    assert.equal(admitted(result.answers), 10);
    assert.deepEqual(result.answers, result.serial);
    assert.deepEqual([result.batches, result.conflicts], [2, 0], "the first call's batch, then one for the 59 that waited");
    assert.deepEqual(await rowOf("hot", "hot-plain"), await rowOf("hot", "hot-plain-serial"));
  });

  for (const name of COALESCE_NAMES) {
    test(`coalesced, ${name}: 40 limits and checks of 1 to 3 tokens, reserving or not, with figures or not, answer exactly as one at a time, with no conflict`, async () => {
      const { result } = await route("coalesce", { n: 40, key: `mixed-${name}`, mixed: true, name });
      assert.deepEqual(result.answers, result.serial);
      assert.ok(result.answers.some((answer) => answer.ok === false), "some were refused");
      assert.equal(result.conflicts, 0);
      assert.ok(result.batches <= 2, `${result.batches} batches`);
      assert.deepEqual(await rowOf(name, `mixed-${name}`), await rowOf(name, `mixed-${name}-serial`));
    });
  }

  test("the same 60 calls, each through a d1Store of its own (nothing coalesces them), conflict and retry (so the test above can fail)", async () => {
    const { result } = await route("coalesce", { n: 60, key: "hot-apart", coalesce: false });
    assert.ok(result.conflicts > 0, `conflicts ${result.conflicts}`);
    assert.ok(result.batches > 10, `${result.batches} batches`);
    assert.equal(admitted(result.answers), 10, "the batch's re-check still keeps the bound");
  });

  test("pruneStates deletes only states that are full", async () => {
    await sql("INSERT INTO ratebound (name, key, shard, value, ts, full_at) VALUES ('prune', 'full', 0, 1, 0, 10), ('prune', 'later', 0, 1, 0, 1e15)");
    assert.deepEqual(await route("prune", { now: 100 }), { result: 1 });
    assert.deepEqual((await sql("SELECT key FROM ratebound WHERE name = 'prune'")).map((row) => row.key), ["later"]);
  });

  test("a call that loses every race fails closed with D1_CONFLICT, and its statement is not run", async () => {
    await route("call", { op: "limit", name: "daily", options: { key: "rival" } });
    const { error } = await route("contended", { key: "rival" });
    assert.deepEqual([error.name, error.code, error.attempts], ["D1ConflictError", "D1_CONFLICT", 3]);
    assert.deepEqual(await posts("rival"), []);
    assert.equal((await rowOf("daily", "rival")).value, 9 - 3 * 0.5, "only the rival's three updates landed");
  });
  test("a dry run through d1Store is never refused: granted calls charge as enforcing does, a would-be refusal charges nothing", async () => {
    const dry = async () => (await route("call", { op: "limit", name: "perUser", options: { key: "dry-ada", dryRun: true, throws: true } })).result;
    assert.deepEqual([await dry(), await dry(), await dry()], [{ ok: true, dryRun: { ok: true } }, { ok: true, dryRun: { ok: true } }, { ok: true, dryRun: { ok: true } }]);
    // The would-be refusal is the refusal enforcing answers (a twin key, enforced).
    const enforced = async () => (await route("call", { op: "limit", name: "perUser", options: { key: "enforced-ada" } })).result;
    for (let call = 0; call < 3; call++) await enforced();
    const { retryAfter } = await enforced();
    assert.ok(retryAfter >= 28_800_000, `a third of a day at least (got ${retryAfter})`);
    assert.deepEqual(await dry(), { ok: true, dryRun: { ok: false, retryAfter } });
    // What enforcing left: the 3 of 3 spent, not in debt; enforced, the next call is refused.
    assert.equal((await route("call", { op: "getValue", name: "perUser", options: { key: "dry-ada" } })).result.value, 0);
    assert.equal((await route("call", { op: "limit", name: "perUser", options: { key: "dry-ada" } })).result.ok, false);
  });

  test("a limit stored by one Worker request is obeyed by the next request's limiter, and deleteLimit restores the code's", async () => {
    const stored = (body) => route("stored", body);
    const config = { kind: "token bucket", rate: 2, period: 86_400_000 };
    assert.deepEqual(await stored({ op: "setLimit", name: "daily", config, options: { key: "stored-ada" } }), { result: null });
    assert.deepEqual((await stored({ op: "getLimit", name: "daily", options: { key: "stored-ada" } })).result, { config: { ...config, capacity: 2, shards: 1 }, source: "key" });
    const answers = [];
    for (let call = 0; call < 3; call++) answers.push((await stored({ op: "limit", name: "daily", options: { key: "stored-ada" } })).result.ok);
    assert.deepEqual(answers, [true, true, false]);
    assert.equal((await stored({ op: "limit", name: "daily", options: { key: "stored-bob", count: 10 } })).result.ok, true);
    assert.equal((await stored({ op: "setLimit", name: "daily", config: { ...config, shards: 2 } })).error.code, "INVALID_CONFIG");
    await stored({ op: "deleteLimit", name: "daily", options: { key: "stored-ada" } });
    assert.equal((await stored({ op: "getLimit", name: "daily", options: { key: "stored-ada" } })).result.source, "code");
  });

  test("a grant and its settle, each a Worker request of its own, decide on the key's stored limit", async () => {
    const stored = (body) => route("stored", body);
    await stored({ op: "setLimit", name: "daily", config: { kind: "token bucket", rate: 10, period: 86_400_000, capacity: 50 }, options: { key: "grant-ada" } });
    // The code's bucket holds 10: a grant of 20 passes only on grant-ada's 50.
    const granted = (await stored({ op: "limit", name: "daily", options: { key: "grant-ada", count: 20, grant: true } })).result;
    assert.equal(granted.ok, true);
    // limiter.settle(data, actual), through the worker's generic call (name: the data, options: actual).
    assert.deepEqual((await stored({ op: "settle", name: granted.grant.data, options: 5 })).result, { refunded: 15, charged: 0, unpaid: 0 });
    assert.equal((await rowOf("daily", "grant-ada")).value, 45);
  });
});
