// The built package as Node users load it: ESM import and require(), by file and by package name
// through pkg/package.json's conditional exports, with no init() call before the first decision.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esm from "../../pkg/dist/node.js";

const pkgDir = fileURLToPath(new URL("../../pkg/", import.meta.url));
const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const require = createRequire(import.meta.url);

const PUBLIC_API = ["RateLimiter", "MemoryStore", "calculateRateLimit", "isRateLimitError", "RateLimitError", "withJitter", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK"];

/**
 * A scripted session whose answers depend only on its inputs: run on any copy of the API, it
 * must give the same JSON. `api` is the module namespace (ESM) or the `require` result (CJS).
 */
async function session(api) {
  const { RateLimiter, MemoryStore, calculateRateLimit, isRateLimitError, SECOND, MINUTE } = api;
  let now = 1_700_000_000_000;
  let draws = 0;
  const random = () => ((draws++ * 0.6180339887) % 1);
  const limiter = new RateLimiter(
    new MemoryStore(),
    {
      sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
      llmTokens: { kind: "token bucket", rate: 40_000, period: MINUTE, shards: 10 },
      api: { kind: "fixed window", rate: 5, period: SECOND },
    },
    { now: () => now, random },
  );
  const out = [];
  for (let i = 0; i < 5; i++) out.push(await limiter.limit("sendMessage", { key: "ada" }));
  out.push(await limiter.limit("llmTokens", { count: 5000 }));
  out.push(await limiter.getValue("llmTokens", { sampleShards: 10 }));
  for (let i = 0; i < 7; i++) {
    now += 150;
    out.push(await limiter.limit("api", { key: "bob", count: 2, reserve: i % 3 === 0 }));
  }
  out.push(await limiter.getValue("api", { key: "bob" }));
  try {
    await limiter.limit("sendMessage", { key: "ada", throws: true });
  } catch (error) {
    out.push({ refusal: isRateLimitError(error), data: error.data });
  }
  try {
    await limiter.limit("sendMessage", { count: 4 });
  } catch (error) {
    out.push({ error: error instanceof Error, code: error.code, message: error.message });
  }
  out.push(calculateRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: MINUTE }, 3000, 1));
  return out;
}

/** The session as a standalone script, loading the package with `load` (an import or a require). */
function sessionScript(load, moduleKind) {
  const body = `${session.toString()}\nconst api = ${load};\nsession(api).then((out) => process.stdout.write(JSON.stringify(out)));`;
  return moduleKind === "esm" ? body : `"use strict";\n${body}`;
}

describe("pkg/package.json", () => {
  it("is named ratebound", () => {
    assert.equal(manifest.name, "ratebound");
  });

  it("has conditional exports for import and require that point at files in the package", () => {
    const root = manifest.exports?.["."];
    assert.equal(typeof root, "object", "exports['.'] is a conditions object");
    // What Node picks: a `node` block first, then the top-level conditions.
    const targets = { import: root.node?.import ?? root.import, require: root.node?.require ?? root.require };
    for (const [condition, target] of Object.entries(targets)) {
      assert.equal(typeof target, "string", `exports['.'] has a ${condition} condition`);
      assert.ok(existsSync(join(pkgDir, target)), `${condition} → ${target} exists`);
    }
    assert.notEqual(targets.import, targets.require, "import and require load different entry files");
    assert.ok(targets.require.endsWith(".cjs") || manifest.type !== "module", "the require entry is CommonJS");
    // Declarations for import (.d.ts) and for require (.d.cts).
    assert.ok(root.types.default.endsWith(".d.ts") && root.types.require.endsWith(".d.cts"), "types for import and for require");
    for (const target of targetsOf(root.types)) assert.ok(existsSync(join(pkgDir, target)), `types → ${target} exists`);
  });

  it("ships what it exports: the one .wasm the entries load", () => {
    assert.ok(existsSync(join(pkgDir, "dist", "wasm", "ratebound.wasm")));
  });
});

describe("Node ESM", () => {
  it("imports with no init call and exports the whole public API", async () => {
    for (const name of PUBLIC_API) assert.ok(name in esm, `exports ${name}`);
    const limiter = new esm.RateLimiter(new esm.MemoryStore(), { a: { kind: "token bucket", rate: 1, period: esm.SECOND } }, { now: () => 0 });
    assert.deepEqual(await limiter.limit("a"), { ok: true });
    assert.deepEqual(await limiter.limit("a"), { ok: false, retryAfter: 1000 });
  });
});

describe("Node require()", () => {
  it("loads the CommonJS entry with no init call and exports the same API", () => {
    const cjs = require("../../pkg/dist/node.cjs");
    for (const name of PUBLIC_API) assert.ok(name in cjs, `exports ${name}`);
    assert.deepEqual(Object.keys(cjs).filter((name) => !name.startsWith("__")).sort(), Object.keys(esm).sort());
  });

  it("gives the same results as the ESM entry", async () => {
    const cjs = require("../../pkg/dist/node.cjs");
    const fromEsm = await session(esm);
    const fromCjs = await session(cjs);
    assert.deepEqual(fromCjs, fromEsm);
    assert.ok(fromEsm.some((answer) => answer.ok === false), "the session includes refusals");
    assert.deepEqual(fromEsm.at(-1), { value: -0.5, ts: 3000, retryAfter: 3000 });
  });
});

describe("installed as a dependency", () => {
  let project;

  before(() => {
    project = mkdtempSync(join(tmpdir(), "ratebound-packaging-"));
    mkdirSync(join(project, "node_modules"));
    symlinkSync(pkgDir, join(project, "node_modules", "ratebound"), "dir");
    writeFileSync(join(project, "esm.mjs"), sessionScript('await import("ratebound")', "esm"));
    writeFileSync(join(project, "cjs.cjs"), sessionScript('require("ratebound")', "cjs"));
  });

  after(() => rmSync(project, { recursive: true, force: true }));

  const runScript = (file) => JSON.parse(execFileSync(process.execPath, [join(project, file)], { cwd: project, encoding: "utf8" }));

  it("Node resolves import 'ratebound' and require('ratebound') to the two Node entries", () => {
    writeFileSync(
      join(project, "resolve.mjs"),
      `import { createRequire } from "node:module";
       const require = createRequire(import.meta.url);
       process.stdout.write(JSON.stringify({ import: import.meta.resolve("ratebound"), require: require.resolve("ratebound") }));`,
    );
    const resolved = runScript("resolve.mjs");
    assert.ok(resolved.import.endsWith("/dist/node.bundle.js"), `import resolves to ${resolved.import} (the Node entry bundled into one module)`);
    assert.ok(resolved.require.endsWith("/dist/node.cjs"), `require resolves to ${resolved.require}`);
  });

  it("import 'ratebound' and require('ratebound') resolve and give the same results as in-process", async () => {
    const expected = JSON.parse(JSON.stringify(await session(esm)));
    assert.deepEqual(runScript("esm.mjs"), expected);
    assert.deepEqual(runScript("cjs.cjs"), expected);
  });

  it("draws no random numbers at module load or construction, only inside a call that needs one", () => {
    // Some runtimes forbid randomness at load; the default source is the runtime's crypto.
    const script = `
      const crypto = globalThis.crypto;
      const original = crypto.getRandomValues.bind(crypto);
      let draws = 0;
      crypto.getRandomValues = (array) => (draws++, original(array));
      const { RateLimiter, MemoryStore } = await import("ratebound");
      const atLoad = draws;
      const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "fixed window", rate: 1, period: 1000 } }, { now: () => 5000 });
      const atConstruction = draws;
      const result = await limiter.limit("api");
      process.stdout.write(JSON.stringify({ atLoad, atConstruction, afterCall: draws, result }));`;
    writeFileSync(join(project, "random.mjs"), script);
    const seen = runScript("random.mjs");
    assert.equal(seen.atLoad, 0);
    assert.equal(seen.atConstruction, 0);
    assert.ok(seen.afterCall > 0, "the fresh fixed window drew its random start from the runtime");
    assert.deepEqual(seen.result, { ok: true });
  });
});

/** Every file an exports entry names, through nested conditions. */
function targetsOf(entry) {
  return typeof entry === "string" ? [entry] : Object.values(entry).flatMap(targetsOf);
}

describe("subpath exports", () => {
  it("every subpath the exports map declares points at files that exist", () => {
    const subpaths = Object.keys(manifest.exports ?? {}).filter((subpath) => subpath !== "." && subpath !== "./package.json");
    for (const required of ["./convex", "./durable-object", "./deno-kv", "./preview", "./react"]) {
      assert.ok(subpaths.includes(required), `ratebound${required.slice(1)} is exported`);
    }
    for (const subpath of subpaths) {
      const entry = manifest.exports[subpath];
      const targets = targetsOf(entry);
      assert.ok(targets.length > 0, `${subpath} has a target`);
      for (const target of targets) assert.ok(existsSync(join(pkgDir, target)), `${subpath} → ${target} exists`);
    }
  });
});
