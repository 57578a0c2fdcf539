#!/usr/bin/env python
"""flex_decode.py - FlexAttention (torch.compile'd flex_attention) at a dkb bench decode shape, without a
block mask and with a sliding-window one, each call inside its dkb/call/ range, one call of each dumped.

usage: dkb trace -o OUT -- python examples/torch/flex_decode.py [--shape b16-t8192-g4] [--window 1024]
           [--iters 10] [--no-dump] [--only none|window]

The window mask keeps keys kv_idx >= T - window visible to the decode query at position T - 1: dkb's
sliding_window mask with that window and no sink. Compilation and autotuning happen in the warm-up calls,
outside the ranges; the kernels are Triton's, loaded from memory, so their modules are hashed by the
injection library's module callback."""
import argparse

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import decode_common as dc
from decode_common import dkb_dump


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="b16-t8192-g4", choices=sorted(dc.SHAPES))
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-dump", action="store_true")
    ap.add_argument("--only", choices=["none", "window"])
    a = ap.parse_args()
    dc.need_cuda()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    q, k, v = dc.bhsd_inputs(a.shape)
    B, T, H_q, H_kv, d = dc.SHAPES[a.shape]
    flex = torch.compile(flex_attention, dynamic=False)
    W = a.window
    block_mask = create_block_mask(lambda b, h, q_idx, kv_idx: kv_idx >= T - W, B=None, H=None, Q_LEN=1, KV_LEN=T,
                                   device="cuda")
    cases = [("none", None, None), ("window", block_mask, {"kind": "sliding_window", "window": W, "sink": 0})]
    for label, bm, mask in cases:
        if a.only and a.only != label:
            continue
        key = dkb_dump.call_key_sdpa(q, k, v, backend="torch_flex_attention" + ("_block_mask" if bm is not None else ""),
                                     mask=mask)
        o = dc.traced(key, lambda: flex(q, k, v, block_mask=bm, enable_gqa=H_q != H_kv), iters=a.iters)
        if not a.no_dump:
            dc.report(f"flex {label} {a.shape}", key, dkb_dump.dump_sdpa(None, key, q, k, v, o))


if __name__ == "__main__":
    main()
