#!/usr/bin/env bash
# Mutation testing of the core's decision code (issue 24, item 12) and of its
# WebAssembly boundary's records (src/wasm/, compiled natively since issue 30), outside
# `npm test`: too slow for every run (about two hours on 2 busy cores).
#
# cargo mutants changes one operator, constant or function body at a time in
# the files below and runs the native suites (unit and integration tests;
# doctests are skipped, they compile each example and would triple the time)
# against each change. A mutant the suites still pass is "missed": either a
# test is missing, or the change cannot alter behaviour (the report in
# docs/mutants.md says which, for each one left).
#
#   bash scripts/mutants.sh                 # every file, one job, a copy of the tree
#   bash scripts/mutants.sh --file src/shard.rs   # narrower (extra args go to cargo mutants)
#   JOBS=2 bash scripts/mutants.sh
#   bash scripts/mutants.sh --in-place --file src/fast.rs   # this tree, its target/ (one job)
#
# Builds with Cargo.toml's `mutants` profile (the dev profile's checks,
# optimised, incremental). Results in mutants.out/ (git-ignored): outcomes.json,
# caught.txt, missed.txt, timeout.txt, unviable.txt. Prints the score:
# caught (timeouts included) over caught and missed, unviable mutants aside.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "mutants: installing cargo-mutants" >&2
  cargo install cargo-mutants
fi

FILES=(
  src/calendar.rs src/token_bucket.rs src/fixed_window.rs src/transition.rs src/decision.rs src/shard.rs src/figures.rs
  src/settle/grant.rs src/settle/charge.rs src/settle/settling.rs src/limiter.rs src/fast.rs src/plan.rs src/batch.rs
  src/records.rs src/value.rs
  src/wasm/io.rs src/wasm/decide.rs src/wasm/grants.rs src/wasm/value.rs src/wasm/pure.rs src/wasm/calculate.rs src/wasm/boundary.rs
)
file_args=()
if [[ " $* " != *" --file "* ]]; then
  for file in "${FILES[@]}"; do file_args+=(--file "$file"); done
fi

# `--in-place` (mutate this tree, reuse its target/) runs one job only.
jobs_args=(--jobs "${JOBS:-1}")
[[ " $* " == *" --in-place "* ]] && jobs_args=()

started=$(date +%s)
status=0
cargo mutants "${file_args[@]}" --profile mutants "${jobs_args[@]}" \
  --cargo-test-arg=--lib --cargo-test-arg=--tests "$@" || status=$?
elapsed=$(( $(date +%s) - started ))

# Exit codes: 0 all caught, 2 some missed, 3 some timed out; anything else is a failure to run.
if [[ $status -ne 0 && $status -ne 2 && $status -ne 3 ]]; then
  echo "mutants: cargo mutants failed (exit $status)" >&2
  exit "$status"
fi
count() { local found=0; [[ -f "mutants.out/$1.txt" ]] && found=$(grep -c . "mutants.out/$1.txt" || true); echo "${found:-0}"; }
caught=$(count caught) missed=$(count missed) timeout=$(count timeout) unviable=$(count unviable)
tested=$(( caught + timeout + missed ))
echo "mutants: ${tested} tested (${unviable} unviable aside): ${caught} caught, ${timeout} timed out, ${missed} missed;" \
  "score $(( tested > 0 ? 100 * (caught + timeout) / tested : 100 ))% in $(( elapsed / 60 )) min $(( elapsed % 60 )) s"
[[ $missed -eq 0 ]] || echo "mutants: the missed ones are in mutants.out/missed.txt"
