// The package's public shapes are defined once (ts/core/types.ts) and its
// API is the list ts/index.ts exports. This test holds both, as tsc declares
// them, against a committed snapshot, so a change to any JS-visible shape or
// export shows up in review.
// After an intended change: UPDATE_SNAPSHOT=1 node --test tests/types/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";

const declared = ["../../pkg/dist/index.d.ts", "../../pkg/dist/core/types.d.ts"].map((path) => new URL(path, import.meta.url));
const snapshot = new URL("./ratebound.d.ts.snapshot", import.meta.url);

test("the public declarations (the export list and the shapes) match the committed snapshot", () => {
  const now = declared.map((file) => `// ${file.pathname.split("/pkg/")[1]}\n${readFileSync(file, "utf8")}`).join("\n");
  if (process.env.UPDATE_SNAPSHOT === "1") writeFileSync(snapshot, now);
  assert.equal(now, readFileSync(snapshot, "utf8"), "run UPDATE_SNAPSHOT=1 node --test tests/types/ after an intended change");
});
