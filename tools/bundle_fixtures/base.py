"""The complete level-6 bundle every fixture starts from, and the helpers that keep a mutated bundle's
derived fields (ledgers, trace, admission, digests) consistent."""
import copy
import json
import os
import random

from .gen import COMMIT, FIXTURE_PATH, dkb_digest, sha256, stats


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
