#!/bin/sh
# Nsight Compute profile of one decode call's dkb kernels (producer, and combine where the plan has one),
# for a machine with an NVIDIA GPU, ncu on PATH and a built dkb: the sections that say what stands between
# a call and the memory roofline (../shared/notes/decode-performance.md, section 9): DRAM throughput and
# bytes, occupancy, warp stall reasons, and the stall samples per SASS instruction.
# Clocks are left free (--clock-control none) so durations match the ones dkb bench times; ncu flushes the
# caches before each replay pass.
# Writes DIR/NAME.ncu-rep, DIR/NAME.txt (the sections), DIR/NAME-source.csv (SASS with stall samples) and
# DIR/NAME-summary.md (tools/ncu-summary.py: the figures docs/profiles/ keeps).
# usage: tools/ncu-case.sh FIXTURE DIR [dkb run arguments...]
#   KERNELS (environment): ncu's kernel filter, default regex:decode_split_kv; a plugin's kernels need their
#   own, e.g. KERNELS=regex:BatchDecode tools/ncu-case.sh F DIR --backend flashinfer_decode --plugin SO
# NAME is FIXTURE's base name, or TAG (environment) when set, so two backends' profiles of one fixture coexist
# exit: 0 report written, 1 ncu wrote no report, 2 usage, 4 no ncu on PATH or DIR not made
set -u
[ $# -ge 2 ] || { echo "usage: tools/ncu-case.sh FIXTURE DIR [dkb run arguments...]" >&2; exit 2; }
F=$1; D=$2; shift 2
command -v ncu > /dev/null || { echo "tools/ncu-case.sh: no ncu on PATH" >&2; exit 4; }
mkdir -p "$D" || exit 4
N=${TAG:-$(basename "$F" .json)}
# Two launches after the first two (the first call's producer and combine, or the first two calls of a
# one-kernel plan): a producer and its combine, or two calls of a one-kernel plan, with the first call's
# one-time costs behind them.
ncu --clock-control none -k "${KERNELS:-regex:decode_split_kv}" --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats --section SourceCounters \
  --metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum \
  -f -o "$D/$N" build/dkb run "$F" -o "$D/$N-run" --samples 20 --max-time 0.5 --quiet "$@" > "$D/$N-ncu.log" 2>&1
rc=$?
[ -f "$D/$N.ncu-rep" ] || { echo "tools/ncu-case.sh: ncu wrote no report (rc=$rc, see $D/$N-ncu.log)" >&2; exit 1; }
ncu --import "$D/$N.ncu-rep" --print-details all > "$D/$N.txt" 2>&1
ncu --import "$D/$N.ncu-rep" --page source --csv --print-source sass > "$D/$N-source.csv" 2>&1
# The figures docs/profiles/ keeps (the report and its CSV are megabytes).
/usr/bin/python3 "$(dirname "$0")/ncu-summary.py" "$D/$N" > "$D/$N-summary.md" 2>> "$D/$N-ncu.log"
exit 0
