#!/bin/sh
# Captures real evidence bundles on a GPU machine into DEST/<fixture name>/ (default $OUT/captured)
# and validates each at level 6. The bundles are then committed under fixtures/captured/, where CI
# validates them on every run. usage: tools/capture-bundles.sh [DEST] FIXTURE...
DEST=${1:-${OUT:-/tmp}/captured}; shift
mkdir -p "$DEST"
for f in "$@"; do
  n=$(basename "$f" .json)
  build/dkb run "$f" -o "$DEST/$n" --max-time 1 --warmup 5 > "$DEST/$n.log" 2>&1
  echo "$n: run rc=$?"
  build/dkb validate "$DEST/$n/bundle.json" --require-level 6 --source-root . | head -3
done
