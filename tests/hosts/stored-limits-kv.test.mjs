// Limits stored in the host on the real Deno KV engine, in Node through @deno/kv
// (tests/hosts/stored-limits-scenarios.mjs): two handles to one database file, one limiter each;
// the records are read in the call's checked transaction with its states.
import { after, describe, test } from "node:test";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { kvStore } from "../../pkg/dist/deno-kv.js";
import { storedLimitScenarios } from "./stored-limits-scenarios.mjs";
import { scratch } from "./workerd.mjs";

describe("stored limits on Deno KV", () => {
  const work = scratch("stored-limits-kv");
  const handles = [];
  let file = 0;
  after(() => {
    handles.forEach((kv) => kv.close());
    work.remove();
  });
  storedLimitScenarios(test, async () => {
    const path = join(work.dir, `kv-${file++}.sqlite`);
    const [first, second] = await Promise.all([openKv(path), openKv(path)]);
    handles.push(first, second);
    return { store: kvStore(first), other: kvStore(second) };
  });
});
