#!/bin/sh
# `make fuzz`: runs each libFuzzer target build-fuzz/fuzz-NAME for SECONDS (tests/fuzz/NAME.c says what
# it checks). Corpora live in build-fuzz/corpus-NAME and grow between runs; they are seeded from
# fixtures/: decode and bench fixtures, contract fixtures, the captured bundles with every array cut to
# 16 elements (so one execution stays short), the captured bench results, every bench matrix of
# fixtures/bench/ (matrix.json, quick.json, serving.json: its backends and read_fraction targets). An input
# that crashes, leaks, trips a sanitizer, runs over 10 s or is refused without a malformed-input error
# is kept as build-fuzz/NAME-*, and the run fails (exit 1). With FUZZ_RUNS=N set (CI), each target
# instead runs N inputs from seed 1: the same inputs on every run of a fresh clone, so a finding
# reproduces.
# usage: [FUZZ_RUNS=N] tools/fuzz.sh SECONDS NAME...
set -e
cd "$(dirname "$0")/.."
secs=$1
shift
budget="-max_total_time=$secs"
norand=""
if [ -n "${FUZZ_RUNS:-}" ]; then
  budget="-runs=$FUZZ_RUNS -seed=1 -use_cmp=0"
  # libFuzzer's comparison hints can hold pointer values: without them (-use_cmp=0), and without address
  # randomization, two runs from the same seed try the same inputs
  ! setarch "$(uname -m)" -R true 2>/dev/null || norand="setarch $(uname -m) -R"
fi
for t in "$@"; do
  c=build-fuzz/corpus-$t
  mkdir -p "$c"
  case $t in
    fixture) cp fixtures/decode/*.json fixtures/bench/*.json "$c/" ;;
    contract) cp fixtures/contracts/*.json "$c/" ;;
    bundle) /usr/bin/python3 - "$c" <<'PY'
import glob, json, os, sys
def cut(v):
    if isinstance(v, list): return [cut(x) for x in v[:16]]
    if isinstance(v, dict): return {k: cut(x) for k, x in v.items()}
    return v
for f in sorted(glob.glob("fixtures/captured/bundles/*/bundle.json")):
    with open(os.path.join(sys.argv[1], os.path.basename(os.path.dirname(f)) + ".json"), "w") as o:
        json.dump(cut(json.load(open(f))), o, indent=1)
PY
    ;;
    benchrun) for f in fixtures/captured/bench/*/bench.json; do cp "$f" "$c/$(basename "$(dirname "$f")").json"; done
      # the captured runs' clocks are never slowed (or absent): one copy carries each kind (slowed, not slowed, none)
      /usr/bin/python3 - "$c" <<'PY'
import json, os, sys
b = json.load(open("fixtures/captured/bench/early-slot-index-b/bench.json"))
b["cases"] = b["cases"][:4]
b["cases"][0]["clocks"] = {"sm_mhz_before": 1980, "sm_mhz_after": 1755, "event_reasons": ["sw_power_cap"], "slowed": True}
b["cases"][1]["clocks"] = {"sm_mhz_before": 1980, "sm_mhz_after": None, "event_reasons": [], "slowed": False}
b["cases"][2]["clocks"] = None
json.dump(b, open(os.path.join(sys.argv[1], "bench-clocks.json"), "w"), indent=1)
PY
      ;;
    matrix) cp $(grep -l '"dkb.bench-matrix/v1"' fixtures/bench/*.json) "$c/"  # matrix, quick, serving
      # the matrix under test lives beside links to the fixtures its cases name
      export DKB_FUZZ_DIR="$PWD/build-fuzz/bench-fixtures"
      mkdir -p "$DKB_FUZZ_DIR"
      for f in fixtures/bench/*.json; do ln -sf "$PWD/$f" "$DKB_FUZZ_DIR/"; done ;;
  esac
  rm -f build-fuzz/"$t"-*
  echo "fuzz: $t, $budget ($(ls "$c" | wc -l) inputs in $c)"
  if ! $norand build-fuzz/fuzz-"$t" $budget -timeout=10 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix=build-fuzz/"$t"- "$c" > build-fuzz/fuzz-"$t".log 2>&1; then
    tail -40 build-fuzz/fuzz-"$t".log >&2
    echo "fuzz: $t failed; the input is $(ls build-fuzz/"$t"-* 2>/dev/null | head -1)" >&2
    exit 1
  fi
  grep -E "^Done|stat::number_of_executed_units" build-fuzz/fuzz-"$t".log | head -1
done
rm -f /tmp/dkb-fuzz-benchrun-*.json build-fuzz/bench-fixtures/matrix-*.json
echo "fuzz: no findings"
