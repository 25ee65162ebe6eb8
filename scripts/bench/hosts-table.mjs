// The tables of `npm run bench:hosts` (scripts/bench-hosts.mjs): one line per workload and
// number of calls in flight, each contender's decisions/s, p50 and p99 latency and failed
// calls, the ratio, and whether the line met its goal; then why calls failed.
import { times } from "./format.mjs";

const percent = (share) => `${(share * 100).toFixed(share > 0 && share < 0.001 ? 3 : 1)} %`;
const count = (value) => Math.round(value).toLocaleString("en-US");
const latency = (value) => value.toFixed(value >= 100 ? 0 : value >= 10 ? 1 : 2);
/** A per-call share with two significant digits (0.0039 at 256 in flight), whole numbers as 1.00. */
const perCall = (value) => (value >= 0.1 ? value.toFixed(2) : value.toPrecision(2));

/** One contender at one level: decisions/s, p50/p99 and failed calls. */
function cell(run) {
  const failed = run.failed === 0 ? "0 failed" : `**${count(run.failed)} failed** (${percent(run.failedShare)})`;
  const parts = [`${count(run.decisionsPerSecond)}/s`, `p50 ${latency(run.p50)} ms`, `p99 ${latency(run.p99)} ms`, failed];
  if (run.refused > 0) parts.push(`${percent(run.refused / run.calls)} refused`);
  return parts.join("; ");
}

/**
 * A line's goal (issue 22) and whether this run met it: at least the peer's decisions/s, no
 * failed call, and on Upstash one HTTP request per call when one call is in flight.
 * @param {{ host: string, inFlight: number, ratio: number, results: Record<string, object> }} line
 * @returns {{ goal: string, met: boolean }}
 */
export function judge(line) {
  const ours = line.results.ratebound;
  const upstashAlone = line.host === "upstash" && line.inFlight === 1;
  const oneRequest = !upstashAlone || ours.httpRequestsPerCall <= 1;
  return {
    goal: upstashAlone ? "≥ 1.0×, 0 failed, 1 HTTP request per call" : "≥ 1.0×, 0 failed",
    met: line.ratio >= 1 && ours.failed === 0 && oneRequest,
  };
}

/**
 * The table: one line per workload and level.
 * @param {Array<object>} lines Measured lines (`label`, `peerName`, `inFlight`, `results`, `ratio`).
 * @returns {string} Markdown.
 * @example
 * table(measured); // "| workload | in flight | ratebound | … |"
 */
export function table(lines) {
  const out = ["| workload | in flight | ratebound | the peer, same run | ratio | goal | met? |", "|---|---:|---|---|---:|---|---|"];
  for (const line of lines) {
    const { goal, met } = judge(line);
    out.push(
      `| ${line.label} | ${line.inFlight} | ${cell(line.results.ratebound)} | ${line.peerName}: ${cell(line.results.peer)} | ${times(line.ratio)} | ${goal} | ${met ? "met" : "**missed**"} |`,
    );
  }
  return out.join("\n");
}

/**
 * Failed calls by contender and reason, or a sentence saying none failed.
 * @param {Array<object>} lines
 * @returns {string} Markdown.
 */
export function failures(lines) {
  const out = [];
  for (const line of lines) {
    for (const side of ["ratebound", "peer"]) {
      const entries = Object.entries(line.results[side].failures);
      if (entries.length) {
        const who = side === "peer" ? line.peerName : "ratebound";
        out.push(`- ${line.label}, ${line.inFlight} in flight, ${who}: ${entries.map(([name, n]) => `${n} × ${name}`).join("; ")}`);
      }
    }
  }
  return out.length ? `Why calls failed:\n\n${out.join("\n")}` : "No call failed.";
}

/**
 * The Upstash lines' traffic: HTTP requests and commands per call under each load.
 * @param {Array<object>} lines
 * @returns {string} Markdown, empty when no Upstash line was measured.
 */
export function upstashTraffic(lines) {
  const upstash = lines.filter((line) => line.host === "upstash");
  if (upstash.length === 0) return "";
  const out = ["| workload | in flight | contender | HTTP requests per call | commands per call | body bytes per request (in / out) |", "|---|---:|---|---:|---|---|"];
  for (const line of upstash) {
    for (const side of ["ratebound", "peer"]) {
      const run = line.results[side];
      const commands = Object.entries(run.commandsPerCall).map(([name, share]) => `${name} ${perCall(share)}`).join(", ") || "none";
      out.push(
        `| ${line.label} | ${line.inFlight} | ${side === "peer" ? line.peerName : "ratebound"} | ${perCall(run.httpRequestsPerCall)} | ${commands} | ${run.bytesInPerRequest.toFixed(0)} / ${run.bytesOutPerRequest.toFixed(0)} |`,
      );
    }
  }
  return out.join("\n");
}
