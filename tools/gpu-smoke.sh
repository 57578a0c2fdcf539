#!/bin/sh
# The GPU check of the kernels and the capture path, for a machine with an NVIDIA GPU and a built dkb:
# preflight, the capture module's GPU tests, every decode fixture through `dkb run` (correctness against
# the float64 oracle, a short timing pass), compute-sanitizer memcheck and racecheck on small cases, and
# optionally the bench shapes. Writes a summary and a tarball of the bundles to $OUT (default
# /tmp/dkb-gpu). usage: tools/gpu-smoke.sh [--bench] [--sanitize] [FIXTURE...]
OUT=${OUT:-/tmp/dkb-gpu}
mkdir -p "$OUT/runs"
BENCH=0; SAN=0
while [ $# -gt 0 ]; do
  case "$1" in --bench) BENCH=1;; --sanitize) SAN=1;; *) break;; esac; shift
done
FIX="$*"; [ -n "$FIX" ] || FIX=$(ls fixtures/decode/*.json)
S="$OUT/summary.txt"
{ echo "== host"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; } > "$S" 2>&1
build/dkb preflight --json > "$OUT/preflight.json" 2>&1; echo "preflight rc=$?" >> "$S"
build/dkb preflight >> "$S" 2>&1
if [ -x build/dkb_tests ]; then
  DKB_TEST_FILTER='gpu_*' build/dkb_tests > "$OUT/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$S"
  grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|ERROR) " "$OUT/gpu-tests.log" >> "$S"
fi
echo "== decode fixtures" >> "$S"
for f in $FIX; do
  n=$(basename "$f" .json)
  build/dkb run "$f" -o "$OUT/runs/$n" --samples 20 --max-time 0.3 --warmup 2 > "$OUT/runs/$n.log" 2>&1
  rc=$?
  printf '%-40s rc=%d %s | %s | %s\n' "$n" "$rc" "$(grep -o 'level .*' "$OUT/runs/$n.log" | head -1)" \
    "$(grep -o 'correctness .*' "$OUT/runs/$n.log" | head -1)" "$(grep -o 'median .*' "$OUT/runs/$n.log" | head -1)" >> "$S"
  grep -q "dkb: error" "$OUT/runs/$n.log" && grep "dkb: error" "$OUT/runs/$n.log" >> "$S"
done
if [ "$SAN" = 1 ]; then
  echo "== compute-sanitizer" >> "$S"
  for n in flashmask-explicit-all-masked paged-csr-p1-more-splits-than-pages append-paged-sq3 window-sq2-contig gqa32-sq4-128-rows; do
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 build/dkb run "fixtures/decode/$n.json" -o "$OUT/san-$n-$tool" \
        --no-timing --quiet > "$OUT/san-$n-$tool.log" 2>&1
      printf '%-40s %-9s rc=%d %s\n' "$n" "$tool" "$?" "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san-$n-$tool.log" | head -1)" >> "$S"
    done
  done
fi
if [ "$BENCH" = 1 ]; then
  echo "== bench shapes" >> "$S"
  for f in fixtures/bench/*.json; do
    n=$(basename "$f" .json)
    build/dkb run "$f" -o "$OUT/runs/bench-$n" --max-time 2 > "$OUT/runs/bench-$n.log" 2>&1
    printf '%-32s rc=%d %s | %s | %s | %s\n' "$n" "$?" "$(grep -o 'level .*' "$OUT/runs/bench-$n.log" | head -1)" \
      "$(grep -o 'plan .*' "$OUT/runs/bench-$n.log" | head -1)" "$(grep -o 'median .*' "$OUT/runs/bench-$n.log" | head -1)" \
      "$(grep -o 'bandwidth .*TB/s' "$OUT/runs/bench-$n.log" | head -1)" >> "$S"
  done
fi
tar czf "$OUT/bundles.tgz" -C "$OUT" runs 2>/dev/null
cat "$S"
