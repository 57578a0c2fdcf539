#!/usr/bin/env python3
"""trace-summary.py - the table of a tools/trace-examples.sh folder: per run its exit status and time, per
process its CUPTI state, per traced call its kernels, split/combine, GPU time (tracing on), findings, and the
dkb check of its dump. Reads OUT/results.tsv and OUT/*/summary.json and calls/*.json; standard library only.

usage: trace-summary.py OUT"""
import csv
import glob
import json
import os
import sys


def short(name, n=70):
    name = name.split("(")[0] if "(" in name else name
    return name if len(name) <= n else name[: n - 3] + "..."


def findings(row):
    f = row.get("findings", {})
    return " ".join(k[0].upper() if f.get(k) else "-" for k in ("loaded", "declared", "executed", "checked", "timed"))


def bundle_notes(out, run, row):
    """Why a finding does not hold (first reason of each), and the dump check results."""
    path = os.path.join(out, run, row["bundle"])
    try:
        b = json.load(open(path))
    except (OSError, ValueError):
        return []
    notes = []
    for k in ("loaded", "declared", "executed", "checked", "timed"):
        rs = b["findings"][k]["reasons"]
        if rs:
            notes.append(f"{k}: {rs[0]['reason']} ({rs[0]['detail'][:90]})" + (f" +{len(rs) - 1} more" if len(rs) > 1 else ""))
    for d in b["checked"]["dumps"]:
        if "error" in d:
            notes.append(f"dump {os.path.basename(d['dir'].rstrip('/'))}: malformed: {d['error'][:100]}")
            continue
        c = d["report"]["correctness"]
        o = c["output"]
        notes.append(f"dkb check {os.path.basename(d['dir'].rstrip('/'))}: {'passed' if d['passed'] else 'FAILED'}, "
                     f"O max|err| {o['max_abs']:.3g} ({o['max_ratio']:.2f} of tol), {o['violations']} outside, {o['nan']} NaN")
    return notes


def main(out):
    print(f"trace examples in {out}\n")
    rows = list(csv.DictReader(open(os.path.join(out, "results.tsv")), delimiter="\t"))
    print(f"{'run':<22} {'rc':>7} {'s':>5}  command")
    for r in rows:
        print(f"{r['run']:<22} {r['rc']:>7} {r['seconds']:>5}  {r['command'][:110]}")
    print()
    for r in rows:
        s = os.path.join(out, r["run"], "summary.json")
        if not os.path.exists(s):
            continue
        doc = json.load(open(s))
        ex = doc["exit"]
        status = f"exit {ex['code']}" if ex["kind"] == "exited" else f"signal {ex['signal']}"
        procs = ", ".join(f"pid {p['pid']} CUPTI {p['cupti']}{' end' if p['end_record'] else ' NO-END'}"
                          f"{' dropped ' + str(p['dropped_records']) if p['dropped_records'] else ''}" for p in doc["processes"])
        print(f"## {r['run']}: program {status}; {procs or 'no process loaded the library'}")
        for c in doc["calls"]:
            name = f"dkb/call/{c['call_key_sha256'][:12]}" if c["call_key_sha256"] else c["range"][:40]
            gpu = f"{c['gpu_ns_median'] / 1e3:.2f} us" if c["gpu_ns_median"] and c["launches"] else "-"
            print(f"   {name:<24} inst {c['instances']:>3}  kernels {c['kernels']:>2}  launches {c['launches']:>4}  "
                  f"split/combine {'yes' if c['split'] else 'no'}/{'yes' if c['combine'] else 'no'}  GPU {gpu:>12} (tracing on)  "
                  f"findings {findings(c)}")
            for k in c["kernel_list"]:
                print(f"      {short(k['demangled'])} x{k['launches']}")
            for n in bundle_notes(out, r["run"], c):
                print(f"      {n}")
        print()
    print("findings: L loaded, D declared, E executed, C checked, T timed ('-' = does not hold; the bundle says why)")
    print("GPU time: CUPTI kernel durations with tracing on, median over a call's instances: not a measurement")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
