#!/usr/bin/env bash
# Installs what building and testing ratebound needs, and only what is missing
# (with --build, only what building the package needs: the first two): the
# wasm32 target, the npm packages of package-lock.json (wasm-opt comes from
# the npm package binaryen), then Debian's chromium, wasm-bindgen-cli and
# chromium-driver (the wasm32 test tier), redis-server, g++ and postgresql,
# cargo-fuzz, and Deno (tools/deno).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "ratebound: adding the wasm32-unknown-unknown target" >&2
  rustup target add wasm32-unknown-unknown >&2
fi

# npm ci when node_modules is missing or was installed from another lockfile.
stamp=node_modules/.ratebound-lockfile
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "ratebound: npm ci" >&2
  npm ci --no-audit --no-fund >&2
  cp package-lock.json "$stamp"
fi

# `--build`: only what building the package (and so the demo and the benches) needs.
if [ "${1:-}" = "--build" ]; then
  exit 0
fi

# Headless Chromium for the browser tests (driven by playwright-core), from Debian's packages.
if ! command -v chromium >/dev/null 2>&1; then
  echo "ratebound: installing chromium" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q chromium >&2
fi

# The wasm32 test tier (tests/wasm.rs): wasm-bindgen-test-runner at exactly the version of the
# wasm-bindgen Cargo.toml pins (the runner refuses a module built by another), and chromedriver
# for its Chromium run.
WASM_BINDGEN_VERSION=0.2.130
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  echo "ratebound: installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes)" >&2
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" >&2
fi
if [ ! -x /usr/bin/chromedriver ]; then
  echo "ratebound: installing chromium-driver" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q chromium-driver >&2
fi

# Debian's redis-server for the ratebound/redis tests (tests/redis/ starts and stops its own).
if ! command -v redis-server >/dev/null 2>&1; then
  echo "ratebound: installing redis-server" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q redis-server >&2
fi

# cargo-fuzz (libFuzzer) for fuzz/, run on stable Rust with RUSTC_BOOTSTRAP=1; libFuzzer is C++.
if ! command -v c++ >/dev/null 2>&1; then
  echo "ratebound: installing g++ (libFuzzer is built from C++)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q g++ >&2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "ratebound: installing cargo-fuzz (a few minutes)" >&2
  cargo install cargo-fuzz --version 0.13.2 >&2
fi

# Deno lives outside the root lockfile (see tools/deno/package.json for why).
if [ ! -x tools/deno/node_modules/.bin/deno ]; then
  echo "ratebound: installing deno into tools/deno" >&2
  npm install --prefix tools/deno --no-package-lock --no-audit --no-fund >&2
fi

# A real PostgreSQL server for the SQL host suites (tests/sql) and bench:contention: Debian's
# postgresql (15). The tests initialise a throwaway cluster of their own; the service is unused.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "ratebound: installing postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q --no-install-recommends postgresql >&2
fi
