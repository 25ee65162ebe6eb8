/**
 * What a `RateLimiter` with an `onDecision` hook adds to a call: a probe its path fills, and the
 * report once the call settles. The events themselves are built by `decision-hook.ts`, loaded on
 * a hooked call's first answer and kept: an app without a hook never downloads it.
 * @module
 */
import type { DecisionHook, Probe } from "./decision-hook.js";

let hooks: typeof import("./decision-hook.js") | undefined;
/** The clock of an event's `storeMs`. */
export const clock = (): number => performance.now();
/** What a hooked call's path records for its event. */
export const probe = (): Probe => ({ start: undefined, end: undefined, result: undefined, fromCache: false, batchSize: 1, calls: [], policy: undefined });

/** Reports a settled call to `hook`: at once when the module is loaded, else once it is (a failed load reports nothing). */
function tell(hook: DecisionHook, write: boolean, recorded: Probe, error: unknown, failed: boolean): Promise<void> | undefined {
  if (hooks !== undefined) return void hooks.report(hook, write, recorded, error, failed);
  return import("./decision-hook.js").then(
    (module) => {
      hooks = module;
      module.report(hook, write, recorded, error, failed);
    },
    () => undefined,
  );
}

/** `answer`, reported to `hook` once it settles and before the caller sees it; the report never changes the answer. */
export function observe<T>(hook: DecisionHook, write: boolean, recorded: Probe, answer: Promise<T>): Promise<T> {
  return answer.then(
    (value) => {
      const told = tell(hook, write, recorded, undefined, false);
      return told === undefined ? value : told.then(() => value);
    },
    (error: unknown) => {
      if (recorded.start !== undefined) recorded.end ??= clock();
      const told = tell(hook, write, recorded, error, true);
      if (told === undefined) throw error;
      return told.then(() => Promise.reject(error));
    },
  );
}
