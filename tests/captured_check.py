#!/usr/bin/python3
"""What fixtures/captured/ holds, checked for tests/test_captured.c: the real bundles captured on the H200
(bundles/<fixture name>/) and the kept bench runs (bench/<name>/, listed in bench/index.json, which
schemas/bench-index.schema.json describes). The C tests iterate what this prints, so a new bundle or run
needs no list edited in C: a bundle is its folder, a run its folder and its index entry.

usage: captured_check.py bundles [DIR]        the bundle folders of DIR (default fixtures/captured/bundles), one
                                              a line; exit 1 when an entry there is not a folder with a bundle.json
       captured_check.py extra-files DIR      the files of bundle folder DIR its bundle.json does not name (a stale
                                              artifact of an earlier capture); exit 1 when there is one
       captured_check.py clusters DIR         the plan's cluster_ctas and the cluster dims of the producer launches
                                              CUPTI recorded; exit 1 unless each matches the plan ("- NAME" for
                                              another backend than dkb_split_kv, whose plan claims no clusters)
       captured_check.py heads DIR            the plan's kv_heads_per_cta, three_ctas_per_sm and eight_warps_per_cta
                                              against the producer launches CUPTI recorded; exit 1 unless each spans
                                              H_kv / heads CTAs in x and is the two-, four-head, three-CTA or
                                              eight-warp producer exactly when the plan says so
       captured_check.py runs [INDEX]         the index's runs, one a line, once its entries and the folders beside
                                              it are the same set and the baselines are the smoke's kind of run, at
                                              least one and one a card (the GPU's name); else exit 1
       captured_check.py run NAME [INDEX]     the run's folder and bench.json against its entry; exit 1 with one line
                                              per disagreement
       captured_check.py baseline CARD [INDEX]
                                              the path of the bench.json of CARD's baseline run (CARD: the GPU's name,
                                              as nvidia-smi and the run's /device/device/name give it; for
                                              tools/gpu-smoke.sh --bench); exit 1 when CARD has none
       captured_check.py baselines [INDEX]    the paths of every baseline's bench.json, one a line (each ran
                                              fixtures/bench/matrix.json: test_captured.c checks its calls are
                                              today's fixtures')
INDEX defaults to fixtures/captured/bench/index.json; its runs' folders lie beside it. Only the standard
library: the GPU machine's Python has no jsonschema, and gpu-smoke asks for the baseline there."""
import glob
import json
import os
import sys

import bundle_folder_check  # beside this file: python puts its folder first on sys.path

INDEX = "fixtures/captured/bench/index.json"
RUN_FILES = {"bench.json", "bench.csv", "roofline-fraction.svg"}  # what dkb bench -o writes beside the cases
DRAM_KV_MIN = 0.95  # harness/bench.h BENCH_DRAM_KV_MIN


def bundles(d="fixtures/captured/bundles"):
    bad = 0
    for name in sorted(os.listdir(d)):
        if os.path.isfile(os.path.join(d, name, "bundle.json")):
            print(name)
        else:
            print(f"{d}/{name}: not a bundle folder (no bundle.json)", file=sys.stderr)
            bad = 1
    return bad


def extra_files(d):
    return bundle_folder_check.main(d)


def producer_launches(d):
    """The CUPTI kernel records of bundle folder d's producer launches (dkb's split-KV producers)."""
    ks = [json.loads(line) for f in glob.glob(d + "/trace.*.jsonl") for line in open(f)]
    return [k for k in ks if k["record"] == "kernel" and
            ("decode_split_kv_producer" in k["name"] or "decode_split_kv_fused" in k["name"])]


def clusters(d):
    """A cluster plan's producer launched with cluster dims [1, cluster_ctas, 1], every other producer
    without a cluster (CUPTI 13 on the H200 reports [0, 0, 0] for those)."""
    dispatch = json.load(open(d + "/bundle.json"))["dispatch"]
    if dispatch["backend"]["name"] != "dkb_split_kv":  # another backend's plan document has no clusters to claim
        print("-", dispatch["backend"]["name"])
        return 0
    s = dispatch["plan"]["cluster_ctas"]
    prod = [k["cluster"] for k in producer_launches(d)]
    want = [[1, s, 1]] if s > 1 else [[0, 0, 0], [1, 1, 1]]
    print(s, prod)
    return 0 if prod and all(c in want for c in prod) else 1


def heads(d):
    """A plan of two or four K/V heads a CTA launched decode_split_kv_producer2_mma or producer4_mma over
    H_kv / heads CTAs in x; a plan of three CTAs an SM (three_ctas_per_sm) decode_split_kv_producer3sm_mma
    over H_kv, a plan of eight warps a CTA (eight_warps_per_cta) decode_split_kv_producer8w_mma over H_kv; any
    other dkb_split_kv plan a one-head producer of four warps over H_kv. Prints the heads, "three", "eight" or
    "-", and the grids."""
    b = json.load(open(d + "/bundle.json"))
    dispatch = b["dispatch"]
    if dispatch["backend"]["name"] != "dkb_split_kv":
        print("-", dispatch["backend"]["name"])
        return 0
    hp = dispatch["plan"].get("kv_heads_per_cta", 1)
    three = dispatch["plan"].get("three_ctas_per_sm", False)
    eight = dispatch["plan"].get("eight_warps_per_cta", False)
    h_kv = json.load(open(b["fixture"]["path"]))["heads"]["H_kv"]
    prod = producer_launches(d)
    print(hp, "three" if three else "eight" if eight else "-", [k["grid"] for k in prod])
    ok = all(k["grid"][0] * hp == h_kv and ("decode_split_kv_producer2_mma" in k["name"]) == (hp == 2) and
             ("decode_split_kv_producer4_mma" in k["name"]) == (hp == 4) and
             ("decode_split_kv_producer3sm_mma" in k["name"]) == three and
             ("decode_split_kv_producer8w_mma" in k["name"]) == eight for k in prod)
    return 0 if prod and ok else 1


def load_index(path):
    return json.load(open(path)), os.path.dirname(path) or "."


def runs(path=INDEX):
    idx, d = load_index(path)
    names = [r["name"] for r in idx["runs"]]
    folders = sorted(f for f in os.listdir(d) if os.path.isdir(os.path.join(d, f)))
    others = sorted(f for f in os.listdir(d) if f != os.path.basename(path) and not os.path.isdir(os.path.join(d, f)))
    bad = [f"{d}/{f}: a folder without an entry in {path}" for f in folders if f not in names]
    bad += [f"{path}: run '{n}' has no folder {d}/{n}" for n in names if n not in folders]
    bad += [f"{path}: run '{n}' is listed {names.count(n)} times" for n in sorted(set(names)) if names.count(n) > 1]
    bad += [f"{d}/{f}: neither the index nor a run's folder" for f in others]
    if not bad:
        bad += baseline_problems(idx, d, path)
    for line in bad:
        print(line, file=sys.stderr)
    if not bad:
        print(*names, sep="\n")
    return 1 if bad else 0


def run(name, path=INDEX):
    idx, d = load_index(path)
    entry = next((r for r in idx["runs"] if r["name"] == name), None)
    if entry is None:
        print(f"{path}: no run '{name}'")
        return 1
    folder = os.path.join(d, name)
    b = json.load(open(os.path.join(folder, "bench.json")))
    matrix = json.load(open(entry["matrix"]))
    flags = set(entry["flags"])
    bad = []
    files = set(os.listdir(folder))
    if files != RUN_FILES:
        bad.append(f"files {sorted(files)}, want {sorted(RUN_FILES)}")
    if not b["meta"]["commit"].startswith(entry["commit"]):
        bad.append(f"commit {b['meta']['commit']}, the index says {entry['commit']}")
    if b["meta"]["created"][:10] != entry["date"]:
        bad.append(f"created {b['meta']['created']}, the index says {entry['date']}")
    if not b["roofline"]["measured"]:
        bad.append("its roofline was not measured")
    elif round(b["roofline"]["tbps"], 3) != entry["roofline_tbps"]:
        bad.append(f"roofline {b['roofline']['tbps']:.3f} TB/s, the index says {entry['roofline_tbps']}")
    if b["matrix"] != matrix["name"]:
        bad.append(f"matrix '{b['matrix']}', not {entry['matrix']}'s '{matrix['name']}'")
    if any("target" in c for c in matrix["cases"]) and not b["targets"]:
        bad.append(f"no targets judged, where {entry['matrix']} sets some")
    if b.get("cold", False) != ("cold" in flags):
        bad.append(f"cold is {b.get('cold', False)}, the index's flags {sorted(flags)}")
    ratios = [c.get("dram_kv_ratio") for c in b["cases"]]
    if "counters" in flags:
        if any(r is None for r in ratios):
            bad.append("a case without a dram_kv_ratio in a run with counters")
        else:
            low = [c["name"] for c in b["cases"] if c["dram_kv_ratio"] < DRAM_KV_MIN]
            if low != entry["l2_served"]:
                bad.append(f"cases below {DRAM_KV_MIN} of their K/V from DRAM: {low}, the index says {entry['l2_served']}")
    elif any(r is not None for r in ratios):
        bad.append("DRAM ratios in a run whose flags have no counters")
    for line in bad:
        print(f"{folder}: {line}")
    return 1 if bad else 0


SMOKE_MATRIX = "fixtures/bench/matrix.json"  # what tools/gpu-smoke.sh --bench runs, with --counters


def card(d, name):
    """The GPU's name of run folder d/name, as its bench.json recorded it (None without a GPU)."""
    dev = json.load(open(os.path.join(d, name, "bench.json")))["device"]
    return dev["device"]["name"] if dev.get("status") == "available" else None


def baselines(idx, d):
    """{card: [baseline runs of that card]}."""
    by = {}
    for r in idx["runs"]:
        if r.get("baseline"):
            by.setdefault(card(d, r["name"]), []).append(r["name"])
    return by


def baseline_problems(idx, d, path):
    """A smoke compares a fresh run with the baseline of its own card, since two cards' medians differ by
    the card: so a baseline is the run the smoke makes (the matrix, with --counters), there is one per card
    at most, and one at least."""
    bad = [f"{path}: baseline '{r['name']}' ran {r['matrix']} with flags {r['flags']}, where the smoke runs "
           f"{SMOKE_MATRIX} with ['counters']" for r in idx["runs"]
           if r.get("baseline") and (r["matrix"] != SMOKE_MATRIX or r["flags"] != ["counters"])]
    by = baselines(idx, d)
    bad += [f"{path}: {len(names)} runs are the baseline of {c} ({', '.join(names)}), want one"
            for c, names in sorted(by.items(), key=str) if len(names) > 1]
    if not by:
        bad.append(f"{path}: no run is a baseline, want one a card")
    return bad


def baseline(gpu, path=INDEX):
    idx, d = load_index(path)
    by = baselines(idx, d)
    names = by.get(gpu, [])
    if len(names) != 1:
        have = ", ".join(f"{c}: {', '.join(n)}" for c, n in sorted(by.items(), key=str)) or "none"
        print(f"{path}: {len(names)} baseline runs of {gpu}, want one (baselines: {have})", file=sys.stderr)
        return 1
    print(os.path.join(d, names[0], "bench.json"))
    return 0


def all_baselines(path=INDEX):
    idx, d = load_index(path)
    for names in baselines(idx, d).values():
        for n in names:
            print(os.path.join(d, n, "bench.json"))
    return 0


def main():
    subs = {"bundles": (bundles, 0, 1), "extra-files": (extra_files, 1, 1), "clusters": (clusters, 1, 1), "heads": (heads, 1, 1),
            "runs": (runs, 0, 1), "run": (run, 1, 2), "baseline": (baseline, 1, 2),
            "baselines": (all_baselines, 0, 1)}
    sub = subs.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if not sub or not sub[1] <= len(sys.argv) - 2 <= sub[2]:
        sys.exit(__doc__)
    return sub[0](*sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
