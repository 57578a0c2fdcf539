#!/usr/bin/env python3
"""ncu-summary.py - the few figures of a tools/ncu-case.sh profile that say where a decode kernel's time
goes, as Markdown small enough to keep in docs/ beside the kernel change it explains (the report and its
per-instruction CSV are megabytes).

Per profiled kernel launch (NAME.txt, `ncu --print-details all`): its duration, DRAM bytes read and
throughput, registers, achieved occupancy, cycles per issued instruction and the stall-sampling reasons
by share. From NAME-source.csv (the first kernel's SASS with its stall samples): the share of samples by
opcode and the instructions that hold the most, as in docs/kernels.md ("30 % of the stall samples on the
first shared-memory load after the loop's barrier").

usage: tools/ncu-summary.py DIR/NAME [--top N]   reads DIR/NAME.txt and, when present, DIR/NAME-source.csv
exit: 0 written to standard output, 1 no kernel launch in NAME.txt, 2 usage or unreadable files
Only the standard library: it runs on the GPU machine, whose Python has no third-party packages."""
import csv
import re
import sys

METRICS = [  # (label, the line's name in `--print-details all`)
    ("duration", "gpu__time_duration.sum"),
    ("DRAM read", "dram__bytes_read.sum"),
    ("DRAM throughput", "DRAM Throughput"),
    ("registers per thread", "Registers Per Thread"),
    ("achieved occupancy", "Achieved Occupancy"),
    ("cycles per issued instruction", "Warp Cycles Per Issued Instruction"),
]
LAUNCH = re.compile(r"^  (\S.*) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")
VALUE = re.compile(r"^\s+(.+?)\s{2,}(\S+)\s+([-\d.,]+)\s*$")
STALL = re.compile(r"^\s+Warp Stall Sampling \(All Samples\) \(smsp__pcsamp_warps_issue_stalled_(\w+)\)\s+\S+\s+([\d,]+)\s*$")


def launches(lines):
    """[(kernel, grid, block, {name: (unit, value)}, {stall reason: samples})] in the report's order."""
    out = []
    for line in lines:
        m = LAUNCH.match(line)
        if m:
            out.append((m.group(1), m.group(2, 3, 4), m.group(5, 6, 7), {}, {}))
            continue
        if not out:
            continue
        s = STALL.match(line)
        if s:
            out[-1][4][s.group(1)] = int(s.group(2).replace(",", ""))
            continue
        v = VALUE.match(line)
        if v and v.group(1).strip() not in out[-1][3]:  # the first table that names a metric
            out[-1][3][v.group(1).strip()] = (v.group(2), v.group(3))
    return out


def source_table(path, top):
    """Markdown lines: the first kernel's stall samples by opcode and its top instructions."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 3:
        return []
    hdr = rows[1]
    i_src, i_n = hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")
    insts = []
    for r in rows[2:]:
        if r and r[0] == "Kernel Name":
            break  # the second kernel's table starts
        if len(r) <= max(i_src, i_n) or not r[i_n].isdigit():
            continue
        insts.append((int(r[i_n]), r[i_src].strip()))
    total = sum(n for n, _ in insts)
    if not total:
        return []
    by_op = {}
    for n, src in insts:
        words = src.split()
        op = (words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "?")).split(".")[0]
        by_op[op] = by_op.get(op, 0) + n
    out = ["", f"Stall samples of `{rows[0][1] if len(rows[0]) > 1 else '?'}`: {total}", "",
           "| opcode | share |", "|---|---|"]
    out += [f"| {op} | {100 * n / total:.1f} % |" for op, n in sorted(by_op.items(), key=lambda x: -x[1])[:top]]
    out += ["", "| instruction | share |", "|---|---|"]
    out += [f"| `{src}` | {100 * n / total:.1f} % |" for n, src in sorted(insts, key=lambda x: -x[0])[:top]]
    return out


def main(argv):
    args = argv[1:]
    top = 6
    if len(args) == 3 and args[1] == "--top" and args[2].isdigit():
        top = int(args[2])
    elif len(args) != 1:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    base = args[0]
    try:
        with open(base + ".txt") as f:
            ls = launches(f.read().splitlines())
    except OSError as e:
        print(f"ncu-summary: {e}", file=sys.stderr)
        return 2
    if not ls:
        print(f"ncu-summary: {base}.txt: no kernel launch", file=sys.stderr)
        return 1
    out = [f"# {base.rsplit('/', 1)[-1]}"]
    for kernel, grid, block, vals, stalls in ls:
        out += ["", f"`{kernel}`, grid ({', '.join(grid)}), block ({', '.join(block)})", "", "| figure | value |", "|---|---|"]
        out += [f"| {label} | {vals[name][1]} {vals[name][0]} |" for label, name in METRICS if name in vals]
        total = sum(stalls.values())
        if total:
            top_s = sorted(stalls.items(), key=lambda x: -x[1])[:top]
            out.append("| stall samples | " + ", ".join(f"{k} {100 * n / total:.1f} %" for k, n in top_s) + " |")
    try:
        out += source_table(base + "-source.csv", top)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as e:
        print(f"ncu-summary: {base}-source.csv: {e}", file=sys.stderr)
        return 2
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
