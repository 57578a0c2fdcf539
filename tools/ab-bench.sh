#!/bin/sh
# A/B of two dkb builds on the same fixtures and GPU: ROUNDS rounds (default 2), each the base build's
# `dkb bench` and then the new build's, so that drift of the GPU's clocks and temperature over the
# minutes falls on both; then `dkb compare` of each round's pair. docs/kernels.md's A/B tables were
# measured this way. Build the base from the commit before the change (keep a copy of its build/dkb),
# and change nothing else between the two. A switch read from the environment (a trial build's) is A/B'd
# in one build: pass two executable scripts, each `exec`ing that dkb with its setting. Several new arms
# (NEW_DKB,NEW2_DKB,...: comma-separated) run in every round after the base, each compared with it.
# Writes DIR/base-R/ and DIR/new-R/ (bench -o, without the per-case bundles), DIR/compare-R.txt (arm
# k > 1: DIR/newk-R/, DIR/comparek-R.txt), and DIR/ab.tgz holding all of them: one file, for a machine
# that sends back only a few.
# usage: [ROUNDS=n] tools/ab-bench.sh BASE_DKB NEW_DKB[,NEW_DKB...] DIR FIXTURE... [-- bench arguments...]
# exit: the worst `dkb compare` exit of the rounds and arms (0 no case slower beyond the noise, 1 one was, 3 or
# 4 as compare's), 2 usage or a bench that could not run
set -u
[ $# -ge 4 ] || { echo "usage: [ROUNDS=n] tools/ab-bench.sh BASE_DKB NEW_DKB[,NEW_DKB...] DIR FIXTURE... [-- bench arguments...]" >&2; exit 2; }
A=$1; ARMS=$2; D=$3; shift 3
# arm i: its name and its dkb: 0 the base, 1 .. n (new, new2, ...) the i-th of the comma-separated list
n=$(($(printf %s "$ARMS" | tr -cd , | wc -c) + 1))
arm() {
  if [ "$1" -eq 0 ]; then bin=$A; name=base; return; fi
  bin=$(printf '%s\n' "$ARMS" | cut -d, -f"$1"); if [ "$1" -eq 1 ]; then name=new; else name=new$1; fi
}
k=0
while [ $k -le $n ]; do
  arm $k
  [ -x "$bin" ] || { echo "tools/ab-bench.sh: $bin is not an executable dkb" >&2; exit 2; }
  k=$((k + 1))
done
FX=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do FX="$FX $1"; shift; done
[ $# -gt 0 ] && shift  # the "--"; what is left goes to every bench
[ -n "$FX" ] || { echo "tools/ab-bench.sh: no fixture" >&2; exit 2; }
mkdir -p "$D" || exit 2
worst=0
r=1
while [ "$r" -le "${ROUNDS:-2}" ]; do
  k=0
  while [ $k -le $n ]; do
    arm $k
    # shellcheck disable=SC2086  # FX is a list of paths
    "$bin" bench $FX -o "$D/$name-$r" "$@" > "$D/$name-$r.log" 2>&1
    [ -f "$D/$name-$r/bench.json" ] || { echo "tools/ab-bench.sh: $bin bench wrote no bench.json (see $D/$name-$r.log)" >&2; exit 2; }
    rm -rf "$D/$name-$r/cases"
    k=$((k + 1))
  done
  k=1
  while [ $k -le $n ]; do
    arm $k
    "$bin" compare "$D/base-$r" "$D/$name-$r" > "$D/compare${name#new}-$r.txt" 2>&1
    rc=$?
    [ $rc -gt $worst ] && worst=$rc
    k=$((k + 1))
  done
  r=$((r + 1))
done
rm -f "$D/ab.tgz"
tar czf "$D.ab.tgz" -C "$D" . && mv "$D.ab.tgz" "$D/ab.tgz"
cat "$D"/compare*-*.txt
exit $worst
