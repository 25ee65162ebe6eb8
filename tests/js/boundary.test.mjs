// The boundary from one source: ts/core/boundary.ts is generated from src/wasm/io.rs and
// src/error.rs (`cargo test` fails while the checked-in file is stale); here, the package as
// built: the layout its TypeScript compiled against is the one both shipped modules answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as boundary from "../../pkg/dist/core/boundary.js";

const NAMES = ["ITEMS", "PLAN", "MAP", "SLOTS", "OUT", "EXTRA", "ITEM", "PLAN_STRIDE", "SLOT", "OUT_STRIDE", "MAX_ITEMS", "MAX_SLOTS", "IO_LEN"];

// The full module ships as base64 (Node), the browser's small ones as one character a byte.
const bytesOf = async (file) => {
  const module = await import(`../../pkg/dist/wasm/${file}`);
  return "base64" in module ? Buffer.from(module.base64, "base64") : Uint8Array.from(module.bytes, (char) => char.charCodeAt(0));
};

for (const file of ["ratebound.base64.js", "ratebound-lite.bytes.js"]) {
  test(`${file.replace(/\.(base64|bytes)\.js$/, ".wasm")} answers the generated layout, and its buffer holds IO_LEN numbers`, async () => {
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(await bytesOf(file)), {});
    NAMES.forEach((name, which) => assert.equal(exports.rb_layout(which), boundary[name], name));
    assert.ok(exports.rb_io() + boundary.IO_LEN * 8 <= exports.memory.buffer.byteLength);
  });
}

test("the generated module declares numbers, the error tables and the calendar periods, nothing else", () => {
  const text = readFileSync(new URL("../../ts/core/boundary.ts", import.meta.url), "utf8");
  assert.match(text, /^\/\/ Generated from src\/wasm\/io\.rs/);
  for (const [name, value] of Object.entries(boundary)) {
    if (["CODES", "FIELDS", "RULES", "SENTENCES", "CALENDAR_PERIODS"].includes(name)) assert.ok(Array.isArray(value) && value[0] === "", name);
    else assert.ok(Number.isInteger(value) && value >= 0, name);
  }
  assert.equal(boundary.CODES.length, 8);
  assert.equal(boundary.RULES.length, boundary.SENTENCES.length);
  assert.deepEqual(boundary.CALENDAR_PERIODS, ["", "day", "week", "month", "year"]);
});
