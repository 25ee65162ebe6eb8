/**
 * A concurrency limit's slots on Deno KV (`readSlots` of a `KvTransaction`): an atomic commit
 * takes at most 10 checks, and a take reads every slot of its limit (up to 64), so the commit
 * cannot check every key it read. It does not need to:
 *
 * - A call on slots (a take, a release, an extend) only writes slots, each to a state the core
 *   decided from what that slot held. Held slots can only exceed `max` if two holders end up in
 *   one slot, that is if a slot is written from a stale read of it. So the commit checks each
 *   slot it writes (still as read) and none it only looked at: two takes that write different
 *   slots both commit, and each slot keeps one holder. A slot read as held that another call
 *   frees meanwhile only makes a refusal conservative, and a refusal writes nothing.
 * - A call that may write more slots than the checks left (a take of 11 or more, the release
 *   or extend of such a lease) checks one key instead: the limit key's guard, read before its
 *   slots. Every call that writes a slot also writes the guard, so a slot written since the
 *   guard was read changes its versionstamp and fails the check. A guard found absent is
 *   created first (its own commit), so the check is always of a versionstamp: one that was read
 *   can never come back, whereas "absent" could, once a guard written meanwhile expired.
 *
 * The guard is `[...prefix, name, key, "slots"]` (a string where a state's key has its shard
 * number, so no state shares it), a one-byte value kept an hour after its last write.
 * @module
 */
import type { StateRef } from "ratebound";
import type { OptimisticTransaction } from "./shared/optimistic.js";
import type { KvKey, KvLike } from "./deno-kv.js";

/** Deno KV's largest number of checks in one atomic commit. */
export const MAX_CHECKS = 10;
/** How long a guard is kept after its last write, in ms (any time keeps the calls exact: see above). */
const GUARD_MS = 3_600_000;
const GUARD_VALUE = new Uint8Array([1]);

/** The guard of the limit key whose slot `slotKey` is. */
export function guardOf(slotKey: KvKey): KvKey {
  return [...slotKey.slice(0, -1), "slots"];
}

/** Thrown when a guard just created is gone by the time it is read: the attempt is retried as a lost race (it never reaches a caller). */
export const GUARD_GONE: unknown = Object.freeze({ reason: "a concurrency limit's guard vanished between its creation and its read" });

/**
 * Reads a concurrency limit's slots for a call that writes at most `writes` of them: unchecked
 * (the commit checks those written), after the guard (checked) when `writes` would not fit in
 * the checks left.
 *
 * @param tx The attempt.
 * @param kv Its database, to create an absent guard.
 * @param refs The slots to read.
 * @param writes How many of them the call may write.
 * @returns Their stored values, in order.
 */
export async function readSlots(tx: OptimisticTransaction<KvKey, string | null>, kv: KvLike, refs: StateRef[], writes: number): Promise<unknown[]> {
  if (refs.length === 0) return [];
  const guard = guardOf(tx.stateKey(refs[0]!));
  const covered = tx.changes().reads.length + writes > MAX_CHECKS;
  if (covered) {
    const seen = await kv.get(guard, { consistency: "strong" });
    if (seen.versionstamp === null) await kv.atomic().check({ key: guard, versionstamp: null }).set(guard, GUARD_VALUE, { expireIn: GUARD_MS }).commit();
    // Read through the attempt: checked at commit. (Created and gone again before this read is an hour's wait: retried.)
    if ((await tx.get(guard)) === null) throw GUARD_GONE;
  }
  return tx.readUnchecked(refs, covered);
}

/**
 * The guard's write, for every call that writes a slot.
 *
 * @param tx The attempt.
 * @param slot A slot the call writes.
 */
export function touchGuard(tx: OptimisticTransaction<KvKey, string | null>, slot: StateRef): void {
  tx.set(guardOf(tx.stateKey(slot)), GUARD_VALUE, { expireInMs: GUARD_MS });
}
