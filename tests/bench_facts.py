#!/usr/bin/python3
"""Facts about what `dkb bench`, `dkb run` and `dkb compare` wrote, printed one line each for the C
tests (tests/test_run.c, tests/test_compare.c) to compare with the text they expect. Each subcommand
reads one document and prints what its test asserts.

usage: bench_facts.py floors BENCH_JSON     the launch floors: kernel, then measured and sound (a median and
                                            samples when measured, else a reason) for plain launches and graph
       bench_facts.py cases BENCH_JSON      the device's status; the timed cases' count and whether each has >= 20
                                            samples, a spread and a positive median; the same for the untimed ones
                                            (a null median, 0 samples, no spread); whether every case has its call key, an excess exactly when
                                            timed against a measured floor, and a same-bytes read exactly when timed
       bench_facts.py dram BENCH_JSON       case 0: whether it carries DRAM bytes, and whether its ratio is not null
       bench_facts.py reads BENCH_JSON      the case count, whether cases 0 and 1 share one read above the launch
                                            floor, and whether every case has read samples
       bench_facts.py counters BUNDLE       the counters pass's status, DRAM bytes read and GPU time
       bench_facts.py cold-counters BUNDLE  L2's state before the counters pass, DRAM bytes read and written, and
                                            the ledgers' K/V bytes and outputs + workspace bytes
       bench_facts.py slowed REPORT N       (base_slowed, new_slowed) of a compare report's first N cases
       bench_facts.py slowed REPORT all     the case count and the distinct (base_slowed, new_slowed) pairs
       bench_facts.py verdict REPORT        a compare report's first case (name, verdict, change, noise), its
                                            slower and same counts, noise options, same_device, roofline change"""
import json
import sys


def floors(b):
    f = b["launch_floor"]

    def sound(x):
        return x["median_us"] > 0 and x["samples"] > 0 if x["measured"] else x["reason"] != ""

    print(f["kernel"], f["measured"], sound(f), f["graph"]["measured"], sound(f["graph"]))


def cases(b):
    cs = b["cases"]
    med = [c["median_us"] is not None for c in cs]  # a case that was not timed records no median
    timed = [c["samples"] >= 20 and c["rel_stdev"] >= 0 and c["median_us"] > 0 for c, m in zip(cs, med) if m]
    untimed = [c["samples"] == 0 and c["rel_stdev"] is None for c, m in zip(cs, med) if not m]
    keys = all(len(c["call_key_sha256"]) == 64 for c in cs)
    excess = all((c["excess_us"] is not None) == (m and b["launch_floor"]["measured"]) for c, m in zip(cs, med))
    reads = all((c["read_us"] is not None) == m and (c["read_samples"] > 0) == m for c, m in zip(cs, med))
    print(b["device"]["status"], len(timed), all(timed), len(untimed), all(untimed), keys, excess, reads)


def dram(b):
    c = b["cases"][0]
    print("dram_read_bytes" in c, c.get("dram_kv_ratio", -1) is not None)


def reads(b):
    c, f = b["cases"], b["launch_floor"]["median_us"]
    print(len(c), c[0]["read_us"] == c[1]["read_us"] > f, all(x["read_samples"] > 0 for x in c))


def counters(b):
    m = b["measurement"]
    c = {x["name"]: x["value"] for x in m["counters"]}
    print(m["counters_pass"]["status"], c["dram__bytes_read.sum"], c["gpu__time_duration.sum"])


def cold_counters(b):
    m = b["measurement"]
    c = {x["name"]: x["value"] for x in m["counters"]}
    print(m["counters_pass"]["l2_before_pass"].split(":")[0], c["dram__bytes_read.sum"], c["dram__bytes_write.sum"],
          b["ledgers"]["unique_kv_bytes"], b["ledgers"]["q_o_bytes"] + b["ledgers"]["workspace_round_trip_bytes"])


def slowed(r, n):
    pairs = [(x["base_slowed"], x["new_slowed"]) for x in r["cases"]]
    if n == "all":
        print(len(pairs), sorted(set(pairs)))
    else:
        print(pairs[:int(n)])


def verdict(r):
    c = r["cases"][0]
    print(c["name"], c["verdict"], round(c["change_pct"], 3), c["noise_pct"], r["verdicts"]["slower"], r["verdicts"]["same"],
          r["noise"], r["same_device"], r["roofline_change_pct"])


def main():
    subs = {"floors": floors, "cases": cases, "dram": dram, "reads": reads, "counters": counters,
            "cold-counters": cold_counters, "slowed": slowed, "verdict": verdict}
    if len(sys.argv) < 3 or sys.argv[1] not in subs:
        sys.exit(__doc__)
    subs[sys.argv[1]](json.load(open(sys.argv[2])), *sys.argv[3:])


if __name__ == "__main__":
    main()
