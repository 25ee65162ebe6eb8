/**
 * ratebound/postgres's connections: a transaction's framing (its own, or a savepoint in the
 * caller's), and listening to a `pg` client's `'error'` events while a call uses it.
 * @module
 */
import type { PostgresQueryable } from "./postgres-table.js";
import { LockBusy } from "./postgres-attempt.js";
import { SqlStoreError, codedError, hasMethod } from "./shared/sql.js";

/** How a connection's transaction starts, commits and rolls back. */
export type Framing = { begin: string; commit: string; rollback: string[] };
export const OWN: Framing = { begin: "BEGIN", commit: "COMMIT", rollback: ["ROLLBACK"] };
export const NESTED: Framing = {
  begin: "SAVEPOINT ratebound_call",
  commit: "RELEASE SAVEPOINT ratebound_call",
  rollback: ["ROLLBACK TO SAVEPOINT ratebound_call", "RELEASE SAVEPOINT ratebound_call"],
};

/** An event emitter's methods, as a `pg` Client has them. */
type Emitter = { on(event: string, listener: (error: unknown) => void): unknown; removeListener(event: string, listener: (error: unknown) => void): unknown };

/**
 * Listens to `connection`'s `'error'` events (when it emits them, as a `pg` Client does) until
 * the returned function is called; `heard` is told of each. Without a listener, the `'error'`
 * a lost connection emits is an unhandled event that ends the process.
 */
export function listen(connection: unknown, heard: (error: unknown) => void = () => {}): () => void {
  if (!hasMethod(connection, "on") || !hasMethod(connection, "removeListener")) return () => {};
  const emitter = connection as Emitter;
  emitter.on("error", heard);
  return () => void emitter.removeListener("error", heard);
}

/** SQLSTATEs and socket codes that say the connection itself is gone. */
const CONNECTION_LOST = /^(08...|57P0[123]|ECONNRESET|EPIPE|ETIMEDOUT|ECONNREFUSED)$/;

/** Whether `error` (the driver's or the store's) says the connection is gone. */
function connectionLost(error: unknown): boolean {
  for (let cause = error, depth = 0; typeof cause === "object" && cause !== null && depth < 4; cause = (cause as { cause?: unknown }).cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && CONNECTION_LOST.test(code)) return true;
    if (/Connection terminated|not queryable/.test(String((cause as { message?: unknown }).message))) return true;
  }
  return false;
}

/**
 * Runs `work` on the caller's `connection` (a `pg` Client the app checked out) while listening to
 * its `'error'` events, so that losing the connection in the middle of a call rejects the call
 * instead of ending the process. When the call failed because the connection is gone (or an
 * `'error'` was heard), the listener stays until the connection's `'end'`: a dead client emits
 * its `'error'` after the query it failed, and it is the same failure the call reported.
 */
export async function whileListening<T>(connection: unknown, work: () => Promise<T>): Promise<T> {
  let heard = false;
  const unlisten = listen(connection, () => (heard = true));
  try {
    const result = await work();
    unlisten();
    return result;
  } catch (error) {
    if (heard || connectionLost(error)) (connection as Partial<Emitter>).on?.("end", unlisten);
    else unlisten();
    throw error;
  }
}

/** Starts an attempt on a connection, commits it, or rolls it back. */
export type Frame<T> = (attempt: (connection: PostgresQueryable) => Promise<T>) => Promise<T>;

/** A driver failure of `work` becomes an `Error` with a `code`; the store's own errors pass. */
export async function wrapped<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof LockBusy || error instanceof SqlStoreError) throw error;
    throw codedError("postgres", error);
  }
}

/** Runs one statement of a transaction's framing. */
export async function run(connection: PostgresQueryable, statement: string): Promise<void> {
  try {
    await connection.query(statement, []);
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/**
 * `begin` (unless empty), the attempt, `commit`; on failure the rollback, then the failure.
 * A rollback that fails marks the connection broken (the database rolls back on its own).
 */
export async function framed<T>(connection: PostgresQueryable, framing: Framing, attempt: () => Promise<T>, health: { broken: boolean }): Promise<T> {
  if (framing.begin !== "") await run(connection, framing.begin);
  let result: T;
  try {
    result = await attempt();
  } catch (error) {
    try {
      for (const statement of framing.rollback) await run(connection, statement);
    } catch {
      health.broken = true;
    }
    throw error;
  }
  await run(connection, framing.commit);
  return result;
}

