// What a browser app's bundle holds (scripts/size-check.mjs measures it; this prints the figures
// against their targets): a bundle that never takes a grant carries no grant or settle export
// of the core, split or not, and the preview alone carries only the preview's module.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { measureSizes, sizeLines } from "../../scripts/size-check.mjs";

const pkg = new URL("../../pkg", import.meta.url).pathname;
const rows = await measureSizes(pkg);
/**
 * The export names of every WebAssembly module a bundle inlines before its first decision: each
 * string literal (or template: esbuild picks the shorter) that starts as a module does (`"\0asm…`,
 * one character per byte), evaluated and compiled.
 */
function inlinedExports(row) {
  const names = [];
  for (const file of row.measured.files.filter((file) => file.eager && file.kind === "js")) {
    const text = Buffer.from(file.text, "latin1").toString("utf8");
    for (const [literal] of text.matchAll(/(["`])\\(?:0|x00)asm(?:(?!\1)[^\\]|\\[\s\S])*\1/g)) {
      const chars = new Function(`return ${literal}`)();
      const bytes = Uint8Array.from(chars, (char) => char.charCodeAt(0));
      names.push(WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map((entry) => entry.name));
    }
  }
  return names;
}

test("the figures against their targets", (t) => {
  for (const line of sizeLines(rows)) t.diagnostic(line);
  assert.equal(rows.length, 4);
});

test("no browser bundle carries the full module before its first grant, split or not", () => {
  const full = readFileSync(new URL("../../pkg/dist/wasm/ratebound.base64.js", import.meta.url), "utf8").match(/"([A-Za-z0-9+/]{200})/)[1];
  for (const row of rows.filter((row) => row.app === "main")) {
    const modules = inlinedExports(row);
    assert.equal(modules.length, 1, `${row.bundle}: one module inlined`);
    assert.ok(modules[0].includes("rb_decide_one"), `${row.bundle}: the small module`);
    for (const name of ["rb_charge", "rb_settle", "rb_plan_charge", "rb_settle_reads"]) assert.ok(!modules[0].includes(name), `${row.bundle}: no ${name}`);
    assert.ok(!row.measured.files.some((file) => file.eager && file.text.includes(full)), `${row.bundle}: the full module's base64 is not inlined`);
  }
});

test("ratebound/preview alone carries the preview's module, not the small one", () => {
  for (const row of rows.filter((row) => row.app === "preview")) {
    const modules = inlinedExports(row);
    assert.equal(modules.length, 1, `${row.bundle}: one module inlined`);
    assert.ok(modules[0].includes("rb_calculate_next") && modules[0].includes("rb_decide_state"), `${row.bundle}: the preview's calls`);
    for (const name of ["rb_decide_one", "rb_plan", "rb_decide", "rb_charge", "rb_settle"]) assert.ok(!modules[0].includes(name), `${row.bundle}: no ${name}`);
  }
});
