#!/usr/bin/python3
"""Independent check of a `dkb bench` result: every figure recomputed from the raw medians and byte
counts, every target's value and verdict re-derived from the cases (harness/bench.c is the implementation
under test; this file shares no code with it).
usage: bench_check.py BENCH_JSON   (exit 0 when consistent; otherwise one line per disagreement, exit 1)"""
import json
import math
import re
import sys


# NVML clock event reasons that hold the clocks down (power, thermal, hardware, the power brake); not
# gpu_idle, sync_boost or the application and display clock settings.
SLOWS = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}


def close(a, b):
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def visible_bytes(c):
    """The bytes a case must read: its visible K/V + Q + O."""
    return c["visible_kv_bytes"] + c["io_bytes"] - c["kv_bytes"]


def noise_disagreements(t, ok, got, c, other):
    """A target's noise band (100 x the compared medians' summed rel_stdev, at least 0.5 %; a fraction
    floor: its case's alone) and whether got clears it, recomputed."""
    what = f"{t['case']} {t['target']}"
    spreads = [x.get("rel_stdev") for x in (c, other) if x is not None]
    band = max(0.5, 100 * sum(spreads)) if ok and None not in spreads else None
    beyond = None
    if band is not None:
        # a % difference of two medians in points; a fraction floor (no other median) in % of want
        margin = abs(got - t["want"]) if other is not None else 100 * abs(got / t["want"] - 1)
        beyond = margin > band
    out = []
    if (t.get("noise_pct") is None) != (band is None) or (band is not None and not close(t["noise_pct"], band)):
        out.append(f"{what}: noise_pct {t.get('noise_pct')}, recomputed {band}")
    if t.get("beyond_noise") != beyond:
        out.append(f"{what}: beyond_noise {t.get('beyond_noise')}, recomputed {beyond}")
    return out


def main():
    doc = json.load(open(sys.argv[1]))
    bad = []
    roof = doc["roofline"]
    if roof["measured"] and not close(roof["tbps"], roof["bytes"] / (roof["median_us"] * 1e-6) / 1e12):
        bad.append("roofline: tbps is not bytes / median")
    # side by side, one name is one call under several backends: a case is its name and its backend
    cases = {(c["name"], c.get("backend")): c for c in doc["cases"]}

    def timed(c):
        """A median of a case that ran (older runs recorded 0 for none; these record null)."""
        return c["ran"] and c["median_us"] is not None and c["median_us"] > 0

    def measured6(c):
        return timed(c) and c["level"] == 6

    for c in doc["cases"]:
        clk = c.get("clocks")  # absent in runs before it was recorded, null when NVML reported none
        if clk is not None and clk["slowed"] != any(r in SLOWS for r in clk["event_reasons"]):
            bad.append(f"{c['name']}: clocks.slowed is {clk['slowed']} with event reasons {clk['event_reasons']}")
        if ("dram_read_bytes" in c) != ("dram_kv_ratio" in c):
            bad.append(f"{c['name']}: dram_read_bytes and dram_kv_ratio come together (--counters)")
        elif "dram_read_bytes" in c:
            want = c["dram_read_bytes"] / c["visible_kv_bytes"] if c["visible_kv_bytes"] > 0 else None
            if (want is None) != (c["dram_kv_ratio"] is None) or (want is not None and not close(c["dram_kv_ratio"], want)):
                bad.append(f"{c['name']}: dram_kv_ratio {c['dram_kv_ratio']} is not dram_read_bytes / visible_kv_bytes = {want}")
        if not timed(c):
            if c.get("read_us") is not None:
                bad.append(f"{c['name']}: read_us for a case with no median")
            # a case that was not timed has no figure: null, never a 0 that reads as one
            for k in ("median_us", "tbps", "roofline_fraction", "visible_tbps", "visible_roofline_fraction"):
                if c[k] is not None:
                    bad.append(f"{c['name']}: {k} {c[k]} for a case that was not timed: null")
            continue
        s = c["median_us"] * 1e-6
        tbps = c["io_bytes"] / s / 1e12
        vis = visible_bytes(c) / s / 1e12
        if not close(c["tbps"], tbps):
            bad.append(f"{c['name']}: tbps {c['tbps']} is not io_bytes / median = {tbps}")
        if not close(c["visible_tbps"], vis):
            bad.append(f"{c['name']}: visible_tbps {c['visible_tbps']} is not {vis}")
        if roof["measured"]:
            if not close(c["roofline_fraction"], tbps / roof["tbps"]):
                bad.append(f"{c['name']}: roofline_fraction is not tbps / roofline")
            if not close(c["visible_roofline_fraction"], vis / roof["tbps"]):
                bad.append(f"{c['name']}: visible_roofline_fraction is not visible_tbps / roofline")
        elif c["roofline_fraction"] is not None or c["visible_roofline_fraction"] is not None:
            bad.append(f"{c['name']}: a roofline fraction without a measured roofline: null")
        floor = doc.get("launch_floor", {}).get("graph") if c.get("graph") else doc.get("launch_floor")
        measured = roof["measured"] and floor is not None and floor["measured"]
        if c.get("excess_us") is not None:  # runs before it was recorded (no excess_formula) have none
            if not measured:
                bad.append(f"{c['name']}: excess_us without a measured roofline and floor")
            else:
                read_us = visible_bytes(c) / (roof["tbps"] * 1e12) * 1e6
                ex = c["median_us"] - floor["median_us"] - read_us
                if not close(c["excess_us"], ex):
                    bad.append(f"{c['name']}: excess_us {c['excess_us']} is not median - floor - visible bytes / roofline = {ex}")
        elif "excess_formula" in doc and measured:
            bad.append(f"{c['name']}: no excess_us in a run that records it, with its roofline and floor measured")
        if "read_us" in c:  # runs before it was recorded have none
            r = c["read_us"]
            want = r / c["median_us"] if r is not None else None
            if (want is None) != (c["read_fraction"] is None) or (want is not None and not close(c["read_fraction"], want)):
                bad.append(f"{c['name']}: read_fraction {c['read_fraction']} is not read_us / median = {want}")
            if (r is not None) != (c["read_samples"] > 0):
                bad.append(f"{c['name']}: read_us {r} with {c['read_samples']} read samples")
            if r is None and c["samples"] > 0 and not c.get("read_reason"):
                bad.append(f"{c['name']}: a timed case with no read_us and no read_reason")
        if sum(c["tiles"].values()) <= 0:
            bad.append(f"{c['name']}: no tiles")

    # cases of the same visible bytes and timing mode share one same-bytes read
    reads = {}
    for c in doc["cases"]:
        if c.get("read_us") is not None:
            key = (visible_bytes(c), c.get("graph", False))
            if reads.setdefault(key, c["read_us"]) != c["read_us"]:
                bad.append(f"{c['name']}: read_us {c['read_us']}, another case of the same bytes and mode {reads[key]}")

    first = doc["backends"][0] if doc.get("backends") else None
    for t in doc["targets"]:
        c = cases.get((t["case"], t.get("backend")))
        if c is None:
            bad.append(f"target on unknown case {t['case']}")
            continue
        what = t["target"]
        # side by side, every target judges the first backend's case (against another's, for "median <= B's")
        if first is not None and t.get("backend") != first:
            bad.append(f"{t['case']} {what}: a target on {t.get('backend')}'s case, not the first backend's ({first})")
        ok = measured6(c) and roof["measured"]
        other = None  # the other median a % target compares: its spread widens the noise band
        # --counters: K/V partly served by L2 across calls is not a DRAM figure (unless the timing flushed L2)
        dram = doc.get("cold", False) or c.get("dram_kv_ratio") is None or c["dram_kv_ratio"] >= 0.95
        if m := re.fullmatch(r"(visible_roofline_fraction|roofline_fraction) >= ([0-9.]+)", what):
            got, met = c[m.group(1)], c[m.group(1)] >= t["want"]
            ok = ok and dram
        elif re.fullmatch(r"read_fraction >= ([0-9.]+)", what):
            # against the case's same-bytes read, which needs no roofline figure; a case without one is not measured
            got = c.get("read_fraction")
            ok = measured6(c) and got is not None and dram
            met = ok and got >= t["want"]
        elif m := re.fullmatch(r"median <= ([a-z0-9_]+)'s", what):
            peer = cases.get((t["case"], m.group(1)))
            if peer is None or t.get("peer") != m.group(1) or not peer.get("selected"):
                bad.append(f"{what}: no case of {t['case']} that {m.group(1)} admitted")
                continue
            ok = measured6(c) and measured6(peer)
            got = 100 * (c["median_us"] / peer["median_us"] - 1) if ok else None
            met = ok and got <= 0
            other = peer
        elif m := re.fullmatch(r"median within ([0-9.]+)% of (\S+)", what):
            ref = cases[(m.group(2), t.get("backend"))]
            ok = measured6(c) and measured6(ref)
            got = 100 * (c["median_us"] / ref["median_us"] - 1) if ok else None
            met = ok and got <= t["want"]
            other = ref
        elif m := re.fullmatch(r"auto within ([0-9.]+)% of the best forced split(?:, (\S+))?", what):
            forced = [f for f in doc["cases"] if f["forced_splits"] is not None and f["fixture"] == c["fixture"]
                      and f.get("backend") == c.get("backend")]
            ran = [f for f in forced if timed(f)]
            best = min(ran, key=lambda f: f["median_us"]) if ran else None
            ok = bool(forced) and all(measured6(f) for f in forced) and best is not None and measured6(c)
            if ok and m.group(2) != best["name"]:
                bad.append(f"{what}: the fastest forced split is {best['name']}")
            got = 100 * (c["median_us"] / best["median_us"] - 1) if ok else None
            met = ok and got <= t["want"]
            other = best
        else:
            bad.append(f"unknown target form: {what}")
            continue
        want = "met" if ok and met else "missed" if ok else "not_measured"
        if t["verdict"] != want:
            bad.append(f"{t['case']} {what}: verdict {t['verdict']}, recomputed {want}")
        if ok and not close(t["got"], got):
            bad.append(f"{t['case']} {what}: got {t['got']}, recomputed {got}")
        if "noise_pct" in t or "beyond_noise" in t:  # absent in runs before it was recorded
            bad += noise_disagreements(t, ok, got, c, other)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
