#!/bin/sh
# Captures real evidence bundles on a GPU machine into DEST/<fixture name>/ and validates each at level 6
# (with --source-root .). DEST defaults to fixtures/captured/bundles, under $OUT when it is set (a device
# machine's results folder, copied back over the checkout), where CI validates every bundle folder on
# every run (tests/test_captured.c): a new capture needs no list edited. Each run's log, which names the
# machine's paths, goes to ${OUT:-/tmp}/capture-logs/, never beside the bundles.
# With BACKEND set the runs select that backend (PLUGINS: the plugin libraries to load, space-separated)
# and the folders are DEST/<backend>-<fixture name>/.
# usage: [BACKEND=name PLUGINS="lib.so ..."] tools/capture-bundles.sh [DEST] FIXTURE...
DEST=${1:-${OUT:+$OUT/}fixtures/captured/bundles}; shift
LOGS=${OUT:-/tmp}/capture-logs
mkdir -p "$DEST" "$LOGS"
args=""
for p in $PLUGINS; do args="$args --plugin $p"; done
[ -n "$BACKEND" ] && args="$args --backend $BACKEND"
for f in "$@"; do
  n=${BACKEND:+$BACKEND-}$(basename "$f" .json)
  # shellcheck disable=SC2086  # args is a list of words
  build/dkb run "$f" -o "$DEST/$n" --max-time 1 --warmup 5 $args > "$LOGS/$n.log" 2>&1
  echo "$n: run rc=$?"
  build/dkb validate "$DEST/$n/bundle.json" --require-level 6 --source-root . | head -3
done
