#!/usr/bin/python3
"""Writes the decode fixture matrix fixtures/decode/*.json (schema dkb.decode/v1).

Each case is one frozen call. Together they cover the boundaries the kernels issue names: ragged
lengths 1, 3, 9, 27, 81, 129, 257, 3587 and 4096; split counts that do not divide the length; more
splits than pages; every layout and table; page sizes 1..256; every mask; GQA ratios 1..32; S_q 1..4;
fp16, bf16 and fp32; head dims 64, 80, 96, 128, 256; both workspace ABIs; capacity envelopes; append.
Tolerances are frozen per dtype before any run (output rounding of the storage dtype plus fp32
accumulation): edit them here, never after seeing an error.
usage: tools/gen-decode-fixtures.py [OUTDIR]"""
import json
import os
import sys

TOL = {
    "bf16": {"atol": 2e-3, "rtol": 1.6e-2, "lse_atol": 2e-4, "lse_rtol": 2e-5},
    "fp16": {"atol": 5e-4, "rtol": 4e-3, "lse_atol": 2e-4, "lse_rtol": 2e-5},
    "fp32": {"atol": 2e-5, "rtol": 2e-4, "lse_atol": 2e-4, "lse_rtol": 2e-5},
}
RAGGED = [1, 3, 9, 27, 81, 129, 257, 3587, 4096]


def case(name, desc, *, lens, hq=8, hkv=2, d=128, dv=None, dtype="bf16", cache=None, mask=None, split=None,
         q_len=1, phase="decode", workspace=None, backend=None, seed=1, rows=None, graph=None, lse=None, count=None):
    doc = {
        "schema": "dkb.decode/v1",
        "name": name,
        "description": desc,
        "phase": phase,
        "requests": [{"kv_len": n} if rows is None else {"kv_len": n, "cache_row": r} for n, r in
                     zip(lens, rows if rows is not None else lens)],
        "q_len": q_len,
        "heads": {"H_q": hq, "H_kv": hkv, "d_qk": d, "d_v": dv if dv is not None else d},
        "dtype": dtype,
        "cache": cache or {"layout": "contiguous_nhd"},
        "mask": mask or {"kind": "none"},
        "split": split or {"policy": "fixed", "splits": 8},
        "seed": seed,
        "tolerance": TOL[dtype],
    }
    if count is not None:  # count requests of lens[0] keys each, in the compact form
        doc["requests"] = {"count": count, "kv_len": lens[0]}
    if workspace:
        doc["workspace"] = workspace
    if backend:
        doc["backend"] = backend
    if graph is not None:
        doc["graph"] = graph
    if lse is not None:
        doc["return_lse"] = lse
    return name, doc


def cases():
    yield case("default", "The README's main job: four ragged requests, GQA 32/8, bf16, paged CSR cache with 16-key pages, "
               "causal decode, auto split.", lens=[4096, 3587, 1024, 257], hq=32, hkv=8,
               cache={"layout": "paged_nhd", "page_size": 16}, mask={"kind": "causal"}, split={"policy": "auto"})
    yield case("ragged-contig-nhd-bf16-g4", "The nine ragged lengths, fixed S=8 (does not divide 3587 or 129), GQA 4.",
               lens=RAGGED)
    yield case("ragged-contig-hnd-fp16-d64-g1-remap", "HND with cache_batch_idx reversed, MHA, auto split.",
               lens=RAGGED, hq=4, hkv=4, d=64, dtype="fp16", rows=list(reversed(range(9))),
               cache={"layout": "contiguous_hnd", "capacity": 4100}, split={"policy": "auto"})
    yield case("ragged-packed-fp16-d96-g8", "Packed ragged indptr, head dim 96, GQA 8, 100-key chunks.",
               lens=RAGGED, hq=16, hkv=2, d=96, dtype="fp16", cache={"layout": "ragged_nhd"},
               split={"policy": "chunk", "chunk": 100})
    yield case("paged-dense-p16-capacity", "Dense block table, page 16, S=8 inside a capacity envelope of 12, (LSE,O) with bf16 O.",
               lens=[4096, 3587, 257, 1], cache={"layout": "paged_nhd", "page_size": 16, "table": "dense"},
               split={"policy": "fixed", "splits": 8, "capacity": 12}, workspace={"abi": "lse_o", "o_dtype": "bf16"},
               rows=[3, 0, 2, 1])
    yield case("paged-csr-p1-more-splits-than-pages", "Page size 1; S=5 exceeds the pages of the 1- and 3-key requests.",
               lens=[1, 3, 9, 27, 81], cache={"layout": "paged_nhd", "page_size": 1, "table": "csr"},
               split={"policy": "fixed", "splits": 5})
    yield case("paged-hnd-p256-d256", "Paged HND, page 256 (larger than short requests), head dim 256, S=3.",
               lens=[257, 4096, 81], d=256, cache={"layout": "paged_hnd", "page_size": 256},
               split={"policy": "fixed", "splits": 3})
    for p in (8, 32, 64, 128):
        yield case(f"paged-nhd-p{p}-auto", f"Paged NHD CSR, page {p}, auto split, ragged lengths.",
                   lens=RAGGED, cache={"layout": "paged_nhd", "page_size": p}, split={"policy": "auto"}, seed=p)
    # The kernels' general copy path: a page size that is not a power of two, and an item whose page list
    # (1500 pages of 1 key) is longer than the kernel keeps in shared memory.
    yield case("paged-nhd-p24-general-path", "Paged NHD CSR, page 24 (not a power of two), fixed split 2.",
               lens=[23, 24, 25, 1000, 3587], cache={"layout": "paged_nhd", "page_size": 24}, split={"policy": "fixed", "splits": 2})
    yield case("paged-p1-long-page-list", "Page size 1, one split: 1500 and 3000 page ids per item, more than shared memory holds.",
               lens=[1500, 3000], cache={"layout": "paged_nhd", "page_size": 1}, split={"policy": "fixed", "splits": 1})
    for d in (64, 256):  # the room past Q holds 2816 ids at every head dim: 1500 go there, 3000 are loaded per tile
        yield case(f"paged-p1-long-page-list-d{d}", f"d = {d}, page size 1, one split: 1500 and 3000 page ids per item.",
                   lens=[1500, 3000], d=d, cache={"layout": "paged_nhd", "page_size": 1}, split={"policy": "fixed", "splits": 1})
    yield case("paged-dense-hnd-p64-fp16-mlu", "Dense table HND, page 64, fp16, split 7.",
               lens=[3587, 129, 27], dtype="fp16", cache={"layout": "paged_hnd", "page_size": 64, "table": "dense"},
               split={"policy": "fixed", "splits": 7})
    yield case("causal-decode", "Causal decode (S_q=1): every key visible.", lens=RAGGED, mask={"kind": "causal"})
    yield case("causal-verify-sq4", "Verification call: 4 query rows, bottom-right causal, no append.",
               lens=[4096, 257, 9, 4], q_len=4, mask={"kind": "causal"}, cache={"layout": "paged_nhd", "page_size": 16})
    yield case("window-sink-paged", "Sliding window 100 with 4 sink keys on paged NHD; most tiles are SKIP.",
               lens=[4096, 3587, 257, 81, 3], mask={"kind": "sliding_window", "window": 100, "sink": 4},
               cache={"layout": "paged_nhd", "page_size": 16}, split={"policy": "auto"})
    yield case("window-sq2-contig", "Sliding window 64 with 2 query rows.", lens=[1000, 65, 2], q_len=2,
               mask={"kind": "sliding_window", "window": 64})
    yield case("flashmask-documents", "FlashMask document mask: four documents per request, the query in the last one.",
               lens=[4096, 3587, 1024, 257], mask={"kind": "flashmask", "program": "documents", "documents": 4},
               split={"policy": "auto"})
    # Request 0 sees keys {0, 2, 3}; request 1 has every key masked (all-masked row: O = 0, LSE = -inf).
    q0, q1 = 4, 2
    cols0 = [[0, 0, 0, 0], [q0, q0 + 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [q0, q0 + 1, 0, 0]]
    cols1 = [[0, 10, 0, 0]] * 3
    yield case("flashmask-explicit-all-masked", "Explicit FlashMask intervals; request 1 sees no key at all.",
               lens=[5, 3], hq=4, hkv=2, mask={"kind": "flashmask", "program": "explicit", "columns": [cols0, cols1]},
               split={"policy": "fixed", "splits": 2})
    yield case("fp32-reference-g4", "fp32 reference run.", lens=RAGGED, dtype="fp32")
    yield case("head-tail-d80", "Head dim 80: a tail width with predicated lanes.", lens=RAGGED, d=80,
               cache={"layout": "paged_nhd", "page_size": 16})
    yield case("dk128-dv64", "Different Q/K and V head widths.", lens=[257, 81], d=128, dv=64)
    yield case("gqa16-big-rows", "GQA ratio 16: 16 query rows per K/V head (the wide-row instance).",
               lens=[4096, 129, 3], hq=32, hkv=2, split={"policy": "auto"})
    yield case("gqa32-sq4-128-rows", "GQA 32 with 4 query rows: 128 rows share one K/V head.",
               lens=[1000, 27], hq=32, hkv=1, q_len=4, mask={"kind": "causal"}, d=64)
    yield case("append-contig-sq1", "Append one token per request, then decode with bottom-right causality.",
               lens=[4096, 257, 2], phase="append", mask={"kind": "causal"}, cache={"layout": "contiguous_nhd", "capacity": 4200})
    yield case("append-paged-sq3", "Append three rows per request into a paged cache (crossing a page boundary).",
               lens=[4098, 17, 3], q_len=3, phase="append", mask={"kind": "causal"},
               cache={"layout": "paged_nhd", "page_size": 16, "table": "dense"}, rows=[2, 0, 1])
    yield case("naive-reference-backend", "The naive one-row-per-CTA reference backend, forced.",
               lens=[257, 81, 3], backend="dkb_naive_reference", mask={"kind": "causal"},
               cache={"layout": "paged_nhd", "page_size": 16})
    yield case("split1-direct", "One split per request: O is written directly, no combine kernel.",
               lens=RAGGED, split={"policy": "fixed", "splits": 1})
    yield case("no-lse-fp16-mlu", "LSE not requested; fp16; (m,l,u) workspace.", lens=[3587, 81], dtype="fp16", lse=False)
    yield case("many-items-grid-z", "8200 short requests split 8 ways: 65600 work items, more than one grid dimension "
               "holds (65535), so the producer's grid uses z.", lens=[64], count=8200, hq=4, hkv=1, seed=3)
    # Direct plans with enough CTAs that the planner gives each two K/V heads (plan_heads): 132 requests of
    # 1-400 keys, so short items and edge tiles too
    short = [{"uniform": [1, 400]}]
    yield case("two-heads-paged-p1", "132 requests of 1-400 keys unsplit in 1-key pages, GQA 4 over 4 K/V heads: 528 CTAs "
               "of one head, so the planner gives each CTA two heads (264, one wave at d = 128), whose tiles take the "
               "cp.async fast path and edge tiles the general one.", lens=short, count=132, hq=16, hkv=4,
               cache={"layout": "paged_nhd", "page_size": 1, "table": "csr"}, mask={"kind": "causal"},
               split={"policy": "fixed", "splits": 1}, seed=3)
    yield case("two-heads-paged-p16-d256-fp16", "132 requests of 1-400 keys unsplit in 16-key pages at d = 256, fp16, 2 K/V "
               "heads: 264 CTAs of one head, one CTA an SM at d = 256, so the planner gives each CTA both heads (132): TMA "
               "boxes of both heads, edges on cp.async.", lens=short, count=132, d=256, dtype="fp16",
               cache={"layout": "paged_nhd", "page_size": 16, "table": "csr"}, mask={"kind": "causal"},
               split={"policy": "fixed", "splits": 1}, seed=4)
    yield case("two-heads-ragged-d64", "132 packed ragged requests of 1-400 keys unsplit at d = 64, 8 K/V heads: 1056 CTAs "
               "of one head at 4 an SM, so the planner gives each CTA two heads (528, one wave): the early first tile and "
               "TMA boxes of both heads.", lens=short, count=132, hq=32, hkv=8, d=64, cache={"layout": "ragged_nhd"},
               split={"policy": "fixed", "splits": 1}, seed=5)
    # Four K/V heads a CTA (d = 128): 8 K/V heads of 132 requests are 1056 one-head CTAs, 264 of four (one wave)
    yield case("four-heads-paged-p16-g8", "132 requests of 1-400 keys unsplit in 16-key pages, GQA 8 over 8 K/V heads: "
               "1056 CTAs of one head, so the planner gives each CTA four heads (264, one wave at d = 128): TMA boxes of "
               "16 keys of each head, edges on cp.async.", lens=short, count=132, hq=64, hkv=8,
               cache={"layout": "paged_nhd", "page_size": 16, "table": "csr"}, mask={"kind": "causal"},
               split={"policy": "fixed", "splits": 1}, seed=6)
    yield case("four-heads-ragged-fp16-window", "132 packed ragged requests of 1-400 keys unsplit, fp16, GQA 4 over 8 K/V "
               "heads, a sliding window of 100 keys: four heads a CTA (264 CTAs), the early first tile, TMA boxes of four "
               "heads and tiles the window's start cuts.", lens=short, count=132, hq=32, hkv=8, dtype="fp16",
               cache={"layout": "ragged_nhd"}, mask={"kind": "sliding_window", "window": 100},
               split={"policy": "fixed", "splits": 1}, seed=7)
    yield case("four-heads-paged-p1", "132 requests of 1-400 keys unsplit in 1-key pages, GQA 2 over 8 K/V heads: four "
               "heads a CTA (264 CTAs), whose tiles take the cp.async fast path (two keys of each head a thread) and edge "
               "tiles the general one.", lens=short, count=132, hq=16, hkv=8,
               cache={"layout": "paged_nhd", "page_size": 1, "table": "csr"}, mask={"kind": "causal"},
               split={"policy": "fixed", "splits": 1}, seed=8)
    # Three one-head CTAs an SM (d = 128): 8 K/V heads of 400 requests are 3200 CTAs, 8.1 a slot of 396
    yield case("three-per-sm-paged-p16", "400 requests of 1-400 keys unsplit in 16-key pages, GQA 4 over 8 K/V heads: 3200 "
               "CTAs of one head, so many a slot that the planner runs them on the producer built for three CTAs an SM "
               "(its page lists in 5 KiB of shared memory): TMA boxes of 16 keys, edges on cp.async.", lens=short, count=400,
               hq=32, hkv=8, cache={"layout": "paged_nhd", "page_size": 16, "table": "csr"}, mask={"kind": "causal"},
               split={"policy": "fixed", "splits": 1}, seed=9)
    yield case("three-per-sm-ragged-fp16-g8", "400 packed ragged requests of 1-400 keys unsplit, fp16, GQA 8 over 8 K/V heads: "
               "3200 one-head CTAs on the producer built for three CTAs an SM, the early first tile and TMA boxes of 64 keys.",
               lens=short, count=400, hq=64, hkv=8, dtype="fp16", cache={"layout": "ragged_nhd"},
               split={"policy": "fixed", "splits": 1}, seed=10)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fixtures/decode"
    os.makedirs(out, exist_ok=True)
    for name, doc in cases():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
