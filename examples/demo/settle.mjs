// The demo's LLM scenario: an assistant takes an estimate of tokens with a
// grant, calls the model, and settles to what the reply really used: less
// (refunded), more (the extra charged, into debt no deeper than maxReserved),
// or nothing at all (cancelled when the user left). One grant is settled late
// by a "queue consumer" from its serialised data, after the bucket would have
// refilled: the refund rule gives nothing back then.

import { SECOND, MINUTE } from "../../pkg/dist/node.js";
import { at, int, secs } from "./measure.mjs";

/** Per team: 12,000 tokens a minute, 3,000 of debt for replies that ran long. */
export const ASSISTANT = { kind: "token bucket", rate: 12_000, period: MINUTE, maxReserved: 3_000 };

/**
 * Schedules the assistant's calls on `clock`. `limiter` knows the limit as
 * `assistant`; `rng` draws the replies; `line(t, who, limit, text)` writes
 * the timeline. Returns the log the summary measures.
 */
export function assistantScenario({ clock, limiter, rng, line, duration }) {
  const log = [];
  const ESTIMATE = 2_000; // max_tokens of the request
  const say = (t, text) => line(t, "assistant", "assistant", text);
  let shown = { under: 0, over: 0, cancel: 0 };
  async function ask(kind) {
    const t = clock.t;
    const { ok, retryAfter, grant } = await limiter.limit("assistant", { key: "team-7", count: ESTIMATE, reserve: true, grant: true });
    const entry = { t, ok, estimate: ESTIMATE, kept: ok ? ESTIMATE : 0, runAt: t + Math.ceil(retryAfter ?? 0), refunded: 0, charged: 0 };
    log.push(entry);
    if (!ok) return;
    const took = 1_500 + Math.floor(rng() * 6_000); // the model's latency
    clock.at(entry.runAt + took, async () => {
      const actual = kind === "cancel" ? 0 : kind === "over" ? ESTIMATE + 200 + Math.round(rng() * 1_400) : Math.round(200 + rng() * 1_500);
      if (kind === "late") {
        // Settled from its data by a queue consumer 70 s later: the bucket would have refilled by then.
        const data = JSON.parse(JSON.stringify(grant.data));
        clock.at(clock.t + 70 * SECOND, async () => {
          const settled = await limiter.settle(data, actual);
          Object.assign(entry, { kept: ESTIMATE - settled.refunded + settled.charged, refunded: settled.refunded });
          say(clock.t, `queue settles a grant from t=${at(t)} (used ${int(actual)}) 70 s late: refunded ${int(settled.refunded)}; the bucket would have refilled since`);
        });
        return;
      }
      const settled = await grant.settle(actual);
      Object.assign(entry, { kept: ESTIMATE - settled.refunded + settled.charged, refunded: settled.refunded, charged: settled.charged, unpaid: settled.unpaid });
      const first = shown[kind]++ < 2;
      if (!first) return;
      if (kind === "cancel") say(clock.t, `user left before the reply: cancel() → refunded ${int(settled.refunded)}`);
      else if (kind === "over") say(clock.t, `reply used ${int(actual)} of ${int(ESTIMATE)}: settle() charged ${int(settled.charged)} more` + (settled.unpaid > 0 ? `, ${int(settled.unpaid)} unpaid (maxReserved)` : "") + (settled.retryAfter ? `, debt paid in ${secs(settled.retryAfter)}` : ""));
      else say(clock.t, `reply used ${int(actual)} of ${int(ESTIMATE)}: settle() refunded ${int(settled.refunded)}`);
    });
  }
  for (let t = 1 * SECOND; t < duration - 20 * SECOND; t += Math.round((1.5 + rng() * 3) * SECOND)) {
    const roll = rng();
    const kind = t > 30 * SECOND && t < 32.5 * SECOND ? "late" : roll < 0.12 ? "cancel" : roll < 0.3 ? "over" : "under";
    clock.at(t, () => ask(kind));
  }
  return log;
}

/** The summary's figures: grants, refunds, and the most the limiter kept in any minute. */
export function assistantFigures(log) {
  const granted = log.filter((e) => e.ok);
  const refunded = granted.reduce((sum, e) => sum + e.refunded, 0);
  const charged = granted.reduce((sum, e) => sum + (e.charged ?? 0), 0);
  const neverAbove = granted.every((e) => e.refunded <= e.estimate);
  return { calls: log.length, ok: granted.length, refunded, charged, neverAbove, admissions: granted.map((e) => ({ t: e.runAt, amount: e.kept })) };
}
