"""Requirement fixtures of levels 5-6: the execution trace, correctness and timing."""
from .gen import sha256, stats
from .base import (NO_MERGE, PRODUCER, REPEAT_DIFFERENCE, declare_nondeterministic, readmit, ref, refresh, required_of,
                   retrace)


def register(req, g, base, arts):
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
