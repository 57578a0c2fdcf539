#!/usr/bin/python3
"""failalloc.py - every dkb command, with one heap allocation or one I/O call failing, ends cleanly.

Runs each command below through build/dkb_failalloc (tests/failalloc/driver.c: dkb whose Nth
allocation fails, libfiu's malloc/calloc/realloc wrappers preloaded) once with no failure, to count
its allocations and keep its result, then once per chosen N. Each run must end in one of two ways:
  - exit 4 with "out of memory: cannot allocate" in the last line of stderr, where any bundle.json,
    tensor dump or bench.json left in its output folder is whole (never a partial document: dkb validate
    reads the bundle, tests/dump_check.py checks the dump, tests/bench_check.py recomputes the bench
    result); or
  - the same exit code, stdout and documents as the run without a failure, but for the output folder's
    name and the "created" time (allocations glibc can do without, such as stdio buffers).
Then every I/O call (libfiu's posix/io points: open, close, read, write, rename, unlink, ...) of the
commands that read and write documents fails, one at a time, with the errno libfiu picks. Each run must
end with exit 3, 4 or 5 and a "dkb: error: " line, any document it left whole (a bench run that could
not write one case's bundle records that case as not run, and exits 5), or exactly as without the
failure (a read the command can do without).
A signal, a timeout or anything else fails, printed with N so it can be run again by hand:
  DKB_FAILALLOC_NTH=N LD_PRELOAD=/usr/lib/fiu/fiu_posix_preload.so build/dkb_failalloc ARGS
  (with DKB_FAILALLOC_POINTS='posix/io/*' for an I/O call)

  failalloc.py DRIVER [--per-command K | --every] [--any-result] [--only NAME]
K indices per command and kind of failure (default 60), spread over the whole count at fixed offsets, so
every run of the test tries the same ones; --every tries all of them (hours for `run`); --only the
commands whose name holds NAME. --any-result, for a GPU
machine (whose timings differ from run to run): a run that does not end in a clean error may end in any
exit code below 128 with whole documents, instead of exactly as without the failure. The preload library
is $DKB_FIU_PRELOAD where set (a machine that received it beside the binary).
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

PRELOAD = os.environ.get("DKB_FIU_PRELOAD", "/usr/lib/fiu/fiu_posix_preload.so")
OOM = "out of memory: cannot allocate "

# (name, argv with @OUT for a fresh output folder, documents compared inside it)
COMMANDS = [
    ("run default", ["run", "fixtures/decode/default.json", "-o", "@OUT", "--quiet"], ["bundle.json"]),
    ("run paged flashmask",
     ["run", "fixtures/decode/flashmask-documents.json", "-o", "@OUT", "--quiet"], ["bundle.json"]),
    ("run window sink paged", ["run", "fixtures/decode/window-sink-paged.json", "-o", "@OUT"], ["bundle.json"]),
    ("run with a dump", ["run", "fixtures/decode/append-paged-sq3.json", "-o", "@OUT", "--dump", "@OUT/dump", "--quiet"],
     ["bundle.json", "dump/index.json"]),
    ("validate", ["validate", "fixtures/captured/bundles/default/bundle.json", "fixtures/captured/bundles/window-sink-paged/bundle.json",
                  "--require-level", "6", "--json"], []),
    # re-hashing sources: a tree that matches its bundle, so a failure shows as a difference from a pass
    ("validate sources", ["validate", "fixtures/bundles/synthetic.level6.bundle.json", "--source-root",
                          "fixtures/bundles/source-tree", "--allow-synthetic", "--require-level", "6", "--json"], []),
    ("oracle", ["oracle", "--json"] + sorted("fixtures/contracts/" + f for f in os.listdir("fixtures/contracts")), []),
    ("digest", ["digest", "fixtures/decode/default.json", "--pointer", "/heads"], []),
    ("compare", ["compare", "fixtures/captured/bench/early-slot-index-b",
                 "fixtures/captured/bench/before-launch-bounds-128-2", "--json"], []),
    ("bench", ["bench", "fixtures/decode/dk128-dv64.json", "-o", "@OUT", "--no-roofline"], ["bench.json"]),
    ("preflight", ["preflight", "--json"], []),
]


IO = "posix/io/*"
IO_COMMANDS = ["run default", "run window sink paged", "run with a dump", "validate", "validate sources", "compare", "bench"]


def run(driver, argv, nth, out, points=None):
    env = dict(os.environ, LD_PRELOAD=PRELOAD, DKB_FAILALLOC_NTH=str(nth))
    if points:
        env["DKB_FAILALLOC_POINTS"] = points
    if nth < 0:
        env["DKB_FAILALLOC_COUNT"] = "1"
    return subprocess.run([driver] + [a.replace("@OUT", out) for a in argv], env=env, capture_output=True, timeout=300)


def last_line(p):
    return p.stderr.decode(errors="replace").rstrip("\n").split("\n")[-1]


def normal(text, out):
    """Output without what changes from run to run: the output folder's name and the creation time."""
    return re.sub(rb'"created": ?"[^"]*"', b'"created":"@TIME"', text.replace(out.encode(), b"@OUT"))


def documents(out, names):
    """The named documents of an output folder, normalized."""
    got = {}
    for n in names:
        path = os.path.join(out, n)
        if os.path.exists(path):
            with open(path, "rb") as f:
                got[n] = normal(f.read(), out)
    return got


def whole(driver, path):
    """None when a document left by a failed run is whole: a bundle dkb validate can read (any level,
    exit 0 or 1), a tensor dump tests/dump_check.py passes, a bench result tests/bench_check.py
    recomputes; else why not."""
    if path.endswith("bundle.json"):
        p = subprocess.run([os.path.join(os.path.dirname(driver), "dkb"), "validate", path], capture_output=True)
        ok = p.returncode in (0, 1)
    elif path.endswith("index.json"):  # a tensor dump: every file against its index, O and LSE recomputed
        p = subprocess.run(["/usr/bin/python3", "tests/dump_check.py", os.path.dirname(path)], capture_output=True)
        ok = p.returncode == 0
    else:
        p = subprocess.run(["/usr/bin/python3", "tests/bench_check.py", path], capture_output=True)
        ok = p.returncode == 0
    return None if ok else (p.stdout + p.stderr).decode(errors="replace").strip()[-300:]


def check(driver, name, argv, names, nth, base, tmp, points, any_result=False):
    out = tempfile.mkdtemp(dir=tmp)
    try:
        try:
            p = run(driver, argv, nth, out, points)
        except subprocess.TimeoutExpired:
            return "timed out"
        err = last_line(p)
        if p.returncode < 0:
            tail = p.stderr.decode(errors="replace").split("failalloc: crashed; stack:\n")[-1]
            return "killed by signal %d; stderr: %s" % (-p.returncode, tail.strip()[-1500:] or err)
        docs = documents(out, names)
        clean = (p.returncode == 4 and OOM in err) if not points else (p.returncode in (3, 4, 5) and err.startswith("dkb: error: "))
        if clean or any_result:
            for n in sorted(docs):
                bad = whole(driver, os.path.join(out, n))
                if bad:
                    return "exit %d, and left a %s that is not whole: %s" % (p.returncode, n, bad)
            return None
        same = p.returncode == base[0] and normal(p.stdout, out) == base[1] and docs == base[2]
        if same:
            return None
        return "exit %d (without a failure: %d), %s; stderr: %s" % (
            p.returncode, base[0], "output differs" if p.returncode == base[0] else "not a clean error", err)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    driver = sys.argv[1]
    every = "--every" in sys.argv
    any_result = "--any-result" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    k = int(sys.argv[sys.argv.index("--per-command") + 1]) if "--per-command" in sys.argv else 60
    tmp = tempfile.mkdtemp(prefix="failalloc.")
    failures, tried = [], 0
    try:
        sweeps = [(c, None) for c in COMMANDS] + [(c, IO) for c in COMMANDS if c[0] in IO_COMMANDS]
        if only:
            sweeps = [(c, pt) for c, pt in sweeps if only in c[0]]
        for (name, argv, names), points in sweeps:
            what = "I/O calls" if points else "allocations"
            out = tempfile.mkdtemp(dir=tmp)
            p = run(driver, argv, -1, out, points)
            last = last_line(p)
            if not last.startswith("failalloc: ") or p.returncode < 0:
                print("%s: the run without a failure did not report its %s (exit %d): %s" % (name, what, p.returncode, last))
                return 1
            count = int(last.split()[1])
            base = (p.returncode, normal(p.stdout, out), documents(out, names))
            shutil.rmtree(out, ignore_errors=True)
            if every or count <= k:
                picks = range(count)
            else:  # k strata of the count, a fixed offset inside each
                picks = sorted({(i * count) // k + ((i * 7919) % max(1, count // k)) for i in range(k)})
            with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                res = list(pool.map(lambda n: (n, check(driver, name, argv, names, n, base, tmp, points, any_result)), picks))
            bad = [(n, r) for n, r in res if r]
            tried += len(res)
            print("%-22s %6d %-11s %3d failed one at a time: %s" % (
                name, count, what + ",", len(res), "clean" if not bad else "%d not clean" % len(bad)))
            for n, r in bad:
                failures.append("%s: %s %d: %s" % (name, what[:-1], n, r))
                print("  " + failures[-1])
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("failalloc: %d runs, %d not clean" % (tried, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
