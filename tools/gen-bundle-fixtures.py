#!/usr/bin/python3
"""Generates fixtures/bundles: synthetic evidence bundles (schema dkb.bundle/v1) that test the ladder.

usage: tools/gen-bundle-fixtures.py [OUT]      (default fixtures/bundles; needs build/dkb)

Every canonical digest (call key, plan key) and every JSON artifact's bytes come from dkb's own canonical
writer (`build/dkb digest`, `build/dkb digest --canonical`); file hashes are SHA-256 of those bytes.
The expectations in manifest.json are written here from what each fixture is built to break (the
requirement it removes or contradicts), not read back from the validator; tests/test_validate.c runs
every fixture through `dkb validate` and the independent schema validator and compares.

Fixtures:
  synthetic.levelN.bundle.json    complete, honest bundles of levels 2-6 ("synthetic": true) of dkb's own
                                  backend; synthetic.level6.plugin.bundle.json of a plugin's backend
  promotion.NAME.bundle.json      the invalid promotions of article 0x0BI (and 0x0AI/0x0AC), each
                                  claiming a level it cannot prove
  requirement.REASON[.k].bundle.json   one per reason id of evidence/ladder.c: a level-6 claim with
                                  exactly that requirement broken (the plugin's bundle for a backend's)
  malformed/NAME.json             documents that are not bundles (dkb validate exits 3)
  source-tree/                    the stand-in sources the level-1 entries hash (--source-root)
The sources and hashes of the loaded objects are synthetic stand-ins, not dkb's real code or binaries."""
import copy
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DKB = os.path.join(ROOT, "build", "dkb")
SOURCE_ROOT_OPT = ["--source-root", "fixtures/bundles/source-tree"]

COMMIT = hashlib.sha1(b"dkb synthetic bundle fixtures").hexdigest()
OTHER_COMMIT = hashlib.sha1(b"another commit").hexdigest()


def dkb_digest(obj, canonical=False):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(obj, f)
        name = f.name
    try:
        args = [DKB, "digest", name] + (["--canonical"] if canonical else [])
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(name)
    return out if canonical else out.strip()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def stats(xs):
    """Independent implementation of oracles/stats.h (numpy 'linear' quantiles, n - 1 stdev)."""
    s = sorted(xs)
    n = len(s)

    def q(p):
        pos = (n - 1) * p
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    total = 0.0
    for x in s:
        total += x
    mean = total / n
    ss = 0.0
    for x in s:
        ss += (x - mean) * (x - mean)
    stdev = math.sqrt(ss / (n - 1)) if n > 1 else 0.0
    return {"count": n, "min": s[0], "median": q(0.5), "p95": q(0.95), "max": s[-1], "mean": mean,
            "stdev": stdev, "rel_stdev": stdev / mean if mean else 0.0}


# --------------------------------------------------------------------------------------------------
# The stand-in source tree: (path, [(symbol, role, text)]) with a header comment.

HEADER = "/* {name} - synthetic stand-in used by fixtures/bundles (schema-test bundles); not dkb's real source. */\n"
SOURCES = [
    ("cmd/run.c", [("cmd_run", "entry: loads the fixture, plans, admits, launches, grades the bundle",
                    "int cmd_run(int argc, char **argv) {\n  struct plan p;\n  plan_build(&p);\n"
                    "  registry_select(&p);\n  return decode_launch(&p);\n}\n")]),
    ("harness/plan.c", [("plan_build", "split bounds per request and workspace bytes of the (m, l, u) ABI",
                         "int plan_build(struct plan *p) {\n  p->splits = 4;\n  p->workspace_bytes = 200064;\n"
                         "  return 0;\n}\n")]),
    ("harness/registry.c", [("registry_select", "admission of every backend, forced fails closed, auto = first eligible",
                             "int registry_select(struct plan *p) {\n  for (int b = 0; b < NBACKENDS; b++)\n"
                             "    admit(&backends[b], p);\n  return first_eligible(p);\n}\n")]),
    ("harness/launch.c", [("decode_launch", "launches the producer grid, then the combine grid when splits > 1",
                           "int decode_launch(const struct plan *p) {\n  launch_decode_split_kv_producer(p);\n"
                           "  if (p->splits > 1) launch_decode_split_kv_combine(p);\n  return 0;\n}\n")]),
    ("kernels/decode_split_kv.cu", [
        ("decode_split_kv_producer", "split-KV producer: one (m, l, u) partial state per split",
         "template <int D>\n__global__ void decode_split_kv_producer(const __half *q, const __half *k, const __half *v,\n"
         "                                         float *m, float *l, float *u, int n) {\n  /* partial softmax */\n}\n"),
        ("decode_split_kv_combine", "exact LSE merge of the split states into O",
         "template <int D>\n__global__ void decode_split_kv_combine(const float *m, const float *lu, __half *o, int n) {\n"
         "  /* merge */\n}\n"),
        ("decode_split_kv_fused", "the producer whose last CTA per (request, K/V head) merges the split states",
         "template <int D>\n__global__ void decode_split_kv_fused(const __half *q, const __half *k, const __half *v,\n"
         "                                      float *u, int *arrivals, __half *o, int n) {\n"
         "  /* partial softmax; the last CTA to arrive merges */\n}\n")]),
]


FIXTURE_PATH = "fixtures/decode/gqa-paged.json"
FIXTURE_TEXT = json.dumps({"schema": "dkb.decode/v1", "name": "gqa-paged",
                           "description": "synthetic stand-in used by fixtures/bundles; not one of dkb's fixtures",
                           "phase": "decode", "requests": [{"kv_len": 9}, {"kv_len": 257}, {"kv_len": 1000}], "q_len": 1,
                           "heads": {"H_q": 32, "H_kv": 8, "d_qk": 128, "d_v": 128}, "dtype": "fp16",
                           "cache": {"layout": "paged_nhd", "page_size": 16}, "mask": {"kind": "causal"},
                           "split": {"policy": "fixed", "splits": 4}, "seed": 1,
                           "tolerance": {"atol": 0.002, "rtol": 0.002}}, indent=2) + "\n"


def write_stand_in(out, path, symbols, under="", body=""):
    """Writes one stand-in file (its symbols' bodies, or `body` for a file that defines none) under
    source-tree/`under`; returns its /source/files entry and its size."""
    text = HEADER.format(name=os.path.basename(path)) + body
    syms = []
    for name, role, code in symbols:
        text += "\n"
        first = text.count("\n") + 1
        text += code
        last = text.count("\n")
        syms.append({"name": name, "role": role, "lines": [first, last]})
    full = os.path.join(out, "source-tree", under, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    return {"path": path, "sha256": sha256(text.encode()), "symbols": syms}, len(text.encode())


def write_source_tree(out):
    full = os.path.join(out, "source-tree", FIXTURE_PATH)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(FIXTURE_TEXT)
    return [write_stand_in(out, path, symbols)[0] for path, symbols in SOURCES]


# --------------------------------------------------------------------------------------------------
# Artifacts and the complete level-6 bundle.

class Gen:
    def __init__(self, out):
        self.out = out
        self.manifest = []

    def artifact_bytes(self, stem, data, ext="json"):
        """Writes bytes as a content-addressed artifact; returns its /artifacts entry."""
        name = f"{stem}.{sha256(data)[:16]}.{ext}"
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(data)
        return {"name": name, "sha256": sha256(data), "bytes": len(data)}

    def artifact(self, stem, doc):
        return self.artifact_bytes(stem, dkb_digest(doc, canonical=True).encode())

    def write(self, name, bundle, computed, findings, description, article="", options=None):
        path = os.path.join(self.out, name)
        with open(path, "w") as f:
            f.write(json.dumps(bundle, indent=2, sort_keys=True) + "\n")
        self.manifest.append({
            "file": name, "description": description, "article": article, "options": options or [],
            "computed_level": computed, "claimed_level": bundle["claimed_level"],
            "findings": [{"level": lv, "reason": r, "pointer": p} for lv, r, p in findings]})

    def write_malformed(self, name, text, error, description):
        path = os.path.join(self.out, "malformed", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        self.manifest.append({"file": "malformed/" + name, "description": description, "malformed": error})


def ref(entry):
    return {"artifact": entry["name"], "sha256": entry["sha256"]}


def replace_artifact(b, old_name, entry):
    b["artifacts"] = [entry if a["name"] == old_name else a for a in b["artifacts"]]


DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


def ledgers_of(b):
    """The logical ledgers dkb writes (harness/runner.c), from the call key and the plan record."""
    d = b["dispatch"]
    ck, plan = d["call_key"], d.get("plan")
    e_kv, e_q, e_o = (DTYPE_BYTES[ck[k]] for k in ("kv_dtype", "q_dtype", "o_dtype"))
    width = ck["d_qk"] + ck["d_v"]
    led = {"kind": "logical ledgers (article 0x03F), not measured DRAM traffic",
           "unique_kv_bytes": sum(ck["S_k_per_request"]) * ck["H_kv"] * width * e_kv,
           "q_o_bytes": ck["B"] * ck["S_q"] * ck["H_q"] * (ck["d_qk"] * e_q + ck["d_v"] * e_o)}
    if plan:
        # visible keys: dkb's planner over the call, whichever backend runs (a plugin's plan document
        # does not repeat them: the bundle's own ledger stands)
        if "visible_keys" in plan:
            led["visible_kv_bytes"] = plan["visible_keys"] * ck["H_kv"] * width * e_kv
        else:
            led["visible_kv_bytes"] = b["ledgers"]["visible_kv_bytes"]
        if "backend" in d:  # what the backend's launches write and read back once
            led["workspace_round_trip_bytes"] = 2 * d["workspace_bytes"]
        else:
            led["workspace_round_trip_bytes"] = 0 if plan["direct"] else 2 * plan["workspace_bytes"]
    return led


TRACE_ORIGIN = 1796139707659741336


def trace_lines(kernels, range_name, dropped=0, outside=()):
    """A dkb.trace-records/v1 artifact (harness/trace.c's JSON lines) in which the call launched each kernel record
    `launches` times inside its NVTX range, with external correlation 1; `outside` are kernel records
    launched before the range opened."""
    recs, apis, ext = [], [], []
    corr, t = 1, 1000
    for k, inside in [(k, False) for k in outside] + [(k, True) for k in kernels]:
        for _ in range(k.get("launches", 1) if inside else 1):
            start = t + (30000 if inside else 0)
            apis.append({"record": "runtime", "cbid": 211, "correlation_id": corr, "name": "cudaLaunchKernel_v7000",
                         "return_value": 0, "start_ns": start, "end_ns": start + 900, "thread_id": 7})
            if inside:
                ext.append({"record": "external_correlation", "kind": 3, "external_id": 1, "correlation_id": corr})
            recs.append({"record": "kernel", "name": k["symbol"], "demangled": k.get("demangled", k["symbol"]),
                         "correlation_id": corr, "external_id": 1 if inside else None, "in_range": inside,
                         "grid": k["grid"], "block": k["block"], "cluster": [0, 0, 0],
                         "registers_per_thread": k.get("registers", 32), "static_shared_bytes": k.get("shared_bytes", 0),
                         "dynamic_shared_bytes": 0, "start_ns": start + 2000, "end_ns": start + 14000, "device_id": 0,
                         "context_id": 1, "stream_id": 7, "graph_id": 0})
            corr += 1
            t += 20000
    marker = {"record": "marker", "name": range_name, "id": 1, "start_ns": 30000, "end_ns": t + 40000}
    meta = {"record": "meta", "schema": "dkb.trace-records/v1", "range_name": range_name, "external_id": 1, "cupti_version": 130001,
            "dropped_records": dropped, "nvtx_injection": {"path": "/usr/local/cuda/lib64/libcupti.so.13", "set_by": "dkb"},
            "origin_ns": str(TRACE_ORIGIN),
            "counts": {"kernel": len(recs), "marker": 1, "external_correlation": len(ext), "runtime": len(apis)}}
    lines = [meta] + recs + [marker] + ext + apis
    return "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in lines).encode()


def retrace(g, b, outside=()):
    """The trace artifact for what b's /execution says the call launched."""
    x = b["execution"]
    entry = g.artifact_bytes("trace", trace_lines(x["kernels"], x["nvtx_range"], x.get("dropped_records", 0), outside), "jsonl")
    replace_artifact(b, x["trace"]["artifact"], entry)
    x["trace"] = ref(entry)


ADMISSION_OUTCOME = {"selected": "selected", "rejected": "forced_error", "no_eligible": "no_eligible_error"}


def admission_of(b, compute_capability=90):
    """The dkb.admission/v1 record (dispatch/registry.c) whose summary is b's /dispatch."""
    d = b["dispatch"]
    cands = [{"backend": c["backend"], "priority": c["priority"], "in_domain": c["in_domain"],
              "domain_reasons": [] if c["in_domain"] else c["reasons"], "eligible": c["eligible"],
              "reasons": c["reasons"] if c["in_domain"] else [],
              "failed_factors": ["K"] if c["in_domain"] and not c["eligible"] else []} for c in d["candidates"]]
    ck = d["call_key"]
    key = {"phase": ck["phase"], "device_type": "cuda", "device_index": 0, "compute_capability": compute_capability,
           "dtype": ck["q_dtype"], "kv_dtype": ck["kv_dtype"], "batch": ck["B"], "q_len": ck["S_q"],
           "kv_len": max(ck["S_k_per_request"]), "num_q_heads": ck["H_q"], "num_kv_heads": ck["H_kv"],
           "head_dim_qk": ck["d_qk"], "head_dim_vo": ck["d_v"], "cache_layout": ck["cache_layout"],
           "page_size": ck["page_size"], "mask_kind": "causal", "dropout_p": 0.0, "training": False,
           "requires_deterministic": False, "cuda_graph": ck["graph_mode"], "last_dim_contiguous": True,
           "backend_request": d["request"], "window": None, "workspace_bytes": None, "workspace_device": "cuda:0"}
    eligible = [c["backend"] for c in d["candidates"] if c["eligible"] and c["in_domain"]]
    return {"schema": "dkb.admission/v1", "registry": "dkb_cuda", "key": key, "key_digest": dkb_digest(key),
            "teaching_key_digest": sha256(b"synthetic teaching key"), "plan_key": {}, "plan_key_digest": sha256(b"synthetic plan key"),
            "policy": "auto" if d["request"] == "auto" else "forced", "requested_backend": d["request"],
            "malformed_reasons": [], "candidate_order": [c["backend"] for c in d["candidates"]],
            "candidate_domain": [c["backend"] for c in d["candidates"] if c["in_domain"]], "eligible": eligible,
            "candidates": cands, "outcome": ADMISSION_OUTCOME[d["outcome"]], "selected": d["selected"],
            "backend_fallback": False, "fallback_from": [], "error_reasons": [],
            "claim_ceiling": "backend_selection_only_not_kernel_execution_or_performance"}


def readmit(g, b, **kw):
    """A new admission artifact for b's (edited) /dispatch: the record agrees with the summary."""
    d = b["dispatch"]
    entry = g.artifact("admission", admission_of(b, **kw))
    replace_artifact(b, d["diagnostic"]["artifact"], entry)
    d["diagnostic"] = ref(entry)


def refresh(b, g=None):
    """Digests, and (with g) the NVTX range, the trace and the ledgers of b's call key and plan."""
    d = b["dispatch"]
    if "call_key" in d:
        d["call_key_sha256"] = dkb_digest(d["call_key"])
    if "plan_key" in d:
        d["plan_key_sha256"] = dkb_digest(d["plan_key"])
    if g is None:
        return
    if "call_key" in d and "ledgers" in b:
        b["ledgers"] = ledgers_of(b)
    x = b.get("execution")
    if x and "call_key_sha256" in d and "nvtx_range" in x:
        x["nvtx_range"] = "dkb/call/" + d["call_key_sha256"]
        if "trace" in x:
            retrace(g, b)


OBJECTS = [
    ("/opt/dkb/build/dkb", "dkb", 2841160),
    ("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96", "cudart", 749280),
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "cuda", 98542288),
    ("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.2025.3.1", "cupti", 7652464),
    ("/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "nvml", 2130608),
]
OTHER_OBJECTS = [("/usr/lib/x86_64-linux-gnu/libc.so.6", "other", 1922136),
                 ("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "other", 4709656)]


def obj(path, role, n):
    return {"path": path, "role": role, "sha256": sha256(b"synthetic object " + path.encode()), "bytes": n}


def mapped(path, role, n):
    """A loader-map entry (harness/loadmap.c): the mapped file's size, not the bundle's bytes."""
    return {"path": path, "role": role, "sha256": sha256(b"synthetic object " + path.encode()), "size": n}


PRODUCER = "_Z24decode_split_kv_producerILi128EEvPK6__halfS2_S2_PfS3_S3_i"
COMBINE = "_Z23decode_split_kv_combineILi128EEvPKfS1_P6__halfi"


FUSED = "_Z21decode_split_kv_fusedILi128EEvPK6__halfS2_S2_PfPiPS0_i"
SPLIT_KV_ROLES = {PRODUCER: "producer", COMBINE: "combine", FUSED: "fused"}


def split_kv_workspaces(ck, slots, items, fused=False):
    """The workspaces harness/builtin.c's plan declares for dkb_split_kv: the plan's item arrays (seven,
    each 8-byte aligned, written by setup), the (m, l, u) split states and their validity bytes (scratch,
    NaN-poisoned before each checked launch) and, for a fused plan, one arrival counter per (request,
    K/V head), zeroed once."""
    n, B = items, ck["B"]
    rows = sum(slots) * ck["H_q"] * ck["S_q"]
    ws = [{"name": "plan_items", "kind": "persistent",
           "bytes": sum((x + 7) // 8 * 8 for x in (n * 4, n * 8, n * 8, n * 4, n * 8, n * 8, (B + 1) * 4))},
          {"name": "state_u", "kind": "scratch", "bytes": rows * ck["d_v"] * 4},
          {"name": "state_m", "kind": "scratch", "bytes": rows * 4},
          {"name": "state_l", "kind": "scratch", "bytes": rows * 4},
          {"name": "state_valid", "kind": "scratch", "bytes": rows}]
    if fused:
        ws.append({"name": "combine_count", "kind": "zero_first", "bytes": B * ck["H_kv"] * 4})
    return ws


def launched_bytes(workspaces):
    """workspace_bytes as dkb records it (run_evidence_workspace_bytes): what the launches write."""
    return sum(w["bytes"] for w in workspaces if w["kind"] != "persistent")


def split_kv_backend(work_items, workspaces, symbols):
    """/dispatch/backend as harness/run_evidence.c writes it for dkb_split_kv: source builtin, the kernels
    its launch runs declared by exact symbol and required, dkb's own conventions, a launch that only
    enqueues."""
    return {"name": "dkb_split_kv", "version": "0.1.0", "source": "builtin", "work_items": work_items,
            "workspaces": workspaces,
            "kernels": [{"name": s, "role": SPLIT_KV_ROLES[s], "match": "symbol", "required": True} for s in symbols],
            "conventions": {"lse_base": "natural", "empty_row": "zero_neginf"}, "launch_flags": []}


def required_of(backend):
    """/dispatch/required_kernels as dkb writes it: the declared kernels marked required, in order."""
    return [k["name"] for k in backend["kernels"] if k["required"]]


def set_workspace_bytes(b, n):
    """The dispatch record, the plan key and the plan record agree on n workspace bytes."""
    d = b["dispatch"]
    d["workspace_bytes"] = d["plan_key"]["workspace_bytes"] = d["plan"]["workspace_bytes"] = n


def fused_bundle(g, base, launched):
    """The base call run by a fused producer+combine kernel (0x03C) declared in the chain; `launched` is
    what CUPTI saw, and what the plan declares (with a fused plan's arrival counters)."""
    b = copy.deepcopy(base)
    b["execution"]["kernels"] = launched
    b["chain"]["nodes"].append({"id": "decode_split_kv_fused", "layer": "producer+combine",
                                "path": "kernels/decode_split_kv.cu", "symbol": "decode_split_kv_fused"})
    b["chain"]["edges"].append(["decode_launch", "decode_split_kv_fused"])
    d = b["dispatch"]
    ws = split_kv_workspaces(d["call_key"], d["plan"]["slots_per_request"], d["plan"]["items"], fused=True)
    d["backend"] = split_kv_backend(d["plan"]["items"], ws, [k["symbol"] for k in launched])
    d["required_kernels"] = required_of(d["backend"])
    set_workspace_bytes(b, launched_bytes(ws))
    b["loaded"]["kernel_binaries"] = [{"symbol": k["symbol"], "binary_version": 90, "ptx_version": 90} for k in launched]
    refresh(b, g)
    return b


FUSED_KERNEL = {"symbol": FUSED, "demangled": "void decode_split_kv_fused<128>(__half const*, __half const*, __half const*, "
                "float*, int*, __half*, int)", "launches": 1, "grid": [4, 8, 1], "block": [128, 1, 1],
                "registers": 168, "shared_bytes": 73760}


def base_bundle(g, files):
    arts = {}
    arts["loader_map"] = g.artifact("loader-map", {
        "schema": "dkb.loader-map/v1",
        "objects": [mapped(*o) for o in OBJECTS + OTHER_OBJECTS]})
    arts["build_report"] = g.artifact("build-report", {
        "schema": "dkb.build-report/v1", "commit": COMMIT, "dirty": False, "cc": "gcc 12.2.0",
        "nvcc": "13.0.88", "cflags": "-O2 -g -std=c11", "nvflags": "-O3 -lineinfo -std=c++17",
        "gencode": ["arch=compute_90,code=sm_90", "arch=compute_90,code=compute_90"]})
    # the call key as harness/decode_call.c writes it (evidence/call_key.h)
    call_key = {"schema": "dkb.call-key/v1", "phase": "decode", "B": 3, "S_q": 1, "S_k_per_request": [9, 257, 1000],
                "H_q": 32, "H_kv": 8, "d_qk": 128, "d_v": 128, "q_dtype": "fp16", "kv_dtype": "fp16", "o_dtype": "fp16",
                "cache_layout": "paged_nhd", "page_size": 16, "page_table": "csr", "cache_batch_idx": [0, 1, 2],
                "mask": {"kind": "causal"}, "split": {"policy": "fixed", "splits": 4, "capacity": 4},
                "workspace": {"abi": "mlu", "o_dtype": "fp32"}, "return_lse": True, "graph_mode": False,
                "backend_request": "auto", "scale": 0.08838834764831845, "seed": 1,
                "tolerances": {"atol": 0.002, "rtol": 0.002, "lse_atol": 0.002, "lse_rtol": 0.002}}
    candidates = [
        {"backend": "dkb_split_kv", "priority": 0, "in_domain": True, "eligible": True, "reasons": []},
        {"backend": "dkb_single_pass", "priority": 1, "in_domain": True, "eligible": False,
         "reasons": ["page_size=16 unsupported: the single-pass kernel reads contiguous K/V only"]},
        {"backend": "math_reference", "priority": 9, "in_domain": False, "eligible": False,
         "reasons": ["cpu backend: outside the CUDA decode candidate domain"]},
    ]
    kernels = [
        {"symbol": PRODUCER, "demangled": "void decode_split_kv_producer<128>(__half const*, __half const*, "
         "__half const*, float*, float*, float*, int)", "launches": 1, "grid": [4, 32, 3], "block": [128, 1, 1],
         "registers": 96, "shared_bytes": 8192},
        {"symbol": COMBINE, "demangled": "void decode_split_kv_combine<128>(float const*, float const*, __half*, int)",
         "launches": 1, "grid": [1, 32, 3], "block": [128, 1, 1], "registers": 40, "shared_bytes": 0},
    ]
    # the plan record (harness/plan.c's plan_json): 4 slots per request, merged by the combine kernel; its
    # workspace bytes are the split states' (521 bytes a row in the (m, l, u) ABI), those the backend declares
    workspaces = split_kv_workspaces(call_key, [4, 4, 4], 12)
    ws_bytes = launched_bytes(workspaces)
    plan = {"policy": "fixed", "splits": 4, "capacity": 4, "max_slots_per_request": 4, "direct": False,
            "slots_per_request": [4, 4, 4], "items": 12,
            "item_table": [[b, s * n // 4, (s + 1) * n // 4, 4 * b + s] for b, n in enumerate([9, 257, 1000]) for s in range(4)],
            "item_table_truncated": False, "workspace_bytes": ws_bytes, "tiles": {"SKIP": 0, "FULL": 18, "PARTIAL": 3},
            "visible_keys": 1266, "combine": "kernel", "cluster_ctas": 0, "workspace_memory": "global"}
    rng = random.Random(20261130)
    samples = [round(rng.gauss(12.5, 0.15), 3) for _ in range(40)]
    with open(os.path.join(g.out, "source-tree", FIXTURE_PATH), "rb") as f:
        fixture_sha = sha256(f.read())
    b = {
        "schema": "dkb.bundle/v1",
        "meta": {"tool": "dkb", "version": "0.1.0", "commit": COMMIT, "dirty": False,
                 "argv": ["dkb", "run", FIXTURE_PATH, "-o", "out/"],
                 "created": "2026-11-30T12:00:00Z", "host": "synthetic"},
        "synthetic": True,
        "claimed_level": 6,
        "status": {"terminal": "complete", "reasons": []},
        "fixture": {"path": FIXTURE_PATH, "name": "gqa-paged", "sha256": fixture_sha},
        "artifacts": [arts[k] for k in ("loader_map", "build_report")],
        "source": {"commit": COMMIT, "dirty": False, "files": files},
        "chain": {
            "nodes": [{"id": s["name"], "layer": layer, "path": f["path"], "symbol": s["name"]}
                      for f, layer_list in zip(files, [["cmd"], ["plan"], ["admission"], ["launch"], ["producer", "combine"]])
                      for s, layer in zip(f["symbols"], layer_list)],
            "edges": [["cmd_run", "plan_build"], ["cmd_run", "registry_select"], ["cmd_run", "decode_launch"],
                      ["decode_launch", "decode_split_kv_producer"], ["decode_launch", "decode_split_kv_combine"]],
            "required_layers": ["cmd", "plan", "admission", "launch", "producer", "combine"]},
        "loaded": {
            "loader_map": ref(arts["loader_map"]),
            "objects": [obj(*o) for o in OBJECTS],
            "build_report": ref(arts["build_report"]),
            "device": {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132,
                       "driver_version": "580.159.04", "runtime_version": "13.0", "pci_bus_id": "0000:18:00.0"},
            "kernel_binaries": [{"symbol": PRODUCER, "binary_version": 90, "ptx_version": 90},
                                {"symbol": COMBINE, "binary_version": 90, "ptx_version": 90}]},
        "dispatch": {
            "call_key": call_key, "request": "auto", "candidates": candidates, "outcome": "selected",
            "selected": "dkb_split_kv", "split_count": 4, "workspace_bytes": ws_bytes,
            "plan_key": {"backend": "dkb_split_kv", "H_q": 32, "H_kv": 8, "d_qk": 128, "d_v": 128,
                         "q_dtype": "fp16", "kv_dtype": "fp16", "cache_layout": "paged_nhd", "page_size": 16,
                         "graph_mode": False, "split_count": 4, "workspace_bytes": ws_bytes},
            "required_kernels": [PRODUCER, COMBINE],
            "plan": plan, "backend": split_kv_backend(12, workspaces, [PRODUCER, COMBINE])},
        "execution": {
            "nvtx_range": "", "external_correlation_id": 1,
            "kernels": kernels, "dropped_records": 0, "profiler": {"name": "CUPTI", "version": "130001"}},
        "ledgers": {},
        "measurement": {
            "correctness": {
                "reference": "float64 oracle", "passed": True, "atol": 0.002, "rtol": 0.002, "lse_atol": 0.002,
                "lse_rtol": 0.002,
                "output": {"n": 12288, "violations": 0, "nan": 0, "inf": 0, "max_abs": 0.00048828125,
                           "max_rel": 0.0031, "max_ratio": 0.2188, "worst_index": 4711},
                "lse": {"n": 96, "violations": 0, "nan": 0, "inf": 0, "max_abs": 1.9e-06, "max_rel": 2.4e-07,
                        "worst_index": 17},
                "cache": "not_applicable"},
            "timing": {
                "tracing": False, "method": "cuda_event: events around the launches on one stream, event-synchronized per sample",
                "warmup": 10, "samples_us": samples, "summary": stats(samples),
                "stop_rule": {"rule": "at least 20 samples, stop when rel_stdev <= 0.05 or at 200", "min_samples": 20,
                              "max_samples": 200, "max_rel_stdev": 0.05, "met": True},
                "l2_flush": False,
                "repeat_check": {"rule": "outputs poisoned, the call run once more after the timed samples, O and LSE compared bitwise",
                                 "contract": "bitwise", "after_samples": 40, "output_bitwise_equal": True},
                "clocks_before": {"sm_mhz": 1980, "mem_mhz": 3201, "throttle_reasons": []},
                "clocks_after": {"sm_mhz": 1980, "mem_mhz": 3201, "throttle_reasons": []}},
            "counters": [{"name": "dram__bytes_read.sum", "value": 9437184, "unit": "byte",
                          "numerator": "bytes read from DRAM by the call's kernels",
                          "denominator": "none: total over the range",
                          "scope": "kernels with external correlation 1 in the call's NVTX range",
                          "replay": "kernel"}]},
    }
    # the diagnostic and the trace are derived from the record above, as dkb run derives them
    arts["diagnostic"] = g.artifact("admission", admission_of(b))
    b["dispatch"]["diagnostic"] = ref(arts["diagnostic"])
    refresh(b)
    b["execution"]["nvtx_range"] = "dkb/call/" + b["dispatch"]["call_key_sha256"]
    arts["trace"] = g.artifact_bytes("trace", trace_lines(kernels, b["execution"]["nvtx_range"]), "jsonl")
    b["execution"]["trace"] = ref(arts["trace"])
    b["artifacts"] += [arts["diagnostic"], arts["trace"]]
    b["ledgers"] = ledgers_of(b)
    return b, arts


def over(level):
    """Level-0 findings of a complete bundle that claims 6 but proves `level`."""
    return [(0, "status_contradicts_evidence", "/status/terminal"), (0, "claimed_level_exceeds_computed", "/claimed_level")]


def trim(b, level):
    """Drop the sections above `level`."""
    for lv, key in ((3, "loaded"), (4, "dispatch"), (5, "execution"), (6, "measurement")):
        if lv > level:
            b.pop(key, None)
    return b


ABOVE = {2: [(3, "loaded_missing", "/loaded"), (4, "dispatch_missing", "/dispatch"),
             (5, "execution_missing", "/execution"), (6, "measurement_missing", "/measurement")]}
ABOVE[3] = ABOVE[2][1:]
ABOVE[4] = ABOVE[2][2:]
ABOVE[5] = ABOVE[2][3:]

# A split plan whose merge did not run fails two requirements of one id and pointer: no launched kernel
# is one the backend declares as its combine or fused kernel, none is the chain's combine node.
NO_MERGE = [(5, "combine_kernel_not_observed", "/execution/kernels")] * 2


def synthetic_levels(g, base):
    b = copy.deepcopy(base)
    g.write("synthetic.level6.bundle.json", b, 6, [], "complete level-6 bundle: every requirement of levels 1-6 holds", "0x0BI")
    b = copy.deepcopy(base)
    b["claimed_level"] = 5
    b["status"] = {"terminal": "correctness_failed", "reasons": [{"id": "correctness_failed", "detail": "37 of 12288 output elements outside atol + rtol * |ref|"}]}
    c = b["measurement"]["correctness"]
    c["passed"] = False
    c["output"].update({"violations": 37, "max_abs": 0.1875, "max_rel": 0.41})
    g.write("synthetic.level5.bundle.json", b, 5, [(6, "correctness_failed", "/measurement/correctness/passed")],
            "level 5: execution observed; correctness failed, so the timing is not a measurement", "0x0BG")
    b = trim(copy.deepcopy(base), 4)
    b["claimed_level"] = 4
    b["status"] = {"terminal": "profiler_unavailable", "reasons": [{"id": "cupti_activity_unavailable", "detail": "cuptiActivityEnable returned CUPTI_ERROR_NOT_INITIALIZED"}]}
    g.write("synthetic.level4.bundle.json", b, 4, ABOVE[4], "level 4: dispatch observed, no profiler", "0x0BE")
    b = trim(copy.deepcopy(base), 3)
    b["claimed_level"] = 3
    b["status"] = {"terminal": "internal_error", "reasons": [{"id": "stopped_after_environment", "detail": "schema test: the run stops after the loaded-artifact capture"}]}
    g.write("synthetic.level3.bundle.json", b, 3, ABOVE[3], "level 3: loaded binary identified", "0x0BD")
    b = trim(copy.deepcopy(base), 2)
    b["claimed_level"] = 2
    b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "cudaGetDeviceCount: insufficient driver"}]}
    g.write("synthetic.level2.bundle.json", b, 2, ABOVE[2], "level 2: the source chain closes; a host without CUDA stops here", "0x0AH")


# --------------------------------------------------------------------------------------------------
# The invalid promotions of 0x0BI (and two of 0x0AI / 0x0AC).

def promotions(g, base):
    def L3():
        b = trim(copy.deepcopy(base), 3)
        b["claimed_level"] = 3
        b["status"] = {"terminal": "internal_error", "reasons": [{"id": "stopped_after_environment", "detail": "schema test"}]}
        return b

    b = L3()
    ld = b["loaded"]
    for k in ("loader_map", "objects", "build_report"):
        del ld[k]
    g.write("promotion.package_version_to_loaded_binary.bundle.json", b, 2,
            [(3, "loader_map_missing", "/loaded/loader_map"), (3, "loaded_objects_missing", "/loaded/objects"),
             (3, "build_report_missing", "/loaded/build_report")] + ABOVE[3] +
            [(0, "claimed_level_exceeds_computed", "/claimed_level")],
            "claims level 3 from version labels (driver/runtime versions) without loader map, loaded objects or build report", "0x0BA")

    b = L3()
    for o in b["loaded"]["objects"]:
        del o["sha256"]
    g.write("promotion.source_commit_to_binary_hash.bundle.json", b, 2,
            [(3, "loaded_object_sha256_missing", f"/loaded/objects/{i}/sha256") for i in range(len(OBJECTS))] + ABOVE[3] +
            [(0, "claimed_level_exceeds_computed", "/claimed_level")],
            "claims the loaded binary from the source commit: object paths without SHA-256", "0x0BI")

    b = trim(copy.deepcopy(base), 4)
    b["claimed_level"] = 4
    b["status"] = {"terminal": "profiler_unavailable", "reasons": [{"id": "cupti_activity_unavailable", "detail": "schema test"}]}
    del b["dispatch"]["diagnostic"], b["dispatch"]["candidates"]
    g.write("promotion.selected_backend_to_observed_selection.bundle.json", b, 3,
            [(4, "diagnostic_missing", "/dispatch/diagnostic"), (4, "candidates_missing", "/dispatch/candidates"),
             (4, "selected_not_eligible", "/dispatch/selected")] + ABOVE[4] +
            [(0, "claimed_level_exceeds_computed", "/claimed_level")],
            "claims an observed selection from a 'selected backend' log line: no candidates, no content-addressed diagnostic", "0x0BE")

    b = copy.deepcopy(base)
    b["claimed_level"] = 5
    del b["execution"]["trace"]
    b["execution"]["kernels"] = [{"symbol": k["symbol"], "demangled": k["demangled"]} for k in b["execution"]["kernels"]]
    g.write("promotion.kernel_name_to_execution.bundle.json", b, 4,
            [(5, "trace_missing", "/execution/trace"),
             (5, "kernel_launches_missing", "/execution/kernels/0/launches"), (5, "kernel_geometry_invalid", "/execution/kernels/0/grid"),
             (5, "kernel_launches_missing", "/execution/kernels/1/launches"), (5, "kernel_geometry_invalid", "/execution/kernels/1/grid"),
             (5, "required_kernel_not_observed", "/dispatch/backend/kernels/0"),
             (5, "required_kernel_not_observed", "/dispatch/backend/kernels/1"),
             (5, "producer_kernel_not_observed", "/execution/kernels")] + NO_MERGE + over(4),
            "claims execution from kernel names: no trace, no launch counts, no geometry", "0x0BF")

    b = copy.deepcopy(base)
    del b["measurement"]["timing"]["samples_us"]
    g.write("promotion.latency_summary_to_measurement.bundle.json", b, 5,
            [(6, "timing_samples_missing", "/measurement/timing/samples_us")] + over(5),
            "claims a measurement from a latency summary without the raw synchronized samples", "0x0BH")

    b = copy.deepcopy(base)
    del b["measurement"]["correctness"]
    g.write("promotion.timing_to_valid_result.bundle.json", b, 5,
            [(6, "correctness_missing", "/measurement/correctness")] + over(5),
            "claims a valid measured result from timing alone: no correctness comparison", "0x0BG")

    b = copy.deepcopy(base)
    b["measurement"]["counters"] = [{"name": "dram__bytes_read.sum", "value": 9437184}]
    g.write("promotion.profiler_counter_to_traffic_claim.bundle.json", b, 5,
            [(6, "counter_definition_incomplete", f"/measurement/counters/0/{k}") for k in ("unit", "numerator", "denominator", "scope")] + over(5),
            "claims traffic from a bare counter value: no unit, numerator, denominator or scope", "0x0BH")

    b = trim(copy.deepcopy(base), 4)
    b["claimed_level"] = 4
    b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "no NVIDIA driver"}]}
    del b["loaded"]["device"]
    b["loaded"]["objects"] = [o for o in b["loaded"]["objects"] if o["role"] != "cuda"]
    d = b["dispatch"]
    for c in d["candidates"]:
        c["eligible"] = False
        c["reasons"] = c["reasons"] or ["no CUDA device: cudaGetDeviceCount returned cudaErrorInsufficientDriver"]
    d["outcome"] = "no_eligible"
    d["selected"] = None
    for k in ("split_count", "workspace_bytes", "plan_key", "plan_key_sha256", "required_kernels", "plan", "backend"):
        del d[k]
    readmit(g, b, compute_capability=None)
    g.write("promotion.unsupported_host_to_backend_disproof.bundle.json", b, 2,
            [(3, "loaded_driver_missing", "/loaded/objects"), (3, "device_missing", "/loaded/device"),
             (5, "no_backend_selected", "/dispatch/outcome")] + ABOVE[4] +
            [(0, "claimed_level_exceeds_computed", "/claimed_level")],
            "claims that no backend is eligible from a host without CUDA: no compatible CUDA coordinate", "0x0BC")

    b = copy.deepcopy(base)
    b["source"]["commit"] = "main"
    g.write("promotion.source_name_to_immutable_coordinate.bundle.json", b, 0,
            [(1, "source_commit_not_pinned", "/source/commit")] + over(0),
            "cites a branch name as the source coordinate (0x0AA, 0x0AI 'cite main or a package name')", "0x0AA")

    b = copy.deepcopy(base)
    b["execution"]["kernels"] = b["execution"]["kernels"][:1]
    b["dispatch"]["backend"]["kernels"] = b["dispatch"]["backend"]["kernels"][:1]
    b["dispatch"]["required_kernels"] = required_of(b["dispatch"]["backend"])
    retrace(g, b)
    g.write("promotion.split_capable_dispatch_to_observed_split.bundle.json", b, 4, NO_MERGE + over(4),
            "split_count 4 from a split-capable plan, but no combine kernel observed (0x0AC)", "0x0AC")

    # A fused producer+combine kernel proves both the producer and the merge; declaring one does not.
    b = fused_bundle(g, base, [FUSED_KERNEL])
    g.write("synthetic.level6.fused-combine.bundle.json", b, 6, [],
            "level 6 with split 4 merged by a fused producer+combine kernel (last CTA per group, 0x03C): no combine launch needed", "0x03C")
    b = fused_bundle(g, base, [base["execution"]["kernels"][0]])
    g.write("promotion.fused_node_declared_to_observed_merge.bundle.json", b, 4, NO_MERGE + over(4),
            "the chain declares a fused producer+combine kernel but only the plain producer ran with split 4: no merge observed", "0x0AC")


# --------------------------------------------------------------------------------------------------
# One fixture per reason id: a level-6 claim with exactly that requirement broken.

# The repeat call's difference from the checked call as dkb run records it (harness/run_evidence.c): 3 of
# 4096 O elements and no LSE row differ, within the tolerance (a merge order that varies between calls).
REPEAT_DIFFERENCE = {
    "rule": "the repeat call's raw O and LSE against the checked call's, element by element with atol 0 and rtol 0",
    "output": {"n": 4096, "violations": 3, "nan": 0, "inf": 0, "max_abs": 0.0078125, "max_rel": 0.0039, "max_ratio": 0.0,
               "worst_index": 17},
    "lse": {"n": 32, "violations": 0, "nan": 0, "inf": 0, "max_abs": 0.0, "max_rel": 0.0, "max_ratio": 0.0, "worst_index": 0},
    "within_tolerance": True,
}


def declare_nondeterministic(b, within):
    """The backend declares a nondeterministic reduction order (launch flag), so its repeat call is held to
    the oracle's tolerance; the repeat call's bits differ from the checked call's, within it or not."""
    b["dispatch"]["backend"]["launch_flags"] = ["nondeterministic"]
    rc = b["measurement"]["timing"]["repeat_check"]
    rc.update(rule="outputs poisoned, the call run once more after the timed samples, its O and LSE held to the float64 "
                   "oracle under the call key's tolerances", contract="tolerance", output_bitwise_equal=False,
              difference=dict(REPEAT_DIFFERENCE, within_tolerance=within))


def requirements(g, base, arts):
    R = []  # (name, mutate, computed, findings, description, options)

    def req(name, computed, findings, description, options=None, extra_over=True):
        def deco(f):
            R.append((name, f, computed, findings + (over(computed) if extra_over else []), description, options))
            return f
        return deco

    def L2b(b):
        trim(b, 2)
        b["claimed_level"] = 2
        b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "no driver"}]}

    # level 0
    @req("claimed_level_exceeds_computed", 2, ABOVE[2] + [(0, "claimed_level_exceeds_computed", "/claimed_level")],
         "an honest level-2 bundle that claims level 3", extra_over=False)
    def _(b):
        L2b(b)
        b["claimed_level"] = 3

    @req("status_contradicts_evidence", 6, [(0, "status_contradicts_evidence", "/status/terminal")],
         "terminal cuda_runtime_unavailable (ceiling 2) with level-6 evidence", extra_over=False)
    def _(b):
        b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "x"}]}

    @req("status_contradicts_evidence.not-reproduced", 6, [(0, "status_contradicts_evidence", "/status/terminal"),
                                                            (0, "status_contradicts_evidence", "/status/terminal")],
         "terminal output_not_reproduced (ceiling 5) over a repeat check that reproduced the output", extra_over=False)
    def _(b):
        b["status"] = {"terminal": "output_not_reproduced", "reasons": [{"id": "timing_output_not_reproduced", "detail": "x"}]}

    @req("status_reasons_missing", 2, ABOVE[2] + [(0, "status_reasons_missing", "/status/reasons")],
         "a level-2 bundle stopped by cuda_runtime_unavailable without a reason", extra_over=False)
    def _(b):
        L2b(b)
        b["status"]["reasons"] = []

    @req("artifact_duplicate", 6, [(0, "artifact_duplicate", "/artifacts/4/name")], "the trace is listed twice", extra_over=False)
    def _(b):
        b["artifacts"].append(dict(b["artifacts"][3]))

    # artifacts, reported at the referencing level
    @req("artifact_not_listed", 4, [(5, "artifact_not_listed", "/execution/trace/artifact")], "the trace reference names an unlisted file")
    def _(b):
        b["execution"]["trace"]["artifact"] = "trace.unlisted.json"

    @req("artifact_sha256_invalid", 3, [(4, "artifact_sha256_invalid", "/dispatch/diagnostic/sha256")], "the diagnostic reference's sha256 is not hex")
    def _(b):
        b["dispatch"]["diagnostic"]["sha256"] = "abc"

    @req("artifact_sha256_mismatch", 2, [(3, "artifact_sha256_mismatch", "/loaded/build_report/sha256")],
         "the build-report reference's sha256 differs from its /artifacts entry")
    def _(b):
        b["loaded"]["build_report"]["sha256"] = sha256(b"another build report")

    # a listed artifact whose file was altered after it was hashed
    data = dkb_digest({"schema": "dkb.loader-map/v1", "objects": [mapped(*o) for o in OBJECTS]}, canonical=True).encode()
    tampered = g.artifact_bytes("loader-map-tampered", data)
    with open(os.path.join(g.out, tampered["name"]), "ab") as f:
        f.write(b" ")

    @req("artifact_sha256_mismatch.file", 2, [(3, "artifact_sha256_mismatch", "/artifacts/4/sha256")],
         "the loader map file beside the bundle no longer hashes to its entry")
    def _(b):
        entry = dict(tampered, bytes=tampered["bytes"] + 1)
        b["artifacts"].append(entry)
        b["loaded"]["loader_map"] = ref(entry)

    @req("artifact_file_missing", 4, [(5, "artifact_file_missing", "/artifacts/4/name")], "the trace file is not beside the bundle")
    def _(b):
        entry = {"name": "trace.absent.json", "sha256": sha256(b"absent"), "bytes": 6}
        b["artifacts"].append(entry)
        b["execution"]["trace"] = ref(entry)

    @req("artifact_file_missing.unreferenced", 6, [(0, "artifact_file_missing", "/artifacts/4/name")],
         "an extra listed artifact is missing: a bundle-wide inconsistency", extra_over=False)
    def _(b):
        b["artifacts"].append({"name": "notes.absent.txt", "sha256": sha256(b"notes"), "bytes": 5})

    @req("artifact_bytes_mismatch", 4, [(5, "artifact_bytes_mismatch", "/artifacts/3/bytes")], "the trace entry states a wrong size")
    def _(b):
        b["artifacts"][3]["bytes"] += 1

    # a link beside the bundle to the trace file: the right bytes, but not the folder's own
    link = "trace-link." + base["execution"]["trace"]["sha256"][:16] + ".jsonl"
    os.symlink(base["execution"]["trace"]["artifact"], os.path.join(g.out, link))

    @req("artifact_not_a_file", 4, [(5, "artifact_not_a_file", "/artifacts/3/name")],
         "the trace entry names a symbolic link to a file with the right hash")
    def _(b):
        b["artifacts"][3]["name"] = b["execution"]["trace"]["artifact"] = link

    # level 1
    unsourced = [(2, "chain_node_unsourced", f"/chain/nodes/{i}") for i in range(6)]

    @req("source_missing", 0, [(1, "source_missing", "/source")] + unsourced, "no source section")
    def _(b):
        del b["source"]

    @req("source_commit_missing", 0, [(1, "source_commit_missing", "/source/commit")], "no source commit")
    def _(b):
        del b["source"]["commit"]

    @req("source_commit_not_pinned", 0, [(1, "source_commit_not_pinned", "/source/commit")], "a 7-hex short commit floats")
    def _(b):
        b["source"]["commit"] = COMMIT[:7]

    @req("source_commit_not_pinned.null", 0, [(1, "source_commit_not_pinned", "/source/commit")],
         "the null commit of a build outside a checkout")
    def _(b):
        b["source"]["commit"] = b["meta"]["commit"] = "0" * 40

    @req("source_dirty_missing", 0, [(1, "source_dirty_missing", "/source/dirty")], "no dirty flag")
    def _(b):
        del b["source"]["dirty"]

    @req("source_differs_from_meta", 0, [(1, "source_differs_from_meta", "/source/commit")], "the source commit is not the commit dkb was built from")
    def _(b):
        b["source"]["commit"] = OTHER_COMMIT

    @req("source_differs_from_meta.dirty", 0, [(1, "source_differs_from_meta", "/source/dirty")], "the source says dirty, the build was clean")
    def _(b):
        b["source"]["dirty"] = True

    @req("source_files_missing", 0, [(1, "source_files_missing", "/source/files")] + unsourced, "an empty file list")
    def _(b):
        b["source"]["files"] = []

    extra_file = {"path": "kernels/extra.cu", "sha256": sha256(b"extra"),
                  "symbols": [{"name": "extra_kernel", "role": "unused", "lines": [1, 2]}]}

    @req("source_file_path_invalid", 0, [(1, "source_file_path_invalid", "/source/files/5/path")], "a path that leaves the repository")
    def _(b):
        b["source"]["files"].append(dict(extra_file, path="../outside/extra.cu"))

    @req("source_file_duplicate", 0, [(1, "source_file_duplicate", "/source/files/5/path")], "a file listed twice")
    def _(b):
        b["source"]["files"].append(copy.deepcopy(b["source"]["files"][0]))

    @req("source_file_sha256_missing", 0, [(1, "source_file_sha256_missing", "/source/files/0/sha256")], "a file without its hash")
    def _(b):
        del b["source"]["files"][0]["sha256"]

    @req("source_file_sha256_invalid", 0, [(1, "source_file_sha256_invalid", "/source/files/0/sha256")], "a hash that is not hex")
    def _(b):
        b["source"]["files"][0]["sha256"] = "not-a-hash"

    @req("source_symbols_missing", 0, [(1, "source_symbols_missing", "/source/files/5/symbols")], "a file naming no symbol")
    def _(b):
        b["source"]["files"].append({"path": "kernels/extra.cu", "sha256": sha256(b"extra")})

    @req("source_symbol_duplicate", 0, [(1, "source_symbol_duplicate", "/source/files/4/symbols/3/name")], "a symbol listed twice")
    def _(b):
        syms = b["source"]["files"][4]["symbols"]
        syms.append(copy.deepcopy(syms[0]))

    @req("source_symbol_role_missing", 0, [(1, "source_symbol_role_missing", "/source/files/0/symbols/0/role")], "a symbol without role")
    def _(b):
        del b["source"]["files"][0]["symbols"][0]["role"]

    @req("source_symbol_lines_missing", 0, [(1, "source_symbol_lines_missing", "/source/files/0/symbols/0/lines")], "a symbol without span")
    def _(b):
        del b["source"]["files"][0]["symbols"][0]["lines"]

    @req("source_symbol_lines_invalid", 0, [(1, "source_symbol_lines_invalid", "/source/files/0/symbols/0/lines")], "a span with last < first")
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [7, 3]

    @req("source_file_unreadable", 0, [(1, "source_file_unreadable", "/source/files/5/path")],
         "--source-root: a listed file that is not in the checkout", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"].append(copy.deepcopy(extra_file))

    @req("source_file_sha256_mismatch", 0, [(1, "source_file_sha256_mismatch", "/source/files/0/sha256")],
         "--source-root: the checkout's file differs from the recorded hash", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["sha256"] = sha256(b"an older version of cmd/run.c")

    @req("source_symbol_lines_outside_file", 0, [(1, "source_symbol_lines_outside_file", "/source/files/0/symbols/0/lines")],
         "--source-root: a span past the end of the file", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [3, 400]

    @req("source_symbol_not_in_span", 0, [(1, "source_symbol_not_in_span", "/source/files/0/symbols/0/name")],
         "--source-root: the span is the header comment, not the function", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [1, 1]

    # level 2
    @req("chain_missing", 1, [(2, "chain_missing", "/chain")], "no chain")
    def _(b):
        del b["chain"]

    @req("chain_nodes_missing", 1, [(2, "chain_nodes_missing", "/chain/nodes")], "a chain without nodes")
    def _(b):
        b["chain"]["nodes"] = []
        b["chain"]["edges"] = []

    @req("chain_node_duplicate", 1, [(2, "chain_node_duplicate", "/chain/nodes/6/id")], "two nodes share an id")
    def _(b):
        b["chain"]["nodes"].append(copy.deepcopy(b["chain"]["nodes"][0]))

    @req("chain_node_unsourced", 1, [(2, "chain_node_unsourced", "/chain/nodes/1")], "a node whose symbol is not in the source")
    def _(b):
        b["chain"]["nodes"][1]["symbol"] = "plan_build_v2"

    @req("chain_edge_unknown_node", 1, [(2, "chain_edge_unknown_node", "/chain/edges/5")], "an edge to a node that does not exist")
    def _(b):
        b["chain"]["edges"].append(["decode_launch", "decode_split_kv_finalize"])

    @req("chain_cycle", 1, [(2, "chain_cycle", "/chain/edges/5")], "combine calls back into cmd")
    def _(b):
        b["chain"]["edges"].append(["decode_split_kv_combine", "cmd_run"])

    @req("chain_required_layers_weakened", 1, [(2, "chain_required_layers_weakened", "/chain/required_layers")],
         "required_layers drops combine")
    def _(b):
        b["chain"]["required_layers"].remove("combine")

    @req("chain_layer_missing", 1, [(2, "chain_layer_missing", "/chain/nodes")], "no plan-layer node")
    def _(b):
        b["chain"]["nodes"].pop(1)
        b["chain"]["edges"].remove(["cmd_run", "plan_build"])

    @req("chain_node_unreachable", 1, [(2, "chain_node_unreachable", "/chain/nodes/5")], "the combine node has no incoming edge")
    def _(b):
        b["chain"]["edges"].remove(["decode_launch", "decode_split_kv_combine"])

    # level 3
    @req("loaded_missing", 2, [(3, "loaded_missing", "/loaded")], "no loaded section")
    def _(b):
        del b["loaded"]

    @req("loader_map_missing", 2, [(3, "loader_map_missing", "/loaded/loader_map")], "no loader map")
    def _(b):
        del b["loaded"]["loader_map"]

    not_a_map = g.artifact("loader-map-not-a-map", {"schema": "dkb.loader-map/v1", "mapped": 7})

    @req("loader_map_unreadable", 2, [(3, "loader_map_unreadable", "/loaded/loader_map")], "the loader map artifact has no objects list")
    def _(b):
        b["artifacts"].append(not_a_map)
        b["loaded"]["loader_map"] = ref(not_a_map)

    @req("loaded_objects_missing", 2, [(3, "loaded_objects_missing", "/loaded/objects"),
                                       (5, "profiler_library_not_loaded", "/loaded/objects")], "an empty object list")
    def _(b):
        b["loaded"]["objects"] = []

    @req("loaded_object_path_not_absolute", 2, [(3, "loaded_object_path_not_absolute", "/loaded/objects/0/path"),
                                                (3, "loaded_object_not_in_loader_map", "/loaded/objects/0")],
         "a relative path (not a realpath of the mapped file)")
    def _(b):
        b["loaded"]["objects"][0]["path"] = "build/dkb"

    @req("loaded_object_duplicate", 2, [(3, "loaded_object_duplicate", "/loaded/objects/5/path")], "an object listed twice")
    def _(b):
        b["loaded"]["objects"].append(copy.deepcopy(b["loaded"]["objects"][1]))

    @req("loaded_object_sha256_missing", 2, [(3, "loaded_object_sha256_missing", "/loaded/objects/1/sha256")], "libcudart without a hash")
    def _(b):
        del b["loaded"]["objects"][1]["sha256"]

    @req("loaded_object_sha256_invalid", 2, [(3, "loaded_object_sha256_invalid", "/loaded/objects/1/sha256")], "a hash that is not hex")
    def _(b):
        b["loaded"]["objects"][1]["sha256"] = "0xdeadbeef"

    @req("loaded_object_bytes_missing", 2, [(3, "loaded_object_bytes_missing", "/loaded/objects/1/bytes")], "an object without size")
    def _(b):
        del b["loaded"]["objects"][1]["bytes"]

    @req("loaded_object_not_in_loader_map", 2, [(3, "loaded_object_not_in_loader_map", "/loaded/objects/0")],
         "the executable's hash is not the one in the loader map")
    def _(b):
        b["loaded"]["objects"][0]["sha256"] = sha256(b"a rebuilt dkb")

    for role, reason, what in (("dkb", "loaded_executable_missing", "the executable"), ("cudart", "loaded_cudart_missing", "libcudart"),
                               ("cuda", "loaded_driver_missing", "libcuda")):
        @req(reason, 2, [(3, reason, "/loaded/objects")], f"{what} is not among the loaded objects")
        def _(b, role=role):
            b["loaded"]["objects"] = [o for o in b["loaded"]["objects"] if o["role"] != role]

    @req("build_report_missing", 2, [(3, "build_report_missing", "/loaded/build_report")], "no build report")
    def _(b):
        del b["loaded"]["build_report"]

    not_json = g.artifact_bytes("build-report-text", b"built with gcc 12 and nvcc 13.0\n", "txt")

    @req("build_report_unreadable", 2, [(3, "build_report_unreadable", "/loaded/build_report")], "a build report that is free text")
    def _(b):
        b["artifacts"].append(not_json)
        b["loaded"]["build_report"] = ref(not_json)

    other_build = g.artifact("build-report-other", {"schema": "dkb.build-report/v1", "commit": OTHER_COMMIT, "dirty": False})

    @req("build_report_commit_mismatch", 2, [(3, "build_report_commit_mismatch", "/loaded/build_report")],
         "the binary was built from another commit than the source")
    def _(b):
        b["artifacts"].append(other_build)
        b["loaded"]["build_report"] = ref(other_build)

    @req("device_missing", 2, [(3, "device_missing", "/loaded/device")], "no device")
    def _(b):
        del b["loaded"]["device"]

    @req("device_field_missing", 2, [(3, "device_field_missing", "/loaded/device/pci_bus_id")], "no PCI bus id")
    def _(b):
        del b["loaded"]["device"]["pci_bus_id"]

    @req("device_field_invalid", 2, [(3, "device_field_invalid", "/loaded/device/compute_capability")], "compute capability 'sm_90'")
    def _(b):
        b["loaded"]["device"]["compute_capability"] = "sm_90"

    @req("device_contradicts_admission", 2, [(3, "device_contradicts_admission", "/loaded/device/compute_capability")],
         "the bundle names a compute capability 8.0 device, the admission was computed for 9.0")
    def _(b):
        b["loaded"]["device"].update(name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", sm_count=108)

    # level 4
    @req("dispatch_missing", 3, [(4, "dispatch_missing", "/dispatch")], "no dispatch record")
    def _(b):
        del b["dispatch"]

    @req("call_key_missing", 3, [(4, "call_key_missing", "/dispatch/call_key")], "a digest without the readable key")
    def _(b):
        del b["dispatch"]["call_key"]

    @req("call_key_field_missing", 3, [(4, "call_key_field_missing", "/dispatch/call_key/graph_mode")], "no graph mode in the key")
    def _(b):
        del b["dispatch"]["call_key"]["graph_mode"]
        refresh(b, g)

    @req("call_key_inconsistent", 3, [(4, "call_key_inconsistent", "/dispatch/call_key/S_k_per_request")], "two lengths for B = 3")
    def _(b):
        b["dispatch"]["call_key"]["S_k_per_request"] = [9, 257]
        refresh(b, g)

    @req("call_key_sha256_missing", 3, [(4, "call_key_sha256_missing", "/dispatch/call_key_sha256")], "no call-key digest")
    def _(b):
        del b["dispatch"]["call_key_sha256"]

    @req("call_key_sha256_mismatch", 3, [(4, "call_key_sha256_mismatch", "/dispatch/call_key_sha256"),
                                         (4, "ledgers_mismatch", "/ledgers/unique_kv_bytes")],
         "the call changed (a longer context), the digest and the ledgers are old")
    def _(b):
        b["dispatch"]["call_key"]["S_k_per_request"] = [9, 257, 1001]

    @req("diagnostic_missing", 3, [(4, "diagnostic_missing", "/dispatch/diagnostic")], "no dispatch diagnostic")
    def _(b):
        del b["dispatch"]["diagnostic"]

    other_diag = g.artifact("dispatch-diagnostic", {"schema": "dkb.dispatch-diagnostic/v1", "request": "auto",
                                                    "candidates": base["dispatch"]["candidates"], "selected": "dkb_split_kv"})

    @req("diagnostic_unreadable", 3, [(4, "diagnostic_unreadable", "/dispatch/diagnostic")],
         "the diagnostic is a summary in another schema, not the admission record")
    def _(b):
        b["artifacts"][2] = other_diag
        b["dispatch"]["diagnostic"] = ref(other_diag)

    @req("dispatch_contradicts_diagnostic", 3, [(4, "dispatch_contradicts_diagnostic", "/dispatch/candidates/2/priority")],
         "the bundle lists math_reference at priority 8, the admission record at 9")
    def _(b):
        b["dispatch"]["candidates"][2]["priority"] = 8

    @req("request_missing", 3, [(4, "request_missing", "/dispatch/request")], "no request")
    def _(b):
        del b["dispatch"]["request"]

    @req("outcome_missing", 3, [(4, "outcome_missing", "/dispatch/outcome")], "no outcome")
    def _(b):
        del b["dispatch"]["outcome"]

    @req("candidates_missing", 3, [(4, "candidates_missing", "/dispatch/candidates"), (4, "selected_not_eligible", "/dispatch/selected")],
         "no candidate list")
    def _(b):
        del b["dispatch"]["candidates"]

    @req("candidate_duplicate", 3, [(4, "candidate_duplicate", "/dispatch/candidates/3/backend")], "a backend listed twice")
    def _(b):
        b["dispatch"]["candidates"].append(copy.deepcopy(b["dispatch"]["candidates"][1]))
        readmit(g, b)

    @req("candidate_reasons_inconsistent", 3, [(4, "candidate_reasons_inconsistent", "/dispatch/candidates/1")],
         "an ineligible candidate without its rejection reasons")
    def _(b):
        b["dispatch"]["candidates"][1]["reasons"] = []
        readmit(g, b)

    @req("forced_request_not_candidate", 3, [(4, "forced_request_not_candidate", "/dispatch/request"),
                                             (4, "forced_request_fell_back", "/dispatch/selected")],
         "a forced backend that is not registered, and a selection anyway")
    def _(b):
        b["dispatch"]["request"] = "flash_decoding_v9"
        readmit(g, b)

    @req("selected_missing", 3, [(4, "selected_missing", "/dispatch/selected")], "outcome selected, selected null")
    def _(b):
        b["dispatch"]["selected"] = None
        readmit(g, b)

    @req("selected_not_eligible", 3, [(4, "selected_not_eligible", "/dispatch/selected")], "selected an ineligible backend")
    def _(b):
        b["dispatch"]["selected"] = b["dispatch"]["plan_key"]["backend"] = b["dispatch"]["backend"]["name"] = "dkb_single_pass"
        refresh(b)
        readmit(g, b)

    @req("forced_request_fell_back", 3, [(4, "forced_request_fell_back", "/dispatch/selected")],
         "forced dkb_single_pass (ineligible) but dkb_split_kv ran: a silent fallback")
    def _(b):
        b["dispatch"]["request"] = "dkb_single_pass"
        readmit(g, b)

    @req("auto_selection_not_first_eligible", 3, [(4, "auto_selection_not_first_eligible", "/dispatch/selected")],
         "auto selected priority 1 while priority 0 was eligible")
    def _(b):
        c = b["dispatch"]["candidates"]
        c[0]["priority"], c[1]["priority"] = 1, 0
        c[1]["eligible"], c[1]["reasons"] = True, []
        readmit(g, b)

    @req("outcome_contradicts_candidates", 3, [(4, "outcome_contradicts_candidates", "/dispatch/outcome"),
                                               (5, "no_backend_selected", "/dispatch/outcome")],
         "auto reports no_eligible while dkb_split_kv is eligible")
    def _(b):
        b["dispatch"]["outcome"] = "no_eligible"
        b["dispatch"]["selected"] = None
        readmit(g, b)

    for field, reason in (("split_count", "split_count_missing"), ("workspace_bytes", "workspace_bytes_missing"),
                          ("plan_key", "plan_key_missing"), ("plan_key_sha256", "plan_key_sha256_missing")):
        @req(reason, 3, [(4, reason, "/dispatch/" + field)], f"a selected plan without {field}")
        def _(b, field=field):
            del b["dispatch"][field]

    @req("required_kernels_missing", 3, [(4, "required_kernels_missing", "/dispatch/required_kernels")],
         "a selected plan that declares no kernel: dkb writes no required_kernels")
    def _(b):
        del b["dispatch"]["required_kernels"]
        b["dispatch"]["backend"]["kernels"] = []

    @req("plan_key_contradicts_dispatch", 3, [(4, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count")],
         "the plan key says 8 splits, the dispatch 4")
    def _(b):
        b["dispatch"]["plan_key"]["split_count"] = 8
        refresh(b)

    @req("workspace_inconsistent", 3, [(4, "workspace_inconsistent", "/dispatch/workspace_bytes")],
         "4 splits, 0 workspace bytes: the backend declares its persistent item arrays only")
    def _(b):
        be = b["dispatch"]["backend"]
        be["workspaces"] = [w for w in be["workspaces"] if w["kind"] == "persistent"]
        set_workspace_bytes(b, launched_bytes(be["workspaces"]))
        refresh(b, g)

    @req("dispatch_contradicts_plan", 3, [(4, "dispatch_contradicts_plan", "/dispatch/split_count")],
         "the plan record gives 8 slots per request, the dispatch record kept split 4")
    def _(b):
        b["dispatch"]["plan"]["max_slots_per_request"] = 8

    @req("dispatch_contradicts_plan.no-backend", 3, [(4, "backend_missing", "/dispatch/backend"),
                                                     (4, "dispatch_contradicts_plan", "/dispatch/workspace_bytes")],
         "a bundle without /dispatch/backend (written before dkb recorded it, so below level 4 for that alone) "
         "still has its workspace_bytes checked against the plan record: the plan's workspace grew by 64 bytes, the "
         "dispatch record kept the old size")
    def _(b):
        del b["dispatch"]["backend"]
        b["dispatch"]["plan"]["workspace_bytes"] += 64
        refresh(b, g)

    @req("ledgers_missing", 3, [(4, "ledgers_missing", "/ledgers")], "no ledgers")
    def _(b):
        del b["ledgers"]

    @req("ledgers_mismatch", 3, [(4, "ledgers_mismatch", "/ledgers/unique_kv_bytes")], "two bytes more unique K/V than the call key holds")
    def _(b):
        b["ledgers"]["unique_kv_bytes"] += 2

    @req("fixture_unreadable", 3, [(4, "fixture_unreadable", "/fixture/path")], "--source-root: the fixture is not in the checkout",
         SOURCE_ROOT_OPT)
    def _(b):
        b["fixture"]["path"] = "fixtures/decode/absent.json"

    @req("fixture_sha256_mismatch", 3, [(4, "fixture_sha256_mismatch", "/fixture/sha256")],
         "--source-root: the fixture's recorded hash is the null digest", SOURCE_ROOT_OPT)
    def _(b):
        b["fixture"]["sha256"] = "0" * 64

    @req("plan_key_sha256_mismatch", 3, [(4, "plan_key_sha256_mismatch", "/dispatch/plan_key_sha256")], "the plan gained a field, its digest is old")
    def _(b):
        b["dispatch"]["plan_key"]["kv_tile"] = 64

    @req("plan_key_contradicts_call_key", 3, [(4, "plan_key_contradicts_call_key", "/dispatch/plan_key/d_v")], "a stale plan for d_v = 64")
    def _(b):
        b["dispatch"]["plan_key"]["d_v"] = 64
        refresh(b)

    # level 5
    @req("execution_missing", 4, [(5, "execution_missing", "/execution")], "no execution record")
    def _(b):
        del b["execution"]

    @req("no_backend_selected", 4, [(5, "no_backend_selected", "/dispatch/outcome"), (0, "claimed_level_exceeds_computed", "/claimed_level")],
         "a forced, ineligible backend failed closed (a valid level-4 diagnostic), yet execution is claimed", extra_over=False)
    def _(b):
        d = b["dispatch"]
        d["request"], d["outcome"], d["selected"] = "dkb_single_pass", "rejected", None
        readmit(g, b)
        b["status"] = {"terminal": "backend_rejected", "reasons": [{"id": "backend_rejected", "detail": "page_size=16 unsupported"}]}

    for field, reason in (("trace", "trace_missing"), ("nvtx_range", "nvtx_range_missing"),
                          ("external_correlation_id", "external_correlation_missing")):
        @req(reason, 4, [(5, reason, "/execution/" + field)], f"no {field}")
        def _(b, field=field):
            del b["execution"][field]

    @req("trace_dropped_records", 4, [(5, "trace_dropped_records", "/execution/dropped_records")], "CUPTI dropped 12 records")
    def _(b):
        b["execution"]["dropped_records"] = 12
        retrace(g, b)

    @req("trace_dropped_records.one", 4, [(5, "trace_dropped_records", "/execution/dropped_records")],
         "CUPTI dropped one record: any dropped record may be a launch")
    def _(b):
        b["execution"]["dropped_records"] = 1
        retrace(g, b)

    old_trace = g.artifact("trace-json", {"schema": "dkb.trace/v1", "profiler": "CUPTI 13.0",
                                          "records": [{"kind": "CONCURRENT_KERNEL", "name": PRODUCER}]})

    @req("trace_unreadable", 4, [(5, "trace_unreadable", "/execution/trace")], "a trace that is one JSON document, not JSON lines")
    def _(b):
        b["artifacts"][3] = old_trace
        b["execution"]["trace"] = ref(old_trace)

    @req("trace_contradicts_execution", 4, [(5, "trace_contradicts_execution", "/execution/external_correlation_id")],
         "the record names external correlation 2, the trace's call has 1")
    def _(b):
        b["execution"]["external_correlation_id"] = 2

    @req("nvtx_range_contradicts_call_key", 4, [(5, "nvtx_range_contradicts_call_key", "/execution/nvtx_range")],
         "the trace is of the range of another call key")
    def _(b):
        b["execution"]["nvtx_range"] = "dkb/call/" + sha256(b"another call")
        retrace(g, b)

    @req("kernel_record_contradicts_trace", 4, [(5, "kernel_record_contradicts_trace", "/execution/kernels/0/registers")],
         "the producer record says 32 registers, CUPTI recorded 96")
    def _(b):
        b["execution"]["kernels"][0]["registers"] = 32

    @req("profiler_missing", 4, [(5, "profiler_missing", "/execution/profiler/version")], "no profiler version")
    def _(b):
        del b["execution"]["profiler"]["version"]

    @req("profiler_library_not_loaded", 4, [(5, "profiler_library_not_loaded", "/loaded/objects")], "libcupti is not among the loaded objects")
    def _(b):
        b["loaded"]["objects"] = [o for o in b["loaded"]["objects"] if o["role"] != "cupti"]

    @req("kernels_missing", 4, [(5, "kernels_missing", "/execution/kernels"),
                                (5, "required_kernel_not_observed", "/dispatch/backend/kernels/0"),
                                (5, "required_kernel_not_observed", "/dispatch/backend/kernels/1"),
                                (5, "producer_kernel_not_observed", "/execution/kernels")] + NO_MERGE, "no kernel records")
    def _(b):
        b["execution"]["kernels"] = []
        retrace(g, b)

    combine_gone = [(5, "required_kernel_not_observed", "/dispatch/backend/kernels/1")] + NO_MERGE

    @req("kernel_launches_missing", 4, [(5, "kernel_launches_missing", "/execution/kernels/1/launches")] + combine_gone, "the combine record has no launch count")
    def _(b):
        del b["execution"]["kernels"][1]["launches"]

    @req("kernel_launches_not_positive", 4, [(5, "kernel_launches_not_positive", "/execution/kernels/1/launches"),
                                             (5, "kernel_record_contradicts_trace", "/execution/kernels/1/launches")] + combine_gone,
         "the combine kernel launched 0 times (the trace saw one launch)")
    def _(b):
        b["execution"]["kernels"][1]["launches"] = 0

    @req("kernel_geometry_invalid", 4, [(5, "kernel_geometry_invalid", "/execution/kernels/0/block"),
                                        (5, "kernel_record_contradicts_trace", "/execution/kernels/0/block")],
         "a block with two dimensions (the trace has three)")
    def _(b):
        b["execution"]["kernels"][0]["block"] = [128, 1]

    @req("required_kernel_not_observed", 4, [(5, "required_kernel_not_observed", "/dispatch/backend/kernels/2")],
         "the plan declares and requires a third kernel, which did not run")
    def _(b):
        d = b["dispatch"]
        d["backend"]["kernels"].append({"name": "_Z24decode_split_kv_finalizeILi128EEvPKfP6__halfi", "role": "other",
                                        "match": "symbol", "required": True})
        d["required_kernels"] = required_of(d["backend"])

    @req("producer_kernel_not_observed", 4, [(5, "required_kernel_not_observed", "/dispatch/backend/kernels/0"),
                                             (5, "kernel_not_declared", "/execution/kernels/0"),
                                             (5, "producer_kernel_not_observed", "/execution/kernels")],
         "another kernel ran instead of the producer (one the plan does not declare)")
    def _(b):
        b["execution"]["kernels"][0].update({"symbol": "_Z12other_kernelv", "demangled": "other_kernel()"})
        retrace(g, b)

    @req("combine_kernel_not_observed", 4, NO_MERGE, "4 splits, the plan declares only the producer, no combine ran")
    def _(b):
        b["execution"]["kernels"].pop(1)
        b["dispatch"]["backend"]["kernels"].pop(1)
        b["dispatch"]["required_kernels"].pop(1)
        retrace(g, b)

    # level 6
    for path, reason in (("", "measurement_missing"), ("/correctness", "correctness_missing"),
                         ("/correctness/reference", "correctness_reference_missing"), ("/correctness/rtol", "correctness_tolerance_missing"),
                         ("/correctness/passed", "correctness_result_missing"), ("/correctness/output", "correctness_output_missing"),
                         ("/correctness/lse", "correctness_lse_missing"), ("/correctness/cache", "correctness_cache_missing"),
                         ("/timing", "timing_missing"), ("/timing/method", "timing_method_missing"),
                         ("/timing/samples_us", "timing_samples_missing"), ("/timing/summary", "timing_summary_missing"),
                         ("/timing/stop_rule", "timing_stop_rule_missing")):
        @req(reason, 5, [(6, reason, "/measurement" + path)], f"no /measurement{path}")
        def _(b, path=path):
            if not path:
                del b["measurement"]
                return
            parts = path.strip("/").split("/")
            node = b["measurement"]
            for p in parts[:-1]:
                node = node[p]
            del node[parts[-1]]

    @req("correctness_failed", 5, [(6, "correctness_failed", "/measurement/correctness/passed")], "correctness failed, status says complete")
    def _(b):
        c = b["measurement"]["correctness"]
        c["passed"] = False
        c["output"]["violations"] = 37

    @req("correctness_tolerance_not_frozen", 5, [(6, "correctness_tolerance_not_frozen", "/measurement/correctness/atol")],
         "atol loosened after the fact: 0.01 against the frozen 0.002")
    def _(b):
        b["measurement"]["correctness"]["atol"] = 0.01

    @req("correctness_output_empty", 5, [(6, "correctness_output_empty", "/measurement/correctness/output/n")], "compared nothing")
    def _(b):
        b["measurement"]["correctness"]["output"]["n"] = 0

    @req("correctness_cache_required", 5, [(6, "correctness_cache_required", "/measurement/correctness/cache")],
         "an append call whose cache state was not compared")
    def _(b):
        b["dispatch"]["call_key"]["phase"] = "append"
        refresh(b, g)

    @req("correctness_passed_with_violations", 5, [(6, "correctness_passed_with_violations", "/measurement/correctness/output/violations")],
         "passed with 3 violations")
    def _(b):
        b["measurement"]["correctness"]["output"]["violations"] = 3

    @req("correctness_ratio_beyond_tolerance", 5, [(6, "correctness_ratio_beyond_tolerance", "/measurement/correctness/output/max_ratio")],
         "no violation counted, yet the worst element used 1.5 times its tolerance")
    def _(b):
        b["measurement"]["correctness"]["output"]["max_ratio"] = 1.5

    @req("timing_under_tracing", 5, [(6, "timing_under_tracing", "/measurement/timing/tracing")], "samples taken under CUPTI tracing")
    def _(b):
        b["measurement"]["timing"]["tracing"] = True

    @req("timing_output_not_reproduced", 5, [(6, "timing_output_not_reproduced", "/measurement/timing/repeat_check/output_bitwise_equal")],
         "the call after the timed samples wrote a different output (state kept between calls)")
    def _(b):
        rc = b["measurement"]["timing"]["repeat_check"]
        rc["output_bitwise_equal"] = False
        rc["difference"] = REPEAT_DIFFERENCE

    @req("repeat_difference_contradicts", 5, [(6, "repeat_difference_contradicts", "/measurement/timing/repeat_check/difference")],
         "a recorded difference beside output_bitwise_equal true")
    def _(b):
        b["measurement"]["timing"]["repeat_check"]["difference"] = REPEAT_DIFFERENCE

    @req("timing_output_not_reproduced.outside-tolerance", 5,
         [(6, "timing_output_not_reproduced", "/measurement/timing/repeat_check/difference")],
         "a backend that declares a nondeterministic reduction order, whose repeat call left the oracle's tolerance")
    def _(b):
        declare_nondeterministic(b, False)

    @req("repeat_contract_contradicts_backend", 5,
         [(6, "repeat_contract_contradicts_backend", "/measurement/timing/repeat_check/contract")],
         "a tolerance contract for a backend that declares no nondeterministic reduction order")
    def _(b):
        declare_nondeterministic(b, True)
        b["dispatch"]["backend"]["launch_flags"] = []

    @req("repeat_contract_contradicts_backend.bitwise", 5,
         [(6, "repeat_contract_contradicts_backend", "/measurement/timing/repeat_check/contract")],
         "a bitwise contract for a backend that declares a nondeterministic reduction order")
    def _(b):
        b["dispatch"]["backend"]["launch_flags"] = ["nondeterministic"]

    @req("timing_warmup_missing", 5, [(6, "timing_warmup_missing", "/measurement/timing/warmup")], "no warm-up")
    def _(b):
        b["measurement"]["timing"]["warmup"] = 0

    def resample(b, samples, **stop):
        t = b["measurement"]["timing"]
        t["samples_us"] = samples
        t["summary"] = stats(samples)
        t["repeat_check"]["after_samples"] = len(samples)
        t["stop_rule"].update(stop)

    @req("timing_too_few_samples", 5, [(6, "timing_too_few_samples", "/measurement/timing/samples_us")],
         "19 samples (the rule itself stops at 10)")
    def _(b):
        s = b["measurement"]["timing"]["samples_us"][:19]
        resample(b, s, min_samples=10, rule="at least 10 samples, stop when rel_stdev <= 0.05 or at 200")

    @req("timing_sample_not_positive", 5, [(6, "timing_sample_not_positive", "/measurement/timing/samples_us/3")],
         "a zero sample (an event pair that did not bracket the work)")
    def _(b):
        s = list(b["measurement"]["timing"]["samples_us"])
        s[3] = 0.0
        resample(b, s, max_rel_stdev=None)

    @req("timing_summary_mismatch", 5, [(6, "timing_summary_mismatch", "/measurement/timing/summary/median")],
         "a median that is not the raw samples' median")
    def _(b):
        b["measurement"]["timing"]["summary"]["median"] += 1.0

    @req("timing_stop_rule_violated", 5, [(6, "timing_stop_rule_violated", "/measurement/timing/stop_rule")],
         "40 samples under a rule that stops at 30")
    def _(b):
        b["measurement"]["timing"]["stop_rule"]["max_samples"] = 30

    @req("counter_definition_incomplete", 5, [(6, "counter_definition_incomplete", "/measurement/counters/0/unit")], "a counter without unit")
    def _(b):
        del b["measurement"]["counters"][0]["unit"]

    for name, mutate, computed, findings, description, options in R:
        b = copy.deepcopy(base)
        mutate(b)
        g.write(f"requirement.{name}.bundle.json", b, computed, findings, description, options=options)


# --------------------------------------------------------------------------------------------------
# A plugin backend (include/dkb/backend.h): the bundle dkb writes when a plugin's kernels run the call.

PLUGIN_BACKEND = "synth_split_kv"
PLUGIN_LIB = ("/opt/dkb/build/plugins/libdkb_synth.so", 1843200)
# a closed-source library the plugin links (requirement.source_binary_not_loaded: its planner's call into it
# as a binary node, like cuDNN's engines)
BINARY_LIB = ("/opt/synth/lib/libsynth_rt.so.2", 5263360)
BINARY_NODE = {"id": "synth_rt_chunk_size", "layer": "plan", "path": os.path.basename(BINARY_LIB[0]), "symbol": "synth_rt_chunk_size",
               "root": "binary"}
UPSTREAM = {"package": "synth-attention", "version": "0.4.2", "archive": "synth_attention-0.4.2-py3-none-any.whl",
            "archive_sha256": sha256(b"synthetic synth_attention-0.4.2 wheel")}
UPSTREAM_DIR = "upstream/synth-attention"  # repository-relative: where the wheel was unpacked
UP_HEADER = "synth_attention/include/synth/decode.cuh"
P_PRODUCER = "_ZN5synth17SplitDecodeKernelILi128EEEvPK6__halfS3_S3_PfS4_i"
P_COMBINE = "_ZN5synth17MergeStatesKernelILi128EEEvPKfS2_P6__halfi"
P_KERNELS = [
    {"symbol": P_PRODUCER, "demangled": "void synth::SplitDecodeKernel<128>(__half const*, __half const*, __half const*, "
     "float*, float*, int)", "launches": 1, "grid": [7, 8, 1], "block": [32, 4, 1], "registers": 64, "shared_bytes": 16384},
    {"symbol": P_COMBINE, "demangled": "void synth::MergeStatesKernel<128>(float const*, float const*, __half*, int)",
     "launches": 1, "grid": [132, 1, 1], "block": [32, 4, 1], "registers": 48, "shared_bytes": 2048}]

# dkb's files above the backend boundary: what the bundle keeps of dkb's chain for a plugin's call
DKB_RUNNER = [
    ("harness/runner.c", [
        ("runner_execute", "function", "int runner_execute(struct runner *r) {\n  if (stage_dispatch(r)) return -1;\n"
                                       "  return stage_capture(r);\n}\n"),
        ("stage_dispatch", "function", "static int stage_dispatch(struct runner *r) {\n  backends_admit(r->backends, r->call);\n"
                                       "  return r->sel->plan(r->sel, r->call, &r->plan, &r->state);\n}\n"),
        ("stage_capture", "function", "static int stage_capture(struct runner *r) {\n  r->sel->setup(r->state, r->call, r->ws, 0);\n"
                                      "  return launch_selected(r);\n}\n"),
        ("launch_selected", "function", "static int launch_selected(struct runner *r) {\n"
                                        "  return r->sel->launch(r->state, r->call, r->ws, r->stream);\n}\n")]),
    ("harness/backends.c", [
        ("backends_admit", "function", "int backends_admit(struct backends *bs, const struct dkb_call *c) {\n"
                                       "  for (size_t i = 0; i < bs->n; i++) bs->v[i].admit(&bs->v[i], c, &bs->why[i]);\n"
                                       "  return first_eligible(bs);\n}\n")])]
DKB_RUNNER_EDGES = [["cmd_run", "runner_execute"], ["runner_execute", "stage_dispatch"], ["stage_dispatch", "backends_admit"],
                    ["runner_execute", "stage_capture"], ["stage_capture", "launch_selected"]]
# dkb's chain nodes that are not its own backends' (scope builtin), in tools/chain.json's order
DKB_RUNNER_NODES = [("cmd_run", "cmd"), ("runner_execute", "runner"), ("stage_dispatch", "runner"), ("backends_admit", "admission"),
                    ("stage_capture", "runner"), ("launch_selected", "launch")]
ADAPTER = ("plugins/synth/adapter.cu", [
    ("synth_admit", "function", "static int synth_admit(const struct dkb_backend *self, const struct dkb_call *c, char *why) {\n"
                                "  return c->head_dim_qk == 128 ? DKB_ADMIT_OK : DKB_ADMIT_NO;\n}\n"),
    ("synth_plan", "function", "static int synth_plan(const struct dkb_backend *self, const struct dkb_call *c, struct dkb_plan *p,\n"
                               "                      void **state) {\n  p->splits = synth_chunks(c);\n"
                               "  p->lse_base = DKB_LSE_BASE2;\n  return 0;\n}\n"),
    ("synth_setup", "function", "static int synth_setup(void *state, const struct dkb_call *c, void *const *ws, void *stream) {\n"
                                "  return synth_upload_tables(state, ws[0], stream);\n}\n"),
    ("synth_launch", "function", "static int synth_launch(void *state, const struct dkb_call *c, void *const *ws, void *stream) {\n"
                                 "  return synth::SplitDecodeDispatched<128>(params_of(state, c, ws), stream);\n}\n")])
UPSTREAM_SOURCES = (UP_HEADER, [
    ("SplitDecodeKernel", "kernel", "template <int D>\n__global__ void SplitDecodeKernel(const __half *q, const __half *k, const __half *v,\n"
                                    "                                  float *tmp_v, float *tmp_s, int n) {\n"
                                    "  /* one chunk's partial state; its LSE in base 2 */\n}\n"),
    ("MergeStatesKernel", "kernel", "template <int D>\n__global__ void MergeStatesKernel(const float *tmp_v, const float *tmp_s, __half *o, int n) {\n"
                                    "  /* merge the chunks of every request that split */\n}\n"),
    ("SplitDecodeDispatched", "function", "template <int D>\ncudaError_t SplitDecodeDispatched(const Params &p, cudaStream_t s) {\n"
                                          "  SplitDecodeKernel<D><<<p.grid, p.block, 0, s>>>(p.q, p.k, p.v, p.tmp_v, p.tmp_s, p.n);\n"
                                          "  if (p.split_kv) MergeStatesKernel<D><<<p.merge_grid, p.block, 0, s>>>(p.tmp_v, p.tmp_s, p.o, p.n);\n"
                                          "  return cudaGetLastError();\n}\n")])
INCLUDED_REPO = ("include/dkb/backend.h", "\nstruct dkb_plan;  /* the plugin ABI: what a plan declares */\n")
INCLUDED_UPSTREAM = ("synth_attention/include/synth/vec.cuh", "\ntemplate <int N> struct vec_t { float v[N]; };\n")
# the plugin's chain spec: its table functions are the roots dkb's runner calls
PLUGIN_NODES = [("synth_admit", "admission", ADAPTER[0], None), ("synth_plan", "plan", ADAPTER[0], None),
                ("synth_setup", "setup", ADAPTER[0], None), ("synth_launch", "launch", ADAPTER[0], None),
                ("SplitDecodeDispatched", "launch", UP_HEADER, "upstream"),
                ("SplitDecodeKernel", "producer", UP_HEADER, "upstream"), ("MergeStatesKernel", "combine", UP_HEADER, "upstream")]
PLUGIN_EDGES = [["synth_launch", "SplitDecodeDispatched"],
                ["SplitDecodeDispatched", "SplitDecodeKernel"], ["SplitDecodeDispatched", "MergeStatesKernel"]]
# harness/run_evidence_source.c's BRIDGES: where dkb hands the call to a backend's chain roots of these layers
BRIDGES = {"admission": "backends_admit", "plan": "stage_dispatch", "setup": "stage_capture", "launch": "launch_selected"}


def write_plugin_tree(out):
    """The stand-ins of a plugin's call: dkb's runner files, the plugin's adapter, an ABI header it includes,
    its upstream package's header (symbols) and one it includes, under the unpacked wheel's folder. Returns
    (dkb's files, the plugin's source manifest)."""
    dkb = [write_stand_in(out, path, syms)[0] for path, syms in DKB_RUNNER]
    adapter, a_size = write_stand_in(out, *ADAPTER)
    inc, i_size = write_stand_in(out, INCLUDED_REPO[0], [], body=INCLUDED_REPO[1])
    up, u_size = write_stand_in(out, *UPSTREAM_SOURCES, under=UPSTREAM_DIR)
    upi, ui_size = write_stand_in(out, INCLUDED_UPSTREAM[0], [], under=UPSTREAM_DIR, body=INCLUDED_UPSTREAM[1])
    files = [dict(path=f["path"], root="repo", sha256=f["sha256"], size=n, matches_commit=True)
             for f, n in ((adapter, a_size), (inc, i_size))]
    files += [dict(path=f["path"], root="upstream", sha256=f["sha256"], size=n, record_sha256=f["sha256"])
              for f, n in ((up, u_size), (upi, ui_size))]
    symbols = [{"symbol": s["name"], "path": f["path"], "kind": s["role"], "span": s["lines"]}
               for f in (adapter, up) for s in f["symbols"]]
    nodes = [dict({"symbol": sym, "layer": layer, "path": path}, **({"root": root} if root else {}))
             for sym, layer, path, root in PLUGIN_NODES]
    manifest = {"schema": "dkb.source-manifest/v1", "spec": "plugins/synth/chain.json", "commit": COMMIT, "dirty": False,
                "files": files, "symbols": sorted(symbols, key=lambda s: [n[0] for n in PLUGIN_NODES].index(s["symbol"])),
                "chain": {"nodes": nodes, "edges": [{"from": a, "to": z} for a, z in PLUGIN_EDGES]},
                "upstream": dict(UPSTREAM, dir=UPSTREAM_DIR)}
    return dkb, manifest


def merged_source(dkb_files, manifest):
    """/source/files and /chain as harness/run_evidence_source.c merges them: dkb's files and nodes above the
    backend boundary (cmd/run.c, the runner, the admission of every backend), then the plugin manifest's
    files (root, record_sha256, included when a file defines no chain symbol) and nodes, its roots hung under
    the runner's stages."""
    files = list(dkb_files)
    for f in manifest["files"]:
        syms = [{"name": s["symbol"], "role": s["kind"], **({"lines": s["span"]} if "span" in s else {})}
                for s in manifest["symbols"] if s["path"] == f["path"]]
        e = {"path": f["path"], "sha256": f["sha256"], "symbols": syms}
        if not syms:
            e["included"] = True
        if f["root"] != "repo":
            e["root"] = f["root"]
        if "record_sha256" in f:
            e["record_sha256"] = f["record_sha256"]
        files.append(e)
    path_of = {s["name"]: f["path"] for f in dkb_files for s in f["symbols"]}
    nodes = [{"id": sym, "layer": layer, "path": path_of[sym], "symbol": sym} for sym, layer in DKB_RUNNER_NODES]
    for n in manifest["chain"]["nodes"]:
        nodes.append(dict({"id": n["symbol"], "layer": n["layer"], "path": n["path"], "symbol": n["symbol"]},
                          **({"root": n["root"]} if "root" in n else {})))
    edges = [list(e) for e in DKB_RUNNER_EDGES] + [[e["from"], e["to"]] for e in manifest["chain"]["edges"]]
    targets = {e["to"] for e in manifest["chain"]["edges"]}
    edges += [[BRIDGES[n["layer"]], n["symbol"]] for n in manifest["chain"]["nodes"]
              if n["symbol"] not in targets and n["layer"] in BRIDGES]
    return files, {"nodes": nodes, "edges": edges, "required_layers": ["cmd", "plan", "admission", "launch", "producer", "combine"]}


# the conversion dkb records for a backend whose conventions are not its own (harness/run_evidence.c)
CONVERSION_RULE = ("a base-2 LSE is multiplied by ln 2; where the oracle's row has no visible key, the backend's empty-row value is "
                   "replaced by O = 0, LSE = -inf (0x02C); the raw outputs are what the repeat check compares")


def plugin_bundle(g, base, base_files, arts):
    """The base call forced to a plugin's backend: FlashInfer-like, a split-KV producer and a merge of the
    chunks of every request that split, both declared by function name, the merge not required (it runs
    only when a request splits: a split plan's merge is required by its role, 0x0AC), an LSE in base 2 that
    dkb converts before comparing."""
    dkb_files, manifest = write_plugin_tree(g.out)
    b = copy.deepcopy(base)
    b["meta"]["argv"] = ["dkb", "run", FIXTURE_PATH, "--plugin", "build/plugins/libdkb_synth.so", "--backend", PLUGIN_BACKEND,
                         "-o", "out/"]
    # cmd/run.c and the runner: dkb's files above the backend boundary
    files, chain = merged_source([base_files[0]] + dkb_files, manifest)
    b["source"] = {"commit": COMMIT, "dirty": False, "files": files,
                   "plugin": {"commit": manifest["commit"], "dirty": manifest["dirty"], "upstream": manifest["upstream"]}}
    b["chain"] = chain
    # level 3: the plugin's library and the closed-source one it calls are mapped (the loader map's roles
    # are its own; the bundle's objects name the plugin's)
    loader_map = g.artifact("loader-map", {"schema": "dkb.loader-map/v1", "objects": [
        mapped(*o) for o in OBJECTS + [(PLUGIN_LIB[0], "other", PLUGIN_LIB[1]), (BINARY_LIB[0], "other", BINARY_LIB[1])] +
        OTHER_OBJECTS]})
    plugin_manifest = g.artifact("plugin-manifest", manifest)
    plugin_report = g.artifact("plugin-build-report", {
        "schema": "dkb.build-report/v1", "dkb_version": "plugin", "commit": COMMIT, "dirty": False, "build_host": "synthetic",
        "compilers": {"plugin": {"command": "nvcc", "path": "/usr/local/cuda-13.0/bin/nvcc",
                                 "version": "Cuda compilation tools, release 13.0, V13.0.88"}},
        "flags": "-O3 -std=c++17 -shared -Xcompiler -fPIC", "upstream": UPSTREAM})
    lib = obj(PLUGIN_LIB[0], "plugin", PLUGIN_LIB[1])
    ld = b["loaded"]
    ld["loader_map"] = ref(loader_map)
    ld["objects"].append(lib)
    del ld["kernel_binaries"]  # dkb reads the binary versions of its own kernels only
    ld["plugin"] = {"path": lib["path"], "sha256": lib["sha256"], "bytes": lib["bytes"], "name": "synth", "version": "1.0.0",
                    "abi_version": 1, "source_manifest": ref(plugin_manifest), "build_report": ref(plugin_report)}
    # level 4: forced to the plugin's backend; its plan document is its own
    d = b["dispatch"]
    d["call_key"]["backend_request"] = d["request"] = d["selected"] = PLUGIN_BACKEND
    d["candidates"].append({"backend": PLUGIN_BACKEND, "priority": 70, "in_domain": True, "eligible": True, "reasons": []})
    chunks = [1, 2, 4]  # 256-token chunks of the 9, 257 and 1000 keys
    pages = sum(-(-n // 16) for n in d["call_key"]["S_k_per_request"])
    workspaces = [{"name": "synth_int_workspace", "bytes": 8192, "kind": "persistent"},
                  {"name": "synth_float_workspace", "bytes": sum(chunks) * d["call_key"]["H_q"] * (d["call_key"]["d_v"] + 1) * 4,
                   "kind": "scratch"},
                  {"name": "synth_page_table", "bytes": (pages + 4) * 4, "kind": "persistent"}]
    d["backend"] = {"name": PLUGIN_BACKEND, "version": "1.0.0", "source": "plugin", "work_items": sum(chunks),
                    "workspaces": workspaces,
                    "kernels": [{"name": "synth::SplitDecodeKernel", "role": "producer", "match": "function", "required": True},
                                {"name": "synth::MergeStatesKernel", "role": "combine", "match": "function", "required": False}],
                    "conventions": {"lse_base": "base2", "empty_row": "zero_neginf"}, "launch_flags": [],
                    "plugin": {"name": "synth", "version": "1.0.0", "sha256": lib["sha256"], "abi_version": 1}}
    d["required_kernels"] = required_of(d["backend"])
    d["split_count"] = max(chunks)
    d["workspace_bytes"] = launched_bytes(workspaces)
    d["plan"] = {"backend": PLUGIN_BACKEND, "synth_attention": UPSTREAM["version"], "split_kv": True, "work_items": sum(chunks),
                 "kv_chunk_size_tokens": 256, "chunks_per_request": chunks, "grid": [sum(chunks), 8, 1]}
    d["plan_key"].update(backend=PLUGIN_BACKEND, split_count=d["split_count"], workspace_bytes=d["workspace_bytes"])
    diag = g.artifact("admission", admission_of(b))
    d["diagnostic"] = ref(diag)
    # levels 5 and 6: the plugin's kernels ran; its base-2 LSE was converted before the comparison
    b["execution"]["kernels"] = copy.deepcopy(P_KERNELS)
    rows = d["call_key"]["B"] * d["call_key"]["S_q"] * d["call_key"]["H_q"]
    b["measurement"]["correctness"]["conversion"] = {"lse_base": "base2", "empty_row": "zero_neginf", "lse_rows_rescaled": rows,
                                                     "empty_rows_replaced": 0, "rule": CONVERSION_RULE}
    # the artifacts in the order dkb writes them: admission, trace, then the loaded closure
    b["artifacts"] = [diag, arts["trace"], loader_map, arts["build_report"], plugin_manifest, plugin_report]
    refresh(b, g)
    return b


def plugin_requirements(g, base, pbase):
    """One fixture per reason id of a backend's bundle: the plugin's level-6 bundle (or dkb's) with exactly
    that requirement broken."""
    R = []  # (name, bundle it mutates, mutate, computed, findings, description)

    def req(name, computed, findings, description, of=pbase):
        def deco(f):
            R.append((name, of, f, computed, findings + over(computed), description))
            return f
        return deco

    up = next(i for i, f in enumerate(pbase["source"]["files"]) if f["path"] == UP_HEADER)
    adapter = next(i for i, f in enumerate(pbase["source"]["files"]) if f["path"] == ADAPTER[0])

    # level 1
    @req("source_file_record_mismatch", 0, [(1, "source_file_record_mismatch", f"/source/files/{up}/record_sha256")],
         "the upstream header is not the one its package's RECORD lists")
    def _(b):
        b["source"]["files"][up]["record_sha256"] = sha256(b"the RECORD entry of another synth-attention release")

    # level 3
    @req("source_binary_not_loaded", 2, [(3, "source_binary_not_loaded", f"/source/files/{len(pbase['source']['files'])}")],
         "a binary node (the plugin's planner calls a closed-source library, as cuDNN's engines): the source lists "
         "another build of libsynth_rt.so.2 than the one the loader map holds")
    def _(b):
        b["source"]["files"].append({"path": BINARY_NODE["path"], "root": "binary", "sha256": sha256(b"another build of libsynth_rt.so.2"),
                                     "symbols": [{"name": BINARY_NODE["symbol"], "role": "binary"}]})
        b["chain"]["nodes"].append(dict(BINARY_NODE))
        b["chain"]["edges"].append(["synth_plan", BINARY_NODE["id"]])

    @req("plugin_missing", 2, [(3, "plugin_missing", "/loaded/plugin")], "a plugin's backend ran, and /loaded/plugin is absent")
    def _(b):
        del b["loaded"]["plugin"]

    @req("plugin_not_in_loader_map", 2, [(3, "plugin_not_in_loader_map", "/loaded/plugin")],
         "the plugin record names the library by a path the loader did not map (a link, not its real path)")
    def _(b):
        b["loaded"]["plugin"]["path"] = "/opt/dkb/plugins/libdkb_synth.so"

    @req("plugin_manifest_mismatch", 2, [(3, "plugin_manifest_mismatch", "/source/plugin/upstream")],
         "the bundle names upstream version 0.4.3, the plugin's manifest 0.4.2")
    def _(b):
        b["source"]["plugin"]["upstream"]["version"] = "0.4.3"

    @req("plugin_manifest_mismatch.file", 2, [(3, "plugin_manifest_mismatch", "/source/files")],
         "the bundle's adapter.cu is not the one the plugin's manifest hashed when it was built")
    def _(b):
        b["source"]["files"][adapter]["sha256"] = sha256(b"adapter.cu edited after the plugin was built")

    other_report = g.artifact("plugin-build-report-other", {
        "schema": "dkb.build-report/v1", "dkb_version": "plugin", "commit": COMMIT, "dirty": False,
        "upstream": dict(UPSTREAM, version="0.4.1", archive="synth_attention-0.4.1-py3-none-any.whl")})

    @req("plugin_build_report_mismatch", 2, [(3, "plugin_build_report_mismatch", "/loaded/plugin/build_report")],
         "the plugin was built against upstream 0.4.1, its manifest names 0.4.2")
    def _(b):
        replace_artifact(b, b["loaded"]["plugin"]["build_report"]["artifact"], other_report)
        b["loaded"]["plugin"]["build_report"] = ref(other_report)

    # level 4
    @req("backend_missing", 3, [(4, "backend_missing", "/dispatch/backend")],
         "a selected backend the bundle has no record of: no source, workspaces, kernels or conventions")
    def _(b):
        del b["dispatch"]["backend"]

    @req("backend_contradicts_dispatch", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/name")],
         "the backend record is another backend's than the selected one")
    def _(b):
        b["dispatch"]["backend"]["name"] = "synth_split_kv_tc"

    @req("backend_contradicts_dispatch.workspaces", 3, [(4, "backend_contradicts_dispatch", "/dispatch/workspace_bytes")],
         "the backend's scratch workspace is 4096 bytes larger than workspace_bytes")
    def _(b):
        b["dispatch"]["backend"]["workspaces"][1]["bytes"] += 4096

    @req("backend_contradicts_dispatch.required_kernels", 3, [(4, "backend_contradicts_dispatch", "/dispatch/required_kernels")],
         "the dispatch record requires another kernel than the one the backend declares required")
    def _(b):
        b["dispatch"]["required_kernels"] = ["synth::SplitDecodeKernelV2"]

    @req("backend_contradicts_dispatch.plugin", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/plugin/sha256")],
         "the backend's plugin record names another library than the loaded one")
    def _(b):
        b["dispatch"]["backend"]["plugin"]["sha256"] = sha256(b"another build of libdkb_synth.so")

    @req("backend_contradicts_dispatch.source", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/source")],
         "a backend that says it is dkb's own (builtin) and carries a plugin record")
    def _(b):
        b["dispatch"]["backend"]["source"] = "builtin"

    # level 5
    @req("kernel_not_declared", 4, [(5, "kernel_not_declared", "/execution/kernels/2")],
         "a third kernel ran in the call's range, one the backend's plan does not declare")
    def _(b):
        b["execution"]["kernels"].append({"symbol": "_ZN5synth14ZeroFillKernelEPfi", "demangled": "void synth::ZeroFillKernel(float*, int)",
                                          "launches": 1, "grid": [64, 1, 1], "block": [256, 1, 1], "registers": 16, "shared_bytes": 0})
        retrace(g, b)

    @req("required_kernel_not_observed.function", 4, [(5, "required_kernel_not_observed", "/dispatch/backend/kernels/2")],
         "the plan declares and requires a third kernel by function name, synth::FinalizeKernel, which did not run")
    def _(b):
        d = b["dispatch"]
        d["backend"]["kernels"].append({"name": "synth::FinalizeKernel", "role": "other", "match": "function", "required": True})
        d["required_kernels"] = required_of(d["backend"])

    @req("combine_kernel_not_observed.plugin", 4, NO_MERGE,
         "a split plugin plan (4 chunks) whose declared merge, synth::MergeStatesKernel, did not run")
    def _(b):
        b["execution"]["kernels"].pop(1)
        retrace(g, b)

    # level 6
    @req("conversion_missing", 5, [(6, "conversion_missing", "/measurement/correctness/conversion")],
         "a base-2 LSE compared with no record of its conversion")
    def _(b):
        del b["measurement"]["correctness"]["conversion"]

    @req("conversion_contradicts_conventions", 5, [(6, "conversion_contradicts_conventions", "/measurement/correctness/conversion")],
         "the recorded conversion is from a natural LSE, the backend declares base 2")
    def _(b):
        b["measurement"]["correctness"]["conversion"]["lse_base"] = "natural"

    @req("conversion_contradicts_conventions.builtin", 5,
         [(6, "conversion_contradicts_conventions", "/measurement/correctness/conversion")],
         "dkb's own backend (natural LSE, zero / -inf empty rows) with a conversion recorded: nothing to convert", of=base)
    def _(b):
        b["measurement"]["correctness"]["conversion"] = {"lse_base": "natural", "empty_row": "zero_neginf", "lse_rows_rescaled": 0,
                                                         "empty_rows_replaced": 0, "rule": CONVERSION_RULE}

    for name, of, mutate, computed, findings, description in R:
        b = copy.deepcopy(of)
        mutate(b)
        g.write(f"requirement.{name}.bundle.json", b, computed, findings, description)


# --------------------------------------------------------------------------------------------------
# Documents that are not bundles.

def malformed(g, base):
    def text(b):
        return json.dumps(b, indent=2, sort_keys=True) + "\n"

    def case(name, mutate, error, description):
        b = copy.deepcopy(base)
        mutate(b)
        g.write_malformed(name, text(b), error, description)

    g.write_malformed("not-json.json", '{"schema": "dkb.bundle/v1",\n  "meta": }\n', "2:11: unexpected token near '}'", "not JSON")
    case("schema-v2.json", lambda b: b.update(schema="dkb.bundle/v2"), "/schema: must be 'dkb.bundle/v1' (got 'dkb.bundle/v2')", "another schema id")
    case("oracle-report.json", lambda b: b.clear() or b.update({"schema": "dkb.oracle-report/v1", "fixtures": []}),
         "/schema: must be 'dkb.bundle/v1' (got 'dkb.oracle-report/v1')", "another dkb document")
    case("unknown-key.json", lambda b: b.update(colour="blue"), "/colour: unknown key", "an unknown top-level key")
    case("claimed-level-string.json", lambda b: b.update(claimed_level="6"), "/claimed_level: must be an integer (got string)", "a wrong type")
    case("claimed-level-7.json", lambda b: b.update(claimed_level=7), "/claimed_level: must be <= 6 (got 7)", "a level the ladder does not have")
    case("sample-string.json", lambda b: b["measurement"]["timing"]["samples_us"].__setitem__(3, "12.5"),
         "/measurement/timing/samples_us/3: must be a number (got string)", "a raw sample written as text")
    case("meta-commit.json", lambda b: b["meta"].update(commit="main"),
         "/meta/commit: must be 40 lower-case hex digits (got 'main')", "meta is written by dkb: its commit is always 40 hex")
    case("artifact-name.json", lambda b: b["artifacts"][0].update(name="../loader-map.json"),
         "/artifacts/0/name: must be a plain file name of letters, digits, '.', '_' and '-' not starting with '.' (got '../loader-map.json')",
         "an artifact outside the bundle folder")
    case("device-unknown-key.json", lambda b: b["loaded"]["device"].update(clock_mhz=1980), "/loaded/device/clock_mhz: unknown key",
         "an unknown key inside a section")
    case("object-role.json", lambda b: b["loaded"]["objects"][2].update(role="driver"),
         "/loaded/objects/2/role: must be one of: dkb, cudart, cupti, cuda, nvperf, nvml, plugin, other (got 'driver')", "an unknown role")
    case("terminal.json", lambda b: b["status"].update(terminal="finished"),
         "/status/terminal: must be one of: complete, cuda_runtime_unavailable, no_gpu, profiler_unavailable, backend_rejected, "
         "no_eligible_backend, launch_failed, correctness_failed, internal_error, timing_unavailable, output_not_reproduced (got 'finished')", "an unknown terminal state")
    case("missing-meta.json", lambda b: b.pop("meta"), "/: missing required key 'meta'", "no meta")
    case("ledger-list.json", lambda b: b["ledgers"].update(unique_kv_bytes=[1, 2]),
         "/ledgers/unique_kv_bytes: must be an integer or a string (got array)", "a ledger that is not a byte count")
    case("plan-string.json", lambda b: b["dispatch"].update(plan="fixed"), "/dispatch/plan: must be an object (got string)",
         "a plan record that is not a record")
    case("lse-atol-string.json", lambda b: b["measurement"]["correctness"].update(lse_atol="2e-3"),
         "/measurement/correctness/lse_atol: must be a number (got string)", "a tolerance written as text")


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures", "bundles"))
    if os.path.exists(out):
        if not os.path.exists(os.path.join(out, "manifest.json")):
            sys.exit(f"{out}: exists and has no manifest.json; refusing to replace it")
        shutil.rmtree(out)
    os.makedirs(out)
    g = Gen(out)
    files = write_source_tree(out)
    base, arts = base_bundle(g, files)
    synthetic_levels(g, base)
    promotions(g, base)
    requirements(g, base, arts)
    plugin = plugin_bundle(g, base, files, arts)
    g.write("synthetic.level6.plugin.bundle.json", plugin, 6, [],
            "complete level-6 bundle of a plugin's backend: its library loaded and identified, its upstream files those "
            "of its package's RECORD, its declared kernels matched by function name, its base-2 LSE converted", "0x0BI")
    nondet = copy.deepcopy(plugin)
    declare_nondeterministic(nondet, True)
    g.write("synthetic.level6.plugin-nondeterministic.bundle.json", nondet, 6, [],
            "complete level-6 bundle of a plugin's backend that declares a nondeterministic reduction order: its repeat "
            "call's bits differ from the checked call's, its output is within the oracle's tolerance", "0x07G")
    plugin_requirements(g, base, plugin)
    malformed(g, base)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write(json.dumps({"schema": "dkb.bundle-fixtures/v1", "generator": "tools/gen-bundle-fixtures.py",
                            "source_root": "fixtures/bundles/source-tree", "fixtures": g.manifest},
                           indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
