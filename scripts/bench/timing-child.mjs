// The interleaved timings of `npm run bench` (./timing.mjs), in a process of their own that loads
// nothing else: a module that turns on async hooks (playwright-core does, once it has driven a
// browser, through AsyncLocalStorage) makes every `await` in the process several times slower,
// so the timings must not share a process with the browser run or any other measurement.
//
//   node scripts/bench/timing-child.mjs <pkg> <project> <rounds> <batchMs> <warmupMs> [<floor.wasm>]
//
// Without a floor module (./floor.mjs could not build one), the floor contenders are left out.
//
// Progress goes to stderr; the result is one JSON line on stdout:
// `{ timing: [[id, { median, min, max, samples }], …], skipped }`.
import { timeEverything } from "./timing.mjs";

const [pkg, project, rounds, batchMs, warmupMs, floorWasm] = process.argv.slice(2);
const floor = floorWasm ? { wasm: floorWasm } : { error: "no floor module was built" };
const log = (line) => process.stderr.write(`bench:   ${line}\n`);
const { timing, skipped } = await timeEverything({ pkg, project, floor, rounds: Number(rounds), batchMs: Number(batchMs), warmupMs: Number(warmupMs), log });
process.stdout.write(`${JSON.stringify({ timing: [...timing], skipped })}\n`);
