"""dkb_dump - write one decode-attention call in dkb's dump format (dkb.dump/v1, schemas/dump.schema.json)
for `dkb check`, and name its NVTX range for `dkb trace`.

Needs numpy; torch only when given torch tensors (imported on first use). No install step: copy this file
next to your script, or `pip install -e python/` from a dkb checkout.

An SDPA decode call, traced and dumped (q [B, H_q, 1, d], k and v [B, H_kv, T, d]):

    import dkb_dump
    key = dkb_dump.call_key_sdpa(q, k, v, backend="torch_sdpa_flash")
    torch.cuda.nvtx.range_push(dkb_dump.range_name(key))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.nvtx.range_pop()
    dkb_dump.dump_sdpa(None, key, q, k, v, o)     # None: $DKB_TRACE_DUMP_DIR/<digest>, where dkb trace looks

then `dkb check DIR` (or `dkb trace -- python script.py`, which checks the dumps of the calls it saw).
Any other layout: build the key with call_key(...) and write the tensors with dump(...) in the layouts
harness/dump.h documents (q [B][C][H_q][d_qk], caches as the layout lays them out, o_gpu [B][C][H_q][d_v]).
"""
import hashlib
import json
import math
import os
import sys

import numpy as np

__version__ = "1"
SCHEMA = "dkb.dump/v1"
PREFIX = "dkb/call/"
# The tolerances dkb's own fixtures freeze for each storage dtype (fixtures/bench, fixtures/decode).
TOLERANCES = {
    "bf16": {"atol": 0.002, "rtol": 0.016, "lse_atol": 0.0002, "lse_rtol": 2e-05},
    "fp16": {"atol": 0.0005, "rtol": 0.004, "lse_atol": 0.0002, "lse_rtol": 2e-05},
    "fp32": {"atol": 2e-05, "rtol": 0.0002, "lse_atol": 0.0002, "lse_rtol": 2e-05},
}
_NPY = {"fp16": "<f2", "bf16": "<u2", "fp32": "<f4", "fp64": "<f8", "int32": "<i4", "int64": "<i8", "uint8": "|u1"}


def canonical(obj):
    """dkb's canonical JSON: the bytes every dkb digest is taken over (lib/cjson.h)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def digest(key):
    """SHA-256 of the canonical call key: what `dkb digest` prints and dkb trace recomputes."""
    return hashlib.sha256(canonical(key).encode("ascii")).hexdigest()


def range_name(key):
    """The NVTX range name of a call: "dkb/call/" + the canonical call-key JSON."""
    return PREFIX + canonical(key)


def call_key(*, B, S_q, S_k_per_request, H_q, H_kv, d_qk, d_v, dtype, cache_layout, cache_batch_idx=None,
             page_size=None, page_table=None, cache_capacity=None, mask=None, phase="decode", scale=None,
             backend="auto", return_lse=False, graph_mode=False, tolerances=None, seed=0):
    """A dkb.call-key/v1 document (article 0x0BE) with dkb's field names. split, workspace and seed are dkb's
    own run parameters: a foreign call records the defaults, which no check reads. backend names what ran
    ([a-z0-9_]), so two backends' calls have two keys."""
    lens = [int(n) for n in S_k_per_request]
    if len(lens) != B:
        raise ValueError(f"S_k_per_request holds {len(lens)} lengths for B = {B}")
    if H_q % H_kv:
        raise ValueError(f"H_q = {H_q} is not a multiple of H_kv = {H_kv}")
    key = {
        "schema": "dkb.call-key/v1", "phase": phase, "B": int(B), "S_q": int(S_q), "S_k_per_request": lens,
        "H_q": int(H_q), "H_kv": int(H_kv), "d_qk": int(d_qk), "d_v": int(d_v), "q_dtype": dtype, "kv_dtype": dtype,
        "o_dtype": dtype, "cache_layout": cache_layout, "page_size": None if page_size is None else int(page_size),
        "cache_batch_idx": [int(r) for r in (cache_batch_idx if cache_batch_idx is not None else range(B))],
        "mask": mask or {"kind": "none"}, "split": {"policy": "auto", "max_splits": 1024},
        "workspace": {"abi": "mlu", "o_dtype": "fp32"}, "return_lse": bool(return_lse), "graph_mode": bool(graph_mode),
        "backend_request": backend, "scale": float(scale if scale is not None else 1.0 / math.sqrt(d_qk)),
        "seed": int(seed), "tolerances": dict(tolerances or TOLERANCES[dtype]),
    }
    if cache_layout.startswith("paged"):
        key["page_table"] = page_table or "csr"
    if cache_layout.startswith("contiguous"):
        key["cache_capacity"] = int(cache_capacity)
    return key


class bf16_bits:
    """A bf16 array held as its uint16 bit patterns (NumPy has no bf16): what dkb's dumps store."""

    def __init__(self, bits):
        self.bits = np.ascontiguousarray(bits, dtype=np.uint16)
        self.shape = self.bits.shape

    def to_float32(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _swap12(x):
    """Axes 1 and 2 swapped (SDPA's BHSD to dkb's [B][C][H]), for numpy, bf16_bits or torch."""
    if _is_torch(x):
        return x.transpose(1, 2)
    if isinstance(x, bf16_bits):
        return bf16_bits(np.swapaxes(x.bits, 1, 2))
    return np.swapaxes(x, 1, 2)


def _dtype_name(x):
    """dkb dtype name of a numpy array, bf16_bits or torch tensor."""
    if isinstance(x, bf16_bits):
        return "bf16"
    if _is_torch(x):
        import torch  # only when given a tensor
        names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.float64: "fp64",
                 torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8"}
        if x.dtype not in names:
            raise TypeError(f"dkb dumps hold {', '.join(_NPY)}; got {x.dtype}")
        return names[x.dtype]
    names = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "int32": "int32", "int64": "int64", "uint8": "uint8"}
    if str(x.dtype) not in names:
        raise TypeError(f"dkb dumps hold {', '.join(_NPY)}; got {x.dtype} (bf16: pass a torch tensor or use as_bf16_bits)")
    return names[str(x.dtype)]


def _to_numpy(x):
    """C-contiguous numpy array of x; bf16 becomes its uint16 bit patterns."""
    if isinstance(x, bf16_bits):
        return x.bits
    if _is_torch(x):
        import torch
        x = x.detach().to("cpu").contiguous()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy().view(np.uint16)
        return x.numpy()
    return np.ascontiguousarray(x)


def as_bf16_bits(a):
    """A float numpy array rounded to bf16 (to nearest even), as bf16_bits."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bf16_bits(np.where(np.isnan(a), np.uint16(0x7FC0), r))


def _call_of(key):
    """The "call" member dkb's readers check the tensors against, from the key."""
    layout = key["cache_layout"]
    mask = key.get("mask") or {"kind": "none"}
    if isinstance(mask, str):
        mask = {"kind": mask}
    return {
        "B": key["B"], "C": key["S_q"], "H_q": key["H_q"], "H_kv": key["H_kv"], "d_qk": key["d_qk"], "d_v": key["d_v"],
        "dtype": key["q_dtype"], "scale": key["scale"], "phase": key["phase"], "layout": layout,
        "table": key.get("page_table") if layout.startswith("paged") else None,
        "page_size": key.get("page_size") if layout.startswith("paged") else None,
        "T_cap": key.get("cache_capacity") if layout.startswith("contiguous") else None,
        "mask": {"kind": mask["kind"], "window": mask.get("window"), "sink": mask.get("sink")},
    }


def _prepare(folder):
    """mkdir -p; an earlier dump there is replaced; any other file is refused (like dkb run --dump)."""
    os.makedirs(folder, exist_ok=True)
    entries = set(os.listdir(folder))
    if not entries:
        return
    try:
        with open(os.path.join(folder, "index.json")) as f:
            old = json.load(f)
        names = {e["name"] for e in old["files"]} if old.get("schema") == SCHEMA else None
    except (OSError, ValueError, KeyError, TypeError):
        names = None
    if names is None or not entries <= names | {"index.json"}:
        raise FileExistsError(f"{folder}: not empty and not a previous dkb dump")
    os.unlink(os.path.join(folder, "index.json"))
    for n in entries - {"index.json"}:
        os.unlink(os.path.join(folder, n))


def _write_npy(folder, role, x, layout):
    dtype = _dtype_name(x)
    a = _to_numpy(x)
    if a.dtype.str != _NPY[dtype]:
        a = a.astype(_NPY[dtype])
    path = os.path.join(folder, role + ".npy")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, a, allow_pickle=False)
    os.replace(tmp, path)
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return {"name": role + ".npy", "role": role, "dtype": dtype, "npy_dtype": _NPY[dtype], "shape": list(a.shape),
            "layout": layout, "sha256": sha, "bytes": os.path.getsize(path)}


def _write_index(folder, index):
    path = os.path.join(folder, "index.json")
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(index, sort_keys=True, indent=2) + "\n")
    os.replace(path + ".tmp", path)


def default_dir(key, name=None):
    """$DKB_TRACE_DUMP_DIR (set by dkb trace) or ./dkb-dumps, then name or the key's digest."""
    base = os.environ.get("DKB_TRACE_DUMP_DIR") or "dkb-dumps"
    return os.path.join(base, name or digest(key)[:16])


def _producer():
    p = {"name": "dkb_dump.py", "version": __version__, "python": sys.version.split()[0], "numpy": np.__version__}
    if "torch" in sys.modules:
        p["torch"] = sys.modules["torch"].__version__
    return p


def dump(folder, key, tensors, *, lse_base="natural", empty_row="zero_neginf", layouts=None):
    """Writes tensors (role -> numpy array or torch tensor, C order, in the layouts harness/dump.h documents)
    and index.json, last. The candidate's output is role o_gpu (and lse_gpu, fp32 [B][C][H_q]); its
    conventions: lse_base "natural" or "base2", empty_row "zero_neginf", "zero_posinf" or "nan". folder None:
    default_dir(key). Returns the folder."""
    folder = folder or default_dir(key)
    if "o_gpu" not in tensors:
        raise ValueError("the candidate's output (role o_gpu) is what dkb check compares: include it")
    _prepare(folder)
    files = [_write_npy(folder, role, x, (layouts or {}).get(role, role)) for role, x in tensors.items()]
    _write_index(folder, {"schema": SCHEMA, "call_key": key, "call": _call_of(key), "files": files,
                          "producer": _producer(), "candidate": {"lse_base": lse_base, "empty_row": empty_row}})
    return folder


def add_candidate(folder, o, lse=None, *, lse_base="natural", empty_row="zero_neginf"):
    """Adds a candidate's o_gpu (and lse_gpu) to an existing dump (e.g. one `dkb run --dump` wrote on a host
    without a GPU: its inputs and the float64 reference), replacing any there."""
    path = os.path.join(folder, "index.json")
    with open(path) as f:
        index = json.load(f)
    keep = [e for e in index["files"] if e["role"] not in ("o_gpu", "lse_gpu")]
    for e in index["files"]:
        if e not in keep:
            os.unlink(os.path.join(folder, e["name"]))
    keep.append(_write_npy(folder, "o_gpu", o, "[B][C][H_q][d_v]"))
    if lse is not None:
        keep.append(_write_npy(folder, "lse_gpu", lse, "[B][C][H_q]"))
    index["files"] = keep
    index["candidate"] = {"lse_base": lse_base, "empty_row": empty_row}
    _write_index(folder, index)
    return folder


# ---- PyTorch SDPA: q [B, H_q, S_q, d], k and v [B, H_kv, T, d] (BHSD) ---------------------------------------

def call_key_sdpa(q, k, v, *, backend="auto", mask=None, scale=None, tolerances=None, return_lse=False, graph_mode=False):
    """The call key of scaled_dot_product_attention over a contiguous cache: dkb's contiguous_hnd layout
    ([cache_rows][H_kv][T_cap][d], one cache row per request, every key visible unless mask says otherwise)."""
    B, H_q, S_q, d_qk = q.shape
    _, H_kv, T, _ = k.shape
    return call_key(B=B, S_q=S_q, S_k_per_request=[T] * B, H_q=H_q, H_kv=H_kv, d_qk=d_qk, d_v=v.shape[-1],
                    dtype=_dtype_name(q), cache_layout="contiguous_hnd", cache_capacity=T, mask=mask, scale=scale,
                    backend=backend, tolerances=tolerances, return_lse=return_lse, graph_mode=graph_mode)


def dump_sdpa(folder, key, q, k, v, o, lse=None):
    """Dumps an SDPA call (tensors as SDPA takes and returns them; lse [B, H_q, S_q] natural log if given)."""
    B = q.shape[0]
    tensors = {
        "q": _swap12(q),
        "k_cache": k, "v_cache": v,
        "kv_len": np.full(B, k.shape[2], dtype=np.int64),
        "cache_batch_idx": np.arange(B, dtype=np.int32),
        "o_gpu": _swap12(o),
    }
    if lse is not None:
        tensors["lse_gpu"] = lse.transpose(1, 2).float() if _is_torch(lse) else np.swapaxes(lse, 1, 2).astype(np.float32)
    layouts = {"q": "[B][C][H_q][d_qk]", "k_cache": "contiguous_hnd [cache_rows][H_kv][T_cap][d]",
               "v_cache": "contiguous_hnd [cache_rows][H_kv][T_cap][d]", "kv_len": "[B]", "cache_batch_idx": "[B]",
               "o_gpu": "[B][C][H_q][d_v]", "lse_gpu": "[B][C][H_q]"}
    return dump(folder or default_dir(key), key, tensors, layouts=layouts)
