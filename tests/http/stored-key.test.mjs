// storedKey and lone surrogates (issue 28 item 5): a client can send a key with a lone surrogate
// ("\ud800" in JSON), which the core refuses as a key, so storedKey hashes it. It hashed the key's
// UTF-8 as TextEncoder writes it, every lone surrogate as U+FFFD, so "\ud800" and "\udc00" were one
// key and one client's refusals were another's. Now it hashes WTF-8 (lossless): every distinct key
// is its own state, on the memory store and on a real one (better-sqlite3).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { storedKey } from "../../pkg/dist/http.js";
import { createTable, sqliteStore } from "../../pkg/dist/sqlite.js";

const NOW = 1_700_000_000_000;
const sha256 = (bytes) => "sha256:" + createHash("sha256").update(Uint8Array.from(bytes)).digest("base64url");

/** Keys that differ only in their surrogates: pairs, lone halves, the two halves reversed, U+FFFD itself. */
const KEYS = ["\ud83d\ude00", "\ud83d", "\ude00", "\ude00\ud83d", "\ud800", "\udc00", "\udbff", "\udfff", "\ufffd", "a\ud800", "a\udc00", "\ud800\ud800", "\ud800\ufffd"];

test("storedKey hashes a lone surrogate as its three WTF-8 bytes, a pair as the code point's four", async () => {
  assert.equal(await storedKey("\ud800"), sha256([0xed, 0xa0, 0x80]));
  assert.equal(await storedKey("a\ud83d\ude00\udc00"), sha256([0x61, 0xf0, 0x9f, 0x98, 0x80, 0xed, 0xb0, 0x80]));
  assert.equal(await storedKey("\ud83d\ude00"), "\ud83d\ude00", "well-formed and short: as it is");
  const long = "\ud83d\ude00".repeat(40);
  assert.equal(await storedKey(long), "sha256:" + createHash("sha256").update(long).digest("base64url"), "well-formed and long: its UTF-8, as before");
  const stored = await Promise.all(KEYS.map(storedKey));
  assert.equal(new Set(stored).size, KEYS.length, "every key its own");
});

const STORES = {
  "the memory store": async () => ({ store: new MemoryStore(), close() {} }),
  "better-sqlite3": async () => {
    const db = new Database(":memory:");
    await createTable(db);
    return { store: sqliteStore(db), close: () => db.close() };
  },
};

for (const [host, open] of Object.entries(STORES)) {
  describe(`keys that differ only in their surrogates are separate states, on ${host}`, () => {
    for (const kind of ["token bucket", "fixed window"]) {
      test(kind, async () => {
        const { store, close } = await open();
        try {
          const limiter = new RateLimiter(store, { api: { kind, rate: 1, period: 3_600_000, start: kind === "fixed window" ? NOW : undefined } }, { now: () => NOW });
          for (const key of KEYS) {
            assert.deepEqual(await limiter.limit("api", { key: await storedKey(key) }), { ok: true }, `first call of ${JSON.stringify(key)}`);
          }
          for (const key of KEYS) assert.equal((await limiter.limit("api", { key: await storedKey(key) })).ok, false, `second call of ${JSON.stringify(key)}`);
          await assert.rejects(limiter.limit("api", { key: "\ud800" }), { code: "INVALID_REQUEST" }, "the core refuses a lone surrogate as it is");
        } finally {
          close();
        }
      });
    }
  });
}
