#!/usr/bin/python3
"""dump_check.py - independent float64 check of a dkb dump (dkb.dump/v1; harness/dump.h has the format).

Verifies every file against index.json (size, SHA-256, npy dtype, shape), then, for a decode dump
(one with "call"): gathers K/V through the dump's own layout metadata with the offset formulas of
schemas/dump.schema.json (never through dkb code), applies the mask, recomputes O and LSE in float64
with NumPy and compares them to o_ref / lse_ref (max |diff| <= tol, infinities exactly); checks that
every cache element no visible key addresses holds NaN poison; reports (never fails on) the error of
o_gpu / lse_gpu; and for append checks k_cache_after / v_cache_after bit for bit against the pre-call
cache with the new rows written at their translated addresses.

usage: dump_check.py DIR [--tol 1e-12]
exit:  0 pass, 1 mismatch, 2 usage, 3 malformed dump (unreadable or inconsistent index, a file whose
       size, SHA-256, dtype or shape disagrees with index.json, metadata that maps outside a tensor)
Only Debian's python3-numpy is needed (run with /usr/bin/python3)."""
import hashlib
import json
import os
import sys

import numpy as np

NPY = {"fp16": "<f2", "bf16": "<u2", "fp32": "<f4", "fp64": "<f8", "int32": "<i4", "int64": "<i8", "uint8": "|u1"}
LAYOUTS = ("contiguous_nhd", "contiguous_hnd", "ragged_nhd", "paged_nhd", "paged_hnd")
MASKS = ("none", "causal", "sliding_window", "flashmask")
FILE_KEYS = {"name", "role", "dtype", "npy_dtype", "shape", "layout", "sha256", "bytes"}


class Malformed(Exception):
    """The dump cannot be checked: exit 3 with this message."""


def load_files(folder):
    """index.json and every listed array, verified; returns (index, {role: (entry, array)})."""
    path = os.path.join(folder, "index.json")
    try:
        with open(path) as f:
            index = json.load(f)
    except OSError as e:
        raise Malformed(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise Malformed(f"{path}: not JSON: {e}")
    if not isinstance(index, dict) or index.get("schema") != "dkb.dump/v1":
        raise Malformed(f"{path}: /schema: must be \"dkb.dump/v1\"")
    files = index.get("files")
    if not isinstance(files, list):
        raise Malformed(f"{path}: /files: must be an array")
    tensors = {}
    for i, e in enumerate(files):
        where = f"{path}: /files/{i}"
        if not isinstance(e, dict) or set(e) != FILE_KEYS:
            raise Malformed(f"{where}: must be an object with exactly the keys {', '.join(sorted(FILE_KEYS))}")
        name, role = e["name"], e["role"]
        if not isinstance(name, str) or os.path.basename(name) != name or not name.endswith(".npy") or name[0] == ".":
            raise Malformed(f"{where}/name: must be a .npy file name inside the folder")
        if NPY.get(e["dtype"]) != e["npy_dtype"]:
            raise Malformed(f"{where}/npy_dtype: {e['npy_dtype']!r} is not how {e['dtype']!r} is stored")
        if not isinstance(e["shape"], list) or not all(isinstance(n, int) and n >= 0 for n in e["shape"]):
            raise Malformed(f"{where}/shape: must be an array of integers >= 0")
        if not isinstance(role, str) or role in tensors:
            raise Malformed(f"{where}/role: must be a string used once")
        fpath = os.path.join(folder, name)
        try:
            size = os.path.getsize(fpath)
        except OSError as err:
            raise Malformed(f"{fpath}: cannot read: {err.strerror}")
        if size != e["bytes"]:
            raise Malformed(f"{fpath}: {size} bytes, index.json says {e['bytes']}")
        with open(fpath, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        if digest != e["sha256"]:
            raise Malformed(f"{fpath}: sha256 {digest} does not match index.json ({e['sha256']})")
        try:
            a = np.load(fpath, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise Malformed(f"{fpath}: not a .npy array: {err}")
        if a.dtype.str != e["npy_dtype"] or list(a.shape) != e["shape"]:
            raise Malformed(f"{fpath}: holds {a.dtype.str} {list(a.shape)}, index.json says {e['npy_dtype']} {e['shape']}")
        tensors[role] = (e, a)
    return index, tensors


def widen(a, dtype):
    """float64 values of an array stored as a dkb dtype; bf16 is uint16 bits, the top half of a float32."""
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


class Decode:
    """The call of a decode dump, its tensors checked against the shapes the call implies."""

    def __init__(self, folder, index, tensors):
        self.folder, self.tensors = folder, tensors
        ix = self.path("index.json")
        call = index.get("call")
        if not isinstance(call, dict):
            raise Malformed(f"{ix}: /call: must be an object")
        self.call = call

        def num(key, lo=1, null=False):
            v = call.get(key)
            if v is None and null:
                return None
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise Malformed(f"{ix}: /call/{key}: must be an integer >= {lo}" + (" or null" if null else ""))
            return v

        self.B, self.C, self.H_q, self.H_kv = num("B"), num("C"), num("H_q"), num("H_kv")
        self.dk, self.dv = num("d_qk"), num("d_v")
        if self.H_q % self.H_kv:
            raise Malformed(f"{ix}: /call/H_kv: must divide H_q")
        self.g = self.H_q // self.H_kv
        self.dtype = call.get("dtype")
        if self.dtype not in ("fp16", "bf16", "fp32"):
            raise Malformed(f"{ix}: /call/dtype: must be fp16, bf16 or fp32")
        self.scale = call.get("scale")
        if not isinstance(self.scale, (int, float)) or isinstance(self.scale, bool) or not self.scale > 0:
            raise Malformed(f"{ix}: /call/scale: must be a number > 0")
        self.phase = call.get("phase")
        if self.phase not in ("decode", "append"):
            raise Malformed(f"{ix}: /call/phase: must be decode or append")
        self.layout = call.get("layout")
        if self.layout not in LAYOUTS:
            raise Malformed(f"{ix}: /call/layout: must be one of {', '.join(LAYOUTS)}")
        self.paged = self.layout.startswith("paged")
        self.table = call.get("table")
        if self.table not in (("dense", "csr") if self.paged else (None,)):
            raise Malformed(f"{ix}: /call/table: must be dense or csr for paged layouts, null otherwise")
        self.P = num("page_size", null=not self.paged)
        self.T_cap = num("T_cap", null=not self.layout.startswith("contiguous"))
        mask = call.get("mask")
        if not isinstance(mask, dict) or mask.get("kind") not in MASKS:
            raise Malformed(f"{ix}: /call/mask/kind: must be one of {', '.join(MASKS)}")
        self.mask = mask["kind"]
        if self.mask == "sliding_window":
            self.window = mask.get("window")
            self.sink = mask.get("sink") or 0
            if not isinstance(self.window, int) or self.window < 1 or not isinstance(self.sink, int) or self.sink < 0:
                raise Malformed(f"{ix}: /call/mask: sliding_window needs window >= 1 and sink >= 0 (or null)")

        B, C = self.B, self.C
        self.q = self.need("q", self.dtype, (B, C, self.H_q, self.dk))
        self.kv_len = self.need("kv_len", "int64", (B,)).astype(np.int64)
        if (self.kv_len < C).any():
            raise Malformed(f"{self.path('kv_len.npy')}: every request needs kv_len >= C = {C} (got {self.kv_len.tolist()})")
        self.append = self.phase == "append"
        self.k = self.tensors.get("k_cache", (None, None))[1]
        if self.k is None or self.k.ndim < 1:
            raise Malformed(f"{ix}: no k_cache (required by this call)")
        self.cache_shape_check()
        if self.append:
            self.k_new = self.need("k_new", self.dtype, (B, C, self.H_kv, self.dk))
            self.v_new = self.need("v_new", self.dtype, (B, C, self.H_kv, self.dv))
        if self.mask == "flashmask":
            self.col_indptr = self.need("col_indptr", "int64", (B + 1,)).astype(np.int64)
            if self.col_indptr[0] < 0 or (np.diff(self.col_indptr) != self.kv_len).any():
                raise Malformed(f"{self.path('col_indptr.npy')}: request b's columns must be kv_len[b] long, starting at >= 0")
            n = int(self.col_indptr[-1])
            self.iv = [self.need(r, "int32", None, ndim=1).astype(np.int64) for r in ("uts", "ute", "lts", "lte")]
            if any(len(v) < n for v in self.iv):
                raise Malformed(f"{self.path('uts.npy')}: uts, ute, lts and lte need at least col_indptr[B] = {n} columns")

    def path(self, name):
        return os.path.join(self.folder, name)

    def need(self, role, dtype, shape, ndim=None):
        if role not in self.tensors:
            raise Malformed(f"{self.path('index.json')}: no {role} (required by this call)")
        e, a = self.tensors[role]
        where = self.path(e["name"])
        if e["dtype"] != dtype:
            raise Malformed(f"{where}: dtype {e['dtype']}, this call needs {dtype}")
        if shape is not None and a.shape != tuple(shape):
            raise Malformed(f"{where}: shape {list(a.shape)}, this call needs {list(shape)}")
        if ndim is not None and a.ndim != ndim:
            raise Malformed(f"{where}: must have {ndim} dimension(s)")
        return a

    def cache_shape_check(self):
        """Checks k_cache/v_cache against the layout and reads the metadata that addresses them."""
        H, B = self.H_kv, self.B
        n0 = self.k.shape[0]  # cache rows, ragged tokens or pool pages
        lay = {"contiguous_nhd": lambda d: (n0, self.T_cap, H, d), "contiguous_hnd": lambda d: (n0, H, self.T_cap, d),
               "ragged_nhd": lambda d: (n0, H, d), "paged_nhd": lambda d: (n0, self.P, H, d),
               "paged_hnd": lambda d: (n0, H, self.P, d)}[self.layout]
        self.k = self.need("k_cache", self.dtype, lay(self.dk))
        self.v = self.need("v_cache", self.dtype, lay(self.dv))
        if self.layout.startswith("contiguous") or self.table == "dense":
            self.row = self.need("cache_batch_idx", "int32", (B,)).astype(np.int64)
        if self.layout.startswith("contiguous"):
            if (self.row < 0).any() or (self.row >= n0).any():
                raise Malformed(f"{self.path('cache_batch_idx.npy')}: rows must be in [0, {n0})")
            if (self.kv_len > self.T_cap).any():
                raise Malformed(f"{self.path('kv_len.npy')}: a request is longer than T_cap = {self.T_cap}")
        elif self.layout == "ragged_nhd":
            self.indptr = self.need("indptr", "int64", (B + 1,)).astype(np.int64)
            if self.indptr[0] != 0 or (np.diff(self.indptr) != self.kv_len).any() or self.indptr[-1] != n0:
                raise Malformed(f"{self.path('indptr.npy')}: must start at 0, step by kv_len and end at k_cache rows {n0}")
        else:
            blocks = -(-self.kv_len // self.P)
            if self.table == "dense":
                bt = self.need("block_table", "int32", None, ndim=2).astype(np.int64)
                if (self.row < 0).any() or (self.row >= bt.shape[0]).any() or (blocks > bt.shape[1]).any():
                    raise Malformed(f"{self.path('block_table.npy')}: {list(bt.shape)} does not hold every request's row and blocks")
                self.pages = [bt[self.row[b], :blocks[b]] for b in range(B)]
            else:
                ip = self.need("page_indptr", "int32", (B + 1,)).astype(np.int64)
                ind = self.need("page_indices", "int32", None, ndim=1).astype(np.int64)
                last = self.need("last_page_len", "int32", (B,)).astype(np.int64)
                if ip[0] < 0 or (np.diff(ip) != blocks).any() or ip[-1] > len(ind):
                    raise Malformed(f"{self.path('page_indptr.npy')}: request b must own ceil(kv_len[b] / P) entries of page_indices")
                if (last != self.kv_len - (blocks - 1) * self.P).any():
                    raise Malformed(f"{self.path('last_page_len.npy')}: {last.tolist()} disagrees with kv_len and P = {self.P}")
                self.pages = [ind[ip[b]:ip[b + 1]] for b in range(B)]
            for b, p in enumerate(self.pages):
                if ((p < 0) | (p >= n0)).any():
                    table = "block_table.npy" if self.table == "dense" else "page_indices.npy"
                    raise Malformed(f"{self.path(table)}: request {b}: a visible block maps to a page outside "
                                    f"[0, {n0}): {p.tolist()}")

    def slots(self, b, n):
        """[n][H_kv] slot of key t, head h of request b: its element offset is slot * d + x for a
        tensor of head width d, by the offset formulas of the layout."""
        t = np.arange(n, dtype=np.int64)[:, None]
        h = np.arange(self.H_kv, dtype=np.int64)[None, :]
        H = self.H_kv
        if self.layout == "contiguous_nhd":
            return (self.row[b] * self.T_cap + t) * H + h
        if self.layout == "contiguous_hnd":
            return (self.row[b] * H + h) * self.T_cap + t
        if self.layout == "ragged_nhd":
            return (self.indptr[b] + t) * H + h
        page, r = self.pages[b][t // self.P], t % self.P
        if self.layout == "paged_nhd":
            return (page * self.P + r) * H + h
        return (page * H + h) * self.P + r

    def visible(self, b):
        """[C][N] True where query row i of request b may see key k."""
        N = int(self.kv_len[b])
        p = (N - self.C + np.arange(self.C, dtype=np.int64))[:, None]
        k = np.arange(N, dtype=np.int64)[None, :]
        if self.mask == "none":
            return np.ones((self.C, N), bool)
        if self.mask == "causal":
            return k <= p
        if self.mask == "sliding_window":
            return (k <= p) & ((k > p - self.window) | (k < self.sink))
        c0 = int(self.col_indptr[b])
        uts, ute, lts, lte = (v[c0:c0 + N][None, :] for v in self.iv)
        return ~(((uts <= p) & (p < ute)) | ((lts <= p) & (p < lte)))


def as_slots(a, d):
    """A cache as rows of d elements: element slot * d + x is row slot, lane x."""
    return a.reshape(-1, d)


def first_index(mask, shape):
    return [int(i) for i in np.unravel_index(int(np.flatnonzero(mask)[0]), shape)]


def compare(name, ref, ours, tol, out):
    """max |ref - ours| <= tol, equal infinities exact, NaN never; one report line."""
    same = ref == ours  # equal infinities
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(ref - ours))
    diff = np.where(np.isnan(diff), np.inf, diff)
    inf_rows = int(np.isinf(ours).sum())
    extra = f", {inf_rows} -inf rows match" if inf_rows and (diff[np.isinf(ours)] == 0).all() else ""
    worst = float(diff.max()) if diff.size else 0.0
    if worst <= tol:
        out.ok(f"{name}: max |diff| {worst:.3g} over {diff.size} values{extra} (tol {tol:g})")
        return
    bad = int((diff > tol).sum())
    at = first_index(diff == worst, diff.shape)
    out.fail(f"{name}: max |diff| {worst:.3g} at {at} exceeds tol {tol:g} ({bad} of {diff.size} values)")


def report_error(name, got, ours, out):
    """The GPU's distance from the float64 reference: reported, never failed on."""
    finite = np.isfinite(ours) & np.isfinite(got)
    err = np.abs(got - ours)[finite]
    nan = int(np.isnan(got).sum())
    inf_mismatch = int(((np.isinf(ours) | np.isinf(got)) & (got != ours)).sum())
    worst = float(err.max()) if err.size else 0.0
    out.info(f"{name}: max |err| {worst:.3g} vs float64, {nan} NaN, {inf_mismatch} infinity mismatches (report only)")


class Report:
    def __init__(self):
        self.failed = 0

    def ok(self, s):
        print(f"ok    {s}")

    def info(self, s):
        print(f"info  {s}")

    def fail(self, s):
        self.failed += 1
        print(f"FAIL  {s}")


def check_decode(dc, tol, out):
    B, C, H, g = dc.B, dc.C, dc.H_kv, dc.g
    K, V = as_slots(dc.k, dc.dk), as_slots(dc.v, dc.dv)
    o = np.zeros((B, C, dc.H_q, dc.dv))
    lse = np.full((B, C, dc.H_q), -np.inf)
    touched = np.zeros(K.shape[0], bool)  # slots a visible pre-call key addresses
    new_slots = []
    nan_reads = []
    q = widen(dc.q, dc.dtype)
    for b in range(B):
        N = int(dc.kv_len[b])
        old = N - C if dc.append else N
        s = dc.slots(b, N)
        if (s < 0).any() or (s >= K.shape[0]).any():
            raise Malformed(f"{dc.path('k_cache.npy')}: request {b}: a key maps outside k_cache ({K.shape[0]} slots of d)")
        touched[s[:old].ravel()] = True
        k, v = widen(K[s[:old]], dc.dtype), widen(V[s[:old]], dc.dtype)  # [old][H_kv][d]
        for name, a in (("k_cache", k), ("v_cache", v)):
            if np.isnan(a).any():
                t, h = first_index(np.isnan(a).any(axis=2), a.shape[:2])
                nan_reads.append(f"{name}: request {b} key {t} head {h} reads NaN poison")
        if dc.append:
            new_slots.append(s[old:])
            k = np.concatenate([k, widen(dc.k_new[b], dc.dtype)])
            v = np.concatenate([v, widen(dc.v_new[b], dc.dtype)])
        vis = dc.visible(b)  # [C][N]
        for hk in range(H):
            sc = np.einsum("chd,nd->chn", q[b, :, hk * g:(hk + 1) * g, :], k[:, hk, :]) * dc.scale
            sc = np.where(vis[:, None, :], sc, -np.inf)
            m = sc.max(axis=2) if N else np.full((C, g), -np.inf)
            live = np.isfinite(m)
            with np.errstate(invalid="ignore"):
                e = np.exp(sc - np.where(live, m, 0.0)[:, :, None])
            l = e.sum(axis=2)
            row_lse = np.where(live, m + np.log(np.where(live, l, 1.0)), -np.inf)
            w = np.where(live[:, :, None], e / np.where(live, l, 1.0)[:, :, None], 0.0)
            lse[b, :, hk * g:(hk + 1) * g] = row_lse
            o[b, :, hk * g:(hk + 1) * g, :] = np.einsum("chn,nd->chd", w, v[:, hk, :])
    if nan_reads:
        more = f" (and {len(nan_reads) - 1} more)" if len(nan_reads) > 1 else ""
        out.fail(f"gather: {nan_reads[0]}{more}")
    else:
        out.ok(f"gather: {int(dc.kv_len.sum())} keys x {H} heads read through the {dc.layout} metadata, no NaN")
    if dc.append:
        ns = np.concatenate([x.ravel() for x in new_slots])
        if touched[ns].any() or len(np.unique(ns)) != len(ns):
            raise Malformed(f"{dc.path('k_cache.npy')}: append: a new row lands on a slot another key addresses")
    for name, a, d in (("k_cache", dc.k, dc.dk), ("v_cache", dc.v, dc.dv)):
        rows = widen(as_slots(a, d)[~touched], dc.dtype)
        live = ~np.isnan(rows)
        if live.any():
            out.fail(f"poison: {name}: {int(live.sum())} elements no visible key addresses are not NaN")
        else:
            out.ok(f"poison: {name}: the {rows.size} elements no visible key addresses all hold NaN")
    o_ref = dc.need("o_ref", "fp64", (B, C, dc.H_q, dc.dv))
    lse_ref = dc.need("lse_ref", "fp64", (B, C, dc.H_q))
    compare("o_ref", o_ref, o, tol, out)
    compare("lse_ref", lse_ref, lse, tol, out)
    if "o_gpu" in dc.tensors:
        report_error("o_gpu", widen(dc.need("o_gpu", dc.dtype, o.shape), dc.dtype), o, out)
    if "lse_gpu" in dc.tensors:
        report_error("lse_gpu", widen(dc.need("lse_gpu", "fp32", lse.shape), "fp32"), lse, out)
    for name, before, new, d in (("k_cache", dc.k, "k_new", dc.dk), ("v_cache", dc.v, "v_new", dc.dv)):
        after_name = name + "_after"
        if after_name not in dc.tensors:
            if dc.append:
                out.info(f"{after_name}: absent (no GPU run)")
            continue
        after = dc.need(after_name, dc.dtype, before.shape)
        want = before.copy()
        slots = as_slots(want, d)
        if dc.append:
            for b in range(B):
                slots[new_slots[b]] = dc.tensors[new][1][b]  # [C][H_kv][d] into [C][H_kv] slots
        bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
        differ = want.view(bits) != after.view(bits)
        rows = sum(x.size for x in new_slots) if dc.append else 0
        if differ.any():
            out.fail(f"{after_name}: {int(differ.sum())} elements differ from {name} with its {rows} new (key, head) "
                     f"rows at their translated addresses (first at {first_index(differ, differ.shape)})")
        else:
            out.ok(f"{after_name}: bitwise equal to {name} with its {rows} new (key, head) rows at their translated "
                   "addresses")


def main(argv):
    args, tol = [], 1e-12
    it = iter(argv[1:])
    for a in it:
        if a == "--tol":
            try:
                tol = float(next(it))
            except (StopIteration, ValueError):
                tol = -1.0
            if not tol >= 0:
                print("usage: dump_check.py DIR [--tol T]   (T a number >= 0)", file=sys.stderr)
                return 2
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    if len(args) != 1:
        print("usage: dump_check.py DIR [--tol T]", file=sys.stderr)
        return 2
    folder = args[0]
    out = Report()
    try:
        index, tensors = load_files(folder)
        out.ok(f"files: {len(tensors)} file{' matches' if len(tensors) == 1 else 's match'} index.json (size, sha256, dtype, shape)")
        if "call" in index:
            dc = Decode(folder, index, tensors)
            print(f"call  {dc.phase} {dc.layout}{'/' + dc.table if dc.table else ''} B={dc.B} C={dc.C} H_q={dc.H_q} "
                  f"H_kv={dc.H_kv} d_qk={dc.dk} d_v={dc.dv} {dc.dtype} mask={dc.mask}")
            check_decode(dc, tol, out)
        else:
            out.info("no call in index.json: files checked only")
    except Malformed as e:
        print(f"dump_check: error: {e}", file=sys.stderr)
        return 3
    print(f"dump_check: {folder}: " + (f"FAIL ({out.failed} check{'s' if out.failed != 1 else ''})" if out.failed else "pass"))
    return 1 if out.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
