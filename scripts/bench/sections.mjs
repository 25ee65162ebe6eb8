// BENCHMARKS.md is written by several scripts, each owning one section between two markers:
// `npm run bench` (the package's targets), `npm run bench:hosts` (Redis, Upstash, PostgreSQL
// against their peers) and `npm run bench:contention` (a hot limit under offered load). Each
// script replaces its own section and keeps the others as they are.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** The sections, in the order the file holds them. */
export const OWNERS = ["bench", "bench:hosts", "bench:contention"];

const begin = (owner) => `<!-- section of \`npm run ${owner}\`: generated, do not edit by hand -->`;
const end = (owner) => `<!-- end of the section of \`npm run ${owner}\` -->`;

/**
 * Replaces `owner`'s section of `file` with `markdown` (or adds it), keeping every other section.
 * Text outside any marker (a file written before the sections existed) is `npm run bench`'s.
 *
 * @param {string} file The path of BENCHMARKS.md.
 * @param {string} owner One of {@link OWNERS}.
 * @param {string} markdown The section's new text.
 * @example
 * writeSection(join(root, "BENCHMARKS.md"), "bench:hosts", "## Hosts\n\n| … |");
 */
export function writeSection(file, owner, markdown) {
  if (!OWNERS.includes(owner)) throw new Error(`writeSection: unknown owner ${owner}`);
  let rest = existsSync(file) ? readFileSync(file, "utf8") : "";
  const sections = new Map();
  for (const candidate of OWNERS) {
    const [from, to] = [rest.indexOf(begin(candidate)), rest.indexOf(end(candidate))];
    if (from < 0 || to < from) continue;
    sections.set(candidate, rest.slice(from + begin(candidate).length, to).trim());
    rest = rest.slice(0, from) + rest.slice(to + end(candidate).length);
  }
  if (rest.trim() && !sections.has("bench")) sections.set("bench", rest.trim());
  sections.set(owner, markdown.trim());
  const text = OWNERS.filter((candidate) => sections.has(candidate))
    .map((candidate) => `${begin(candidate)}\n${sections.get(candidate)}\n${end(candidate)}`)
    .join("\n\n");
  writeFileSync(file, `${text}\n`);
}
