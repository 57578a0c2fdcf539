"""decode_common.py - what the PyTorch examples share: dkb's bench shapes, seeded bf16 decode inputs, and the
loop that runs a call inside its dkb/call/ NVTX range (the two lines a PyTorch user writes:
torch.cuda.nvtx.range_push(dkb_dump.range_name(key)) ... torch.cuda.nvtx.range_pop()).

Needs python/ on PYTHONPATH (for dkb_dump) and torch with CUDA."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import dkb_dump  # noqa: E402

# dkb's bench shapes (fixtures/bench/*-contig.json): B, T, H_q, H_kv, d; bf16, every key visible to the
# decode query (the fixtures' causal mask at the last position)
SHAPES = {
    "b16-t8192-g4": (16, 8192, 32, 8, 128),
    "b1-t32768-g4": (1, 32768, 32, 8, 128),
    "b4-t4096-g4": (4, 4096, 32, 8, 128),
    "b8-t16384-g1": (8, 16384, 32, 32, 128),
    "b1-t131072-g8": (1, 131072, 8, 1, 128),
}


def fail(code, msg):
    """Exit with a status the runner script reads: 3 = this example cannot run here (what is missing)."""
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(code)


def need_cuda():
    if not torch.cuda.is_available():
        fail(3, "no CUDA device")
    torch.cuda.init()  # the driver loads the injection library here, before any range
    torch.zeros(1, device="cuda")


def bhsd_inputs(shape, seed=1):
    """q [B, H_q, 1, d] and k, v [B, H_kv, T, d], bf16 on the GPU, uniform in [-1, 1)."""
    B, T, H_q, H_kv, d = SHAPES[shape]
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda *s: (torch.rand(*s, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(torch.bfloat16)
    return mk(B, H_q, 1, d), mk(B, H_kv, T, d), mk(B, H_kv, T, d)


def traced(key, fn, iters=10, warmup=3):
    """fn() warmup times outside any range (compilation, autotuning, lazy module loads), then iters times,
    each inside the call's range; returns the last result."""
    out = None
    for _ in range(warmup):
        out = fn()
    torch.cuda.synchronize()
    name = dkb_dump.range_name(key)
    for _ in range(iters):
        torch.cuda.nvtx.range_push(name)
        out = fn()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    return out


def report(label, key, folder):
    print(f"{label}: call {dkb_dump.digest(key)[:16]} dumped to {folder}")
