// The TypeScript types come from the Rust definitions (tsify and the
// boundary's signatures). This test holds the generated declarations against
// a committed snapshot, so a change to any JS-visible shape shows up in review.
// After an intended change: UPDATE_SNAPSHOT=1 node --test tests/types/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";

const generated = new URL("../../pkg/dist/wasm/ratebound.d.ts", import.meta.url);
const snapshot = new URL("./ratebound.d.ts.snapshot", import.meta.url);

test("the generated declarations match the committed snapshot", () => {
  const now = readFileSync(generated, "utf8");
  if (process.env.UPDATE_SNAPSHOT === "1") writeFileSync(snapshot, now);
  assert.equal(now, readFileSync(snapshot, "utf8"), "run UPDATE_SNAPSHOT=1 node --test tests/types/ after an intended change");
});
