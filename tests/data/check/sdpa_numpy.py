#!/usr/bin/python3
"""sdpa_numpy.py - an SDPA decode call computed with NumPy alone (no torch on the CPU machines) and dumped with
python/dkb_dump.py's SDPA helpers, so tests/test_check.c checks the writer's numpy path with `dkb check`.

usage: sdpa_numpy.py DIR [--dtype fp16|fp32|bf16] [--wrong]   (--wrong: the output of another query)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import dkb_dump  # noqa: E402


def main(argv):
    folder, args = argv[1], argv[2:]
    dtype = args[args.index("--dtype") + 1] if "--dtype" in args else "fp16"
    rng = np.random.default_rng(5)
    B, H_q, H_kv, T, d = 3, 8, 2, 77, 64
    q = rng.uniform(-1, 1, (B, H_q, 1, d))
    k = rng.uniform(-1, 1, (B, H_kv, T, d))
    v = rng.uniform(-1, 1, (B, H_kv, T, d))
    if dtype == "bf16":
        q, k, v = (dkb_dump.as_bf16_bits(x).to_float32().astype(np.float64) for x in (q, k, v))
    else:
        npt = {"fp16": np.float16, "fp32": np.float32}[dtype]
        q, k, v = (x.astype(npt).astype(np.float64) for x in (q, k, v))
    g = H_q // H_kv
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bhqd,bhtd->bhqt", q if "--wrong" not in args else q[::-1], kk) / np.sqrt(d)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    o = np.einsum("bhqt,bhtd->bhqd", p / p.sum(-1, keepdims=True), vv)
    lse = (m[..., 0] + np.log(p.sum(-1)))
    cast = dkb_dump.as_bf16_bits if dtype == "bf16" else (lambda x: x.astype({"fp16": np.float16, "fp32": np.float32}[dtype]))
    qs, ks, vs, os_ = (cast(x) for x in (q, k, v, o))
    key = dkb_dump.call_key_sdpa(qs, ks, vs, backend="numpy_reference", return_lse=True)
    dkb_dump.dump_sdpa(folder, key, qs, ks, vs, os_, lse)
    print(dkb_dump.digest(key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
