"""Requirement fixtures of level 4: the dispatch record, admission and plan."""
import copy

from .gen import SOURCE_ROOT_OPT
from .base import launched_bytes, readmit, ref, refresh, set_workspace_bytes


def register(req, g, base, arts):
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
