// Dry runs on memory (a MemoryStore per scenario); tests/redis/dry-run.test.mjs runs the same
// scenarios on a real redis-server, and tests/http/dry-run.test.mjs through the HTTP guard.
import { describe } from "node:test";
import { MemoryStore } from "../../pkg/dist/node.js";
import { dryRunScenarios } from "./dry-run-scenarios.mjs";

describe("dry runs on a MemoryStore", () => dryRunScenarios(() => new MemoryStore()));
