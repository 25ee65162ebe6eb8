// The documentation stays true to the repository: README is a guide of at most 300 lines whose
// test command is the one CI runs, every relative link in README.md and docs/ leads to a file (and
// a heading, when it names one), and every block marked `<!-- quote: PATH -->` is PATH's own text,
// so README's quick starts are the files tests/http/quickstart.test.mjs runs.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { npmReadme } from "../../scripts/package-readme.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(join(root, path), "utf8");
const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];

/** The prose of a page: fenced blocks blanked out (their lines kept, so line numbers stay). */
function prose(markdown) {
  let fence = null;
  return markdown.split("\n").map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (marker && marker[1][0] === fence[0] && marker[1].length >= fence.length) fence = null;
      return "";
    }
    if (marker) {
      fence = marker[1];
      return "";
    }
    return line;
  });
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a page's headings, with GitHub's `-1`, `-2` for repeats. */
function anchorsOf(path) {
  const seen = new Map();
  const anchors = new Set();
  for (const line of prose(read(path))) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Every markdown link `[text](target)` in a page's prose (or in `markdown`), outside inline code. */
function linksOf(path, markdown = read(path)) {
  const links = [];
  prose(markdown).forEach((line, index) => {
    const text = line.replace(/`[^`]*`/g, "");
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) links.push({ target: match[1], line: index + 1 });
  });
  return links;
}

/** The fenced blocks preceded by `<!-- quote: PATH -->`: PATH and the block's lines. */
function quotesOf(path) {
  const lines = read(path).split("\n");
  const quotes = [];
  lines.forEach((line, index) => {
    const marker = /^<!-- quote: (\S+) -->$/.exec(line);
    if (!marker) return;
    const fence = /^(`{3,})/.exec(lines[index + 1] ?? "");
    assert.ok(fence, `${path}:${index + 1}: a quote marker must be followed by a fenced block`);
    const end = lines.findIndex((candidate, at) => at > index + 1 && candidate.startsWith(fence[1]));
    quotes.push({ source: marker[1], line: index + 1, block: lines.slice(index + 2, end) });
  });
  return quotes;
}

describe("README is a guide", () => {
  it("is at most 300 lines", () => {
    const lines = read("README.md").split("\n").length;
    assert.ok(lines <= 300, `README.md has ${lines} lines`);
  });

  it("tells contributors to run exactly the command CI runs", () => {
    const ci = read(".ci/run");
    assert.match(ci, /^npm test$/m, ".ci/run runs npm test");
    assert.match(read("README.md"), /^npm test\s+#/m, "README's contributors' commands include npm test");
  });

  it("has only links the package build makes absolute (npm shows README without the repository)", () => {
    const { repository } = JSON.parse(read("pkg-template/package.json"));
    const left = linksOf("README.md", npmReadme(read("README.md"), { repository })).filter(({ target }) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(target));
    assert.deepEqual(left, [], "relative links the package README would keep");
  });

  it("the package build makes a link whose text is code absolute, and leaves a link inside code as written", () => {
    const repository = { url: "git+https://github.com/ratebound/ratebound.git" };
    assert.equal(
      npmReadme("See [`ratebound/redis`](docs/redis.md#cluster), not `[x](docs/a.md)`.", { repository }),
      "See [`ratebound/redis`](https://github.com/ratebound/ratebound/blob/main/docs/redis.md#cluster), not `[x](docs/a.md)`.",
    );
  });

  it("quotes both quick starts whole, from the files the quick-start test runs", () => {
    const quoted = quotesOf("README.md").map(({ source }) => source);
    for (const file of ["examples/http/express-redis.mjs", "examples/http/hono-ioredis.mjs"]) {
      assert.ok(quoted.includes(file), `README quotes ${file}`);
      assert.match(read("tests/http/quickstart.test.mjs"), new RegExp(file.split("/").pop().replace(".", "\\.")), `the quick-start test runs ${file}`);
    }
    for (const { source, block } of quotesOf("README.md")) {
      const file = read(source).replace(/\n$/, "").split("\n");
      const body = file.slice(file.findIndex((line) => !line.startsWith("//")));
      assert.deepEqual(block, body, `README's block quotes all of ${source} but its opening comment`);
    }
  });
});

describe("the documentation's links and quotes", () => {
  for (const page of pages) {
    it(`${page}: every relative link leads to a file, and to a heading when it names one`, () => {
      const broken = [];
      for (const { target, line } of linksOf(page)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a URL
        const [path, anchor] = target.split("#");
        const file = path === "" ? page : relative(root, join(root, dirname(page), path));
        if (!existsSync(join(root, file))) broken.push(`${page}:${line}: ${target} leads nowhere`);
        else if (anchor !== undefined && file.endsWith(".md") && statSync(join(root, file)).isFile() && !anchorsOf(file).has(anchor)) {
          broken.push(`${page}:${line}: ${file} has no heading #${anchor}`);
        }
      }
      assert.deepEqual(broken, []);
    });

    it(`${page}: every quoted block is its source's own text`, () => {
      for (const { source, line, block } of quotesOf(page)) {
        assert.ok(existsSync(join(root, source)), `${page}:${line}: ${source} does not exist`);
        const text = read(source).split("\n");
        // A first line naming the file (`// convex/schema.ts`) is the page's caption, not the file's.
        const lines = /^(\/\/|#) \S+\.(ts|js|mjs|toml)$/.test(block[0] ?? "") && !text.includes(block[0]) ? block.slice(1) : block;
        const start = text.findIndex((_, at) => lines.every((quoted, offset) => text[at + offset] === quoted));
        assert.ok(lines.length > 0 && start >= 0, `${page}:${line}: the block is not a contiguous part of ${source}`);
      }
    });
  }
});
