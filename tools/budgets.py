#!/usr/bin/python3
"""budgets.py - the budgets of docs/DESIGN.md, measured with the real binary (never by a timed test):

  run_wall      `dkb run` of a case of at least 512 MiB of K/V, end to end: under 10 s on the GPU machine
                (judged only when the run reached level 6, i.e. it did the GPU work it is budgeted for)
  run_memory    its peak resident memory: at most 1.5x the bytes of its device inputs (the bundle's
                ledgers: unique K/V + Q/O bytes; judged only from 256 MiB of K/V, where the process's
                fixed memory does not decide the ratio)
  validate_wall `dkb validate` of one bundle, without --source-root: under 50 ms (median of 5 runs, for
                each bundle given)

usage: tools/budgets.py [--dkb PATH] [--fixture FILE] [--out DIR] [BUNDLE...]
  defaults: build/dkb, fixtures/bench/b16-t8192-g4-contig.json, /tmp/dkb-budgets, fixtures/captured/bundles/*/bundle.json
Prints one line per budget (measured, limit, verdict: met, missed, or not judged and why). Exit 0 when
none is missed, 1 when one is, 2 on usage errors, 4 when `dkb run` left no bundle to read.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

RUN_WALL_S, MEM_RATIO, VALIDATE_MS = 10.0, 1.5, 50.0
MEM_MIN_KV = 256 << 20


def timed(argv):
    """Runs argv; returns (exit status, wall seconds, peak resident bytes of the child)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - t0, ru.ru_maxrss * 1024  # ru_maxrss: KiB


def line(name, measured, limit, verdict, what=""):
    print(f"{name:14s} {measured:>20s}  limit {limit:>13s}  {verdict}{'  ' + what if what else ''}")
    return verdict == "missed"


def main(argv):
    ap = argparse.ArgumentParser(prog="budgets.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dkb", default="build/dkb")
    ap.add_argument("--fixture", default="fixtures/bench/b16-t8192-g4-contig.json")
    ap.add_argument("--out", default="/tmp/dkb-budgets")
    ap.add_argument("bundles", nargs="*", metavar="BUNDLE")
    args = ap.parse_args(argv)  # usage errors exit 2
    dkb, fixture, out = args.dkb, args.fixture, args.out
    bundles = args.bundles or sorted(glob.glob("fixtures/captured/bundles/*/bundle.json"))

    missed = False
    run_dir = os.path.join(out, "run")
    shutil.rmtree(run_dir, ignore_errors=True)  # never read an earlier run's bundle
    rc, wall, rss = timed([dkb, "run", fixture, "-o", run_dir])
    try:
        with open(os.path.join(run_dir, "bundle.json")) as f:
            b = json.load(f)
        level = b["claimed_level"]
        kv = b["ledgers"]["unique_kv_bytes"]
        qo = b["ledgers"]["q_o_bytes"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"budgets: {dkb} run {fixture} (exit {rc}) left no readable bundle in {run_dir}: {e}", file=sys.stderr)
        return 4
    print(f"dkb run {fixture}: exit {rc}, level {level}, {os.cpu_count()} CPUs")
    judge = rc == 0 and level == 6
    missed |= line("run_wall", f"{wall:.2f} s", f"{RUN_WALL_S:.0f} s",
                   ("met" if wall <= RUN_WALL_S else "missed") if judge else
                   f"not judged: exit {rc}, level {level} (the budget is for a run that did its GPU work)")
    inputs = kv + qo
    ratio = rss / inputs if inputs > 0 else float("inf")
    missed |= line("run_memory", f"{rss / 1e6:.0f} MB = {ratio:.2f}x", f"{MEM_RATIO:.1f}x {inputs / 1e6:.0f} MB",
                   ("met" if ratio <= MEM_RATIO else "missed") if rc == 0 and kv >= MEM_MIN_KV else
                   f"not judged: exit {rc}, {kv} bytes of K/V (from {MEM_MIN_KV})")
    for path in bundles:
        runs = [timed([dkb, "validate", path]) for _ in range(5)]
        codes = sorted({r[0] for r in runs})
        ms = statistics.median(r[1] for r in runs) * 1e3
        missed |= line("validate_wall", f"{ms:.1f} ms", f"{VALIDATE_MS:.0f} ms",
                       ("met" if ms <= VALIDATE_MS else "missed") if codes == [0] else
                       f"not judged: validate exited {codes}", path)
    if not bundles:
        line("validate_wall", "-", f"{VALIDATE_MS:.0f} ms", "not judged: no bundle given or captured")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
