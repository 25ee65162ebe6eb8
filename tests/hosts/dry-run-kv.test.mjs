// Dry runs on the real Deno KV engine, in Node through @deno/kv (the scenarios of
// tests/js/dry-run-scenarios.mjs): each store under a prefix of its own in one database file,
// decided in the store's checked transaction.
import { after, before, describe } from "node:test";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { kvStore } from "../../pkg/dist/deno-kv.js";
import { dryRunScenarios } from "../js/dry-run-scenarios.mjs";
import { scratch } from "./workerd.mjs";

describe("dry runs on Deno KV", () => {
  const work = scratch("dry-run-kv");
  let kv;
  before(async () => {
    kv = await openKv(join(work.dir, "kv.sqlite"));
  });
  after(() => {
    kv?.close();
    work.remove();
  });
  dryRunScenarios((tag) => kvStore(kv, { prefix: ["dry", tag] }));
});
