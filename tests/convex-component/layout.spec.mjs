// ratebound's Convex component (pkg/convex-component) is laid out as @convex-dev/rate-limiter's: its
// definition, its tables (0.3.2's and 0.4.0's) and its functions' kinds, visibility and validators.
import { describe, expect, test } from "vitest";
import referenceConfig from "../../node_modules/@convex-dev/rate-limiter/dist/component/convex.config.js";
import * as referenceLib from "../../node_modules/@convex-dev/rate-limiter/dist/component/lib.js";
import referenceSchema from "../../node_modules/@convex-dev/rate-limiter/dist/component/schema.js";
import * as referenceTime from "../../node_modules/@convex-dev/rate-limiter/dist/component/time.js";
import * as reference040Lib from "../../node_modules/rate-limiter-040/dist/component/lib.js";
import reference040Schema from "../../node_modules/rate-limiter-040/dist/component/schema.js";
import * as reference040Worker from "../../node_modules/rate-limiter-040/dist/component/worker.js";
import * as lib from "../../pkg/convex-component/lib.js";
import componentSchema from "../../pkg/convex-component/schema.js";
import * as time from "../../pkg/convex-component/time.js";
import * as worker from "../../pkg/convex-component/worker.js";
import { componentConfig } from "./definitions.mjs";

describe("the component is laid out and typed as @convex-dev/rate-limiter's", () => {
  test("convex.config defines a component named rateLimiter", () => {
    expect(componentConfig._isRoot).toBe(false);
    expect(componentConfig._name).toBe("rateLimiter");
    expect(componentConfig._name).toBe(referenceConfig._name);
  });

  test("the schema has exactly the reference's tables (0.3.2's rateLimits, 0.4.0's pendingUpdates), plus one index of each limit's queue", () => {
    const tables = (schema) => Object.fromEntries(JSON.parse(schema.export()).tables.map((table) => [table.tableName, table]));
    const ours = tables(componentSchema);
    expect(Object.keys(ours).sort()).toEqual(["pendingUpdates", "rateLimits"]);
    expect(ours.rateLimits).toEqual(tables(referenceSchema).rateLimits);
    expect(ours.rateLimits).toEqual(tables(reference040Schema).rateLimits);
    const { indexes, ...pendingUpdates } = ours.pendingUpdates;
    const { indexes: referenceIndexes, ...referencePendingUpdates } = tables(reference040Schema).pendingUpdates;
    expect(pendingUpdates).toEqual(referencePendingUpdates);
    expect(indexes).toEqual([...referenceIndexes, { indexDescriptor: "limit", fields: ["update.name", "update.key"] }]);
  });

  test("every function of the reference exists with the same kind, visibility, args and returns validators", () => {
    const shape = (fn) => ({
      query: fn.isQuery === true,
      mutation: fn.isMutation === true,
      public: fn.isPublic === true,
      args: JSON.parse(fn.exportArgs()),
      returns: JSON.parse(fn.exportReturns()),
    });
    const functions = (module) => Object.keys(module).filter((name) => typeof module[name].exportArgs === "function").sort();
    expect(functions(referenceLib)).toEqual(["checkRateLimit", "clearAll", "getServerTime", "getValue", "rateLimit", "resetRateLimit"]);
    expect(functions(reference040Lib)).toEqual([...functions(referenceLib), "enqueueUpdates"].sort());
    for (const name of functions(reference040Lib)) expect(shape(lib[name]), name).toEqual(shape(reference040Lib[name]));
    expect(shape(time.getServerTime)).toEqual(shape(referenceTime.getServerTime));
    // The worker's functions: internal, with the reference's validators.
    expect(functions(reference040Worker)).toEqual(["getBatch", "processBatch"]);
    for (const name of functions(reference040Worker)) expect(shape(worker[name]), name).toEqual(shape(reference040Worker[name]));
    expect([worker.WORKER_NAME, worker.BATCH_SIZE, worker.READ_BUDGET_FRACTION]).toEqual([
      reference040Worker.WORKER_NAME,
      reference040Worker.BATCH_SIZE,
      reference040Worker.READ_BUDGET_FRACTION,
    ]);
    // ratebound's additions for asynchronous limits: a check and a decision that count what is queued.
    expect(shape(lib.checkQueuedRateLimit)).toEqual({ ...shape(lib.checkRateLimit) });
    expect(shape(lib.queuedRateLimit)).toEqual({ ...shape(lib.rateLimit) });
    // ratebound's additions: several limits in one call.
    expect(shape(lib.rateLimitAll)).toMatchObject({ mutation: true, public: true, returns: shape(lib.rateLimit).returns });
    expect(shape(lib.checkRateLimitAll)).toMatchObject({ query: true, public: true, returns: shape(lib.rateLimit).returns });
  });
});
