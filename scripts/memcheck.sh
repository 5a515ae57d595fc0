#!/usr/bin/env bash
# Memory safety checks under valgrind (apt-get install -y valgrind):
#  1. every jsprof-core test binary (unit tests + property tests with PROPTEST_CASES=${PROPTEST_CASES:-32})
#     under valgrind memcheck: any error or definite leak fails;
#  2. node running scripts/memcheck/exercise.cjs against a debug build of the addon (symbols kept):
#     errors whose stack has a frame in the addon (jsprof / napi) fail; V8's and Node's own reports
#     are counted, not judged. scripts/memcheck/node.supp suppresses V8's conservative stack scan and
#     napi-rs's per-class constructor references (created once at load, kept until exit).
# MEMCHECK_SKIP_CORE=1 runs only part 2.
# Prints "memcheck: N passed, N failed". Logs go to target/memcheck/.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$CARGO_TARGET_DIR/memcheck
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed (apt-get install -y valgrind)" >&2; exit 2; }
passed=0
failed=0
VG=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no)

if [ -z "${MEMCHECK_SKIP_CORE:-}" ]; then
echo "== 1. jsprof-core tests under valgrind"
mapfile -t BINS < <(cargo test -p jsprof-core --no-run --message-format=json 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const l of s.split("\n")){try{const m=JSON.parse(l);if(m.executable&&m.profile&&m.profile.test)console.log(m.executable)}catch{}}})')
[ ${#BINS[@]} -gt 0 ] || { echo "memcheck: no test binaries built"; exit 2; }
for bin in "${BINS[@]}"; do
  name=$(basename "$bin")
  log="$OUT/$name.valgrind.log"
  PROPTEST_CASES=${PROPTEST_CASES:-32} "${VG[@]}" --log-file="$log" "$bin" --test-threads=1 -q >"$OUT/$name.out" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY" "$log" | tail -1 | sed 's/^==[0-9]*== //')
  leaks=$(grep -E "definitely lost:" "$log" | tail -1 | sed 's/^==[0-9]*== *//')
  tests=$(grep -E "^test result" "$OUT/$name.out" | tail -1)
  if [ $rc -eq 0 ]; then passed=$((passed + 1)); st=ok; else failed=$((failed + 1)); st=FAIL; fi
  echo "$st  $name: $tests | $summary | ${leaks:-no leaks reported}"
done

fi
echo "== 2. node + the addon (debug build) under valgrind"
cargo build -p jsprof-node --quiet 2>"$OUT/build.log" || { echo "FAIL debug build (see $OUT/build.log)"; exit 1; }
ADDON="$OUT/jsprof-node.debug.node"
cp "$CARGO_TARGET_DIR/debug/libjsprof_node.so" "$ADDON"
log="$OUT/node.valgrind.log"
# --jitless keeps V8's JIT (self-modifying code valgrind handles poorly) out of the picture; the
# inspector's CPU profiler samples the interpreter just the same.
NAPI_RS_NATIVE_LIBRARY_PATH="$ADDON" timeout 1200 valgrind --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --num-callers=30 --suppressions="$ROOT/scripts/memcheck/node.supp" --log-file="$log" \
  node --jitless --expose-gc scripts/memcheck/exercise.cjs >"$OUT/node.out" 2>&1
rc=$?
cat "$OUT/node.out"
# Each valgrind error block ends at a blank "==pid==" line; keep the blocks naming our code.
node -e '
  const fs = require("fs")
  const text = fs.readFileSync(process.argv[1], "utf8").split("\n").map((l) => l.replace(/^==\d+== ?/, "")).join("\n")
  const blocks = text.split(/\n\s*\n/).filter((b) => /^(Invalid|Conditional|Use of uninit|Syscall param|Mismatched|\d+ .*bytes in .* definitely lost)/m.test(b))
  const ours = blocks.filter((b) => /jsprof|libjsprof_node|napi::|napi_derive/.test(b))
  console.log(`node under valgrind: ${blocks.length} error/leak reports in all, ${ours.length} with a frame in the addon`)
  for (const b of ours.slice(0, 5)) console.log("---\n" + b)
  process.exitCode = ours.length ? 1 : 0
' "$log"
ours=$?
summary=$(grep -E "ERROR SUMMARY" "$log" | tail -1 | sed 's/^==[0-9]*== //')
echo "   node exit $rc | $summary"
if [ $rc -eq 0 ] && [ $ours -eq 0 ] && grep -q "^exercise:" "$OUT/node.out"; then
  passed=$((passed + 1)); echo "ok   node + addon: no error or definite leak in the addon"
else
  failed=$((failed + 1)); echo "FAIL node + addon (log: $log)"
fi
echo "memcheck: $passed passed, $failed failed"
[ $failed -eq 0 ]
