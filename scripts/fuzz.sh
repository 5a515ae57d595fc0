#!/usr/bin/env bash
# Coverage-guided fuzzing of jsprof-core's inputs with cargo-fuzz (libFuzzer).
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   SECONDS_PER_TARGET=600 scripts/fuzz.sh from_json builder_columns
#
# Targets live in crates/jsprof-core/fuzz/fuzz_targets/ (one file each, registered in fuzz/Cargo.toml).
# cargo-fuzz needs a nightly compiler (-Zsanitizer=address): it uses the `nightly` toolchain when rustup
# has one, otherwise the stable compiler with RUSTC_BOOTSTRAP=1 (which unlocks nightly flags on stable).
# Install once: cargo install cargo-fuzz --locked
# A crash leaves its input in crates/jsprof-core/fuzz/artifacts/<target>/ and fails this script;
# replay it with: cargo fuzz run <target> <file>   (in crates/jsprof-core/fuzz)
set -euo pipefail
cd "$(dirname "$0")/../crates/jsprof-core/fuzz"
SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-60}

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
  exit 2
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  TOOLCHAIN=(+nightly)
  echo "fuzz.sh: using $(rustc +nightly --version)"
else
  TOOLCHAIN=()
  export RUSTC_BOOTSTRAP=1
  echo "fuzz.sh: no nightly toolchain; using $(rustc --version) with RUSTC_BOOTSTRAP=1"
fi
# Our own target dir, out of the workspace's.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/target}

if [ $# -gt 0 ]; then TARGETS=("$@"); else mapfile -t TARGETS < <(cargo "${TOOLCHAIN[@]}" fuzz list); fi
failed=0
passed=0
for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t"
  [ -d "seeds/$t" ] && cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  echo "== fuzz $t for ${SECONDS_PER_TARGET}s =="
  rc=0
  cargo "${TOOLCHAIN[@]}" fuzz run "$t" "corpus/$t" -- \
    -max_total_time="$SECONDS_PER_TARGET" -max_len=16384 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 >"/tmp/fuzz-$t.log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|SUMMARY|stat::number_of_executed_units|stat::peak_rss_mb)|panicked|ERROR' \
    "/tmp/fuzz-$t.log" || tail -20 "/tmp/fuzz-$t.log"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz $t: FAILED (see /tmp/fuzz-$t.log, artifacts/$t/)"
    failed=$((failed + 1))
  else
    echo "fuzz $t: ok"
    passed=$((passed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
