#!/usr/bin/env bash
# The contributor path: `npm install` in a fresh clone of this repository builds the addon from source
# (the `prepare` script runs `napi build`), and the package then works. Takes 1-2 min (a full release
# build of the Rust crates); not part of npm test.
#
#   scripts/contributor-install.sh [repo-or-path]     (default: this checkout's committed HEAD)
set -euo pipefail
SRC=${1:-$(cd "$(dirname "$0")/.." && pwd)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/jsprof-clone-XXXXXX")
trap '[ -n "${KEEP_CLONE:-}" ] && echo "kept $WORK" || rm -rf "$WORK"' EXIT
passed=0
failed=0
check() { if eval "$2"; then echo "ok   $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi; }

git clone --quiet "$SRC" "$WORK/repo"
cd "$WORK/repo"
echo "cloned $(git log --oneline -1) into $WORK/repo"
check "a fresh clone has no binary" '! ls jsprof-node.*.node >/dev/null 2>&1'
# The clone's own target dir, so nothing is reused from another build.
export CARGO_TARGET_DIR="$WORK/repo/target"
start=$(date +%s)
if npm install --no-audit --no-fund > "$WORK/install.log" 2>&1; then rc=0; else rc=$?; fi
echo "npm install: exit $rc in $(( $(date +%s) - start )) s (log: $WORK/install.log)"
check "npm install exits 0" '[ $rc -eq 0 ]'
check "npm install ran prepare -> napi build" 'grep -q "napi build" "$WORK/install.log"'
check "the addon was built from source" 'ls jsprof-node.linux-x64-gnu.node >/dev/null 2>&1'
out=$(node -e "
  const { Profiler } = require('.')
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 1000 })
  const end = Date.now() + 100; let x = 0; while (Date.now() < end) x += Math.sqrt(x + 1)
  p.stop().then((t) => console.log(t.samples.length))" 2>&1 || true)
check "the built package profiles (samples: $out)" '[ "${out:-0}" -gt 0 ] 2>/dev/null'
[ $failed -eq 0 ] || tail -30 "$WORK/install.log"
echo "contributor-install: $passed passed, $failed failed"
[ $failed -eq 0 ]
