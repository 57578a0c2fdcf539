#!/usr/bin/python3
"""candidate.py - give a dump `dkb run --dump` wrote on a host without a GPU a candidate output, for
tests/test_check.c: o_gpu (and lse_gpu) are dkb's float64 reference rounded to the call's dtype, written with
python/dkb_dump.py's add_candidate; an append also gets k_cache_after/v_cache_after (contiguous_nhd only).

usage: candidate.py DUMP [--perturb I] [--nan I] [--lse-base2] [--no-lse] [--perturb-cache I]
  --perturb I        O element I moved by 3x its tolerance (atol + rtol*|ref|)
  --nan I            O element I is NaN
  --lse-base2        LSE written in base 2, and the dump says so
  --no-lse           no lse_gpu
  --perturb-cache I  element I of k_cache_after flipped in its lowest bit"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import dkb_dump  # noqa: E402


def rounded(ref, dtype):
    if dtype == "bf16":
        return dkb_dump.as_bf16_bits(ref)
    return ref.astype({"fp16": np.float16, "fp32": np.float32}[dtype])


def main(argv):
    folder, args = argv[1], argv[2:]
    index = json.load(open(os.path.join(folder, "index.json")))
    call, tol = index["call"], index["call_key"]["tolerances"]
    o_ref, lse_ref = np.load(os.path.join(folder, "o_ref.npy")), np.load(os.path.join(folder, "lse_ref.npy"))
    o = o_ref.copy()
    if "--perturb" in args:
        i = int(args[args.index("--perturb") + 1])
        flat = o.reshape(-1)
        flat[i] += 3 * (tol["atol"] + tol["rtol"] * abs(flat[i]))
    if "--nan" in args:
        o.reshape(-1)[int(args[args.index("--nan") + 1])] = np.nan
    lse = None if "--no-lse" in args else lse_ref.astype(np.float32)
    base = "natural"
    if "--lse-base2" in args:
        lse = (lse_ref / np.log(2)).astype(np.float32)
        base = "base2"
    dkb_dump.add_candidate(folder, rounded(o, call["dtype"]), lse, lse_base=base)
    if call["phase"] == "append":
        assert call["layout"] == "contiguous_nhd", "candidate.py writes the after-caches of contiguous_nhd calls only"
        rows = np.load(os.path.join(folder, "cache_batch_idx.npy"))
        lens = np.load(os.path.join(folder, "kv_len.npy"))
        index = json.load(open(os.path.join(folder, "index.json")))
        for which in ("k", "v"):
            cache = np.load(os.path.join(folder, which + "_cache.npy"))
            new = np.load(os.path.join(folder, which + "_new.npy"))
            after = cache.copy()
            C = call["C"]
            for b in range(call["B"]):
                for i in range(C):
                    after[rows[b], lens[b] - C + i] = new[b, i]
            if which == "k" and "--perturb-cache" in args:
                after.reshape(-1)[int(args[args.index("--perturb-cache") + 1])] ^= 1
            x = dkb_dump.bf16_bits(after) if call["dtype"] == "bf16" else after
            entry = dkb_dump._write_npy(folder, which + "_cache_after", x, "contiguous_nhd [cache_rows][T_cap][H_kv][d]")
            index["files"] = [e for e in index["files"] if e["role"] != entry["role"]] + [entry]
        dkb_dump._write_index(folder, index)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
