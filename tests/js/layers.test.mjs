// The source's layers import downward only: ts/core (the limiter, the boundary, the pure
// functions) knows nothing of the stores or of ratebound/http, and ts/http nothing of the
// stores. A shape two layers share lives in the lower one (the Durable Object client's
// `RateLimiterClient`, which the HTTP guards take, is in ts/core/limiter-client.ts).
// Every import and re-export is read from the source, static or dynamic, type-only or not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ts = join(root, "ts");

/** Every `.ts` file under `dir`. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The specifiers a file imports or re-exports: `from "…"`, `import "…"`, `import("…")`, `require("…")`. */
function specifiers(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const found = [];
  for (const pattern of [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']/g, /\brequire\s*\(\s*["']([^"']+)["']/g]) {
    for (const match of code.matchAll(pattern)) found.push(match[1]);
  }
  return found;
}

/** Each import of a file in `layer` that lands in one of `forbidden` (folders under ts/), as "file -> specifier". */
function importsInto(layer, forbidden) {
  return sources(join(ts, layer)).flatMap((file) =>
    specifiers(readFileSync(file, "utf8"))
      .filter((specifier) => specifier.startsWith("."))
      .filter((specifier) => forbidden.some((folder) => !relative(join(ts, folder), resolve(dirname(file), specifier)).startsWith("..")))
      .map((specifier) => `${relative(root, file)} -> ${specifier}`),
  );
}

test("ts/core imports nothing from ts/stores or ts/http", () => {
  assert.deepEqual(importsInto("core", ["stores", "http"]).sort(), []);
});

test("ts/http imports nothing from ts/stores", () => {
  assert.deepEqual(importsInto("http", ["stores"]), []);
});

test("the check sees imports of every form (it would catch one)", () => {
  const forms = [`import { a } from "../stores/x.js";`, `import type { A } from "../stores/x.js";`, `export * from "../stores/x.js";`, `const m = await import("../stores/x.js");`, `import "../stores/x.js";`];
  for (const form of forms) assert.deepEqual(specifiers(form), ["../stores/x.js"], form);
  assert.deepEqual(specifiers(`// import { a } from "../stores/x.js";\n/* from "../stores/y.js" */`), []);
});
