/**
 * The rate-limit header fields of `ratebound/http`, written from the figures
 * the core computes (`rateLimitFigures`): this module only formats numbers
 * into header strings, it computes no tokens and no times.
 *
 * - `"draft-11"`: draft-ietf-httpapi-ratelimit-headers-11, the fields of draft 10 with `t` the
 *   effective window (the core's `effectiveWindow`: no more than `r` can be spent within it), the
 *   partition key `pk` on both items when the limit is keyed, and `qu` when the quota is not in
 *   requests (`"api";q=10;w=60;pk=:…:` and `"api";r=9;t=6;pk=:…:`).
 * - `"draft-10"`: draft-ietf-httpapi-ratelimit-headers-10, `RateLimit-Policy`
 *   and `RateLimit` as Structured Field lists of named policies
 *   (`"api";q=10;w=60` and `"api";r=9;t=6`), one list item per limit.
 * - `"draft-8"`: the same fields as express-rate-limit writes them for draft 8
 *   (`"api"; q=10; w=60; pk=:…:`), with its partition key.
 * - `"draft-7"`: `RateLimit-Policy: 10;w=60` and `RateLimit: limit=10, remaining=9, reset=6`.
 * - `"draft-6"`: `RateLimit-Policy`, `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
 * @module
 */
import type { RateLimitFigures } from "ratebound";

/** Which header fields to write: the IETF draft they follow, or none. */
export type HeaderDraft = "draft-11" | "draft-10" | "draft-8" | "draft-7" | "draft-6" | "none";

/** draft-11's quota units (`qu`): what a limit's tokens count. `"requests"`, the default, is not written. */
export type QuotaUnit = "requests" | "content-bytes" | "concurrent-requests";

/** The quota units draft-11 defines. */
export const QUOTA_UNITS: readonly QuotaUnit[] = ["requests", "content-bytes", "concurrent-requests"];

/** The header drafts `ratebound/http` writes, in the order docs/http.md lists them. */
export const HEADER_DRAFTS: readonly HeaderDraft[] = ["draft-11", "draft-10", "draft-8", "draft-7", "draft-6", "none"];

/** One limit's figures, under the name its policy is reported as. */
export interface NamedFigures {
  /** The limit's name: the policy's name in `"draft-11"`, `"draft-10"` and `"draft-8"`. */
  name: string;
  /** The key it was decided for (`undefined`: one limit for everyone); `"draft-11"` and `"draft-8"` derive their partition key from it. */
  key?: string | undefined;
  /** What the core reported for it at the decision's `now`. */
  figures: RateLimitFigures;
}

/** Header fields as name and value pairs, in the order they are written. */
export type HeaderPairs = Array<[name: string, value: string]>;

/**
 * Whether `name` can be a Structured Field String (RFC 9651 §3.3.3): printable
 * ASCII only. Policy names are limit names, so a limit guarded with policy
 * headers must have one.
 *
 * @param name A limit's name.
 * @returns `true` when it can be written as `"name"`.
 * @example
 * isPolicyName("api"); // true
 * isPolicyName("émoji"); // false
 */
export function isPolicyName(name: string): boolean {
  return /^[\x20-\x7e]*$/.test(name);
}

/** `"name"` as a Structured Field String: `\` and `"` escaped. */
function sfString(name: string): string {
  return `"${name.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
}

/**
 * The largest Integer a Structured Field can carry (RFC 9651 §3.3.1: at most
 * 15 digits). A conforming parser rejects a whole field with a longer one.
 */
export const MAX_HEADER_INTEGER = 999_999_999_999_999;

/**
 * A figure as a header integer. The core gives whole numbers for `remaining`,
 * `reset`, `window` and `Retry-After`; `limit` is the configured capacity,
 * which a config may make fractional: the fields need an Integer, so its
 * whole part is written (what a client could ever spend at once). A figure
 * past 15 digits is written as {@link MAX_HEADER_INTEGER}: a limit of 1e15
 * tokens reads `q=999999999999999`, one token short, never a field a parser
 * refuses; a wait that long is as good as forever either way.
 */
export function headerInteger(figure: number): string {
  return String(Math.min(Math.floor(figure), MAX_HEADER_INTEGER));
}

/**
 * The limit a single-limit draft (6 or 7) reports when several limits guard a
 * request: the one with the fewest whole tokens left, and of those the one
 * that resets last. A choice among the core's figures, not a computation.
 */
function tightest(limits: readonly NamedFigures[]): NamedFigures {
  let chosen = limits[0]!;
  for (const candidate of limits.slice(1)) {
    const { remaining, reset } = candidate.figures;
    if (remaining < chosen.figures.remaining || (remaining === chosen.figures.remaining && reset > chosen.figures.reset)) {
      chosen = candidate;
    }
  }
  return chosen;
}

/**
 * The partition key of drafts 8 and 11 (express-rate-limit's for draft 8):
 * SHA-256 of the key, the first 12 hex digits, as base64 of those ASCII
 * digits (a 16-byte Byte Sequence). Documented, so a client that knows its
 * key can predict it (draft-11 §6.1), and no key is disclosed.
 */
async function partitionKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  const hex = Array.from(new Uint8Array(digest).slice(0, 6), (byte) => byte.toString(16).padStart(2, "0")).join("");
  return btoa(hex);
}

/**
 * The rate-limit header fields for one request, in the chosen draft.
 *
 * @param draft Which draft to follow; `"none"` writes nothing.
 * @param limits Each guarding limit's figures (and key), in the order the limits were given.
 * @param quotaUnit What the tokens count, for draft-11's `qu` (not written for `"requests"`).
 * @param retryAfter The response's `Retry-After` in whole seconds, when it has one: draft-11's `t`
 *   is never written past it (§6), as a shorter effective window is still a true one.
 * @returns The header fields as name and value pairs.
 * @example
 * await rateLimitHeaders("draft-10", [{ name: "api", figures }]);
 * // => [["RateLimit-Policy", '"api";q=10;w=60'], ["RateLimit", '"api";r=9;t=6']]
 */
export async function rateLimitHeaders(draft: HeaderDraft, limits: readonly NamedFigures[], quotaUnit: QuotaUnit = "requests", retryAfter?: number): Promise<HeaderPairs> {
  if (draft === "none" || limits.length === 0) return [];
  if (draft === "draft-11") {
    const pks = await Promise.all(limits.map(({ key }) => (key === undefined ? "" : partitionKey(key).then((pk) => `;pk=:${pk}:`))));
    const qu = quotaUnit === "requests" ? "" : `;qu=${sfString(quotaUnit)}`;
    return [
      ["RateLimit-Policy", limits.map(({ name, figures }, index) => `${sfString(name)};q=${headerInteger(figures.limit)}${qu};w=${headerInteger(figures.window)}${pks[index]}`).join(", ")],
      ["RateLimit", limits.map(({ name, figures }, index) => `${sfString(name)};r=${headerInteger(figures.remaining)};t=${headerInteger(retryAfter === undefined ? figures.effectiveWindow : Math.min(figures.effectiveWindow, retryAfter))}${pks[index]}`).join(", ")],
    ];
  }
  if (draft === "draft-10") {
    return [
      ["RateLimit-Policy", limits.map(({ name, figures }) => `${sfString(name)};q=${headerInteger(figures.limit)};w=${headerInteger(figures.window)}`).join(", ")],
      ["RateLimit", limits.map(({ name, figures }) => `${sfString(name)};r=${headerInteger(figures.remaining)};t=${headerInteger(figures.reset)}`).join(", ")],
    ];
  }
  if (draft === "draft-8") {
    const pks = await Promise.all(limits.map(({ key }) => (key === undefined ? "" : partitionKey(key).then((pk) => `; pk=:${pk}:`))));
    return [
      ["RateLimit-Policy", limits.map(({ name, figures }, index) => `${sfString(name)}; q=${headerInteger(figures.limit)}; w=${headerInteger(figures.window)}${pks[index]}`).join(", ")],
      ["RateLimit", limits.map(({ name, figures }) => `${sfString(name)}; r=${headerInteger(figures.remaining)}; t=${headerInteger(figures.reset)}`).join(", ")],
    ];
  }
  // Drafts 6 and 7 list every policy but report one limit: the tightest.
  const policy: [string, string] = ["RateLimit-Policy", limits.map(({ figures }) => `${headerInteger(figures.limit)};w=${headerInteger(figures.window)}`).join(", ")];
  const { figures } = tightest(limits);
  if (draft === "draft-7") {
    return [policy, ["RateLimit", `limit=${headerInteger(figures.limit)}, remaining=${headerInteger(figures.remaining)}, reset=${headerInteger(figures.reset)}`]];
  }
  return [
    policy,
    ["RateLimit-Limit", headerInteger(figures.limit)],
    ["RateLimit-Remaining", headerInteger(figures.remaining)],
    ["RateLimit-Reset", headerInteger(figures.reset)],
  ];
}
