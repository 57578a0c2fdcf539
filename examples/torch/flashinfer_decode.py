#!/usr/bin/env python
"""flashinfer_decode.py - FlashInfer's BatchDecodeWithPagedKVCacheWrapper (its Python API, JIT-compiled on
first use) at a dkb bench decode shape over a paged NHD cache with a CSR page table (dkb's paged_nhd/csr
layout: page_indptr, page_indices, last_page_len), pages in a shuffled order, each call inside its
dkb/call/ range, one call dumped with FlashInfer's base-2 LSE declared as such.

usage: dkb trace -o OUT -- python examples/torch/flashinfer_decode.py [--shape b16-t8192-g4] [--page 16]
           [--iters 10] [--no-dump] [--poison]
--poison fills the pool's unused pages with NaN (a kernel that reads them shows it in dkb check).
Exits 3 when flashinfer cannot be imported (its wheel, and what its JIT needs, must be on this machine)."""
import argparse

import torch

import decode_common as dc
from decode_common import dkb_dump


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="b16-t8192-g4", choices=sorted(dc.SHAPES))
    ap.add_argument("--page", type=int, default=16)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--no-dump", action="store_true")
    ap.add_argument("--poison", action="store_true")
    a = ap.parse_args()
    try:
        import flashinfer
    except Exception as e:  # ImportError, or its own import-time failures
        dc.fail(3, f"flashinfer cannot be imported: {e}")
    dc.need_cuda()
    print(f"torch {torch.__version__}, flashinfer {getattr(flashinfer, '__version__', '?')}, {torch.cuda.get_device_name()}")
    B, T, H_q, H_kv, d = dc.SHAPES[a.shape]
    P = a.page
    per = (T + P - 1) // P
    pool = B * per + 8
    g = torch.Generator(device="cuda").manual_seed(3)
    mk = lambda *s: (torch.rand(*s, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
    k_cache, v_cache = mk(pool, P, H_kv, d), mk(pool, P, H_kv, d)
    perm = torch.randperm(pool, generator=torch.Generator().manual_seed(4)).to(torch.int32)
    page_indices = perm[: B * per].contiguous().cuda()
    if a.poison:
        unused = perm[B * per:].long().cuda()
        k_cache[unused] = float("nan")
        v_cache[unused] = float("nan")
    page_indptr = (torch.arange(B + 1, dtype=torch.int32) * per).cuda()
    last_page_len = torch.full((B,), T - (per - 1) * P, dtype=torch.int32).cuda()
    q = mk(B, H_q, d)
    ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
    try:
        w.plan(page_indptr, page_indices, last_page_len, H_q, H_kv, d, P, q_data_type=torch.bfloat16,
               kv_data_type=torch.bfloat16)
    except TypeError:
        w.plan(page_indptr, page_indices, last_page_len, H_q, H_kv, d, P, data_type=torch.bfloat16)
    print(f"flashinfer backend: {getattr(w, 'resolved_backend', None) or getattr(w, '_backend', '?')} (its own claim)")
    key = dkb_dump.call_key(B=B, S_q=1, S_k_per_request=[T] * B, H_q=H_q, H_kv=H_kv, d_qk=d, d_v=d, dtype="bf16",
                            cache_layout="paged_nhd", page_size=P, page_table="csr", backend="flashinfer_batch_decode",
                            return_lse=True)
    o, lse = dc.traced(key, lambda: w.run(q, (k_cache, v_cache), return_lse=True), iters=a.iters)
    if not a.no_dump:
        tensors = {"q": q.unsqueeze(1), "k_cache": k_cache, "v_cache": v_cache,
                   "kv_len": torch.full((B,), T, dtype=torch.int64), "cache_batch_idx": torch.arange(B, dtype=torch.int32),
                   "page_indptr": page_indptr, "page_indices": page_indices, "last_page_len": last_page_len,
                   "o_gpu": o.unsqueeze(1), "lse_gpu": lse.float().unsqueeze(1)}
        folder = dkb_dump.dump(None, key, tensors, lse_base="base2")
        dc.report(f"flashinfer {a.shape}", key, folder)


if __name__ == "__main__":
    main()
