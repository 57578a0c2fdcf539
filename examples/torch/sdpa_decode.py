#!/usr/bin/env python
"""sdpa_decode.py - PyTorch's scaled_dot_product_attention at dkb's bench decode shapes, under one SDPA
backend, each call inside its dkb/call/ range and one call of each shape dumped for `dkb check`.

usage: dkb trace -o OUT -- python examples/torch/sdpa_decode.py --backend flash|efficient|cudnn|math|default
           [--shapes b16-t8192-g4,b1-t32768-g4] [--iters 10] [--no-dump]

GQA goes through enable_gqa=True; a backend that refuses it gets K/V expanded to H_q heads, and the call key
then says H_kv = H_q (what the kernel read). A backend that refuses the call altogether exits 3 with
PyTorch's reason."""
import argparse
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import decode_common as dc
from decode_common import dkb_dump

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH, "default": None}


def run_shape(backend, shape, iters, dump):
    q, k, v = dc.bhsd_inputs(shape)

    def call(kk, vv, gqa):
        with sdpa_kernel([BACKENDS[backend]]) if BACKENDS[backend] is not None else contextlib.nullcontext():
            return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=gqa)

    kk, vv, gqa = k, v, k.shape[1] != q.shape[1]
    try:
        call(kk, vv, gqa)
    except RuntimeError as e:
        if not gqa:
            dc.fail(3, f"{backend} refuses {shape}: {str(e).splitlines()[0]}")
        g = q.shape[1] // k.shape[1]
        kk, vv, gqa = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1), False
        print(f"{backend} {shape}: enable_gqa refused ({str(e).splitlines()[0]}); K/V expanded to {q.shape[1]} heads")
        try:
            call(kk, vv, gqa)
        except RuntimeError as e2:
            dc.fail(3, f"{backend} refuses {shape}: {str(e2).splitlines()[0]}")
    key = dkb_dump.call_key_sdpa(q, kk, vv, backend=f"torch_sdpa_{backend}")
    o = dc.traced(key, lambda: call(kk, vv, gqa), iters=iters)
    if dump:
        dc.report(f"sdpa {backend} {shape}", key, dkb_dump.dump_sdpa(None, key, q, kk, vv, o))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True, choices=sorted(BACKENDS))
    ap.add_argument("--shapes", default="b16-t8192-g4,b1-t32768-g4")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-dump", action="store_true")
    a = ap.parse_args()
    dc.need_cuda()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    for shape in a.shapes.split(","):
        run_shape(a.backend, shape, a.iters, not a.no_dump)


if __name__ == "__main__":
    main()
