"""Complete bundles of levels 2-6, and the invalid promotions of article 0x0BI (and two of 0x0AI / 0x0AC)."""
import copy

from .base import ABOVE, FUSED_KERNEL, NO_MERGE, OBJECTS, fused_bundle, over, readmit, required_of, retrace, trim


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
