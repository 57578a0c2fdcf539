/* ladder.c - grading a bundle on the six-level evidence ladder (see ladder.h).
 * One pass reads the whole bundle strictly (unknown keys and wrong types make it "not a bundle"),
 * checks each level's requirements independently and records every failure as a finding; L* is then
 * the level below the lowest failing one. Everything that can be recomputed is: canonical digests
 * (lib/cjson.h), artifact and source file hashes, timing summaries (oracles/stats.h). */
#include "evidence/ladder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/ladder_internal.h"

/* ---------------------------------------------------------------------------------------------- */
/* The catalogue of reason ids.                                                                    */

#define U LADDER_UNMET
#define I LADDER_INCONSISTENT
#define N LADDER_NOT_RECOMPUTABLE
const struct ladder_reason ladder_reasons[] = {
    /* level 0: the bundle as a whole */
    {"claimed_level_exceeds_computed", 0, I, "claimed_level is higher than the level the evidence proves"},
    {"status_contradicts_evidence", 0, I, "status.terminal contradicts the evidence (a stopping state with evidence beyond its ceiling, complete below level 6, or a dispatch/correctness result it does not report)"},
    {"status_reasons_missing", 0, U, "a terminal state other than complete lists no reason"},
    {"artifact_duplicate", 0, I, "two artifacts entries share a name"},
    /* artifacts: reported at the level of the section that references them (level 0 if none does) */
    {"artifact_not_listed", -1, U, "a reference names an artifact that is not in /artifacts"},
    {"artifact_sha256_invalid", -1, I, "an artifact sha256 is not 64 lower-case hex digits"},
    {"artifact_sha256_mismatch", -1, I, "a reference's sha256 differs from its /artifacts entry, or the file beside the bundle hashes differently"},
    {"artifact_file_missing", -1, U, "the artifact file is not beside the bundle"},
    {"artifact_bytes_mismatch", -1, I, "the artifact file's size differs from its /artifacts entry"},
    {"artifact_not_a_file", -1, I, "the artifact is a symbolic link: the bundle's folder must hold the bytes it hashes, not point to them"},
    /* level 1: source present */
    {"source_missing", 1, U, "no /source section"},
    {"source_commit_missing", 1, U, "no source commit"},
    {"source_commit_not_pinned", 1, I, "the source commit is not a full 40-hex commit (a branch, tag or short hash floats)"},
    {"source_dirty_missing", 1, U, "no source dirty flag"},
    {"source_differs_from_meta", 1, I, "the source commit or dirty flag differs from the dkb build that wrote the bundle (meta)"},
    {"source_files_missing", 1, U, "no source files listed"},
    {"source_file_path_invalid", 1, I, "a source path is not repository-relative (absolute, '..', empty component)"},
    {"source_file_duplicate", 1, I, "a source path is listed twice"},
    {"source_file_sha256_missing", 1, U, "a source file has no SHA-256"},
    {"source_file_sha256_invalid", 1, I, "a source file SHA-256 is not 64 lower-case hex digits"},
    {"source_symbols_missing", 1, U, "a source file names no symbol"},
    {"source_symbol_duplicate", 1, I, "a symbol is listed twice in one file"},
    {"source_symbol_role_missing", 1, U, "a symbol does not say what contract its span carries"},
    {"source_symbol_lines_missing", 1, U, "a symbol has no line span"},
    {"source_symbol_lines_invalid", 1, I, "a symbol span is not [first, last] with 1 <= first <= last"},
    {"source_file_unreadable", 1, U, "--source-root: the file cannot be read under the source root"},
    {"source_file_sha256_mismatch", 1, I, "--source-root: the file's SHA-256 differs from the recorded one"},
    {"source_file_record_mismatch", 1, I, "an upstream file's SHA-256 differs from the one its package's RECORD lists"},
    {"source_symbol_lines_outside_file", 1, I, "--source-root: a symbol span ends after the file's last line"},
    {"source_symbol_not_in_span", 1, I, "--source-root: the symbol's name does not occur inside its span"},
    /* level 2: chain closes */
    {"chain_missing", 2, U, "no /chain section"},
    {"chain_nodes_missing", 2, U, "the chain has no nodes"},
    {"chain_node_duplicate", 2, I, "two chain nodes share an id"},
    {"chain_node_unsourced", 2, U, "a chain node's path and symbol are not a level-1 source entry"},
    {"chain_edge_unknown_node", 2, I, "an edge names a node that does not exist"},
    {"chain_cycle", 2, I, "the chain has a cycle"},
    {"chain_required_layers_weakened", 2, I, "required_layers is absent or omits one of cmd, plan, admission, launch, producer, combine"},
    {"chain_layer_missing", 2, U, "a required layer has no node"},
    {"chain_node_unreachable", 2, I, "a node is not reachable from the cmd layer"},
    /* level 3: loaded binary */
    {"loaded_missing", 3, U, "no /loaded section"},
    {"loader_map_missing", 3, U, "no content-addressed loader map"},
    {"loader_map_unreadable", 3, I, "the loader map artifact is not a JSON object with an objects array of {path, sha256}"},
    {"loaded_objects_missing", 3, U, "no loaded objects listed"},
    {"loaded_object_path_not_absolute", 3, I, "a loaded object path is not an absolute real path"},
    {"loaded_object_duplicate", 3, I, "a loaded object path is listed twice"},
    {"loaded_object_sha256_missing", 3, U, "a loaded object has no SHA-256 (a path or version is not a binary identity)"},
    {"loaded_object_sha256_invalid", 3, I, "a loaded object SHA-256 is not 64 lower-case hex digits"},
    {"loaded_object_bytes_missing", 3, U, "a loaded object has no positive size"},
    {"loaded_object_not_in_loader_map", 3, I, "a loaded object (path, SHA-256 and, where the map records it, size) is not in the loader map artifact"},
    {"source_binary_not_loaded", 3, I, "a closed-source library the chain names (a binary node) is not in the loader map with the SHA-256 the source lists"},
    {"plugin_missing", 3, U, "the selected backend is a plugin's, and /loaded/plugin does not identify its library"},
    {"plugin_not_in_loader_map", 3, I, "the plugin library's path and SHA-256 are not in the loader map"},
    {"plugin_manifest_mismatch", 3, I, "the plugin's source manifest (an artifact) is missing, or disagrees with the bundle's source files or upstream package"},
    {"plugin_build_report_mismatch", 3, I, "the plugin's build report (an artifact) is missing, or names another upstream package, version or archive than its manifest"},
    {"loaded_executable_missing", 3, U, "the dkb executable (role dkb) is not among the loaded objects"},
    {"loaded_cudart_missing", 3, U, "the CUDA runtime library (role cudart) is not among the loaded objects"},
    {"loaded_driver_missing", 3, U, "the CUDA driver library (role cuda, libcuda.so.1) is not among the loaded objects"},
    {"build_report_missing", 3, U, "no content-addressed build report"},
    {"build_report_unreadable", 3, I, "the build report artifact is not a JSON object with a commit"},
    {"build_report_commit_mismatch", 3, I, "the build report's commit differs from the source commit"},
    {"device_missing", 3, U, "no GPU device coordinate (a host without CUDA proves nothing about a backend)"},
    {"device_field_missing", 3, U, "a device field is missing (name, compute_capability, sm_count, driver_version, runtime_version, pci_bus_id)"},
    {"device_field_invalid", 3, I, "a device field is not a usable CUDA coordinate (compute capability 'M.m', sm_count >= 1, non-zero driver and runtime)"},
    {"device_contradicts_admission", 3, I, "the device's compute capability is not the one the admission record (the dispatch diagnostic artifact) was computed for"},
    {"device_not_recomputable", 3, N, "not recomputable offline: the device's name, sm_count, pci_bus_id, driver_version and runtime_version are in no artifact the bundle hashes (its compute capability is: device_contradicts_admission); their form is checked, their values are the run's word"},
    {"kernel_binaries_not_recomputable", 3, N, "not recomputable offline: /loaded/kernel_binaries (binary and PTX versions the runtime reported) are in no artifact the bundle hashes"},
    /* level 4: dispatch observed */
    {"dispatch_missing", 4, U, "no /dispatch section"},
    {"call_key_missing", 4, U, "no readable call key"},
    {"call_key_field_missing", 4, U, "the call key lacks a required field (article 0x0BE)"},
    {"call_key_inconsistent", 4, I, "the call key contradicts itself (S_k_per_request length != B, H_q not a multiple of H_kv)"},
    {"call_key_sha256_missing", 4, U, "no call-key digest"},
    {"call_key_sha256_mismatch", 4, I, "the call-key digest does not recompute from the readable key"},
    {"diagnostic_missing", 4, U, "no content-addressed dispatch diagnostic"},
    {"diagnostic_unreadable", 4, I, "the dispatch diagnostic artifact is not a dkb.admission/v1 record with its key, candidates, request, outcome and selection"},
    {"dispatch_contradicts_diagnostic", 4, I, "the request, candidates (backend, priority, domain, eligibility, reasons), outcome or selected backend differs from the admission record"},
    {"request_missing", 4, U, "no backend request (auto or a backend name)"},
    {"outcome_missing", 4, U, "no dispatch outcome"},
    {"candidates_missing", 4, U, "no candidate list"},
    {"candidate_duplicate", 4, I, "a backend is listed twice among the candidates"},
    {"candidate_reasons_inconsistent", 4, I, "a candidate's eligibility and reasons disagree (ineligible without a reason, eligible with reasons, eligible outside the domain)"},
    {"forced_request_not_candidate", 4, I, "a forced request names a backend that is not a candidate"},
    {"selected_missing", 4, U, "outcome is selected but no backend is named"},
    {"selected_not_eligible", 4, I, "the selected backend is not an eligible in-domain candidate"},
    {"forced_request_fell_back", 4, I, "a forced request selected another backend (a forced request fails closed)"},
    {"auto_selection_not_first_eligible", 4, I, "auto selected a backend other than the first eligible in-domain candidate by priority"},
    {"outcome_contradicts_candidates", 4, I, "the outcome contradicts the request and the candidates' eligibility"},
    {"split_count_missing", 4, U, "a selected backend without a split count"},
    {"workspace_bytes_missing", 4, U, "a selected backend without workspace bytes"},
    {"workspace_inconsistent", 4, I, "more than one split with no partial-state workspace and no fused producer+combine kernel declared"},
    {"plan_key_missing", 4, U, "a selected backend without a readable plan key"},
    {"plan_key_sha256_missing", 4, U, "no plan-key digest"},
    {"plan_key_sha256_mismatch", 4, I, "the plan-key digest does not recompute from the readable key"},
    {"plan_key_contradicts_call_key", 4, I, "a plan-key field differs from the same call-key field (stale plan)"},
    {"plan_key_contradicts_dispatch", 4, I, "the plan key's backend, split_count or workspace_bytes differs from the dispatch record"},
    {"required_kernels_missing", 4, U, "a selected backend without the list of kernels its plan launches"},
    {"backend_missing", 4, U, "a selected, planned backend without /dispatch/backend: its source, workspaces and kinds, declared kernels and conventions"},
    {"backend_contradicts_dispatch", 4, I, "/dispatch/backend disagrees with the dispatch record: another name, a plugin record that is not the loaded library, workspaces that do not sum to workspace_bytes, or required kernels other than the declared ones"},
    {"dispatch_contradicts_plan", 4, I, "split_count or workspace_bytes is not the plan record's (/dispatch/plan: max_slots_per_request and workspace_bytes; 1 and 0 when the plan's combine is none)"},
    {"plan_not_recomputable", 4, N, "not recomputable offline: the plan record (/dispatch/plan: items, slots per request, visible keys, its workspace bytes) is the planner's output for the run's device; the dispatch record and the ledgers are checked against it"},
    {"ledgers_missing", 4, U, "no /ledgers: dkb writes the logical ledgers of every call it plans (unique K/V, visible K/V, Q/O, workspace round trip)"},
    {"ledgers_mismatch", 4, I, "a ledger does not recompute: unique_kv_bytes and q_o_bytes from /dispatch/call_key, visible_kv_bytes and workspace_round_trip_bytes from /dispatch/plan"},
    {"fixture_unreadable", 4, U, "--source-root: the fixture file /fixture/path cannot be read under the source root"},
    {"fixture_sha256_mismatch", 4, I, "--source-root: the fixture file's SHA-256 differs from /fixture/sha256"},
    {"fixture_not_recomputable", 4, N, "not recomputable offline: /fixture/sha256 names the fixture file, which the bundle does not embed; --source-root re-hashes it (fixture_sha256_mismatch)"},
    /* level 5: execution observed */
    {"execution_missing", 5, U, "no /execution section"},
    {"no_backend_selected", 5, U, "the dispatch selected no backend, so no kernel of it can have executed"},
    {"trace_missing", 5, U, "no content-addressed profiler trace"},
    {"nvtx_range_missing", 5, U, "no NVTX range name for the call"},
    {"external_correlation_missing", 5, U, "no external correlation id joining kernels to the call"},
    {"trace_dropped_records", 5, I, "the profiler dropped records (or did not say), so launch counts may be incomplete"},
    {"trace_unreadable", 5, I, "the trace artifact is not dkb.trace-records/v1 JSON lines opening with its meta record"},
    {"trace_contradicts_execution", 5, I, "nvtx_range, external_correlation_id, dropped_records or the profiler version differs from the trace artifact's meta record"},
    {"nvtx_range_contradicts_call_key", 5, I, "the NVTX range is not dkb/call/<call_key_sha256>: the trace observed another call"},
    {"profiler_missing", 5, U, "no profiler name and version"},
    {"profiler_library_not_loaded", 5, I, "no CUPTI library (role cupti) among the loaded objects"},
    {"kernels_missing", 5, U, "no kernel records"},
    {"kernel_launches_missing", 5, U, "a kernel record has no launch count"},
    {"kernel_launches_not_positive", 5, I, "a kernel record has zero launches"},
    {"kernel_geometry_invalid", 5, U, "a kernel record lacks a positive grid and block"},
    {"required_kernel_not_observed", 5, U, "a kernel the selected plan requires was not observed with launches > 0"},
    {"kernel_not_declared", 5, I, "a kernel launched in the call's range that the backend's plan did not declare"},
    {"producer_kernel_not_observed", 5, U, "no launched kernel is the chain's producer"},
    {"combine_kernel_not_observed", 5, U, "split_count > 1 but no launched kernel is the chain's combine kernel or a fused producer+combine kernel"},
    {"kernel_record_contradicts_trace", 5, I, "a kernel record (demangled name, launches in the range, grid, block, registers, shared bytes) is not what the trace artifact records for its symbol, or a kernel the trace saw launched in the range has no record"},
    /* level 6: measured */
    {"measurement_missing", 6, U, "no /measurement section"},
    {"correctness_missing", 6, U, "no correctness comparison"},
    {"correctness_reference_missing", 6, U, "no reference named"},
    {"correctness_tolerance_missing", 6, U, "atol or rtol not recorded"},
    {"correctness_tolerance_not_frozen", 6, I, "atol or rtol (lse_atol, lse_rtol when both record them) differs from the tolerances frozen in the call key (call_key.tolerances)"},
    {"correctness_result_missing", 6, U, "no pass/fail result"},
    {"correctness_failed", 6, U, "correctness did not pass: no timing counts as a measurement"},
    {"conversion_missing", 6, U, "a backend that writes another LSE base or empty-row value than dkb's, with no record of the conversion its outputs were compared after"},
    {"conversion_contradicts_conventions", 6, I, "the recorded conversion is not the one the backend's declared conventions call for"},
    {"correctness_output_missing", 6, U, "no output comparison"},
    {"correctness_output_empty", 6, I, "the output comparison compared no element"},
    {"correctness_lse_missing", 6, U, "no LSE comparison (or \"not_applicable\")"},
    {"correctness_cache_missing", 6, U, "no cache-state comparison (or \"not_applicable\")"},
    {"correctness_cache_required", 6, U, "the call mutates the cache (phase append, prefill or mixed) but the cache state was not compared"},
    {"correctness_passed_with_violations", 6, I, "passed is true but a comparison counts violations, NaN or Inf"},
    {"correctness_ratio_beyond_tolerance", 6, I, "a comparison without violations reports max_ratio > 1: an element beyond its tolerance"},
    {"timing_missing", 6, U, "no timing pass"},
    {"timing_under_tracing", 6, I, "the timing pass ran under tracing (or does not say it did not)"},
    {"timing_method_missing", 6, U, "no synchronization/timing method"},
    {"timing_warmup_missing", 6, U, "no warm-up (missing or zero)"},
    {"timing_samples_missing", 6, U, "no raw samples (a summary alone is not a measurement)"},
    {"timing_too_few_samples", 6, U, "fewer than 20 raw samples"},
    {"timing_sample_not_positive", 6, I, "a raw sample is zero or negative"},
    {"timing_summary_missing", 6, U, "no summary of the raw samples"},
    {"timing_summary_mismatch", 6, I, "a summary statistic, or the repeat check's after_samples, does not recompute from the raw samples"},
    {"timing_stop_rule_missing", 6, U, "no stop rule"},
    {"timing_stop_rule_violated", 6, I, "the sample count or spread contradicts the stated stop rule"},
    {"timing_output_not_reproduced", 6, U, "after the timed calls, one more call on poisoned outputs did not reproduce the checked output: bit for bit, or within the oracle's tolerance where the backend declares a nondeterministic reduction order"},
    {"repeat_contract_contradicts_backend", 6, I, "the repeat check's contract is not the backend's: tolerance exactly when its record declares a nondeterministic reduction order (launch flag nondeterministic), bitwise otherwise"},
    {"repeat_difference_contradicts", 6, I, "the repeat check records how the repeat call's output differs, but says it was reproduced bit for bit"},
    {"counter_definition_incomplete", 6, U, "a counter lacks unit, numerator, denominator or scope"},
    {NULL, 0, U, NULL},
};
#undef U
#undef I
#undef N

const char *ladder_kind_name(enum ladder_kind k) {
  return k == LADDER_UNMET ? "unmet" : k == LADDER_INCONSISTENT ? "inconsistent" : "not_recomputable";
}

const struct ladder_reason *ladder_reason_find(const char *id) {
  for (const struct ladder_reason *r = ladder_reasons; r->id; r++)
    if (!strcmp(r->id, id)) return r;
  return NULL;
}

const char *const ladder_required_layers[] = {"cmd", "plan", "admission", "launch", "producer", "combine", NULL};

const char *const lad_terminals[] = {"complete", "cuda_runtime_unavailable", "no_gpu", "profiler_unavailable",
                                        "backend_rejected", "no_eligible_backend", "launch_failed",
                                        "correctness_failed", "internal_error", "timing_unavailable",
                                        "output_not_reproduced", NULL};
/* timing_unavailable: a backend whose launch synchronizes cannot be timed behind a held stream;
 * output_not_reproduced: the checked output passed, the call after the timed ones wrote another */
static const int TERMINAL_CEILING[] = {6, 2, 2, 4, 4, 4, 4, 5, 6, 5, 5};
/* What `dkb run` and `dkb bench` end with (-1: launch_failed, whose error decides). A level the machine
 * capped (no GPU, no CUPTI, no eligible backend) ends with 0: --require-level judges levels. */
static const int TERMINAL_EXIT[] = {DKB_OK, DKB_OK, DKB_OK, DKB_OK, DKB_OK, DKB_OK, -1, DKB_FAIL, DKB_INTERNAL, DKB_OK, DKB_FAIL};
_Static_assert(sizeof TERMINAL_CEILING == sizeof TERMINAL_EXIT && sizeof TERMINAL_EXIT / sizeof(int) + 1 == sizeof lad_terminals / sizeof *lad_terminals,
               "one ceiling and one exit code per terminal");

int ladder_terminal_ceiling(const char *terminal) {
  for (int i = 0; lad_terminals[i]; i++)
    if (!strcmp(lad_terminals[i], terminal)) return TERMINAL_CEILING[i];
  return -1;
}

int ladder_terminal_exit_code(const char *terminal, int launch_code) {
  for (int i = 0; lad_terminals[i]; i++)
    if (!strcmp(lad_terminals[i], terminal)) return TERMINAL_EXIT[i] >= 0 ? TERMINAL_EXIT[i] : launch_code == DKB_OK ? DKB_FAIL : launch_code;
  return DKB_INTERNAL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Results.                                                                                         */

void ladder_result_init(struct ladder_result *res) { memset(res, 0, sizeof *res); }

void ladder_result_release(struct ladder_result *res) {
  free(res->findings);
  memset(res, 0, sizeof *res);
}

int ladder_result_honest(const struct ladder_result *res) {
  if (res->claimed > res->computed) return 0;
  for (size_t i = 0; i < res->n; i++)
    if (res->findings[i].level == 0) return 0;
  return 1;
}

json_t *ladder_result_to_json(const struct ladder_result *res) {
  json_t *f = json_array();
  for (size_t i = 0; i < res->n; i++) {
    const struct ladder_finding *x = &res->findings[i];
    json_array_append_new(f, json_pack("{s:i,s:s,s:s,s:s,s:s}", "level", x->level, "kind", ladder_kind_name(x->kind), "reason", x->reason,
                                       "pointer", x->pointer, "detail", x->detail));
  }
  return json_pack("{s:i,s:i,s:b,s:s,s:o}", "computed_level", res->computed, "claimed_level", res->claimed,
                   "synthetic", res->synthetic, "terminal", res->terminal, "findings", f);
}
/* ---------------------------------------------------------------------------------------------- */
/* Level 0 and the grade.                                                                           */

static void level0_status(struct lctx *c, const json_t *status) {
  const char *t = c->res->terminal;
  int L = c->res->computed, ceiling = ladder_terminal_ceiling(t);
  const json_t *passed = jr_resolve(c->b, "/measurement/correctness/passed");
  /* A launch that failed after a passed check (the timing pass, or the repeat call after it: dkb run on
   * the H200 with an I/O call failing inside libcuda) leaves the checked call's level 5 standing. */
  if (!strcmp(t, "launch_failed") && json_is_true(passed)) ceiling = 5;
  if (ceiling >= 0 && L > ceiling)
    lad_finding(c, "status_contradicts_evidence", "/status/terminal", "terminal state %s stops at level %d, the evidence proves level %d", t, ceiling, L);
  if (!strcmp(t, "complete") && L < LADDER_MAX_LEVEL)
    lad_finding(c, "status_contradicts_evidence", "/status/terminal", "terminal state complete, but the evidence proves only level %d", L);
  const char *want = !strcmp(t, "backend_rejected") ? "rejected" : !strcmp(t, "no_eligible_backend") ? "no_eligible" : NULL;
  if (want && c->outcome && strcmp(c->outcome, want))
    lad_finding(c, "status_contradicts_evidence", "/status/terminal", "terminal state %s, but the dispatch outcome is %s", t, c->outcome);
  if (!strcmp(t, "correctness_failed") && json_is_true(passed))
    lad_finding(c, "status_contradicts_evidence", "/status/terminal", "terminal state correctness_failed, but correctness passed");
  const json_t *same = jr_resolve(c->b, "/measurement/timing/repeat_check/output_bitwise_equal");
  if (!strcmp(t, "output_not_reproduced") && !json_is_false(same))
    lad_finding(c, "status_contradicts_evidence", "/status/terminal", "terminal state output_not_reproduced, but no repeat check that differs");
  if (strcmp(t, "complete") && !json_array_size(json_object_get(status, "reasons")))
    lad_finding(c, "status_reasons_missing", "/status/reasons", "terminal state %s without a reason", t);
  if (c->res->claimed > L)
    lad_finding(c, "claimed_level_exceeds_computed", "/claimed_level", "claims level %d, the evidence proves level %d", c->res->claimed, L);
  for (size_t i = 0; i < c->narts; i++)
    if (!c->arts[i].referenced && c->arts[i].reason) lad_finding(c, c->arts[i].reason, c->arts[i].pointer, "%s", c->arts[i].detail);
}

/* Levels 1..6, then the bundle-wide level 0. */
static int sort_key(int level) { return level == 0 ? LADDER_MAX_LEVEL + 1 : level; }

/* Stable insertion sort by sort_key: findings of one level keep the order they were found in. */
static void sort_by_level(struct ladder_finding *f, size_t n) {
  for (size_t i = 1; i < n; i++) {
    struct ladder_finding x = f[i];
    size_t j = i;
    while (j > 0 && sort_key(f[j - 1].level) > sort_key(x.level)) { f[j] = f[j - 1]; j--; }
    f[j] = x;
  }
}

/* Each level's checks, in order; each records its findings independently of the others. */
static void (*const LEVELS[LADDER_MAX_LEVEL + 1])(struct lctx *) = {
    NULL, lad_level1_source, lad_level2_chain, lad_level3_loaded, lad_level4_dispatch, lad_level5_execution,
    lad_level6_measurement};

int ladder_evaluate(const json_t *bundle, const char *file, const struct ladder_opts *opts,
                    struct ladder_result *res, struct dkb_err *err) {
  static const struct ladder_opts none = {NULL, NULL};
  struct lctx c;
  memset(&c, 0, sizeof c);
  c.r.file = file;
  c.r.err = err;
  c.r.code = DKB_INPUT;
  c.res = res;
  c.o = opts ? opts : &none;
  c.b = bundle;
  res->n = 0;
  lad_read_header(&c);
  const json_t *status = lad_read_status(&c);
  lad_read_artifacts(&c);
  for (c.level = 1; c.level <= LADDER_MAX_LEVEL; c.level++) LEVELS[c.level](&c);
  if (!c.bad) {
    int lowest = LADDER_MAX_LEVEL + 1;
    for (size_t i = 0; i < res->n; i++)
      if (res->findings[i].level >= 1 && res->findings[i].level < lowest) lowest = res->findings[i].level;
    res->computed = lowest - 1;
    c.level = 0;
    level0_status(&c, status);
    sort_by_level(res->findings, res->n);
  }
  free(c.arts);
  return c.bad ? -1 : 0;
}

