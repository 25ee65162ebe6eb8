/**
 * ratebound/react: {@link useRateLimit}, a React hook over a
 * {@link RateLimitPreview}. React is an optional peer dependency of
 * `ratebound`; only this module imports it.
 * @module
 */
import { useCallback, useEffect, useState } from "react";
import { RateLimitPreview, type PreviewSnapshot, type PreviewStatus } from "./preview.js";

export type { PreviewSnapshot, PreviewStatus } from "./preview.js";

/** Options of {@link useRateLimit}. */
export interface UseRateLimitOptions {
  /** Tokens one action takes; default 1. */
  count?: number;
  /** Milliseconds to add to the client clock to get the server's (`clientTime + offset = serverTime`); default 0. */
  serverTimeOffset?: number;
  /** The client clock, ms since the epoch; default `Date.now`. Read when the preview is made. */
  now?: () => number;
}

/** What {@link useRateLimit} returns. */
export interface UseRateLimit {
  /** Whether the action is allowed now, the tokens available, and when refused, `retryAt` in client time. */
  status: PreviewStatus;
  /**
   * Decides one action now. When allowed, its tokens are taken locally at
   * once, so a second click before the server answers is throttled; the
   * caller then sends the request. A refusal changes nothing.
   */
  check: () => PreviewStatus;
  /** The underlying preview, for `update` with an offset or `status` at other instants. */
  preview: RateLimitPreview;
}

/**
 * Previews a server rate limit in a component: re-renders when the action
 * becomes refused or allowed again (one timer for `retryAt`, no polling), and
 * throttles clicks the server would refuse. Pass each new `getValue` snapshot
 * from the server; the hook reconciles the local state with it. As with
 * {@link RateLimitPreview}, a sharded limit is previewed as an estimate.
 *
 * @param snapshot `{ value, ts, shard, config }` from `getValue` on the server.
 * @param options `count` (default 1), `serverTimeOffset` (default 0), `now`.
 * @returns `{ status, check, preview }`.
 * @example
 * function SendButton({ snapshot, serverTimeOffset, onSend }) {
 *   const { status, check } = useRateLimit(snapshot, { count: 1, serverTimeOffset });
 *   return (
 *     <button disabled={!status.ok} onClick={() => check().ok && onSend()}>
 *       {status.ok ? "Send" : `Wait until ${new Date(status.retryAt).toLocaleTimeString()}`}
 *     </button>
 *   );
 * }
 */
export function useRateLimit(snapshot: PreviewSnapshot, options: UseRateLimitOptions = {}): UseRateLimit {
  const { count = 1, serverTimeOffset = 0, now } = options;
  const [preview] = useState(() => new RateLimitPreview(snapshot, now ? { serverTimeOffset, now } : { serverTimeOffset }));
  const [status, setStatus] = useState(() => preview.status({ count }));

  // Reconcile when the server's snapshot or the offset changes. The snapshot is
  // compared by content, so a caller may pass a new object with the same data.
  const configKey = JSON.stringify(snapshot.config);
  useEffect(() => {
    preview.update(snapshot, { serverTimeOffset });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- compared by content
  }, [preview, snapshot.value, snapshot.ts, configKey, serverTimeOffset]);

  useEffect(() => {
    setStatus(preview.status({ count }));
    return preview.subscribe(setStatus, { count });
  }, [preview, count]);

  const check = useCallback(() => preview.consume({ count }), [preview, count]);
  return { status, check, preview };
}
