#!/usr/bin/env python3
"""timeline-summary.py - what a per-CTA %globaltimer timeline of one producer launch says about where the
call's time goes (docs/profiles/timeline-553bbaa/: the instrumentation patch and its CSVs).

Each CSV row is one CTA: index, entry, first tile arrived (thread 0 past its first wait), loop end, exit
(globaltimer ns), SM id. Prints, per file: the span from the first entry to the last exit; entry -> first
tile, loop and epilogue medians and the mean lifetime (entry -> exit) for the CTAs that started with the
launch and for the later ones (where CTAs a slot run in turn, the later ones' lifetime is the call's cost); the
time from a CTA's exit to its SM's next CTA's first tile; for a one-wave launch the spread of the SMs'
mean loop times and how far two CTAs of one SM differ; and, every 2 us over the last 20 us, how many SMs
and CTAs are between entry and loop end (streaming), which is where the call ends below the DRAM's rate.
usage: tools/timeline-summary.py FILE.csv..."""
import collections
import statistics
import sys


def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(f * len(v)))] if v else float("nan")


def summary(path):
    r = [tuple(map(int, line.split(","))) for line in open(path) if line.strip()]
    t0 = min(x[1] for x in r)
    end = (max(x[4] for x in r) - t0) / 1e3
    print(f"== {path}: {len(r)} CTAs, span {end:.2f} us (first entry to last exit)")
    later = [x for x in r if x[1] - t0 >= 500]  # entered 0.5 us or more after the first: not with the launch
    for name, s in (("at launch", [x for x in r if x[1] - t0 < 500]), ("later", later)):
        if s:
            print(f"  {name:9s} {len(s):5d} CTAs: entry -> first tile p50 {q([(x[2] - x[1]) / 1e3 for x in s], .5):.2f} us,"
                  f" loop p50 {q([(x[3] - x[2]) / 1e3 for x in s], .5):.2f}, epilogue p50 {q([(x[4] - x[3]) / 1e3 for x in s], .5):.2f},"
                  f" entry -> exit mean {statistics.mean((x[4] - x[1]) / 1e3 for x in s):.2f}")
    by_sm = collections.defaultdict(list)
    for x in r:
        by_sm[x[5]].append(x)
    hand = []
    for x in later:  # from the latest exit on its SM before it entered to its first tile
        prev = [y[4] for y in by_sm[x[5]] if y[4] <= x[1]]
        if prev:
            hand.append((x[2] - max(prev)) / 1e3)
    if hand:
        print(f"  exit -> the SM's next first tile: p10/p50/p90 {q(hand, .1):.2f}/{q(hand, .5):.2f}/{q(hand, .9):.2f} us")
    if not later:
        means = [statistics.mean((x[3] - x[2]) / 1e3 for x in xs) for xs in by_sm.values()]
        pairs = [abs(xs[0][3] - xs[0][2] - xs[1][3] + xs[1][2]) / 1e3 for xs in by_sm.values() if len(xs) == 2]
        print(f"  SMs' mean loop time p10/p50/p90 {q(means, .1):.2f}/{q(means, .5):.2f}/{q(means, .9):.2f} us;"
              f" two CTAs of one SM differ by {q(pairs, .5):.2f} us (median)")
    last = sorted(max(x[4] for x in xs) for xs in by_sm.values())
    print(f"  each SM's last exit: p10 {(q(last, .1) - t0) / 1e3:.2f}, p50 {(q(last, .5) - t0) / 1e3:.2f}, last {(last[-1] - t0) / 1e3:.2f} us")
    cells = []
    for k in range(int(end) - 20, int(end) + 1, 2):
        t = t0 + k * 1000
        live = [x for x in r if x[1] <= t < x[3]]
        cells.append(f"{k}:{len(set(x[5] for x in live))}/{len(live)}")
    print("  streaming SMs/CTAs at t us: " + " ".join(cells))


for p in sys.argv[1:]:
    summary(p)
