// docs/errors.md lists every code the package can throw (issue 25, item 6): each code written in
// the sources (a string literal such as "COUNT_EXCEEDS_MAX") has a heading of its own there, and
// every link to the page from the sources' JSDoc, and within the page, lands on a heading.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const page = readFileSync(join(repo, "docs", "errors.md"), "utf8");

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
const anchors = new Set([...page.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1])));

/** Every .ts file of the package's sources (the generated Convex bindings aside). */
const sources = readdirSync(join(repo, "ts"), { recursive: true })
  .filter((file) => file.endsWith(".ts") && !file.includes("_generated"))
  .map((file) => [file, readFileSync(join(repo, "ts", file), "utf8")]);

test("every code in the sources has a heading in docs/errors.md", () => {
  const codes = new Set(sources.flatMap(([, text]) => [...text.matchAll(/"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g)].map((match) => match[1])));
  assert.ok(codes.size >= 25, `found ${codes.size} codes`);
  const missing = [...codes].filter((code) => !anchors.has(code.toLowerCase()));
  assert.deepEqual(missing, [], "codes without a heading in docs/errors.md");
});

test("every link to docs/errors.md from the sources, and within it, lands on a heading", () => {
  const links = [
    ...sources.flatMap(([file, text]) => [...text.matchAll(/docs\/errors\.md#([\w-]+)/g)].map((match) => [file, match[1]])),
    ...[...page.matchAll(/\]\(#([\w-]+)\)/g)].map((match) => ["docs/errors.md", match[1]]),
  ];
  assert.ok(links.length > 30);
  const broken = links.filter(([, anchor]) => !anchors.has(anchor)).map(([file, anchor]) => `${file}: #${anchor}`);
  assert.deepEqual(broken, []);
});

test("every error class links to docs/errors.md from its JSDoc", () => {
  const classes = sources.flatMap(([file, text]) =>
    [...text.matchAll(/((?:\/\*\*(?:(?!\*\/)[\s\S])*\*\/\s*)?)export class (\w+) extends (?:Error|TypeError)\b/g)].map((match) => [file, match[2], match[1]]),
  );
  assert.ok(classes.length >= 9, classes.map(([, name]) => name).join(", "));
  const unlinked = classes.filter(([, , doc]) => !doc.includes("docs/errors.md")).map(([file, name]) => `${file}: ${name}`);
  assert.deepEqual(unlinked, []);
});
