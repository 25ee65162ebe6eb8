// Time per call of each way in (after measure.sh): the plain export, wasm-bindgen's numbers-only
// export, and serde-wasm-bindgen reading a config object; and whether serde-wasm-bindgen reads an
// inherited field, which the package's own-fields guard (ts/core/config.ts) refuses to.
// node tools/glue-probe/time.mjs
import { readFileSync } from "node:fs";

const at = (path) => new URL(`./target/measure/${path}`, import.meta.url);
const plain = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(at("none.wasm"))), {}).exports;
const load = async (variant) => {
  const glue = await import(at(`${variant}/glue_probe.js`));
  glue.initSync({ module: readFileSync(at(`${variant}.wasm`)) });
  return glue;
};
const bindgen = await load("bindgen");
const serde = await load("serde");

function time(label, call) {
  const rounds = 2_000_000;
  let sink = 0;
  for (let i = 0; i < 200_000; i++) sink += call(i);
  const best = [];
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) sink += call(i);
    best.push(Number(process.hrtime.bigint() - start) / rounds);
  }
  console.log(`${label.padEnd(44)} ${Math.min(...best).toFixed(1)} ns/call`, sink > 0 ? "" : " ");
}

const config = { kind: "token bucket", rate: 10, period: 1000, capacity: 10 };
time("plain export (numbers)", (i) => plain.plain_calculate(10, 1000, 10, 5, i, i + 1, 1));
time("wasm-bindgen export (numbers)", (i) => bindgen.bindgen_calculate(10, 1000, 10, 5, i, i + 1, 1));
time("serde-wasm-bindgen (a config object)", (i) => serde.serde_calculate(config, 5, i, i + 1, 1));

Object.prototype.capacity = 1; // a polluted prototype
try {
  const got = serde.serde_calculate({ kind: "token bucket", rate: 10, period: 1000 }, Number.NaN, 0, 0, 1);
  console.log(`serde-wasm-bindgen with Object.prototype.capacity = 1: a fresh bucket of 10 holds ${got} after one token (the inherited capacity was read)`);
} finally {
  delete Object.prototype.capacity;
}
