#!/usr/bin/python3
"""Writes the bench fixtures fixtures/bench/*.json: the shapes of the roofline targets (bf16, d=128),
swept with forced split counts by `dkb bench --matrix fixtures/bench/matrix.json`, and the serving
batches of fixtures/bench/serving.json (many short requests, a ragged batch of short and long ones, head
dims 64 and 256, fp16, pages of 1, 16 and 64 keys) and the sweep of fixtures/bench/ends.json (the same
bytes as more, shorter requests), each an ordinary dkb.decode/v1 call that returns no LSE.
usage: tools/gen-bench-fixtures.py [OUTDIR]"""
import json
import os
import sys

TOL = {"atol": 2e-3, "rtol": 1.6e-2, "lse_atol": 2e-4, "lse_rtol": 2e-5}
# fp16 keeps 3 more mantissa bits than bf16: the tolerances of the fp16 decode fixtures (fixtures/decode)
TOL_FP16 = {"atol": 5e-4, "rtol": 4e-3, "lse_atol": 2e-4, "lse_rtol": 2e-5}


def fx(name, desc, requests, hq, hkv, layout="contiguous_nhd", mask=None, graph=False, page_order=None, page_size=16, d=128,
       dtype="bf16", shuffle_group=None):
    cache = {"layout": layout}
    if layout.startswith("paged"):
        cache.update({"page_size": page_size, "table": "csr"})
    if page_order:
        cache["page_order"] = page_order
    if shuffle_group:
        cache["shuffle_group"] = shuffle_group
    # No LSE: a serving engine's decode call does not ask for it (vLLM's through FlashInfer or FlashAttention),
    # and FlashInfer's tensor-core decode sums the softmax denominator over P rounded to 16 bits, so its LSE
    # misses dkb's tolerance while its O is within it (plugins/flashinfer/README.md): asked for an LSE, it could
    # not be timed beside the others. The decode fixtures check dkb's LSE.
    doc = {"schema": "dkb.decode/v1", "name": name, "description": desc, "phase": "decode", "requests": requests,
           "q_len": 1, "heads": {"H_q": hq, "H_kv": hkv, "d_qk": d, "d_v": d}, "dtype": dtype, "cache": cache,
           "mask": mask or {"kind": "causal"}, "split": {"policy": "auto"}, "return_lse": False, "seed": 7,
           "tolerance": TOL_FP16 if dtype == "fp16" else TOL}
    if graph:
        doc["graph"] = True
    return name, doc


def cases():
    for lay, tag in (("contiguous_nhd", "contig"), ("paged_nhd", "paged16")):
        yield fx(f"b16-t8192-g4-{tag}", "512 MiB of K/V: B=16, T=8192, H_q=32, H_kv=8.", {"count": 16, "kv_len": 8192}, 32, 8, lay)
        yield fx(f"b8-t16384-g1-{tag}", "2 GiB of K/V, MHA: B=8, T=16384, H_q=H_kv=32.", {"count": 8, "kv_len": 16384}, 32, 32, lay)
        yield fx(f"b1-t32768-g4-{tag}", "One long request: B=1, T=32768, H_q=32, H_kv=8.", {"count": 1, "kv_len": 32768}, 32, 8, lay)
        yield fx(f"b1-t131072-g8-{tag}", "One very long request: B=1, T=131072, H_q=8, H_kv=1.", {"count": 1, "kv_len": 131072}, 8, 1, lay)
        yield fx(f"b4-t4096-g4-{tag}", "Small: B=4, T=4096, H_q=32, H_kv=8 (67 MB).", {"count": 4, "kv_len": 4096}, 32, 8, lay)
        yield fx(f"b4-t4096-g4-{tag}-graph", "Small, timed as CUDA graph replays.", {"count": 4, "kv_len": 4096}, 32, 8, lay, graph=True)
    # No target: how much of the paged cost is the page order (the others use the default, shuffled pool)
    yield fx("b16-t8192-g4-paged16-sequential", "B16 T8192 paged, pool pages in logical order: the page-order share of the paged cost.",
             {"count": 16, "kv_len": 8192}, 32, 8, "paged_nhd", page_order="sequential")
    # ... and of six serving shapes' (not in serving.json)
    short = {"count": 64, "kv_len": 2048}
    yield fx("b64-t2048-g4-paged16-sequential", "B=64, T=2048 paged, pool pages in logical order: the page-order share.",
             short, 32, 8, "paged_nhd", page_order="sequential")
    yield fx("b128-t1024-g8-paged16-sequential", "B=128, T=1024 paged, pool pages in logical order: the page-order share.",
             {"count": 128, "kv_len": 1024}, 64, 8, "paged_nhd", page_order="sequential")
    yield fx("b64-t2048-g4-d64-paged16-sequential", "B=64, T=2048, d=64 paged, pool pages in logical order: the page-order "
             "share.", short, 64, 16, "paged_nhd", page_order="sequential", d=64)
    yield fx("b512-t256-g4-paged16-sequential", "B=512, T=256 paged, pool pages in logical order: the page-order share.",
             {"count": 512, "kv_len": 256}, 32, 8, "paged_nhd", page_order="sequential")
    yield fx("b256-t512-g4-paged16-sequential", "B=256, T=512 paged, pool pages in logical order: the page-order share.",
             {"count": 256, "kv_len": 512}, 32, 8, "paged_nhd", page_order="sequential")
    yield fx("ragged64-long4-paged16-sequential", "The ragged serving batch paged, pool pages in logical order: the "
             "page-order share.", RAGGED_REQUESTS, 32, 8, "paged_nhd", page_order="sequential")
    # ... and B512's by page size: a 256-key page holds one request, so in order they lay K/V out as contiguous does
    for ps in (64, 256):
        for seq in (False, True):
            what = "pool pages in logical order" if seq else "shuffled pool"
            yield fx(f"b512-t256-g4-paged{ps}" + ("-sequential" if seq else ""),
                     f"B=512, T=256 in {ps}-key pages, {what}: the page-size share.", {"count": 512, "kv_len": 256}, 32, 8,
                     "paged_nhd", page_order="sequential" if seq else None, page_size=ps)
    # ... and by how far the shuffle scatters its 16-key pages: within 2 MiB of K (64 pool pages) and 32 MiB (1024)
    for g, span in ((64, "2 MiB"), (1024, "32 MiB")):
        yield fx(f"b512-t256-g4-paged16-group{g}", f"B=512, T=256 paged, pool pages shuffled only within groups of {g} "
                 f"({span} of K): the shuffle span's share.", {"count": 512, "kv_len": 256}, 32, 8, "paged_nhd",
                 shuffle_group=g)
    # ... and the caches whose whole tiles take cp.async, not TMA boxes: pages under 8 keys, HND layouts,
    # and 1-key pages at the serving shapes' other head dims (docs/kernels.md, "Tile pipeline")
    yield fx("b64-t2048-g4-paged4", "B=64, T=2048 in 4-key pages: cp.async tiles.", short, 32, 8, "paged_nhd", page_size=4)
    yield fx("b64-t2048-g4-hnd", "B=64, T=2048, contiguous HND cache: cp.async tiles.", short, 32, 8, "contiguous_hnd")
    yield fx("b64-t2048-g4-paged16-hnd", "B=64, T=2048 in 16-key HND pages: cp.async tiles.", short, 32, 8, "paged_hnd")
    yield fx("b64-t2048-g4-d64-paged1", "B=64, T=2048, d=64 in 1-key pages: cp.async tiles, 2048 page ids an item.", short,
             64, 16, "paged_nhd", page_size=1, d=64)
    yield fx("b64-t2048-g4-d256-paged1", "B=64, T=2048, d=256 in 1-key pages: cp.async tiles, 2048 page ids an item.",
             short, 16, 4, "paged_nhd", page_size=1, d=256)
    yield fx("ragged32-paged16", "Ragged batch: 32 requests, lengths uniform in [512, 16384].",
             {"count": 32, "kv_len": {"uniform": [512, 16384]}}, 32, 8, "paged_nhd")
    # issue 9: masked decode that pays only for visible keys
    yield fx("b16-t8192-window1024", "Sliding window 1024 over 8192 keys.", {"count": 16, "kv_len": 8192}, 32, 8,
             "paged_nhd", {"kind": "sliding_window", "window": 1024})
    yield fx("b1-t32768-window4096", "Sliding window 4096 over one 32768-key request.", {"count": 1, "kv_len": 32768}, 32, 8,
             "paged_nhd", {"kind": "sliding_window", "window": 4096})
    yield fx("b16-t8192-documents4", "FlashMask document mask: four documents per request, the query in the last.",
             {"count": 16, "kv_len": 8192}, 32, 8, "paged_nhd", {"kind": "flashmask", "program": "documents", "documents": 4})
    yield fx("b16-t8192-window-all", "A window that hides nothing (window >= T): must cost what the unmasked kernel costs.",
             {"count": 16, "kv_len": 8192}, 32, 8, "paged_nhd", {"kind": "sliding_window", "window": 8192})
    yield from serving()
    yield from ends()


# The ragged serving batch: 60 short requests of 64-2048 keys (awkward lengths, a fixed arithmetic walk)
# and 4 long ones among them, every 16th.
LONG = (32768, 27001, 20483, 16385)
RAGGED = [LONG[i // 16] if i % 16 == 0 else 64 + (i * 1231) % 1985 for i in range(64)]
RAGGED_REQUESTS = [{"kv_len": n} for n in RAGGED]


def serving():
    """The serving batches of fixtures/bench/serving.json, each contiguous and paged (shuffled pool pages,
    CSR): 537 MB of K/V each but the ragged batch, so that one variable changes at a time against
    B=64, T=2048, H_q=32, H_kv=8, d=128, bf16."""
    short = {"count": 64, "kv_len": 2048}
    for lay, tag, ps in (("contiguous_nhd", "contig", 16), ("paged_nhd", "paged1", 1), ("paged_nhd", "paged16", 16),
                         ("paged_nhd", "paged64", 64)):
        yield fx(f"b64-t2048-g4-{tag}", "Many short requests: B=64, T=2048, H_q=32, H_kv=8 (537 MB).", short, 32, 8, lay,
                 page_size=ps)
    for lay, tag in (("contiguous_nhd", "contig"), ("paged_nhd", "paged16")):
        yield fx(f"b64-t2048-g4-fp16-{tag}", "Many short requests in fp16: B=64, T=2048, H_q=32, H_kv=8 (537 MB).", short, 32,
                 8, lay, dtype="fp16")
        yield fx(f"b128-t1024-g8-{tag}", "More, shorter requests, GQA 8: B=128, T=1024, H_q=64, H_kv=8 (537 MB).",
                 {"count": 128, "kv_len": 1024}, 64, 8, lay)
        yield fx(f"b64-t2048-g4-d64-{tag}", "Many short requests, head dim 64: B=64, T=2048, H_q=64, H_kv=16 (537 MB).", short,
                 64, 16, lay, d=64)
        yield fx(f"b64-t2048-g4-d256-{tag}", "Many short requests, head dim 256: B=64, T=2048, H_q=16, H_kv=4 (537 MB).", short,
                 16, 4, lay, d=256)
    for lay, tag in (("ragged_nhd", "packed"), ("paged_nhd", "paged16")):
        yield fx(f"ragged64-long4-{tag}", f"Ragged serving batch: 60 requests of 64-2048 keys and 4 of {LONG[-1]}-{LONG[0]} "
                 f"({sum(RAGGED)} keys, H_q=32, H_kv=8, {sum(RAGGED) * 4096 / 1e6:.0f} MB).", RAGGED_REQUESTS, 32, 8, lay)


def ends():
    """The 537 MB of B=64, T=2048 as more, shorter requests (fixtures/bench/ends.json): B CTAs' ends a slot
    at the same bytes, GQA 4 and 8, contiguous and 16-key pages. The four shapes serving() writes are
    its fixtures; fixtures/bench/serving.json runs those of B=64 to 512 too."""
    for b in (32, 64, 128, 256, 512):
        t = 131072 // b
        for g in (4, 8):
            for lay, tag in (("contiguous_nhd", "contig"), ("paged_nhd", "paged16")):
                if (b, g) in ((64, 4), (128, 8)):
                    continue
                yield fx(f"b{b}-t{t}-g{g}-{tag}", f"The 537 MB of B=64, T=2048 as B={b}, T={t}, H_q={8 * g}, H_kv=8: "
                         "ends a slot at the same bytes.", {"count": b, "kv_len": t}, 8 * g, 8, lay)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fixtures/bench"
    os.makedirs(out, exist_ok=True)
    for name, doc in cases():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
