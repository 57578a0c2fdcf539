/* ladder.c - grading a bundle on the six-level evidence ladder (see ladder.h).
 * One pass reads the whole bundle strictly (unknown keys and wrong types make it "not a bundle"),
 * checks each level's requirements independently and records every failure as a finding; L* is then
 * the level below the lowest failing one. Everything that can be recomputed is: canonical digests
 * (lib/cjson.h), artifact and source file hashes, timing summaries (oracles/stats.h). */
#include "evidence/ladder.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/buf.h"
#include "lib/cjson.h"
#include "lib/sha256.h"
#include "oracles/stats.h"

/* ---------------------------------------------------------------------------------------------- */
/* The catalogue of reason ids.                                                                    */

#define U LADDER_UNMET
#define I LADDER_INCONSISTENT
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
    {"loaded_object_not_in_loader_map", 3, I, "a loaded object (path and SHA-256) is not in the loader map artifact"},
    {"loaded_executable_missing", 3, U, "the dkb executable (role dkb) is not among the loaded objects"},
    {"loaded_cudart_missing", 3, U, "the CUDA runtime library (role cudart) is not among the loaded objects"},
    {"loaded_driver_missing", 3, U, "the CUDA driver library (role cuda, libcuda.so.1) is not among the loaded objects"},
    {"build_report_missing", 3, U, "no content-addressed build report"},
    {"build_report_unreadable", 3, I, "the build report artifact is not a JSON object with a commit"},
    {"build_report_commit_mismatch", 3, I, "the build report's commit differs from the source commit"},
    {"device_missing", 3, U, "no GPU device coordinate (a host without CUDA proves nothing about a backend)"},
    {"device_field_missing", 3, U, "a device field is missing (name, compute_capability, sm_count, driver_version, runtime_version, pci_bus_id)"},
    {"device_field_invalid", 3, I, "a device field is not a usable CUDA coordinate (compute capability 'M.m', sm_count >= 1, non-zero driver and runtime)"},
    /* level 4: dispatch observed */
    {"dispatch_missing", 4, U, "no /dispatch section"},
    {"call_key_missing", 4, U, "no readable call key"},
    {"call_key_field_missing", 4, U, "the call key lacks a required field (article 0x0BE)"},
    {"call_key_inconsistent", 4, I, "the call key contradicts itself (S_k_per_request length != B, H_q not a multiple of H_kv)"},
    {"call_key_sha256_missing", 4, U, "no call-key digest"},
    {"call_key_sha256_mismatch", 4, I, "the call-key digest does not recompute from the readable key"},
    {"diagnostic_missing", 4, U, "no content-addressed dispatch diagnostic"},
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
    {"workspace_inconsistent", 4, I, "more than one split with an empty workspace"},
    {"plan_key_missing", 4, U, "a selected backend without a readable plan key"},
    {"plan_key_sha256_missing", 4, U, "no plan-key digest"},
    {"plan_key_sha256_mismatch", 4, I, "the plan-key digest does not recompute from the readable key"},
    {"plan_key_contradicts_call_key", 4, I, "a plan-key field differs from the same call-key field (stale plan)"},
    {"plan_key_contradicts_dispatch", 4, I, "the plan key's backend, split_count or workspace_bytes differs from the dispatch record"},
    {"required_kernels_missing", 4, U, "a selected backend without the list of kernels its plan launches"},
    /* level 5: execution observed */
    {"execution_missing", 5, U, "no /execution section"},
    {"no_backend_selected", 5, U, "the dispatch selected no backend, so no kernel of it can have executed"},
    {"trace_missing", 5, U, "no content-addressed profiler trace"},
    {"nvtx_range_missing", 5, U, "no NVTX range name for the call"},
    {"external_correlation_missing", 5, U, "no external correlation id joining kernels to the call"},
    {"trace_dropped_records", 5, I, "the profiler dropped records (or did not say), so launch counts may be incomplete"},
    {"profiler_missing", 5, U, "no profiler name and version"},
    {"profiler_library_not_loaded", 5, I, "no CUPTI library (role cupti) among the loaded objects"},
    {"kernels_missing", 5, U, "no kernel records"},
    {"kernel_launches_missing", 5, U, "a kernel record has no launch count"},
    {"kernel_launches_not_positive", 5, I, "a kernel record has zero launches"},
    {"kernel_geometry_invalid", 5, U, "a kernel record lacks a positive grid and block"},
    {"required_kernel_not_observed", 5, U, "a kernel the selected plan requires was not observed with launches > 0"},
    {"producer_kernel_not_observed", 5, U, "no launched kernel is the chain's producer"},
    {"combine_kernel_not_observed", 5, U, "split_count > 1 but no launched kernel is the chain's combine kernel or a fused producer+combine kernel"},
    /* level 6: measured */
    {"measurement_missing", 6, U, "no /measurement section"},
    {"correctness_missing", 6, U, "no correctness comparison"},
    {"correctness_reference_missing", 6, U, "no reference named"},
    {"correctness_tolerance_missing", 6, U, "atol or rtol not recorded"},
    {"correctness_tolerance_not_frozen", 6, I, "atol or rtol differs from the tolerances frozen in the call key (call_key.tolerances)"},
    {"correctness_result_missing", 6, U, "no pass/fail result"},
    {"correctness_failed", 6, U, "correctness did not pass: no timing counts as a measurement"},
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
    {"timing_summary_mismatch", 6, I, "a summary statistic does not recompute from the raw samples"},
    {"timing_stop_rule_missing", 6, U, "no stop rule"},
    {"timing_stop_rule_violated", 6, I, "the sample count or spread contradicts the stated stop rule"},
    {"timing_output_not_reproduced", 6, U, "after the timed calls, one more call on poisoned outputs did not reproduce the checked output bit for bit"},
    {"counter_definition_incomplete", 6, U, "a counter lacks unit, numerator, denominator or scope"},
    {NULL, 0, U, NULL},
};
#undef U
#undef I

const struct ladder_reason *ladder_reason_find(const char *id) {
  for (const struct ladder_reason *r = ladder_reasons; r->id; r++)
    if (!strcmp(r->id, id)) return r;
  return NULL;
}

const char *const ladder_required_layers[] = {"cmd", "plan", "admission", "launch", "producer", "combine", NULL};
const char *const ladder_call_key_fields[] = {"phase", "B", "S_q", "S_k_per_request", "H_q", "H_kv", "d_qk", "d_v",
                                              "q_dtype", "kv_dtype", "cache_layout", "page_size", "mask", "graph_mode",
                                              NULL};

static const char *const TERMINALS[] = {"complete", "cuda_runtime_unavailable", "no_gpu", "profiler_unavailable",
                                        "backend_rejected", "no_eligible_backend", "launch_failed",
                                        "correctness_failed", "internal_error", NULL};
static const int TERMINAL_CEILING[] = {6, 2, 2, 4, 4, 4, 4, 5, 6};
/* What `dkb run` and `dkb bench` end with (-1: launch_failed, whose error decides). A level the machine
 * capped (no GPU, no CUPTI, no eligible backend) ends with 0: --require-level judges levels. */
static const int TERMINAL_EXIT[] = {DKB_OK, DKB_OK, DKB_OK, DKB_OK, DKB_OK, DKB_OK, -1, DKB_FAIL, DKB_INTERNAL};
_Static_assert(sizeof TERMINAL_CEILING == sizeof TERMINAL_EXIT && sizeof TERMINAL_EXIT / sizeof(int) + 1 == sizeof TERMINALS / sizeof *TERMINALS,
               "one ceiling and one exit code per terminal");

int ladder_terminal_ceiling(const char *terminal) {
  for (int i = 0; TERMINALS[i]; i++)
    if (!strcmp(TERMINALS[i], terminal)) return TERMINAL_CEILING[i];
  return -1;
}

int ladder_terminal_exit_code(const char *terminal, int launch_code) {
  for (int i = 0; TERMINALS[i]; i++)
    if (!strcmp(TERMINALS[i], terminal)) return TERMINAL_EXIT[i] >= 0 ? TERMINAL_EXIT[i] : launch_code == DKB_OK ? DKB_FAIL : launch_code;
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
    json_array_append_new(f, json_pack("{s:i,s:s,s:s,s:s,s:s}", "level", x->level, "kind",
                                       x->kind == LADDER_UNMET ? "unmet" : "inconsistent", "reason", x->reason,
                                       "pointer", x->pointer, "detail", x->detail));
  }
  return json_pack("{s:i,s:i,s:b,s:s,s:o}", "computed_level", res->computed, "claimed_level", res->claimed,
                   "synthetic", res->synthetic, "terminal", res->terminal, "findings", f);
}

/* ---------------------------------------------------------------------------------------------- */
/* Reading: strict types (a wrong type means "not a bundle"), absent evidence is a finding.          */

struct art {
  const char *name, *sha;   /* from /artifacts */
  long long bytes;
  size_t index;             /* position in /artifacts */
  const char *reason;       /* first problem with the entry or its file, NULL if none */
  char pointer[DKB_PTR_MAX];
  char detail[256];
  int referenced;
  int have_file;            /* the file was found beside the bundle and matches */
};

struct lctx {
  struct jr r;
  int bad;                  /* not a bundle: r.err holds why; everything after is skipped */
  struct ladder_result *res;
  const struct ladder_opts *o;
  const json_t *b;
  struct art *arts;
  size_t narts;
  /* facts shared between levels */
  const char *meta_commit;
  int meta_dirty;
  const char *source_commit;
  const json_t *call_key;
  const char *outcome;        /* dispatch outcome, NULL if absent */
  long long split_count;      /* 0 if unknown */
  int loaded_present, has_cupti;
};

enum ty { TY_OBJ, TY_ARR, TY_STR, TY_INT, TY_NUM, TY_BOOL, TY_STR_NULL };

static const char *ty_name(enum ty t) {
  static const char *n[] = {"an object", "an array", "a string", "an integer", "a number", "a boolean",
                            "a string or null"};
  return n[t];
}

static int ty_ok(const json_t *v, enum ty t) {
  switch (t) {
  case TY_OBJ: return json_is_object(v);
  case TY_ARR: return json_is_array(v);
  case TY_STR: return json_is_string(v);
  case TY_INT: return json_is_integer(v);
  case TY_NUM: return json_is_number(v);
  case TY_BOOL: return json_is_boolean(v);
  case TY_STR_NULL: return json_is_string(v) || json_is_null(v);
  }
  return 0;
}

static void malformed(struct lctx *c, const char *ptr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void malformed(struct lctx *c, const char *ptr, const char *fmt, ...) {
  if (c->bad) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jr_fail(&c->r, ptr, NULL, "%s", msg);
  c->bad = 1;
}

static void finding(struct lctx *c, int level, const char *reason, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void finding(struct lctx *c, int level, const char *reason, const char *ptr, const char *fmt, ...) {
  if (c->bad) return;
  const struct ladder_reason *r = ladder_reason_find(reason);
  if (!r) DKB_BUG("unknown ladder reason '%s'", reason);
  struct ladder_result *res = c->res;
  if (res->n == res->cap) {
    res->cap = res->cap ? 2 * res->cap : 32;
    res->findings = DKB_REALLOC(res->findings, res->cap * sizeof *res->findings);
  }
  struct ladder_finding *f = &res->findings[res->n++];
  memset(f, 0, sizeof *f);
  f->level = level;
  f->kind = r->kind;
  f->reason = r->id;
  snprintf(f->pointer, sizeof f->pointer, "%s", ptr);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->detail, sizeof f->detail, fmt, ap);
  va_end(ap);
}

static int keys(struct lctx *c, const json_t *o, const char *ptr, const char *const *req, const char *const *opt) {
  if (c->bad) return -1;
  if (jr_keys(&c->r, o, ptr, req, opt)) { c->bad = 1; return -1; }
  return 0;
}

/* The member `key` of o if present and of type t; NULL when absent, or (c->bad set) of another type. */
static const json_t *get(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t) {
  if (c->bad || !o) return NULL;
  const json_t *v = json_object_get(o, key);
  if (!v) return NULL;
  if (!ty_ok(v, t)) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    malformed(c, p, "must be %s (got %s)", ty_name(t), jr_type_name(v));
    return NULL;
  }
  return v;
}

/* A string member; NULL when absent or (evidence strings) empty. Identity strings must not be empty. */
static const char *get_str(struct lctx *c, const json_t *o, const char *ptr, const char *key, int identity) {
  const json_t *v = get(c, o, ptr, key, TY_STR);
  if (!v) return NULL;
  const char *s = json_string_value(v);
  if (!*s && identity) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    malformed(c, p, "must not be empty");
    return NULL;
  }
  return *s ? s : NULL;
}

/* An integer member >= lo: 1 with *out set when present, 0 when absent (or malformed). */
static int get_int(struct lctx *c, const json_t *o, const char *ptr, const char *key, long long lo, long long *out) {
  const json_t *v = get(c, o, ptr, key, TY_INT);
  if (!v) return 0;
  long long x = json_integer_value(v);
  if (x < lo) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    malformed(c, p, "must be >= %lld (got %lld)", lo, x);
    return 0;
  }
  *out = x;
  return 1;
}

/* A number member >= lo: 1 with *out set when present. */
static int get_num(struct lctx *c, const json_t *o, const char *ptr, const char *key, double lo, double *out) {
  const json_t *v = get(c, o, ptr, key, TY_NUM);
  if (!v) return 0;
  double x = json_number_value(v);
  if (x < lo) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    malformed(c, p, "must be >= %g (got %.17g)", lo, x);
    return 0;
  }
  *out = x;
  return 1;
}

/* Every element of an array must have type t (identity strings non-empty). Returns the array or NULL. */
static const json_t *get_arr_of(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t) {
  const json_t *a = get(c, o, ptr, key, TY_ARR);
  if (!a) return NULL;
  char base[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(base, ptr, key);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    jr_ptr_idx(p, base, i);
    if (!ty_ok(v, t)) { malformed(c, p, "must be %s (got %s)", ty_name(t), jr_type_name(v)); return NULL; }
    if (t == TY_STR && !*json_string_value(v)) { malformed(c, p, "must not be empty"); return NULL; }
  }
  return a;
}

/* An enum member; the index into choices, -1 when absent. */
static int get_enum(struct lctx *c, const json_t *o, const char *ptr, const char *key, const char *const *choices) {
  const json_t *v = get(c, o, ptr, key, TY_STR);
  if (!v) return -1;
  for (int i = 0; choices[i]; i++)
    if (!strcmp(choices[i], json_string_value(v))) return i;
  char list[512] = "", p[DKB_PTR_MAX];
  size_t n = 0;
  for (int i = 0; choices[i] && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
  jr_ptr_key(p, ptr, key);
  malformed(c, p, "must be one of: %s (got '%s')", list, json_string_value(v));
  return -1;
}

static int is_hex(const char *s, size_t len) {
  if (!s || strlen(s) != len) return 0;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

static int digits(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* RFC 3339 UTC as dkb writes it: YYYY-MM-DDTHH:MM:SS[.fraction]Z. */
static int is_utc_timestamp(const char *s) {
  size_t n = strlen(s);
  if (n < 20 || s[n - 1] != 'Z') return 0;
  if (!(digits(s, 4) && s[4] == '-' && digits(s + 5, 2) && s[7] == '-' && digits(s + 8, 2) && s[10] == 'T' &&
        digits(s + 11, 2) && s[13] == ':' && digits(s + 14, 2) && s[16] == ':' && digits(s + 17, 2)))
    return 0;
  if (n == 20) return 1;
  return s[19] == '.' && n > 21 && digits(s + 20, n - 21);
}

static void ptr2(char out[DKB_PTR_MAX], const char *base, const char *key) { jr_ptr_key(out, base, key); }

/* <file pointer>/symbols/<j> */
static void sym_ptr(char out[DKB_PTR_MAX], const char *fp, size_t j) {
  char syms[DKB_PTR_MAX];
  jr_ptr_key(syms, fp, "symbols");
  jr_ptr_idx(out, syms, j);
}

/* ---------------------------------------------------------------------------------------------- */
/* Artifacts.                                                                                      */

static int artifact_name_ok(const char *s) {
  if (!*s || *s == '.') return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
          *s == '_' || *s == '-'))
      return 0;
  return 1;
}

static void art_problem(struct art *a, const char *reason, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void art_problem(struct art *a, const char *reason, const char *ptr, const char *fmt, ...) {
  if (a->reason) return;
  a->reason = reason;
  snprintf(a->pointer, sizeof a->pointer, "%s", ptr);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->detail, sizeof a->detail, fmt, ap);
  va_end(ap);
}

static void read_artifacts(struct lctx *c) {
  static const char *const req[] = {"name", "sha256", "bytes", NULL};
  const json_t *list = get(c, c->b, "", "artifacts", TY_ARR);
  if (!list) return;
  size_t n = json_array_size(list);
  c->arts = DKB_CALLOC(n, sizeof *c->arts);
  for (size_t i = 0; i < n && !c->bad; i++) {
    char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(p, "/artifacts", i);
    const json_t *e = json_array_get(list, i);
    if (keys(c, e, p, req, NULL)) return;
    struct art *a = &c->arts[c->narts];
    a->index = i;
    a->name = get_str(c, e, p, "name", 1);
    a->sha = json_string_value(get(c, e, p, "sha256", TY_STR));
    get_int(c, e, p, "bytes", 0, &a->bytes);
    if (c->bad) return;
    ptr2(q, p, "name");
    if (!artifact_name_ok(a->name)) {
      malformed(c, q, "must be a plain file name of letters, digits, '.', '_' and '-' not starting with '.' (got '%s')", a->name);
      return;
    }
    int dup = 0;
    for (size_t k = 0; k < c->narts; k++)
      if (!strcmp(c->arts[k].name, a->name)) dup = 1;
    if (dup) {
      finding(c, 0, "artifact_duplicate", q, "artifact '%s' is listed twice", a->name);
      continue; /* lookups use the first entry */
    }
    c->narts++;
    ptr2(q, p, "sha256");
    if (!dkb_is_sha256_hex(a->sha)) {
      art_problem(a, "artifact_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", a->sha);
      continue;
    }
    if (!c->o || !c->o->bundle_dir) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", c->o->bundle_dir, a->name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      ptr2(q, p, "name");
      art_problem(a, "artifact_file_missing", q, "artifact '%s' is not beside the bundle (%s)", a->name,
                  stat(path, &st) != 0 ? strerror(errno) : "not a regular file");
      continue;
    }
    if ((long long)st.st_size != a->bytes) {
      ptr2(q, p, "bytes");
      art_problem(a, "artifact_bytes_mismatch", q, "artifact '%s' has %lld bytes, the entry says %lld", a->name,
                  (long long)st.st_size, a->bytes);
      continue;
    }
    char hex[65];
    struct dkb_err herr;
    if (dkb_sha256_file(path, hex, &herr)) {
      ptr2(q, p, "name");
      art_problem(a, "artifact_file_missing", q, "artifact '%s' cannot be read: %s", a->name, herr.msg);
      continue;
    }
    if (strcmp(hex, a->sha)) {
      art_problem(a, "artifact_sha256_mismatch", q, "artifact '%s' hashes to %s, the entry says %s", a->name, hex, a->sha);
      continue;
    }
    a->have_file = 1;
  }
}

static struct art *art_find(struct lctx *c, const char *name) {
  for (size_t i = 0; i < c->narts; i++)
    if (!strcmp(c->arts[i].name, name)) return &c->arts[i];
  return NULL;
}

/* Checks the {artifact, sha256} reference sec[key] for `level`. Returns the artifact when the reference
 * holds, NULL otherwise (with a finding; absent: missing_reason). */
static struct art *ref(struct lctx *c, int level, const json_t *sec, const char *ptr, const char *key,
                       const char *missing_reason, const char *what) {
  static const char *const req[] = {"artifact", "sha256", NULL};
  char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
  ptr2(p, ptr, key);
  const json_t *r = get(c, sec, ptr, key, TY_OBJ);
  if (!r) {
    finding(c, level, missing_reason, p, "no %s", what);
    return NULL;
  }
  if (keys(c, r, p, req, NULL)) return NULL;
  const char *name = get_str(c, r, p, "artifact", 1);
  const char *sha = json_string_value(get(c, r, p, "sha256", TY_STR));
  if (c->bad) return NULL;
  ptr2(q, p, "sha256");
  if (!dkb_is_sha256_hex(sha)) {
    finding(c, level, "artifact_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
    return NULL;
  }
  struct art *a = art_find(c, name);
  if (!a) {
    ptr2(q, p, "artifact");
    finding(c, level, "artifact_not_listed", q, "%s artifact '%s' is not in /artifacts", what, name);
    return NULL;
  }
  a->referenced = 1;
  if (strcmp(a->sha ? a->sha : "", sha)) {
    finding(c, level, "artifact_sha256_mismatch", q, "%s sha256 %s differs from /artifacts/%zu/sha256 %s", what, sha,
            a->index, a->sha);
    return NULL;
  }
  if (a->reason) {
    finding(c, level, a->reason, a->pointer, "%s", a->detail);
    return NULL;
  }
  return a;
}

/* Parses an artifact that holds JSON; NULL when it is not available or not JSON. */
static json_t *art_json(struct lctx *c, const struct art *a) {
  if (!a || !a->have_file) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->o->bundle_dir, a->name);
  struct dkb_err e;
  return jr_load_file(path, &e);
}

/* ---------------------------------------------------------------------------------------------- */
/* Top level, meta, fixture.                                                                        */

static void read_header(struct lctx *c) {
  static const char *const top_req[] = {"schema", "meta", "synthetic", "claimed_level", "status", "fixture",
                                        "artifacts", NULL};
  static const char *const top_opt[] = {"source", "chain", "loaded", "dispatch", "execution", "measurement", "ledgers",
                                        "dump", NULL};
  static const char *const meta_req[] = {"tool", "version", "commit", "dirty", "argv", "created", "host", NULL};
  static const char *const fix_req[] = {"path", "name", "sha256", NULL};
  const json_t *b = c->b;
  if (!json_is_object(b)) { malformed(c, "/", "must be an object (got %s)", jr_type_name(b)); return; }
  const json_t *s = json_object_get(b, "schema");
  if (!json_is_string(s) || strcmp(json_string_value(s), BUNDLE_SCHEMA_ID)) {
    if (!s) malformed(c, "/", "missing required key 'schema' (not a dkb bundle)");
    else if (!json_is_string(s)) malformed(c, "/schema", "must be '%s' (got %s)", BUNDLE_SCHEMA_ID, jr_type_name(s));
    else malformed(c, "/schema", "must be '%s' (got '%s')", BUNDLE_SCHEMA_ID, json_string_value(s));
    return;
  }
  if (keys(c, b, "", top_req, top_opt)) return;
  const json_t *m = get(c, b, "", "meta", TY_OBJ);
  if (keys(c, m, "/meta", meta_req, NULL)) return;
  const char *tool = get_str(c, m, "/meta", "tool", 1);
  if (tool && strcmp(tool, "dkb")) malformed(c, "/meta/tool", "must be 'dkb' (got '%s')", tool);
  get_str(c, m, "/meta", "version", 1);
  c->meta_commit = get_str(c, m, "/meta", "commit", 1);
  if (c->meta_commit && !is_hex(c->meta_commit, 40))
    malformed(c, "/meta/commit", "must be 40 lower-case hex digits (got '%s')", c->meta_commit);
  c->meta_dirty = json_is_true(get(c, m, "/meta", "dirty", TY_BOOL));
  const json_t *argv = get(c, m, "/meta", "argv", TY_ARR);
  if (argv && !json_array_size(argv)) malformed(c, "/meta/argv", "must not be empty");
  for (size_t i = 0; argv && i < json_array_size(argv); i++)
    if (!json_is_string(json_array_get(argv, i))) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/meta/argv", i);
      malformed(c, p, "must be a string (got %s)", jr_type_name(json_array_get(argv, i)));
    }
  const char *created = get_str(c, m, "/meta", "created", 1);
  if (created && !is_utc_timestamp(created))
    malformed(c, "/meta/created", "must be an RFC 3339 UTC time like 2026-11-30T12:00:00Z (got '%s')", created);
  get_str(c, m, "/meta", "host", 1);
  c->res->synthetic = json_is_true(get(c, b, "", "synthetic", TY_BOOL));
  long long claimed = 0;
  if (get_int(c, b, "", "claimed_level", 0, &claimed) && claimed > LADDER_MAX_LEVEL)
    malformed(c, "/claimed_level", "must be <= %d (got %lld)", LADDER_MAX_LEVEL, claimed);
  c->res->claimed = (int)claimed;
  const json_t *f = get(c, b, "", "fixture", TY_OBJ);
  if (keys(c, f, "/fixture", fix_req, NULL)) return;
  get_str(c, f, "/fixture", "path", 1);
  get_str(c, f, "/fixture", "name", 1);
  const char *fsha = json_string_value(get(c, f, "/fixture", "sha256", TY_STR));
  if (fsha && !dkb_is_sha256_hex(fsha)) malformed(c, "/fixture/sha256", "must be 64 lower-case hex digits (got '%s')", fsha);
}

static const json_t *read_status(struct lctx *c) {
  static const char *const req[] = {"terminal", "reasons", NULL};
  static const char *const rreq[] = {"id", "detail", NULL};
  const json_t *s = get(c, c->b, "", "status", TY_OBJ);
  if (keys(c, s, "/status", req, NULL)) return NULL;
  int t = get_enum(c, s, "/status", "terminal", TERMINALS);
  if (t >= 0) snprintf(c->res->terminal, sizeof c->res->terminal, "%s", TERMINALS[t]);
  const json_t *rs = get(c, s, "/status", "reasons", TY_ARR);
  for (size_t i = 0; rs && i < json_array_size(rs) && !c->bad; i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/status/reasons", i);
    const json_t *r = json_array_get(rs, i);
    if (keys(c, r, p, rreq, NULL)) break;
    const char *id = get_str(c, r, p, "id", 1);
    get(c, r, p, "detail", TY_STR);
    int ok = id && (*id >= 'a' && *id <= 'z');
    for (const char *q = id; ok && *q; q++) ok = (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_';
    if (id && !ok) {
      char q[DKB_PTR_MAX];
      ptr2(q, p, "id");
      malformed(c, q, "must be a snake_case id (got '%s')", id);
    }
  }
  return s;
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 1: source present.                                                                         */

static int repo_relative(const char *p) {
  if (!*p || *p == '/' || strchr(p, '\\')) return 0;
  const char *s = p;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
    s += n + (e ? 1 : 0);
    if (e && !*s) return 0; /* trailing slash */
  }
  return 1;
}

/* The unqualified part of a symbol name: after the last "::". */
static const char *unqualified(const char *s) {
  const char *u = s;
  for (const char *p = s; (p = strstr(p, "::")); p += 2) u = p + 2;
  return u;
}

struct text {
  char *p;
  size_t n;
  long lines;
};

/* Checks one source file against the checkout at --source-root. */
static void source_rehash(struct lctx *c, const json_t *file, const char *fp, const char *path, const char *sha) {
  char full[4096], q[DKB_PTR_MAX];
  snprintf(full, sizeof full, "%s/%s", c->o->source_root, path);
  FILE *f = fopen(full, "rb");
  if (!f) {
    ptr2(q, fp, "path");
    finding(c, 1, "source_file_unreadable", q, "cannot open '%s': %s", full, strerror(errno));
    return;
  }
  struct dkb_buf b;
  dkb_buf_init(&b);
  dkb_buf_add_file(&b, f);  /* a short read hashes differently and is reported as a mismatch */
  fclose(f);
  struct text t = {b.p ? b.p : "", b.n, 0};
  for (size_t i = 0; i < t.n; i++)
    if (t.p[i] == '\n') t.lines++;
  if (t.n && t.p[t.n - 1] != '\n') t.lines++;
  char hex[65];
  struct dkb_err e;
  if (sha && dkb_is_sha256_hex(sha) && !dkb_sha256_buf(t.p, t.n, hex, &e) && strcmp(hex, sha)) {
    ptr2(q, fp, "sha256");
    finding(c, 1, "source_file_sha256_mismatch", q, "'%s' hashes to %s under the source root, the bundle says %s", path,
            hex, sha);
  }
  const json_t *syms = json_object_get(file, "symbols");
  for (size_t j = 0; json_is_array(syms) && j < json_array_size(syms); j++) {
    const json_t *s = json_array_get(syms, j);
    const json_t *lines = json_object_get(s, "lines");
    const char *name = json_string_value(json_object_get(s, "name"));
    if (!json_is_array(lines) || !name) continue;
    long long a = json_integer_value(json_array_get(lines, 0)), z = json_integer_value(json_array_get(lines, 1));
    if (a < 1 || z < a) continue; /* already a finding */
    char sp[DKB_PTR_MAX], lp[DKB_PTR_MAX];
    sym_ptr(sp, fp, j);
    if (z > t.lines) {
      ptr2(lp, sp, "lines");
      finding(c, 1, "source_symbol_lines_outside_file", lp, "span [%lld, %lld] ends after line %ld, the last of '%s'", a,
              z, t.lines, path);
      continue;
    }
    /* the text of lines a..z */
    const char *start = t.p, *end = t.p + t.n;
    for (long long l = 1; l < a && start < end; l++) {
      const char *nl = memchr(start, '\n', (size_t)(end - start));
      start = nl ? nl + 1 : end;
    }
    const char *stop = start;
    for (long long l = a; l <= z && stop < end; l++) {
      const char *nl = memchr(stop, '\n', (size_t)(end - stop));
      stop = nl ? nl + 1 : end;
    }
    const char *u = unqualified(name);
    size_t ul = strlen(u);
    int found = 0;
    for (const char *p = start; p + ul <= stop && !found; p++) found = !memcmp(p, u, ul);
    if (!found) {
      ptr2(lp, sp, "name");
      finding(c, 1, "source_symbol_not_in_span", lp, "'%s' does not occur in lines %lld-%lld of '%s'", u, a, z, path);
    }
  }
  dkb_buf_release(&b);
}

static void level1_source(struct lctx *c) {
  static const char *const opt[] = {"commit", "dirty", "files", NULL};
  static const char *const freq[] = {"path", NULL};
  static const char *const fopt[] = {"sha256", "symbols", NULL};
  static const char *const sreq[] = {"name", NULL};
  static const char *const sopt[] = {"role", "lines", NULL};
  const json_t *s = get(c, c->b, "", "source", TY_OBJ);
  if (!s) { finding(c, 1, "source_missing", "/source", "no source section: the kernel and chain sources are not identified"); return; }
  if (keys(c, s, "/source", NULL, opt)) return;
  const char *commit = get_str(c, s, "/source", "commit", 0);
  if (!commit) finding(c, 1, "source_commit_missing", "/source/commit", "no source commit");
  else if (!is_hex(commit, 40))
    finding(c, 1, "source_commit_not_pinned", "/source/commit", "'%s' is not a 40-hex commit: a name or short hash floats", commit);
  else if (strspn(commit, "0") == 40)
    finding(c, 1, "source_commit_not_pinned", "/source/commit", "the null commit: the sources were not built from a checkout");
  else if (c->meta_commit && strcmp(commit, c->meta_commit))
    finding(c, 1, "source_differs_from_meta", "/source/commit", "source commit %s differs from the dkb build commit %s (/meta/commit)",
            commit, c->meta_commit);
  else c->source_commit = commit;
  const json_t *dirty = get(c, s, "/source", "dirty", TY_BOOL);
  if (!dirty) finding(c, 1, "source_dirty_missing", "/source/dirty", "no dirty flag");
  else if (json_is_true(dirty) != c->meta_dirty)
    finding(c, 1, "source_differs_from_meta", "/source/dirty", "source dirty flag %s differs from /meta/dirty",
            json_is_true(dirty) ? "true" : "false");
  const json_t *files = get(c, s, "/source", "files", TY_ARR);
  if (!files || !json_array_size(files)) {
    finding(c, 1, "source_files_missing", "/source/files", "no source file listed");
    return;
  }
  for (size_t i = 0; i < json_array_size(files) && !c->bad; i++) {
    char fp[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(fp, "/source/files", i);
    const json_t *f = json_array_get(files, i);
    if (keys(c, f, fp, freq, fopt)) return;
    const char *path = get_str(c, f, fp, "path", 1);
    const char *sha = get_str(c, f, fp, "sha256", 0);
    const json_t *syms = get(c, f, fp, "symbols", TY_ARR);
    if (c->bad) return;
    int path_ok = repo_relative(path);
    ptr2(q, fp, "path");
    if (!path_ok) finding(c, 1, "source_file_path_invalid", q, "'%s' is not a repository-relative path", path);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(path, json_string_value(json_object_get(json_array_get(files, k), "path")))) {
        finding(c, 1, "source_file_duplicate", q, "'%s' is also /source/files/%zu", path, k);
        break;
      }
    ptr2(q, fp, "sha256");
    if (!sha) finding(c, 1, "source_file_sha256_missing", q, "no SHA-256 of '%s'", path);
    else if (!dkb_is_sha256_hex(sha)) finding(c, 1, "source_file_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
    if (!syms || !json_array_size(syms)) {
      ptr2(q, fp, "symbols");
      finding(c, 1, "source_symbols_missing", q, "no symbol named in '%s'", path);
    }
    for (size_t j = 0; syms && j < json_array_size(syms) && !c->bad; j++) {
      char sp[DKB_PTR_MAX];
      sym_ptr(sp, fp, j);
      const json_t *sym = json_array_get(syms, j);
      if (keys(c, sym, sp, sreq, sopt)) return;
      const char *name = get_str(c, sym, sp, "name", 1);
      const char *role = get_str(c, sym, sp, "role", 0);
      const json_t *lines = get(c, sym, sp, "lines", TY_ARR);
      if (c->bad) return;
      if (lines && (json_array_size(lines) != 2 || !json_is_integer(json_array_get(lines, 0)) ||
                    !json_is_integer(json_array_get(lines, 1)))) {
        ptr2(q, sp, "lines");
        malformed(c, q, "must be [first, last], two integers");
        return;
      }
      for (size_t k = 0; k < j; k++)
        if (!strcmp(name, json_string_value(json_object_get(json_array_get(syms, k), "name")))) {
          ptr2(q, sp, "name");
          finding(c, 1, "source_symbol_duplicate", q, "'%s' is also %s/symbols/%zu", name, fp, k);
          break;
        }
      if (!role) {
        ptr2(q, sp, "role");
        finding(c, 1, "source_symbol_role_missing", q, "no role for '%s'", name);
      }
      ptr2(q, sp, "lines");
      if (!lines) finding(c, 1, "source_symbol_lines_missing", q, "no line span for '%s'", name);
      else {
        long long a = json_integer_value(json_array_get(lines, 0)), z = json_integer_value(json_array_get(lines, 1));
        if (a < 1 || z < a) finding(c, 1, "source_symbol_lines_invalid", q, "[%lld, %lld] is not a span with 1 <= first <= last", a, z);
      }
    }
    if (c->o && c->o->source_root && path_ok && !c->bad) source_rehash(c, f, fp, path, sha);
  }
}

/* 1 when level-1 source lists `symbol` in file `path`. */
static int source_has(struct lctx *c, const char *path, const char *symbol) {
  const json_t *files = json_object_get(json_object_get(c->b, "source"), "files");
  for (size_t i = 0; json_is_array(files) && i < json_array_size(files); i++) {
    const json_t *f = json_array_get(files, i);
    const char *p = json_string_value(json_object_get(f, "path"));
    if (!p || strcmp(p, path)) continue;
    const json_t *syms = json_object_get(f, "symbols");
    for (size_t j = 0; json_is_array(syms) && j < json_array_size(syms); j++) {
      const char *n = json_string_value(json_object_get(json_array_get(syms, j), "name"));
      if (n && !strcmp(n, symbol)) return 1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 2: the call chain closes.                                                                  */

static long node_index(const json_t *nodes, const char *id) {
  for (size_t i = 0; i < json_array_size(nodes); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "id")), id)) return (long)i;
  return -1;
}

/* Depth-first search from v (color 0 new, 1 on the stack, 2 done); returns the index of the first edge
 * that reaches a node on the stack (a back edge, so on a cycle), or -1. */
static long chain_back_edge(long v, int *color, const long *from, const long *to, size_t ne) {
  color[v] = 1;
  for (size_t k = 0; k < ne; k++) {
    if (from[k] != v || to[k] < 0) continue;
    if (color[to[k]] == 1) return (long)k;
    if (color[to[k]] == 0) {
      long b = chain_back_edge(to[k], color, from, to, ne);
      if (b >= 0) return b;
    }
  }
  color[v] = 2;
  return -1;
}

static void level2_chain(struct lctx *c) {
  static const char *const opt[] = {"nodes", "edges", "required_layers", NULL};
  static const char *const nreq[] = {"id", "layer", NULL};
  static const char *const nopt[] = {"path", "symbol", NULL};
  const json_t *ch = get(c, c->b, "", "chain", TY_OBJ);
  if (!ch) { finding(c, 2, "chain_missing", "/chain", "no call chain from cmd to the kernels"); return; }
  if (keys(c, ch, "/chain", NULL, opt)) return;
  const json_t *nodes = get(c, ch, "/chain", "nodes", TY_ARR);
  const json_t *edges = get(c, ch, "/chain", "edges", TY_ARR);
  const json_t *layers = get_arr_of(c, ch, "/chain", "required_layers", TY_STR);
  if (c->bad) return;
  size_t nn = nodes ? json_array_size(nodes) : 0;
  for (size_t i = 0; i < nn && !c->bad; i++) {
    char np[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(np, "/chain/nodes", i);
    const json_t *nd = json_array_get(nodes, i);
    if (keys(c, nd, np, nreq, nopt)) return;
    const char *id = get_str(c, nd, np, "id", 1);
    get_str(c, nd, np, "layer", 1);
    const char *path = get_str(c, nd, np, "path", 0), *sym = get_str(c, nd, np, "symbol", 0);
    if (c->bad) return;
    if (node_index(nodes, id) != (long)i) {
      ptr2(q, np, "id");
      finding(c, 2, "chain_node_duplicate", q, "node id '%s' is also /chain/nodes/%ld", id, node_index(nodes, id));
    }
    if (!path || !sym) finding(c, 2, "chain_node_unsourced", np, "node '%s' names no %s", id, !path ? "path" : "symbol");
    else if (!source_has(c, path, sym))
      finding(c, 2, "chain_node_unsourced", np, "node '%s' (%s in '%s') is not a level-1 source symbol", id, sym, path);
  }
  if (!nn) finding(c, 2, "chain_nodes_missing", "/chain/nodes", "the chain has no node");
  /* edges: [from, to] pairs of node ids */
  size_t ne = edges ? json_array_size(edges) : 0;
  long *from = DKB_CALLOC(ne + 1, sizeof *from), *to = DKB_CALLOC(ne + 1, sizeof *to);
  for (size_t k = 0; k < ne && !c->bad; k++) {
    char ep[DKB_PTR_MAX];
    jr_ptr_idx(ep, "/chain/edges", k);
    const json_t *e = json_array_get(edges, k);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
        !json_is_string(json_array_get(e, 1))) {
      malformed(c, ep, "must be [from, to], two node ids");
      break;
    }
    const char *a = json_string_value(json_array_get(e, 0)), *z = json_string_value(json_array_get(e, 1));
    from[k] = nodes ? node_index(nodes, a) : -1;
    to[k] = nodes ? node_index(nodes, z) : -1;
    if (from[k] < 0 || to[k] < 0)
      finding(c, 2, "chain_edge_unknown_node", ep, "edge names unknown node '%s'", from[k] < 0 ? a : z);
  }
  /* required layers: the fixed six, which the bundle's own list must repeat */
  int weakened = !layers;
  for (int l = 0; ladder_required_layers[l] && layers; l++) {
    int listed = 0;
    for (size_t k = 0; k < json_array_size(layers); k++)
      listed |= !strcmp(json_string_value(json_array_get(layers, k)), ladder_required_layers[l]);
    if (!listed) weakened = 1;
  }
  if (weakened)
    finding(c, 2, "chain_required_layers_weakened", "/chain/required_layers",
            "required_layers must list cmd, plan, admission, launch, producer, combine");
  size_t nlist = layers ? json_array_size(layers) : 0;
  for (size_t l = 0; l < 6 + nlist && !c->bad; l++) {
    const char *layer = l < 6 ? ladder_required_layers[l] : json_string_value(json_array_get(layers, l - 6));
    int seen_before = 0;
    for (size_t k = 0; k < l; k++) {
      const char *prev = k < 6 ? ladder_required_layers[k] : json_string_value(json_array_get(layers, k - 6));
      seen_before |= !strcmp(prev, layer);
    }
    if (seen_before) continue;
    int present = 0;
    for (size_t i = 0; i < nn; i++) present |= !strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "layer")), layer);
    if (!present && nn) finding(c, 2, "chain_layer_missing", "/chain/nodes", "no node of required layer '%s'", layer);
  }
  /* cycles: the first back edge of a depth-first search lies on a cycle; then reachability from cmd */
  if (!c->bad && nn) {
    int *color = DKB_CALLOC(nn, sizeof *color), *seen = DKB_CALLOC(nn, sizeof *seen);
    size_t *queue = DKB_CALLOC(nn, sizeof *queue);
    long back = -1;
    for (size_t i = 0; i < nn && back < 0; i++)
      if (!color[i]) back = chain_back_edge((long)i, color, from, to, ne);
    if (back >= 0) {
      char ep[DKB_PTR_MAX];
      jr_ptr_idx(ep, "/chain/edges", (size_t)back);
      finding(c, 2, "chain_cycle", ep, "edge %s -> %s closes a cycle",
              json_string_value(json_object_get(json_array_get(nodes, (size_t)from[back]), "id")),
              json_string_value(json_object_get(json_array_get(nodes, (size_t)to[back]), "id")));
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < nn; i++)
      if (!strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "layer")), "cmd")) { seen[i] = 1; queue[tail++] = i; }
    int have_cmd = tail > 0;
    while (head < tail) {
      size_t v = queue[head++];
      for (size_t k = 0; k < ne; k++)
        if (from[k] == (long)v && to[k] >= 0 && !seen[to[k]]) { seen[to[k]] = 1; queue[tail++] = (size_t)to[k]; }
    }
    for (size_t i = 0; i < nn && have_cmd; i++)
      if (!seen[i]) {
        char np[DKB_PTR_MAX];
        jr_ptr_idx(np, "/chain/nodes", i);
        finding(c, 2, "chain_node_unreachable", np, "node '%s' is not reachable from the cmd layer",
                json_string_value(json_object_get(json_array_get(nodes, i), "id")));
      }
    free(color);
    free(seen);
    free(queue);
  }
  free(from);
  free(to);
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 3: loaded binary.                                                                          */

static const char *const ROLES[] = {"dkb", "cudart", "cupti", "cuda", "nvperf", "nvml", "other", NULL};
enum { ROLE_DKB, ROLE_CUDART, ROLE_CUPTI, ROLE_CUDA };

/* 1 when the loader map lists path with sha256. */
static int in_loader_map(const json_t *map, const char *path, const char *sha) {
  const json_t *objs = json_object_get(map, "objects");
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const json_t *o = json_array_get(objs, i);
    const char *p = json_string_value(json_object_get(o, "path")), *s = json_string_value(json_object_get(o, "sha256"));
    if (p && s && !strcmp(p, path) && !strcmp(s, sha)) return 1;
  }
  return 0;
}

static int loader_map_well_formed(const json_t *map) {
  const json_t *objs = json_object_get(map, "objects");
  if (!json_is_object(map) || !json_is_array(objs)) return 0;
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const json_t *o = json_array_get(objs, i);
    if (!json_is_string(json_object_get(o, "path")) || !json_is_string(json_object_get(o, "sha256"))) return 0;
  }
  return 1;
}

static void level3_device(struct lctx *c, const json_t *ld) {
  static const char *const fields[] = {"name", "compute_capability", "sm_count", "driver_version", "runtime_version",
                                       "pci_bus_id", NULL};
  const json_t *d = get(c, ld, "/loaded", "device", TY_OBJ);
  if (!d) { finding(c, 3, "device_missing", "/loaded/device", "no GPU device coordinate"); return; }
  if (keys(c, d, "/loaded/device", NULL, fields)) return;
  const char *name = get_str(c, d, "/loaded/device", "name", 0);
  const char *cc = get_str(c, d, "/loaded/device", "compute_capability", 0);
  long long sm = -1;
  int have_sm = get_int(c, d, "/loaded/device", "sm_count", 0, &sm);
  const char *drv = get_str(c, d, "/loaded/device", "driver_version", 0);
  const char *rt = get_str(c, d, "/loaded/device", "runtime_version", 0);
  const char *bus = get_str(c, d, "/loaded/device", "pci_bus_id", 0);
  if (c->bad) return;
  const void *vals[] = {name, cc, have_sm ? "" : NULL, drv, rt, bus};
  for (int i = 0; fields[i]; i++)
    if (!vals[i]) {
      char q[DKB_PTR_MAX];
      ptr2(q, "/loaded/device", fields[i]);
      finding(c, 3, "device_field_missing", q, "no %s", fields[i]);
    }
  if (cc) {
    const char *dot = strchr(cc, '.');
    if (!dot || dot == cc || !dot[1] || !digits(cc, (size_t)(dot - cc)) || !digits(dot + 1, strlen(dot + 1)))
      finding(c, 3, "device_field_invalid", "/loaded/device/compute_capability", "'%s' is not a compute capability like 9.0", cc);
  }
  if (have_sm && sm < 1) finding(c, 3, "device_field_invalid", "/loaded/device/sm_count", "sm_count %lld is not a GPU", sm);
  if (drv && !strcmp(drv, "0")) finding(c, 3, "device_field_invalid", "/loaded/device/driver_version", "driver version 0: no CUDA driver");
  if (rt && !strcmp(rt, "0")) finding(c, 3, "device_field_invalid", "/loaded/device/runtime_version", "runtime version 0: no CUDA runtime");
}

static void level3_loaded(struct lctx *c) {
  static const char *const opt[] = {"loader_map", "objects", "build_report", "device", "kernel_binaries", NULL};
  static const char *const oreq[] = {"path", "role", NULL};
  static const char *const oopt[] = {"sha256", "bytes", NULL};
  static const char *const kreq[] = {"symbol", "binary_version", "ptx_version", NULL};
  const json_t *ld = get(c, c->b, "", "loaded", TY_OBJ);
  if (!ld) { finding(c, 3, "loaded_missing", "/loaded", "no loaded-artifact closure"); return; }
  c->loaded_present = 1;
  if (keys(c, ld, "/loaded", NULL, opt)) return;
  struct art *map = ref(c, 3, ld, "/loaded", "loader_map", "loader_map_missing", "loader map");
  json_t *mapdoc = art_json(c, map);
  if (map && map->have_file && !loader_map_well_formed(mapdoc)) {
    finding(c, 3, "loader_map_unreadable", "/loaded/loader_map", "artifact '%s' is not a JSON object with objects [{path, sha256}]", map->name);
    json_decref(mapdoc);
    mapdoc = NULL;
  }
  const json_t *objs = get(c, ld, "/loaded", "objects", TY_ARR);
  int roles[8] = {0};
  if (!objs || !json_array_size(objs)) finding(c, 3, "loaded_objects_missing", "/loaded/objects", "no loaded object listed");
  for (size_t i = 0; objs && i < json_array_size(objs) && !c->bad; i++) {
    char op[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(op, "/loaded/objects", i);
    const json_t *o = json_array_get(objs, i);
    if (keys(c, o, op, oreq, oopt)) break;
    const char *path = get_str(c, o, op, "path", 1);
    int role = get_enum(c, o, op, "role", ROLES);
    const char *sha = get_str(c, o, op, "sha256", 0);
    long long bytes = 0;
    get_int(c, o, op, "bytes", 0, &bytes);
    if (c->bad) break;
    roles[role]++;
    ptr2(q, op, "path");
    if (path[0] != '/') finding(c, 3, "loaded_object_path_not_absolute", q, "'%s' is not an absolute path", path);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(path, json_string_value(json_object_get(json_array_get(objs, k), "path")))) {
        finding(c, 3, "loaded_object_duplicate", q, "'%s' is also /loaded/objects/%zu", path, k);
        break;
      }
    ptr2(q, op, "sha256");
    if (!sha) finding(c, 3, "loaded_object_sha256_missing", q, "no SHA-256 of '%s'", path);
    else if (!dkb_is_sha256_hex(sha)) finding(c, 3, "loaded_object_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
    else if (mapdoc && !in_loader_map(mapdoc, path, sha))
      finding(c, 3, "loaded_object_not_in_loader_map", op, "'%s' with sha256 %s is not in loader map '%s'", path, sha, map->name);
    if (bytes < 1) {
      ptr2(q, op, "bytes");
      finding(c, 3, "loaded_object_bytes_missing", q, "no positive size of '%s'", path);
    }
  }
  json_decref(mapdoc);
  c->has_cupti = roles[ROLE_CUPTI] > 0;
  if (objs && json_array_size(objs) && !c->bad) {
    if (!roles[ROLE_DKB]) finding(c, 3, "loaded_executable_missing", "/loaded/objects", "no object with role dkb (the executable)");
    if (!roles[ROLE_CUDART]) finding(c, 3, "loaded_cudart_missing", "/loaded/objects", "no object with role cudart (libcudart)");
    if (!roles[ROLE_CUDA]) finding(c, 3, "loaded_driver_missing", "/loaded/objects", "no object with role cuda (libcuda.so.1)");
  }
  struct art *br = ref(c, 3, ld, "/loaded", "build_report", "build_report_missing", "build report");
  if (br && br->have_file) {
    json_t *doc = art_json(c, br);
    const char *commit = json_string_value(json_object_get(doc, "commit"));
    if (!json_is_object(doc) || !commit)
      finding(c, 3, "build_report_unreadable", "/loaded/build_report", "artifact '%s' is not a JSON object with a commit", br->name);
    else if (c->source_commit && strcmp(commit, c->source_commit))
      finding(c, 3, "build_report_commit_mismatch", "/loaded/build_report", "build report commit %s differs from source commit %s",
              commit, c->source_commit);
    json_decref(doc);
  }
  level3_device(c, ld);
  const json_t *kb = get(c, ld, "/loaded", "kernel_binaries", TY_ARR);
  for (size_t i = 0; kb && i < json_array_size(kb) && !c->bad; i++) {
    char kp[DKB_PTR_MAX];
    long long v;
    jr_ptr_idx(kp, "/loaded/kernel_binaries", i);
    const json_t *k = json_array_get(kb, i);
    if (keys(c, k, kp, kreq, NULL)) break;
    get_str(c, k, kp, "symbol", 1);
    get_int(c, k, kp, "binary_version", 0, &v);
    get_int(c, k, kp, "ptx_version", 0, &v);
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 4: dispatch observed.                                                                      */

static void check_digest(struct lctx *c, const json_t *d, const json_t *obj, const char *key, const char *missing,
                         const char *mismatch, const char *what) {
  char q[DKB_PTR_MAX];
  ptr2(q, "/dispatch", key);
  const char *sha = get_str(c, d, "/dispatch", key, 0);
  if (c->bad) return;
  if (!sha) { finding(c, 4, missing, q, "no canonical digest of the %s", what); return; }
  if (!obj) return;
  char hex[65];
  struct dkb_err e;
  if (cjson_digest(obj, hex, &e)) { finding(c, 4, mismatch, q, "the %s has no canonical form: %s", what, e.msg); return; }
  if (strcmp(hex, sha)) finding(c, 4, mismatch, q, "recorded %s, the %s recomputes to %s", sha, what, hex);
}

static void level4_call_key(struct lctx *c, const json_t *ck) {
  static const enum ty types[] = {TY_STR, TY_INT, TY_INT, TY_ARR, TY_INT, TY_INT, TY_INT, TY_INT,
                                  TY_STR, TY_STR, TY_STR, TY_INT, TY_STR, TY_BOOL};
  for (int i = 0; ladder_call_key_fields[i] && !c->bad; i++) {
    const char *f = ladder_call_key_fields[i];
    char q[DKB_PTR_MAX];
    ptr2(q, "/dispatch/call_key", f);
    const json_t *v = json_object_get(ck, f);
    if (!v) { finding(c, 4, "call_key_field_missing", q, "the call key has no %s", f); continue; }
    if (!strcmp(f, "page_size") && json_is_null(v)) continue; /* not paged */
    if (!strcmp(f, "mask") && json_is_object(v)) continue;    /* a mask program */
    if (!ty_ok(v, types[i])) malformed(c, q, "must be %s (got %s)", ty_name(types[i]), jr_type_name(v));
  }
  const json_t *tol = json_object_get(ck, "tolerances");
  if (tol && !json_is_object(tol))
    malformed(c, "/dispatch/call_key/tolerances", "must be an object (got %s)", jr_type_name(tol));
  if (c->bad) return;
  const json_t *B = json_object_get(ck, "B"), *sk = json_object_get(ck, "S_k_per_request");
  if (json_is_integer(B) && json_is_array(sk) && (json_int_t)json_array_size(sk) != json_integer_value(B))
    finding(c, 4, "call_key_inconsistent", "/dispatch/call_key/S_k_per_request", "%zu lengths for B = %lld requests",
            json_array_size(sk), (long long)json_integer_value(B));
  const json_t *hq = json_object_get(ck, "H_q"), *hkv = json_object_get(ck, "H_kv");
  if (json_is_integer(hq) && json_is_integer(hkv) &&
      (json_integer_value(hkv) < 1 || json_integer_value(hq) % json_integer_value(hkv)))
    finding(c, 4, "call_key_inconsistent", "/dispatch/call_key/H_kv", "H_q = %lld is not a multiple of H_kv = %lld",
            (long long)json_integer_value(hq), (long long)json_integer_value(hkv));
}

static void level4_dispatch(struct lctx *c) {
  static const char *const opt[] = {"call_key", "call_key_sha256", "request", "candidates", "outcome", "selected",
                                    "split_count", "workspace_bytes", "plan_key", "plan_key_sha256",
                                    "required_kernels", "diagnostic", "plan", NULL};
  static const char *const creq[] = {"backend", "priority", "in_domain", "eligible", NULL};
  static const char *const copt[] = {"reasons", NULL};
  static const char *const outcomes[] = {"selected", "rejected", "no_eligible", NULL};
  const json_t *d = get(c, c->b, "", "dispatch", TY_OBJ);
  if (!d) { finding(c, 4, "dispatch_missing", "/dispatch", "no dispatch record"); return; }
  if (keys(c, d, "/dispatch", NULL, opt)) return;
  const json_t *ck = get(c, d, "/dispatch", "call_key", TY_OBJ);
  c->call_key = ck;
  if (!ck) finding(c, 4, "call_key_missing", "/dispatch/call_key", "no readable call key");
  else level4_call_key(c, ck);
  check_digest(c, d, ck, "call_key_sha256", "call_key_sha256_missing", "call_key_sha256_mismatch", "call key");
  ref(c, 4, d, "/dispatch", "diagnostic", "diagnostic_missing", "dispatch diagnostic");
  const char *request = get_str(c, d, "/dispatch", "request", 1);
  int oc = get_enum(c, d, "/dispatch", "outcome", outcomes);
  const json_t *selv = get(c, d, "/dispatch", "selected", TY_STR_NULL);
  const char *sel = json_string_value(selv);
  const json_t *cands = get(c, d, "/dispatch", "candidates", TY_ARR);
  if (c->bad) return;
  if (sel && !*sel) { malformed(c, "/dispatch/selected", "must not be empty"); return; }
  c->outcome = oc >= 0 ? outcomes[oc] : NULL;
  if (!request) finding(c, 4, "request_missing", "/dispatch/request", "no backend request");
  if (oc < 0) finding(c, 4, "outcome_missing", "/dispatch/outcome", "no dispatch outcome");
  size_t nc = cands ? json_array_size(cands) : 0;
  if (!nc) finding(c, 4, "candidates_missing", "/dispatch/candidates", "no candidate list");
  long best = -1;            /* first eligible in-domain candidate by priority */
  long long best_pri = 0;
  for (size_t i = 0; i < nc && !c->bad; i++) {
    char cp[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(cp, "/dispatch/candidates", i);
    const json_t *cd = json_array_get(cands, i);
    if (keys(c, cd, cp, creq, copt)) return;
    const char *name = get_str(c, cd, cp, "backend", 1);
    long long pri = 0;
    get_int(c, cd, cp, "priority", 0, &pri);
    int in_domain = json_is_true(get(c, cd, cp, "in_domain", TY_BOOL));
    int eligible = json_is_true(get(c, cd, cp, "eligible", TY_BOOL));
    const json_t *reasons = get_arr_of(c, cd, cp, "reasons", TY_STR);
    if (c->bad) return;
    size_t nr = reasons ? json_array_size(reasons) : 0;
    for (size_t k = 0; k < i; k++)
      if (!strcmp(name, json_string_value(json_object_get(json_array_get(cands, k), "backend")))) {
        ptr2(q, cp, "backend");
        finding(c, 4, "candidate_duplicate", q, "'%s' is also /dispatch/candidates/%zu", name, k);
        break;
      }
    if (eligible && !in_domain) finding(c, 4, "candidate_reasons_inconsistent", cp, "'%s' is eligible but outside the candidate domain", name);
    else if (!eligible && !nr) finding(c, 4, "candidate_reasons_inconsistent", cp, "'%s' is ineligible without a reason", name);
    else if (eligible && nr) finding(c, 4, "candidate_reasons_inconsistent", cp, "'%s' is eligible but lists %zu rejection reason%s", name, nr, nr == 1 ? "" : "s");
    if (eligible && in_domain && (best < 0 || pri < best_pri)) { best = (long)i; best_pri = pri; }
  }
  int forced = request && strcmp(request, "auto");
  long req_i = -1, sel_i = -1;
  for (size_t i = 0; i < nc; i++) {
    const char *name = json_string_value(json_object_get(json_array_get(cands, i), "backend"));
    if (forced && req_i < 0 && !strcmp(name, request)) req_i = (long)i;
    if (sel && sel_i < 0 && !strcmp(name, sel)) sel_i = (long)i;
  }
  const json_t *rc = req_i >= 0 ? json_array_get(cands, (size_t)req_i) : NULL;
  int req_eligible = rc && json_is_true(json_object_get(rc, "eligible")) && json_is_true(json_object_get(rc, "in_domain"));
  if (forced && nc && req_i < 0)
    finding(c, 4, "forced_request_not_candidate", "/dispatch/request", "forced backend '%s' is not among the candidates", request);
  if (oc == 0) {
    if (!sel) finding(c, 4, "selected_missing", "/dispatch/selected", "outcome is selected but no backend is named");
    else {
      const json_t *scd = sel_i >= 0 ? json_array_get(cands, (size_t)sel_i) : NULL;
      if (!scd || !json_is_true(json_object_get(scd, "eligible")) || !json_is_true(json_object_get(scd, "in_domain")))
        finding(c, 4, "selected_not_eligible", "/dispatch/selected", "'%s' is not an eligible in-domain candidate", sel);
      else if (forced && strcmp(sel, request))
        finding(c, 4, "forced_request_fell_back", "/dispatch/selected", "forced '%s' but selected '%s'", request, sel);
      else if (!forced && request && best >= 0 &&
               json_integer_value(json_object_get(scd, "priority")) > best_pri)
        finding(c, 4, "auto_selection_not_first_eligible", "/dispatch/selected",
                "auto selected '%s' (priority %lld) over eligible '%s' (priority %lld)", sel,
                (long long)json_integer_value(json_object_get(scd, "priority")),
                json_string_value(json_object_get(json_array_get(cands, (size_t)best), "backend")), best_pri);
    }
  } else if (oc > 0) {
    if (sel) finding(c, 4, "outcome_contradicts_candidates", "/dispatch/selected", "outcome %s names selected backend '%s'", outcomes[oc], sel);
    else if (oc == 1 && request && !forced)
      finding(c, 4, "outcome_contradicts_candidates", "/dispatch/outcome", "rejected is the outcome of a forced request, the request is auto");
    else if (oc == 1 && req_eligible)
      finding(c, 4, "outcome_contradicts_candidates", "/dispatch/outcome", "forced '%s' is eligible but the outcome is rejected", request);
    else if (oc == 2 && forced)
      finding(c, 4, "outcome_contradicts_candidates", "/dispatch/outcome", "a forced request is selected or rejected, never no_eligible");
    else if (oc == 2 && best >= 0)
      finding(c, 4, "outcome_contradicts_candidates", "/dispatch/outcome", "no_eligible but '%s' is eligible",
              json_string_value(json_object_get(json_array_get(cands, (size_t)best), "backend")));
  }
  /* plan state of the selected backend */
  long long split = 0, ws = 0;
  int have_split = get_int(c, d, "/dispatch", "split_count", 1, &split);
  int have_ws = get_int(c, d, "/dispatch", "workspace_bytes", 0, &ws);
  const json_t *pk = get(c, d, "/dispatch", "plan_key", TY_OBJ);
  const json_t *rk = get_arr_of(c, d, "/dispatch", "required_kernels", TY_STR);
  if (c->bad) return;
  c->split_count = have_split ? split : 0;
  int selected = oc == 0;
  if (selected && !have_split) finding(c, 4, "split_count_missing", "/dispatch/split_count", "no split count for the selected plan");
  if (selected && !have_ws) finding(c, 4, "workspace_bytes_missing", "/dispatch/workspace_bytes", "no workspace size for the selected plan");
  if (have_split && have_ws && split > 1 && ws == 0)
    finding(c, 4, "workspace_inconsistent", "/dispatch/workspace_bytes", "%lld splits need partial-state workspace, 0 bytes recorded", split);
  if (selected && !pk) finding(c, 4, "plan_key_missing", "/dispatch/plan_key", "no readable plan key");
  if (selected || pk || json_object_get(d, "plan_key_sha256"))
    check_digest(c, d, pk, "plan_key_sha256", "plan_key_sha256_missing", "plan_key_sha256_mismatch", "plan key");
  if (pk && ck) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)pk, k, v) {
      const json_t *w = json_object_get(ck, k);
      if (w && !json_equal(v, w)) {
        char q[DKB_PTR_MAX];
        ptr2(q, "/dispatch/plan_key", k);
        finding(c, 4, "plan_key_contradicts_call_key", q, "plan key %s differs from /dispatch/call_key/%s", k, k);
      }
    }
  }
  if (pk) {
    const char *pb = json_string_value(json_object_get(pk, "backend"));
    const json_t *ps = json_object_get(pk, "split_count"), *pw = json_object_get(pk, "workspace_bytes");
    if (pb && sel && strcmp(pb, sel))
      finding(c, 4, "plan_key_contradicts_dispatch", "/dispatch/plan_key/backend", "plan for '%s', selected '%s'", pb, sel);
    if (ps && have_split && !(json_is_integer(ps) && json_integer_value(ps) == split))
      finding(c, 4, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count", "plan key split_count differs from /dispatch/split_count %lld", split);
    if (pw && have_ws && !(json_is_integer(pw) && json_integer_value(pw) == ws))
      finding(c, 4, "plan_key_contradicts_dispatch", "/dispatch/plan_key/workspace_bytes", "plan key workspace_bytes differs from /dispatch/workspace_bytes %lld", ws);
  }
  if (selected && (!rk || !json_array_size(rk)))
    finding(c, 4, "required_kernels_missing", "/dispatch/required_kernels", "no kernel list for the selected plan");
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 5: execution observed.                                                                     */

/* The function name of a demangled symbol: "void ns::f<128>(float*)" -> "ns::f". */
static void base_name(const char *demangled, char *out, size_t n) {
  /* the parameter list is the LAST balanced (...): "(anonymous namespace)" may come before it */
  size_t len = strlen(demangled);
  while (len && demangled[len - 1] == ' ') len--;
  if (len && demangled[len - 1] == ')') {
    int depth = 0;
    while (len) {
      char ch = demangled[--len];
      if (ch == ')') depth++;
      else if (ch == '(' && --depth == 0) break;
    }
  }
  while (len && demangled[len - 1] == ' ') len--;
  if (len && demangled[len - 1] == '>') { /* strip the template arguments */
    int depth = 0;
    while (len) {
      char ch = demangled[--len];
      if (ch == '>') depth++;
      else if (ch == '<' && --depth == 0) break;
    }
  }
  size_t start = len;
  while (start && demangled[start - 1] != ' ') start--;
  snprintf(out, n, "%.*s", (int)(len - start), demangled + start);
}

/* 1 when kernel record k is the function `name` (exact symbol, demangled text, or function name). */
static int kernel_is(const json_t *k, const char *name) {
  const char *sym = json_string_value(json_object_get(k, "symbol"));
  const char *dem = json_string_value(json_object_get(k, "demangled"));
  if (sym && !strcmp(sym, name)) return 1;
  if (!dem) return 0;
  if (!strcmp(dem, name)) return 1;
  char base[512];
  base_name(dem, base, sizeof base);
  return !strcmp(base, name) || !strcmp(unqualified(base), unqualified(name));
}

static int kernel_launched(const json_t *kernels, const char *name) {
  for (size_t i = 0; i < json_array_size(kernels); i++) {
    const json_t *k = json_array_get(kernels, i);
    if (json_integer_value(json_object_get(k, "launches")) > 0 && kernel_is(k, name)) return 1;
  }
  return 0;
}

/* 1 when some chain node of `layer` has its symbol launched; -1 when the chain has no such node. */
static int layer_launched(struct lctx *c, const json_t *kernels, const char *layer) {
  const json_t *nodes = json_object_get(json_object_get(c->b, "chain"), "nodes");
  int any = 0;
  for (size_t i = 0; i < json_array_size(nodes); i++) {
    const json_t *nd = json_array_get(nodes, i);
    const char *l = json_string_value(json_object_get(nd, "layer")), *s = json_string_value(json_object_get(nd, "symbol"));
    if (!l || strcmp(l, layer) || !s) continue;
    any = 1;
    if (kernel_launched(kernels, s)) return 1;
  }
  return any ? 0 : -1;
}

static int geometry_ok(const json_t *g) {
  if (!g || json_array_size(g) != 3) return 0;
  for (size_t i = 0; i < 3; i++)
    if (json_integer_value(json_array_get(g, i)) < 1) return 0;
  return 1;
}

static void level5_execution(struct lctx *c) {
  static const char *const opt[] = {"trace", "nvtx_range", "external_correlation_id", "kernels", "dropped_records",
                                    "profiler", NULL};
  static const char *const popt[] = {"name", "version", NULL};
  static const char *const kreq[] = {"symbol", NULL};
  static const char *const kopt[] = {"demangled", "launches", "grid", "block", "registers", "shared_bytes", NULL};
  const json_t *x = get(c, c->b, "", "execution", TY_OBJ);
  if (c->outcome && strcmp(c->outcome, "selected"))
    finding(c, 5, "no_backend_selected", "/dispatch/outcome", "dispatch outcome %s: no backend ran", c->outcome);
  if (!x) { finding(c, 5, "execution_missing", "/execution", "no profiler observation of the call"); return; }
  if (keys(c, x, "/execution", NULL, opt)) return;
  ref(c, 5, x, "/execution", "trace", "trace_missing", "profiler trace");
  if (!get_str(c, x, "/execution", "nvtx_range", 0))
    finding(c, 5, "nvtx_range_missing", "/execution/nvtx_range", "no NVTX range around the call");
  long long v = 0;
  if (!get_int(c, x, "/execution", "external_correlation_id", 0, &v))
    finding(c, 5, "external_correlation_missing", "/execution/external_correlation_id", "no external correlation id");
  if (!get_int(c, x, "/execution", "dropped_records", 0, &v))
    finding(c, 5, "trace_dropped_records", "/execution/dropped_records", "the number of dropped profiler records is not recorded");
  else if (v > 0)
    finding(c, 5, "trace_dropped_records", "/execution/dropped_records", "the profiler dropped %lld records: launch counts may be incomplete", v);
  const json_t *prof = get(c, x, "/execution", "profiler", TY_OBJ);
  if (!prof) finding(c, 5, "profiler_missing", "/execution/profiler", "no profiler name and version");
  else if (!keys(c, prof, "/execution/profiler", NULL, popt)) {
    if (!get_str(c, prof, "/execution/profiler", "name", 0)) finding(c, 5, "profiler_missing", "/execution/profiler/name", "no profiler name");
    if (!get_str(c, prof, "/execution/profiler", "version", 0)) finding(c, 5, "profiler_missing", "/execution/profiler/version", "no profiler version");
  }
  if (c->loaded_present && !c->has_cupti)
    finding(c, 5, "profiler_library_not_loaded", "/loaded/objects", "no object with role cupti: the profiler was not loaded");
  const json_t *ks = get(c, x, "/execution", "kernels", TY_ARR);
  size_t nk = ks ? json_array_size(ks) : 0;
  if (!nk) finding(c, 5, "kernels_missing", "/execution/kernels", "no kernel record");
  for (size_t i = 0; i < nk && !c->bad; i++) {
    char kp[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(kp, "/execution/kernels", i);
    const json_t *k = json_array_get(ks, i);
    if (keys(c, k, kp, kreq, kopt)) return;
    const char *sym = get_str(c, k, kp, "symbol", 1);
    get_str(c, k, kp, "demangled", 0);
    long long launches = 0, tmp;
    int have_l = get_int(c, k, kp, "launches", 0, &launches);
    const json_t *grid = get_arr_of(c, k, kp, "grid", TY_INT), *block = get_arr_of(c, k, kp, "block", TY_INT);
    get_int(c, k, kp, "registers", 0, &tmp);
    get_int(c, k, kp, "shared_bytes", 0, &tmp);
    if (c->bad) return;
    ptr2(q, kp, "launches");
    if (!have_l) finding(c, 5, "kernel_launches_missing", q, "no launch count for '%s'", sym);
    else if (launches < 1) finding(c, 5, "kernel_launches_not_positive", q, "'%s' was launched 0 times", sym);
    if (!geometry_ok(grid) || !geometry_ok(block)) {
      ptr2(q, kp, !geometry_ok(grid) ? "grid" : "block");
      finding(c, 5, "kernel_geometry_invalid", q, "'%s' has no positive [x, y, z] %s", sym, !geometry_ok(grid) ? "grid" : "block");
    }
  }
  if (c->bad) return;
  const json_t *rk = json_object_get(json_object_get(c->b, "dispatch"), "required_kernels");
  if (c->outcome && !strcmp(c->outcome, "selected"))
    for (size_t i = 0; json_is_array(rk) && i < json_array_size(rk); i++) {
      const char *name = json_string_value(json_array_get(rk, i));
      if (name && !kernel_launched(ks, name)) {
        char q[DKB_PTR_MAX];
        jr_ptr_idx(q, "/dispatch/required_kernels", i);
        finding(c, 5, "required_kernel_not_observed", q, "'%s' is required by the plan but not observed with launches > 0", name);
      }
    }
  /* A fused kernel (layer "producer+combine": its last CTA per group merges the slots, 0x03C) proves both. */
  const int fused = layer_launched(c, ks, "producer+combine") == 1;
  if (layer_launched(c, ks, "producer") == 0 && !fused)
    finding(c, 5, "producer_kernel_not_observed", "/execution/kernels", "no launched kernel is a chain producer node");
  if (c->split_count > 1 && layer_launched(c, ks, "combine") == 0 && !fused)
    finding(c, 5, "combine_kernel_not_observed", "/execution/kernels",
            "split_count %lld but no launched kernel is a chain combine or producer+combine node", c->split_count);
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 6: measured.                                                                               */

/* A comparison {n, violations, nan, inf, max_abs, max_rel, max_ratio, worst_index}. */
static void level6_cmp(struct lctx *c, const json_t *cmp, const char *p, int passed, int is_output) {
  static const char *const req[] = {"n", "violations", "nan", "inf", "max_abs", "max_rel", NULL};
  static const char *const opt[] = {"max_ratio", "worst_index", NULL};
  if (keys(c, cmp, p, req, opt)) return;
  long long n = 0, viol = 0, nan = 0, inf = 0, w;
  double x;
  get_int(c, cmp, p, "n", 0, &n);
  get_int(c, cmp, p, "violations", 0, &viol);
  get_int(c, cmp, p, "nan", 0, &nan);
  get_int(c, cmp, p, "inf", 0, &inf);
  get_num(c, cmp, p, "max_abs", 0, &x);
  get_num(c, cmp, p, "max_rel", 0, &x);
  double ratio = 0;
  const int has_ratio = json_object_get(cmp, "max_ratio") != NULL;
  if (has_ratio) get_num(c, cmp, p, "max_ratio", 0, &ratio);
  const json_t *wi = json_object_get(cmp, "worst_index");
  if (wi && !json_is_null(wi)) get_int(c, cmp, p, "worst_index", 0, &w);
  if (c->bad) return;
  char q[DKB_PTR_MAX];
  if (is_output && n == 0) {
    ptr2(q, p, "n");
    finding(c, 6, "correctness_output_empty", q, "the output comparison compared 0 elements");
  }
  if (passed && (viol || nan || inf)) {
    ptr2(q, p, viol ? "violations" : nan ? "nan" : "inf");
    finding(c, 6, "correctness_passed_with_violations", q, "passed is true with %lld violations, %lld NaN, %lld Inf", viol, nan, inf);
  }
  if (has_ratio && !viol && ratio > 1) {  /* an element beyond its tolerance is a violation */
    ptr2(q, p, "max_ratio");
    finding(c, 6, "correctness_ratio_beyond_tolerance", q, "max_ratio %g > 1 with 0 violations", ratio);
  }
}

static int mutates_cache(const json_t *ck) {
  const char *phase = json_string_value(json_object_get(ck, "phase"));
  return phase && (!strcmp(phase, "append") || !strcmp(phase, "prefill") || !strcmp(phase, "mixed"));
}

static void level6_correctness(struct lctx *c, const json_t *m) {
  static const char *const opt[] = {"reference", "passed", "atol", "rtol", "output", "lse", "cache", "lse_atol",
                                    "lse_rtol", "cache_rule", NULL};
  const char *p = "/measurement/correctness";
  const json_t *cr = get(c, m, "/measurement", "correctness", TY_OBJ);
  if (!cr) { finding(c, 6, "correctness_missing", p, "no comparison against the float64 oracle"); return; }
  if (keys(c, cr, p, NULL, opt)) return;
  if (!get_str(c, cr, p, "reference", 0)) finding(c, 6, "correctness_reference_missing", "/measurement/correctness/reference", "no reference named");
  static const char *const tols[] = {"atol", "rtol"};
  const json_t *frozen = json_object_get(c->call_key, "tolerances");
  for (int i = 0; i < 2; i++) {
    char q[DKB_PTR_MAX];
    double tol;
    ptr2(q, p, tols[i]);
    if (!get_num(c, cr, p, tols[i], 0, &tol)) { finding(c, 6, "correctness_tolerance_missing", q, "no %s", tols[i]); continue; }
    const json_t *f = json_object_get(frozen, tols[i]);
    if (json_is_object(frozen) && !(json_is_number(f) && json_number_value(f) == tol))
      finding(c, 6, "correctness_tolerance_not_frozen", q, "%s %g is not the call key's frozen %s", tols[i], tol, tols[i]);
  }
  const json_t *passed = get(c, cr, p, "passed", TY_BOOL);
  if (c->bad) return;
  if (!passed) finding(c, 6, "correctness_result_missing", "/measurement/correctness/passed", "no pass/fail result");
  else if (!json_is_true(passed))
    finding(c, 6, "correctness_failed", "/measurement/correctness/passed", "correctness failed: timing does not count as a measurement");
  int ok = json_is_true(passed);
  const json_t *out = get(c, cr, p, "output", TY_OBJ);
  if (!out) finding(c, 6, "correctness_output_missing", "/measurement/correctness/output", "no output comparison");
  else level6_cmp(c, out, "/measurement/correctness/output", ok, 1);
  static const char *const parts[] = {"lse", "cache"};
  static const char *const missing[] = {"correctness_lse_missing", "correctness_cache_missing"};
  for (int i = 0; i < 2 && !c->bad; i++) {
    char q[DKB_PTR_MAX];
    ptr2(q, p, parts[i]);
    const json_t *v = json_object_get(cr, parts[i]);
    if (!v) finding(c, 6, missing[i], q, "no %s comparison (or \"not_applicable\")", parts[i]);
    else if (json_is_string(v) && !strcmp(json_string_value(v), "not_applicable")) {
      if (i == 1 && mutates_cache(c->call_key))
        finding(c, 6, "correctness_cache_required", q, "phase %s mutates the cache: its state after the call must be compared",
                json_string_value(json_object_get(c->call_key, "phase")));
    } else if (json_is_object(v)) level6_cmp(c, v, q, ok, 0);
    else malformed(c, q, "must be a comparison object or \"not_applicable\" (got %s)", jr_type_name(v));
  }
}

static void level6_timing(struct lctx *c, const json_t *m) {
  static const char *const opt[] = {"tracing", "method", "warmup", "samples_us", "summary", "stop_rule", "l2_flush",
                                    "clocks_before", "clocks_after", "repeat_check", NULL};
  static const char *const rep_req[] = {"rule", "after_samples", "output_bitwise_equal", NULL};
  static const char *const sum_fields[] = {"count", "min", "median", "p95", "max", "mean", "stdev", "rel_stdev", NULL};
  static const char *const stop_req[] = {"rule", "min_samples", "max_samples", "max_rel_stdev", "met", NULL};
  const char *p = "/measurement/timing";
  const json_t *t = get(c, m, "/measurement", "timing", TY_OBJ);
  if (!t) { finding(c, 6, "timing_missing", p, "no timing pass"); return; }
  if (keys(c, t, p, NULL, opt)) return;
  const json_t *tracing = get(c, t, p, "tracing", TY_BOOL);
  if (!tracing || json_is_true(tracing))
    finding(c, 6, "timing_under_tracing", "/measurement/timing/tracing",
            tracing ? "the timing pass ran with tracing enabled" : "the timing pass does not say that tracing was off");
  if (!get_str(c, t, p, "method", 0)) finding(c, 6, "timing_method_missing", "/measurement/timing/method", "no timing method");
  long long warm = 0;
  if (!get_int(c, t, p, "warmup", 0, &warm) || warm == 0)
    finding(c, 6, "timing_warmup_missing", "/measurement/timing/warmup", "no warm-up iterations");
  get(c, t, p, "l2_flush", TY_BOOL);
  get(c, t, p, "clocks_before", TY_OBJ);
  get(c, t, p, "clocks_after", TY_OBJ);
  /* optional: a timed kernel that keeps state between calls (or merges nondeterministically) measured
   * something other than the checked call */
  const char *rp = "/measurement/timing/repeat_check";
  const json_t *rep = get(c, t, p, "repeat_check", TY_OBJ);
  if (rep && !keys(c, rep, rp, rep_req, NULL)) {
    long long after = 0;
    get_str(c, rep, rp, "rule", 1);
    get_int(c, rep, rp, "after_samples", 0, &after);
    const json_t *eq = get(c, rep, rp, "output_bitwise_equal", TY_BOOL);
    if (eq && json_is_false(eq))
      finding(c, 6, "timing_output_not_reproduced", "/measurement/timing/repeat_check/output_bitwise_equal",
              "after %lld timed samples, a call on poisoned outputs did not reproduce the checked output", after);
  }
  const json_t *samples = get_arr_of(c, t, p, "samples_us", TY_NUM);
  if (c->bad) return;
  size_t n = samples ? json_array_size(samples) : 0;
  double *s = DKB_MALLOC(n * sizeof *s);
  size_t nonpos = 0, first_nonpos = 0;
  for (size_t i = 0; i < n; i++) {
    s[i] = json_number_value(json_array_get(samples, i));
    if (!(s[i] > 0) && !nonpos++) first_nonpos = i;
  }
  if (!samples) finding(c, 6, "timing_samples_missing", "/measurement/timing/samples_us", "no raw samples: a summary alone is not a measurement");
  else if (n < 20)
    finding(c, 6, "timing_too_few_samples", "/measurement/timing/samples_us", "%zu raw sample%s, at least 20 required", n, n == 1 ? "" : "s");
  if (nonpos) {
    char q[DKB_PTR_MAX];
    jr_ptr_idx(q, "/measurement/timing/samples_us", first_nonpos);
    finding(c, 6, "timing_sample_not_positive", q, "%zu sample%s <= 0 (first: %g)", nonpos, nonpos == 1 ? "" : "s", s[first_nonpos]);
  }
  struct dkb_stats st;
  dkb_stats_compute(s, n, &st);
  free(s);
  const json_t *sum = get(c, t, p, "summary", TY_OBJ);
  if (!sum) finding(c, 6, "timing_summary_missing", "/measurement/timing/summary", "no summary of the raw samples");
  else if (!keys(c, sum, "/measurement/timing/summary", sum_fields, NULL) && samples) {
    const double want[] = {(double)st.count, st.min, st.median, st.p95, st.max, st.mean, st.stdev, st.rel_stdev};
    for (int i = 0; sum_fields[i] && !c->bad; i++) {
      char q[DKB_PTR_MAX];
      ptr2(q, "/measurement/timing/summary", sum_fields[i]);
      double got;
      if (i == 0) { long long cnt = 0; if (get_int(c, sum, "/measurement/timing/summary", "count", 0, &cnt)) got = (double)cnt; else break; }
      else if (!get_num(c, sum, "/measurement/timing/summary", sum_fields[i], -INFINITY, &got)) break;
      /* the writer uses the same function and round-trip floats: only last-bit differences from other
       * summation orders are tolerated */
      if (!(fabs(got - want[i]) <= 1e-9 * fmax(fabs(got), fabs(want[i])) + 1e-12)) {
        char g[32], w[32];
        cjson_format_double(got, g);
        cjson_format_double(want[i], w);
        finding(c, 6, "timing_summary_mismatch", q, "%s is %s, the raw samples give %s", sum_fields[i], g, w);
      }
    }
  }
  const json_t *stop = get(c, t, p, "stop_rule", TY_OBJ);
  if (!stop) { finding(c, 6, "timing_stop_rule_missing", "/measurement/timing/stop_rule", "no stop rule"); return; }
  static const char *const stop_opt[] = {"stopped_by", "min_time_s", "max_time_s", "elapsed_s", NULL};
  if (keys(c, stop, "/measurement/timing/stop_rule", stop_req, stop_opt)) return;
  const char *sp = "/measurement/timing/stop_rule";
  long long lo = 0, hi = 0;
  double target = -1;
  get_str(c, stop, sp, "rule", 1);
  get_int(c, stop, sp, "min_samples", 1, &lo);
  get_int(c, stop, sp, "max_samples", 1, &hi);
  const json_t *tv = json_object_get(stop, "max_rel_stdev");
  if (!json_is_null(tv)) get_num(c, stop, sp, "max_rel_stdev", 0, &target);
  int met = json_is_true(get(c, stop, sp, "met", TY_BOOL));
  if (c->bad || !samples) return;
  if ((long long)n < lo || (long long)n > hi)
    finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule", "%zu samples outside [min_samples %lld, max_samples %lld]", n, lo, hi);
  else if (met && target >= 0 && st.rel_stdev > target)
    finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "met is true but rel_stdev %g > max_rel_stdev %g", st.rel_stdev, target);
  else if (json_object_get(stop, "stopped_by")) {
    /* the writer says why it stopped: check that reason against the raw samples and its limits */
    const char *by = get_str(c, stop, sp, "stopped_by", 1);
    double min_t = 0, max_t = INFINITY, el = 0, sum_s = 0;
    get_num(c, stop, sp, "min_time_s", 0, &min_t);
    get_num(c, stop, sp, "max_time_s", 0, &max_t);
    get_num(c, stop, sp, "elapsed_s", 0, &el);
    for (size_t i = 0; i < n; i++) sum_s += json_number_value(json_array_get(samples, i)) * 1e-6;
    if (c->bad || !by) return;
    if (!strcmp(by, "noise_reached")) {
      if (!met) finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "stopped_by noise_reached but met is false");
      else if (sum_s < min_t * (1 - 1e-9))
        finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/min_time_s",
                "stopped on noise after %.6g s of samples, before min_time_s %g", sum_s, min_t);
    } else if (!strcmp(by, "noise_stable")) {
      if (met) finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "stopped_by noise_stable means the target was not met");
      else if (sum_s < min_t * (1 - 1e-9))
        finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/min_time_s",
                "stopped on stable noise after %.6g s of samples, before min_time_s %g", sum_s, min_t);
    } else if (!strcmp(by, "max_time")) {
      if (met || !(el >= max_t))
        finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/elapsed_s",
                "stopped_by max_time after %.6g s, max_time_s is %g", el, max_t);
    } else if (!strcmp(by, "max_samples")) {
      if ((long long)n != hi)
        finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/max_samples", "stopped_by max_samples at %zu of %lld", n, hi);
    } else {
      finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/stopped_by", "unknown stop reason '%s'", by);
    }
  } else if (!met && (long long)n != hi)
    finding(c, 6, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "met is false but sampling stopped at %zu before max_samples %lld", n, hi);
}

static void level6_measurement(struct lctx *c) {
  static const char *const opt[] = {"correctness", "timing", "counters", "counters_pass", NULL};
  static const char *const creq[] = {"name", "value", NULL};
  static const char *const copt[] = {"unit", "numerator", "denominator", "scope", "replay", NULL};
  static const char *const defs[] = {"unit", "numerator", "denominator", "scope", NULL};
  const json_t *m = get(c, c->b, "", "measurement", TY_OBJ);
  if (!m) { finding(c, 6, "measurement_missing", "/measurement", "no correctness and timing"); return; }
  if (keys(c, m, "/measurement", NULL, opt)) return;
  level6_correctness(c, m);
  level6_timing(c, m);
  const json_t *cs = get(c, m, "/measurement", "counters", TY_ARR);
  for (size_t i = 0; cs && i < json_array_size(cs) && !c->bad; i++) {
    char cp[DKB_PTR_MAX];
    jr_ptr_idx(cp, "/measurement/counters", i);
    const json_t *ct = json_array_get(cs, i);
    if (keys(c, ct, cp, creq, copt)) return;
    const char *name = get_str(c, ct, cp, "name", 1);
    get(c, ct, cp, "value", TY_NUM);
    get_str(c, ct, cp, "replay", 0);
    for (int k = 0; defs[k] && !c->bad; k++)
      if (!get_str(c, ct, cp, defs[k], 0)) {
        char q[DKB_PTR_MAX];
        ptr2(q, cp, defs[k]);
        finding(c, 6, "counter_definition_incomplete", q, "counter '%s' has no %s", name, defs[k]);
      }
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Level 0 and the grade.                                                                           */

static void level0_status(struct lctx *c, const json_t *status) {
  const char *t = c->res->terminal;
  int L = c->res->computed, ceiling = ladder_terminal_ceiling(t);
  const json_t *passed = json_object_get(json_object_get(json_object_get(c->b, "measurement"), "correctness"), "passed");
  /* A launch that failed after a passed check (the timing pass, or the repeat call after it: dkb run on
   * the H200 with an I/O call failing inside libcuda) leaves the checked call's level 5 standing. */
  if (!strcmp(t, "launch_failed") && json_is_true(passed)) ceiling = 5;
  if (ceiling >= 0 && L > ceiling)
    finding(c, 0, "status_contradicts_evidence", "/status/terminal", "terminal state %s stops at level %d, the evidence proves level %d", t, ceiling, L);
  if (!strcmp(t, "complete") && L < LADDER_MAX_LEVEL)
    finding(c, 0, "status_contradicts_evidence", "/status/terminal", "terminal state complete, but the evidence proves only level %d", L);
  const char *want = !strcmp(t, "backend_rejected") ? "rejected" : !strcmp(t, "no_eligible_backend") ? "no_eligible" : NULL;
  if (want && c->outcome && strcmp(c->outcome, want))
    finding(c, 0, "status_contradicts_evidence", "/status/terminal", "terminal state %s, but the dispatch outcome is %s", t, c->outcome);
  if (!strcmp(t, "correctness_failed") && json_is_true(passed))
    finding(c, 0, "status_contradicts_evidence", "/status/terminal", "terminal state correctness_failed, but correctness passed");
  if (strcmp(t, "complete") && !json_array_size(json_object_get(status, "reasons")))
    finding(c, 0, "status_reasons_missing", "/status/reasons", "terminal state %s without a reason", t);
  if (c->res->claimed > L)
    finding(c, 0, "claimed_level_exceeds_computed", "/claimed_level", "claims level %d, the evidence proves level %d", c->res->claimed, L);
  for (size_t i = 0; i < c->narts; i++)
    if (!c->arts[i].referenced && c->arts[i].reason) finding(c, 0, c->arts[i].reason, c->arts[i].pointer, "%s", c->arts[i].detail);
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
  read_header(&c);
  const json_t *status = read_status(&c);
  read_artifacts(&c);
  level1_source(&c);
  level2_chain(&c);
  level3_loaded(&c);
  level4_dispatch(&c);
  level5_execution(&c);
  level6_measurement(&c);
  if (!c.bad) {
    int lowest = LADDER_MAX_LEVEL + 1;
    for (size_t i = 0; i < res->n; i++)
      if (res->findings[i].level >= 1 && res->findings[i].level < lowest) lowest = res->findings[i].level;
    res->computed = lowest - 1;
    level0_status(&c, status);
    sort_by_level(res->findings, res->n);
  }
  free(c.arts);
  return c.bad ? -1 : 0;
}
