// Custom stores for the outage tests (not a test file itself): a store over a Map that can be
// switched down (every read and write throws) or hung (every read and write never answers), and
// a transactional one whose body's writes commit only when the body resolves, with a gate that
// holds its reads or writes until the test opens it.

/** The error a store throws while it is down: what a refused connection looks like. */
export const downError = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });

const idOf = (ref) => JSON.stringify([ref.name, ref.key ?? null, ref.shard]);

/**
 * A store over a Map. `mode`: `"up"`, `"down"` (read and write throw {@link downError}), or
 * `"hang"` (read and write return a Promise that never settles). Counts what reached it.
 */
export function switchableStore() {
  const states = new Map();
  const store = {
    mode: "up",
    reads: 0,
    writes: 0,
    states,
    get(name, key) {
      return states.get(idOf({ name, key, shard: 0 })) ?? null;
    },
    set(name, key, state) {
      states.set(idOf({ name, key, shard: 0 }), state);
    },
    read(ref) {
      store.reads++;
      if (store.mode === "down") throw downError();
      if (store.mode === "hang") return new Promise(() => {});
      return Promise.resolve(states.get(idOf(ref)) ?? null);
    },
    write(ref, state) {
      store.writes++;
      if (store.mode === "down") return Promise.reject(downError());
      if (store.mode === "hang") return new Promise(() => {});
      if (state === null) states.delete(idOf(ref));
      else states.set(idOf(ref), { ...state });
      return Promise.resolve();
    },
  };
  return store;
}

/** A Promise and its resolver, for holding a store call until the test lets it go. */
export function gate() {
  let open;
  const promise = new Promise((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * A store with `transaction(body)`: the body reads committed states and buffers its writes, which
 * commit together when the body resolves and are dropped when it rejects. `holdReads` /
 * `holdWrites` (a {@link gate}'s promise) delay the body's reads / writes. `commitFails` makes the
 * commit itself throw. `bodies` records how each body ended: `{ ok: true }` or `{ ok: false, error }`.
 */
export function transactionalStore() {
  const committed = new Map();
  const store = {
    committed,
    holdReads: undefined,
    holdWrites: undefined,
    commitFails: false,
    bodies: [],
    writesSeen: 0,
    get(name, key) {
      return committed.get(idOf({ name, key, shard: 0 })) ?? null;
    },
    async transaction(body) {
      const buffered = new Map();
      const tx = {
        read: async (ref) => {
          if (store.holdReads !== undefined) await store.holdReads;
          return buffered.has(idOf(ref)) ? buffered.get(idOf(ref)) : (committed.get(idOf(ref)) ?? null);
        },
        write: async (ref, state) => {
          store.writesSeen++;
          if (store.holdWrites !== undefined) await store.holdWrites;
          buffered.set(idOf(ref), state === null ? null : { ...state });
        },
      };
      let result;
      try {
        result = await body(tx);
      } catch (error) {
        store.bodies.push({ ok: false, error });
        throw error;
      }
      store.bodies.push({ ok: true });
      if (store.commitFails) throw Object.assign(new Error("the commit failed: connection reset"), { code: "ECONNRESET" });
      for (const [id, state] of buffered) {
        if (state === null) committed.delete(id);
        else committed.set(id, state);
      }
      return result;
    },
    read: (ref) => store.transaction((tx) => tx.read(ref)),
    write: (ref, state) => store.transaction((tx) => tx.write(ref, state)),
  };
  return store;
}

/** Resolves once `condition()` holds (polled every 5 ms), or rejects after `ms`. */
export async function eventually(condition, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
