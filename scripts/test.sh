#!/usr/bin/env bash
# Every test of the project, in layers: native Rust (unit, integration,
# property, doc), then the JS suites on the built package in every runtime.
# Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-toolchain.sh

echo "== Rust: unit, integration, property and doc tests (native)"
cargo test --quiet

echo "== Rust on wasm32: the core's tests (tests/wasm.rs) compiled to WebAssembly, in Node and in headless Chromium (wasm-bindgen-test-runner)"
wasm_tier() {
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
    cargo test --target wasm32-unknown-unknown --features std --test wasm "$@"
}
wasm_tier
WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver wasm_tier

echo "== Build pkg/"
node scripts/build.mjs

echo "== Packaging: the packed tarball in Node, Deno, Bun, workerd, Chromium and Convex; one scratch project installs it beside the latest major of every optional peer (no ERESOLVE), and strict Node ESM, CommonJS, bundler and edge projects compile it on TypeScript 5.9 and 7 and run every error family"
node --test --test-reporter=spec tests/packaging/

echo "== Hosts: Convex functions in convex-test (ratebound/convex, examples/convex)"
node_modules/.bin/vitest run --config tests/hosts/vitest.config.mjs

echo "== Hosts: Durable Objects in workerd (Miniflare), Deno KV in Deno and in Node (@deno/kv), the examples and their types"
node --test --test-reporter=spec tests/hosts/

echo "== HTTP: ratebound/http in Node, Deno and Bun servers, Hono (app.request and workerd), Express 5, Fastify 5, Koa 3 and NestJS 11 on loopback, a SvelteKit 2 app built with vite and served by vite preview, and the frameworks' types"
node --test --test-reporter=spec tests/http/
node_modules/.bin/tsc -p tests/http/types
node_modules/.bin/tsc -p tests/http/types/tsconfig.es2020.json

echo "== Redis: ratebound/redis on a real redis-server (node-redis and ioredis 5 and 6, @upstash/redis over a REST bridge), the decision script against the core (100,000+ decisions), the sliding window against @upstash/ratelimit's slidingWindow on the same server (20,000 random calls), and a real Redis Cluster (3 masters with replicas, a failover)"
node --test --test-reporter=spec tests/redis/
node_modules/.bin/tsc -p tests/redis/types

echo "== Next.js: examples/nextjs built with next build (Turbopack) and next build --webpack, served with next start against a real redis-server and the Upstash REST bridge"
node --test --test-reporter=spec tests/nextjs/

echo "== SQL hosts: ratebound/postgres on PGlite and a real PostgreSQL server (pg, postgres.js), its decision function against the core (100,000 random decisions on the real server), ratebound/sqlite on better-sqlite3 and D1 (Miniflare)"
node --test --test-reporter=spec tests/sql/

echo "== Outages: onStoreError (closed, open, memory fallback) and timeout on throwing, hanging and transactional stores, a redis-server killed, restarted and paused, a PostgreSQL server with killed connections and held locks"
node --test --test-reporter=spec tests/outage/
node_modules/.bin/tsc -p tests/outage/types

echo "== Convex component: ratebound/convex-component in convex-test (against @convex-dev/rate-limiter 0.3.2), its example, its types, the packed files"
node_modules/.bin/vitest run --config tests/convex-component/vitest.config.mjs
echo "== Convex component: @convex-dev/rate-limiter 0.3.2's and 0.4.0's own published tests (component, worker, client, react, shared) on ratebound's"
node_modules/.bin/vitest run --config tests/convex-component/published/vitest.config.mjs
node_modules/.bin/tsc -p examples/convex-component/convex
node_modules/.bin/tsc -p tests/convex-component/types
node --test --test-reporter=spec tests/convex-component/

echo "== TypeScript: limit names and result types are checked at compile time (5.9 and 7)"
node_modules/.bin/tsc -p tests/types/tsconfig.json
node node_modules/typescript-7/bin/tsc -p tests/types/tsconfig.json

echo "== TypeScript: the generated declarations against their snapshot; a strict app on lib es2020 and es2022 (skipLibCheck false)"
node --test --test-reporter=spec tests/types/
node_modules/.bin/tsc -p tests/types/strict-app/tsconfig.es2020.json
node_modules/.bin/tsc -p tests/types/strict-app/tsconfig.es2022.json

echo "== JS: tests on the built package"
node --test --test-reporter=spec tests/js/

echo "== Browser: RateLimitPreview against the server, and the playground in Chromium (playwright-core)"
node --test --test-reporter=spec tests/browser/

echo "== Reliability: bad input, faults, clocks, 10,000 failing calls of each kind, 3 fuzz targets of 25 s each, and the report"
node scripts/test-reliability.mjs
