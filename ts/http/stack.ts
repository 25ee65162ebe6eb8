/**
 * Guards stacked on one route (one guard per limit: Express middleware in a
 * chain, Hono middleware, several `httpGuard`s called on one `Request`): each
 * request's limits decided so far, so that every guard writes the header
 * fields of all of them, not only its own. Under `"draft-10"` and `"draft-8"`
 * that appends one list member per limit to `RateLimit-Policy` and
 * `RateLimit`; drafts 6 and 7 report one limit, the tightest of them all
 * (`headers.ts`). A limit decided twice for one request (two guards naming
 * it) keeps one member: the later decision's figures, which already count
 * the earlier one's tokens.
 * @module
 */
import type { NamedFigures } from "./headers.js";

/** Per request (Express's `req`, Hono's context, a fetch `Request`): its limits so far, one per name, in the order first decided. */
const decidedSoFar = new WeakMap<object, NamedFigures[]>();

/**
 * Adds a guard's limits to what the request's earlier guards decided, and
 * answers them all: one entry per limit name.
 *
 * @param request The object the guards share for one request; a primitive stacks nothing.
 * @param own The figures of the limits this guard decided (none for a degraded admission without figures).
 * @returns Every limit decided for the request so far, for its header fields.
 * @example
 * stackedLimits(req, [{ name: "login", figures }]); // after a guard of "global": [global, login]
 */
export function stackedLimits(request: unknown, own: readonly NamedFigures[]): NamedFigures[] {
  if ((typeof request !== "object" && typeof request !== "function") || request === null) return [...own];
  const all = [...(decidedSoFar.get(request) ?? [])];
  for (const limit of own) {
    const at = all.findIndex(({ name }) => name === limit.name);
    if (at === -1) all.push(limit);
    else all[at] = limit;
  }
  decidedSoFar.set(request, all);
  return all;
}
