#!/bin/sh
# The GPU check of the kernels and the capture path, for a machine with an NVIDIA GPU and a built dkb:
# preflight, the SASS check of the async copies (tools/sass-check.py), the capture module's GPU tests,
# every decode fixture through `dkb run` (correctness against the float64 oracle, a short timing pass),
# compute-sanitizer memcheck and racecheck on small cases, and optionally the bench matrix with --counters
# (compared with the card's baseline in fixtures/captured/bench/index.json, a kept run with --counters) and
# docs/DESIGN.md's budgets (tools/budgets.py).
# Everything lands in $OUT (default /tmp/dkb-gpu): summary.txt plus one tarball of the bundles and logs.
# --asan DIR runs the host code of the GPU path under AddressSanitizer and UndefinedBehaviorSanitizer:
# DIR is `make build-asan/carry` (the ASan build's dkb and dkb_tests with the two sanitizer runtimes,
# which a GPU machine does not have).
# usage: tools/gpu-smoke.sh [--bench] [--sanitize] [--budgets] [--asan DIR] [--no-fixtures] [FIXTURE...]
OUT=${OUT:-/tmp/dkb-gpu}
W="$OUT/work"
mkdir -p "$W/runs"
BENCH=0; SAN=0; BUDGETS=0; FIXTURES=1; ASAN=""
while [ $# -gt 0 ]; do
  case "$1" in --bench) BENCH=1;; --sanitize) SAN=1;; --budgets) BUDGETS=1;; --no-fixtures) FIXTURES=0;;
    --asan) ASAN=$(cd "$2" && pwd) || exit 2; shift;; *) break;; esac; shift
done
FIX="$*"; [ -n "$FIX" ] || FIX=$(ls fixtures/decode/*.json)
S="$OUT/summary.txt"
{ echo "== host"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; } > "$S" 2>&1
build/dkb preflight --json > "$W/preflight.json" 2>&1; echo "preflight rc=$?" >> "$S"
# The tests' schema checks run /usr/bin/python3 with jsonschema, which the H200 machine lacks (Python 3.12.3
# there): a copy of Debian's pure-Python python3-jsonschema 4.10 (/usr/lib/python3/dist-packages/{jsonschema,
# attr,attrs,pyrsistent}) on PYTHONPATH serves.
if /usr/bin/python3 -c "import jsonschema" 2> /dev/null; then echo "python jsonschema: present" >> "$S"
else echo "python jsonschema: MISSING, so the tests that check a schema fail here (see this script's comment)" >> "$S"; fi
build/dkb preflight >> "$S" 2>&1
# every compiled instance, reached by a fixture or not: async copies with an unwritten descriptor
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass build/dkb | python3 tools/sass-check.py >> "$S" 2>&1; echo "sass-check rc=$?" >> "$S"
else echo "sass-check: no cuobjdump on this machine" >> "$S"; fi
if [ -x build/dkb_tests ]; then
  DKB_TEST_FILTER='gpu_*' build/dkb_tests > "$W/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$S"
  grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|ERROR|INFO) " "$W/gpu-tests.log" >> "$S"
fi
if [ "$FIXTURES" = 1 ]; then
  echo "== decode fixtures" >> "$S"
  for f in $FIX; do
    n=$(basename "$f" .json)
    build/dkb run "$f" -o "$W/runs/$n" --samples 20 --max-time 0.3 --warmup 2 > "$W/runs/$n.log" 2>&1
    rc=$?
    printf '%-40s rc=%d %s | %s | %s\n' "$n" "$rc" "$(grep -o 'level .*' "$W/runs/$n.log" | head -1)" \
      "$(grep -o 'correctness .*' "$W/runs/$n.log" | head -1)" "$(grep -o 'median .*' "$W/runs/$n.log" | head -1)" >> "$S"
    grep "dkb: error" "$W/runs/$n.log" >> "$S"
    build/dkb validate "$W/runs/$n/bundle.json" --require-level 6 > "$W/runs/$n.validate" 2>&1 || cat "$W/runs/$n.validate" >> "$S"
  done
fi
if [ "$SAN" = 1 ]; then
  echo "== compute-sanitizer" >> "$S"
  for n in flashmask-explicit-all-masked paged-csr-p1-more-splits-than-pages paged-p1-long-page-list-d256 append-paged-sq3 \
      window-sq2-contig gqa32-sq4-128-rows paged-dense-p16-capacity two-heads-paged-p1 two-heads-paged-p16-d256-fp16 \
      two-heads-ragged-d64 four-heads-paged-p16-g8 four-heads-ragged-fp16-window four-heads-paged-p1 \
      three-per-sm-paged-p16 three-per-sm-ragged-fp16-g8; do
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 build/dkb run "fixtures/decode/$n.json" -o "$W/san-$n-$tool" \
        --no-timing --quiet > "$W/san-$n-$tool.log" 2>&1
      printf '%-40s %-9s rc=%d %s\n' "$n" "$tool" "$?" "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/san-$n-$tool.log" | head -1)" >> "$S"
    done
  done
fi
if [ -n "$ASAN" ]; then
  { echo "== ASan + UBSan: the host code of the GPU path ($ASAN)"
    echo "(rc 99: the process wrote a sanitizer report, at the latest at exit; the asan line below says whose)"; } >> "$S"
  A="$W/asan"
  mkdir -p "$A"
  (
    export LD_LIBRARY_PATH="$ASAN:$LD_LIBRARY_PATH"
    export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:exitcode=99:fast_unwind_on_malloc=0:log_path=$A/report"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$A/report"
    "$ASAN/dkb" preflight > "$A/preflight.log" 2>&1; echo "preflight rc=$?"
    for n in default many-slots-combine-dsplit window-sink-paged append-paged-sq3 flashmask-documents cluster-lse-o-fp32-sq2 fp32-reference-g4; do
      "$ASAN/dkb" run "fixtures/decode/$n.json" -o "$A/$n" --max-time 0.3 > "$A/$n.log" 2>&1; r=$?
      "$ASAN/dkb" validate "$A/$n/bundle.json" > "$A/$n.validate" 2>&1
      echo "$n run rc=$r validate rc=$?"
    done
    "$ASAN/dkb" run fixtures/decode/default.json -o "$A/graph" --graph --max-time 0.3 > "$A/graph.log" 2>&1; echo "default --graph rc=$?"
    "$ASAN/dkb" bench fixtures/bench/b4-t4096-g4-contig.json fixtures/bench/b4-t4096-g4-paged16.json -o "$A/bench" --max-time 0.3 > "$A/bench.log" 2>&1; echo "bench rc=$?"
    # the GPU tests in this process (trace, timing, NVML); the counters ones are left out: CUPTI's profiler
    # host library is loaded with RTLD_DEEPBIND, which ASan refuses (--counters is left out for the same reason)
    DKB_TEST_FILTER='gpu_*' DKB_TEST_SKIP='*counters*' "$ASAN/dkb_tests" > "$A/gpu-tests.log" 2>&1; echo "gpu tests rc=$?"
  ) >> "$S" 2>&1
  # A leak allocated by libcupti itself (frame #1, CUPTI's own bookkeeping: seen after graph replays) is
  # reported but not held against dkb; every other report is.
  python3 - "$A" >> "$S" 2>&1 <<'PY' || echo "asan: dkb findings (reports in work/asan)" >> "$S"
import glob, re, sys
own = cupti = 0
for f in sorted(glob.glob(sys.argv[1] + "/report.*")):
    text = open(f).read()
    blocks = re.split(r"\n(?=Direct leak|Indirect leak)", text)
    for b in blocks[1:]:
        first = re.search(r"#1 0x[0-9a-f]+ .*", b)
        if first and "libcupti.so" in first.group(0): cupti += 1
        else: own += 1
    not_leaks = bool(text.strip()) and "ERROR: LeakSanitizer" not in text  # e.g. ASan refusing a library
    if "ERROR: AddressSanitizer" in text or "runtime error" in text or not_leaks:
        own += 1
print("asan: %d finding(s) in dkb, %d leak(s) allocated by libcupti itself" % (own, cupti))
sys.exit(1 if own else 0)
PY
fi
if [ "$BUDGETS" = 1 ]; then
  echo "== budgets (docs/DESIGN.md)" >> "$S"
  python3 tools/budgets.py --out "$W/budgets" >> "$S" 2>&1; echo "budgets rc=$?" >> "$S"
fi
if [ "$BENCH" = 1 ]; then
  echo "== bench matrix" >> "$S"
  # --counters: each case's DRAM bytes, so a figure L2 served across calls is not judged as the DRAM's
  build/dkb bench --matrix fixtures/bench/matrix.json --counters -o "$W/bench" ${BENCH_ARGS:-} > "$W/bench.log" 2>&1
  echo "bench rc=$?" >> "$S"
  cat "$W/bench.log" >> "$S"
  # against the kept run the index calls this card's baseline, which recorded each case's noise (another
  # instance of the card: read its warnings); tests/captured_check.py needs only Python's standard library
  CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  if BASE=$(python3 tests/captured_check.py baseline "$CARD" 2>> "$S"); then
    echo "== compare with $BASE" >> "$S"
    build/dkb compare "$BASE" "$W/bench/bench.json" >> "$S" 2>&1; echo "compare rc=$?" >> "$S"
  else
    echo "compare skipped: no baseline of $CARD (keep this run as one: fixtures/captured/bench/index.json)" >> "$S"
  fi
  cp "$W/bench/bench.csv" "$W/bench/bench.json" "$W/bench/roofline-fraction.svg" "$OUT/" 2>/dev/null
fi
tar czf "$OUT/work.tgz" -C "$OUT" work 2>/dev/null && rm -rf "$W"
cat "$S"
