#!/usr/bin/env bash
# Builds the probe once per glue crate and prints what each adds to the shipped module: the
# .wasm after wasm-opt -Oz as scripts/build.mjs makes it, plus wasm-bindgen's generated JS, in
# bytes and gzip -9. Run from anywhere: bash tools/glue-probe/measure.sh
set -euo pipefail
cd "$(dirname "$0")"
root=../..
opt="$root/node_modules/.bin/wasm-opt"
out=target/measure
mkdir -p "$out"
gz() { gzip -9c "$1" | wc -c; }
printf '%-10s %10s %10s %10s %10s\n' variant wasm wasm.gz js.gz total.gz
for variant in none bindgen serde js-sys getrandom tsify; do
  features=()
  [[ $variant != none ]] && features=(--features "$variant")
  flags=""
  [[ $variant == getrandom ]] && flags='--cfg getrandom_backend="wasm_js"'
  RUSTFLAGS="$flags" cargo build --quiet --release --target wasm32-unknown-unknown --target-dir target/$variant "${features[@]}"
  wasm=target/$variant/wasm32-unknown-unknown/release/glue_probe.wasm
  js_gz=0
  if [[ $variant != none ]]; then
    wasm-bindgen --target web --out-dir "$out/$variant" "$wasm"
    wasm="$out/$variant/glue_probe_bg.wasm"
    js_gz=$(gz "$out/$variant/glue_probe.js")
  fi
  "$opt" -Oz --converge --strip-debug --strip-producers --zero-filled-memory "$wasm" -o "$out/$variant.wasm"
  wasm_gz=$(gz "$out/$variant.wasm")
  printf '%-10s %10s %10s %10s %10s\n' "$variant" "$(wc -c <"$out/$variant.wasm")" "$wasm_gz" "$js_gz" "$((wasm_gz + js_gz))"
done
