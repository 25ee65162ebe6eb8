// Issue 24, the items decided in the core, on the built package: a grant
// whose charge rolled back refunds nothing; the library's records live where
// no caller's key reaches them; bad input (an unbounded wait) fails before the
// store is touched, whatever the policy; a settle no clock could repay writes
// nothing. Each test says which item it reproduces; each has a control.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, SECOND, MINUTE } from "../../pkg/dist/node.js";
import { CheckedStore, Tally, KINDS } from "./helpers.mjs";

const tally = new Tally("hostile callers, round 2");
after(() => tally.flush());

const T = 1_700_000_000_000;
const config = (kind) => ({ kind, rate: 10, period: MINUTE, ...(kind === "fixed window" ? { start: 0 } : {}) });

/**
 * A store whose `transaction` commits the body's writes only when the body
 * resolves and `commit` says yes: an app's transaction that may roll back.
 */
class RollbackStore extends CheckedStore {
  constructor() {
    super();
    this.rollBackNext = false;
  }
  async transaction(body) {
    const pending = new Map();
    const tx = {
      read: (ref) => (pending.has(CheckedStore.slot(ref)) ? pending.get(CheckedStore.slot(ref)).state : this.read(ref)),
      write: (ref, state) => void pending.set(CheckedStore.slot(ref), { ref, state }),
    };
    const value = await body(tx);
    if (this.rollBackNext) {
      this.rollBackNext = false;
      return value; // the app's transaction rolled back after the limiter's call: nothing commits
    }
    for (const { ref, state } of pending.values()) this.write(ref, state);
    return value;
  }
}

describe("item 1: a grant whose charge rolled back refunds nothing", () => {
  for (const kind of KINDS) {
    it(`${kind}: cancel and settle(data, 0) of a rolled-back charge give nothing back, beside a committed grant in its refund window`, async () => {
      const store = new RollbackStore();
      const limiter = new RateLimiter(store, { llm: config(kind) }, { now: () => T });
      // A committed grant whose refund window is open: its ledger exists (what the attack needed).
      const committed = await limiter.limit("llm", { key: "team", count: 4, grant: true });
      assert.equal(committed.ok, true);
      store.rollBackNext = true;
      const rolledBack = await limiter.limit("llm", { key: "team", count: 5, grant: true });
      assert.equal(rolledBack.ok, true, "the charge decided, then its transaction rolled back");
      const before = await limiter.getValue("llm", { key: "team" });
      assert.equal(before.value, 6, "only the committed grant's 4 tokens are spent");
      const cancelled = await rolledBack.grant.cancel();
      assert.equal(cancelled.refunded, 0, "cancelling a charge that never committed refunds nothing");
      const settled = await limiter.settle(rolledBack.grant.data, 0).catch((error) => error);
      assert.ok(settled.refunded === 0 || settled.code === "GRANT_SETTLED", `a second settle refunds nothing (${JSON.stringify(settled)})`);
      assert.equal((await limiter.getValue("llm", { key: "team" })).value, 6, "the state never gained the rolled-back count");
      // Control: the committed grant does refund.
      assert.equal((await committed.grant.cancel()).refunded, 4);
      tally.add("grant records", 3);
    });
  }
});

describe("item 2: the library's records are out of every caller's reach", () => {
  for (const kind of KINDS) {
    it(`${kind}: a caller's key that spells the old ledger (ratebound:refunded:alice) neither spends nor freezes alice's refunds`, async () => {
      const limiter = new RateLimiter(new MemoryStore(), { llm: config(kind) }, { now: () => T });
      const alice = await limiter.limit("llm", { key: "alice", count: 6, grant: true });
      // Traffic on keys that were once the ledger's and the settled record's.
      for (const key of ["ratebound:refunded:alice", `ratebound:settled:${alice.grant.data.id}:alice`]) {
        for (let call = 0; call < 10; call++) await limiter.limit("llm", { key });
        const refused = await limiter.limit("llm", { key });
        assert.equal(refused.ok, false, `${key} is a key like any other: its own bucket runs dry`);
      }
      assert.equal((await alice.grant.settle(2)).refunded, 4, "alice's refund is whole");
      tally.add("grant records", 2);
    });

    it(`${kind}: a keyless grant and a "" grant keep their own ledgers`, async () => {
      const limiter = new RateLimiter(new MemoryStore(), { llm: config(kind) }, { now: () => T });
      const keyless = await limiter.limit("llm", { count: 5, grant: true });
      const empty = await limiter.limit("llm", { key: "", count: 5, grant: true });
      assert.equal((await keyless.grant.cancel()).refunded, 5);
      assert.equal((await empty.grant.cancel()).refunded, 5, "the keyless grant's refund did not eat the \"\" grant's");
      tally.add("grant records", 2);
    });
  }
});

describe("item 6: an unbounded wait is bad input, decided before any store is touched", () => {
  const failing = { read: () => Promise.reject(new Error("store down")), write: () => Promise.reject(new Error("store down")) };
  for (const policy of ["closed", "open", { fallback: "memory" }]) {
    it(`onStoreError ${JSON.stringify(policy)}: a reservation no clock could repay is WAIT_UNBOUNDED while the store is down`, async () => {
      const limiter = new RateLimiter(failing, { bucket: { kind: "token bucket", rate: 1, period: SECOND } }, { now: () => T, onStoreError: policy });
      await assert.rejects(limiter.limit("bucket", { count: 1e308, reserve: true }), { code: "WAIT_UNBOUNDED" });
      // Control: a sane call under the same policy reaches the store (and fails or degrades as the policy says).
      const sane = await limiter.limit("bucket").then((result) => result, (error) => error);
      assert.ok(policy === "closed" ? sane instanceof Error : sane.ok === true, JSON.stringify(sane));
      tally.add("hostile options", 2);
    });
  }
});

describe("item 8: a settle no clock could repay is WAIT_UNBOUNDED and writes nothing", () => {
  for (const kind of KINDS) {
    it(`${kind}: grant.settle(1e308) without maxReserved leaves the key as it was`, async () => {
      const store = new MemoryStore();
      const limiter = new RateLimiter(store, { llm: config(kind) }, { now: () => T });
      const { grant } = await limiter.limit("llm", { key: "k", count: 2, grant: true });
      const before = await limiter.getValue("llm", { key: "k" });
      await assert.rejects(grant.settle(1e308), { code: "WAIT_UNBOUNDED" });
      assert.deepEqual(await limiter.getValue("llm", { key: "k" }), before, "nothing was written");
      assert.equal((await limiter.limit("llm", { key: "k" })).ok, true, "the key still decides");
      // Control: a settle that can be repaid takes its extra.
      assert.equal((await grant.settle(5)).charged, 3);
      tally.add("hostile options", 2);
    });
  }
});
