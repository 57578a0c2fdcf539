#!/bin/bash
# trace-examples.sh - the H200 runs behind the `dkb trace` / `dkb check` note, in one command:
#
#   tools/trace-examples.sh OUT [STEP...]        STEPs (default, in this order): tests inject sdpa flex flashinfer profilers
#
# tests       the injection library's GPU tests (build/dkb_tests, gpu_inject*) and the trace group (its GPU-record
#             tests; the CPU-only check group needs numpy under /usr/bin/python3, which the H200 image lacks)
# inject      examples/cuda/inject_test under dkb trace: threads + streams + a graph (ok), a range open at exit
#             (open), exit() in a range after and before its kernel finished, a range pushed before cuInit;
#             and the program's output with and without the library (must be identical)
# sdpa        examples/torch/sdpa_decode.py under each SDPA backend (flash efficient cudnn math default) at the
#             bench shapes b16-t8192-g4 and b1-t32768-g4, each call dumped and checked
# flex        examples/torch/flex_decode.py: FlexAttention without and with a sliding-window block mask
# flashinfer  examples/torch/flashinfer_decode.py (skipped, with the reason, when flashinfer cannot be imported)
# profilers   dkb trace under ncu, and ncu / compute-sanitizer / nsys (when on PATH) under dkb trace
#
# Everything lands in OUT: one folder per run (records/, calls/*.json, summary.json, dumps/), NAME.log with
# the run's output, results.tsv, and SUMMARY.txt (tools/trace-summary.py), printed at the end. Each run has
# a time limit and the whole stops starting runs after DEADLINE seconds (default 540), so one command fits
# a 10-minute device call; rerun with the remaining STEPs into another OUT if it stopped early.
# Environment: PY (default /opt/torch/.venv/bin/python), DEADLINE.
set -u
OUT=${1:?usage: tools/trace-examples.sh OUT [STEP...]}
shift
STEPS=${*:-tests inject sdpa flex flashinfer profilers}
PY=${PY:-/opt/torch/.venv/bin/python}
DEADLINE=${DEADLINE:-540}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DKB=$ROOT/build/dkb
KEY=tests/data/trace/call-key.json
export PYTHONPATH=$ROOT/python:$ROOT/examples/torch${PYTHONPATH:+:$PYTHONPATH}
unset CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
printf 'run\trc\tseconds\tcommand\n' > "$OUT/results.tsv"

# run NAME LIMIT CMD...: CMD's output to OUT/NAME.log, its status and time to results.tsv
run() {
  local name=$1 limit=$2 start rc
  shift 2
  if [ $(( $(date +%s) - T0 )) -ge "$DEADLINE" ]; then
    printf '%s\tskipped\t0\tpast the %ss deadline\n' "$name" "$DEADLINE" >> "$OUT/results.tsv"
    return
  fi
  rm -rf "${OUT:?}/$name"
  start=$(date +%s)
  echo "== $name: $*" | tee "$OUT/$name.log"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >> "$OUT/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" $(( $(date +%s) - start )) "$*" >> "$OUT/results.tsv"
  tail -n 25 "$OUT/$name.log"
}
trace() { local name=$1 limit=$2; shift 2; run "$name" "$limit" "$DKB" trace -o "$OUT/$name" "$@"; }
# dkb check on every dump a run's program wrote (dkb trace checked them too: this is the printed report)
check_dumps() {
  for d in "$OUT/$1"/dumps/*/; do
    [ -f "$d/index.json" ] || continue
    "$DKB" check "$d" > "${d%/}.check.txt" 2>&1
    echo "   dkb check $(basename "$d"): exit $? ($(tail -n 1 "${d%/}.check.txt"))"
  done
}

for step in $STEPS; do
  case $step in
  tests)
    run tests-gpu 180 env DKB_TEST_FILTER='gpu_inject*' build/dkb_tests
    run tests-trace 180 env DKB_TEST_FILTER='trace_*' build/dkb_tests
    ;;
  inject)
    run inject-plain 60 build/examples/inject_test ok
    trace inject-ok 60 --range 'inject/*' --range 'dkb/call/*' -- build/examples/inject_test ok "$KEY"
    if diff <(grep '^thread' "$OUT/inject-plain.log") <(grep '^thread' "$OUT/inject-ok.log") > "$OUT/inject-diff.txt"; then
      echo "   program output identical with and without the injection library"
    else
      echo "   PROGRAM OUTPUT DIFFERS under dkb trace (see inject-diff.txt)"
    fi
    for m in open exit-in-range exit-unsynced nvtx-first; do
      trace "inject-$m" 60 --range 'inject/*' --range 'dkb/call/*' -- build/examples/inject_test "$m" "$KEY"
    done
    ;;
  sdpa)
    for b in flash efficient cudnn math default; do
      trace "sdpa-$b" 120 -- "$PY" examples/torch/sdpa_decode.py --backend "$b"
      check_dumps "sdpa-$b"
    done
    ;;
  flex)
    trace flex 200 -- "$PY" examples/torch/flex_decode.py
    check_dumps flex
    ;;
  flashinfer)
    trace flashinfer 200 -- "$PY" examples/torch/flashinfer_decode.py
    check_dumps flashinfer
    ;;
  profilers)
    # dkb trace refuses to replace another tool's CUDA injection; under ncu it sees ncu's
    if command -v ncu > /dev/null; then
      run ncu-outside 120 ncu --target-processes all -c 2 "$DKB" trace -o "$OUT/ncu-outside-trace" -- build/examples/inject_test ok
      trace ncu-inside 120 -- ncu -c 2 build/examples/inject_test ok
    else
      printf 'ncu\tskipped\t0\tncu is not on PATH\n' >> "$OUT/results.tsv"
    fi
    if command -v compute-sanitizer > /dev/null; then
      trace sanitizer-inside 120 -- compute-sanitizer --tool memcheck build/examples/inject_test ok
    else
      printf 'compute-sanitizer\tskipped\t0\tcompute-sanitizer is not on PATH\n' >> "$OUT/results.tsv"
    fi
    if command -v nsys > /dev/null; then
      trace nsys-inside 120 -- nsys profile -o "$OUT/nsys-report" --force-overwrite true build/examples/inject_test ok
    else
      printf 'nsys\tskipped\t0\tnsys is not on PATH\n' >> "$OUT/results.tsv"
    fi
    ;;
  *) echo "trace-examples.sh: unknown step '$step'" >&2 ;;
  esac
done
SUMPY=$(command -v python3 || echo "$PY")
"$SUMPY" tools/trace-summary.py "$OUT" | tee "$OUT/SUMMARY.txt"
