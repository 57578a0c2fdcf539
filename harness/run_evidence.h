/* run_evidence.h - the sections one `dkb run` adds to its bundle (schemas/bundle.schema.json), each built
 * from what a stage of harness/runner.c observed: levels 1-2 (source and chain: dkb's, and a plugin's
 * manifest merged in), 3 (what is loaded), 4 (admission and the selected backend's plan), 5 (the traced
 * execution), 6 (correctness in dkb's conventions, timing, counters). Nothing here launches anything.
 * Levels 1-3 are built in run_evidence_source.c, the others in run_evidence.c. */
#ifndef DKB_RUN_EVIDENCE_H
#define DKB_RUN_EVIDENCE_H

#include <stddef.h>

#include <jansson.h>

#include "harness/backends.h"
#include "harness/counters.h"
#include "harness/decode_call.h"
#include "harness/device.h"
#include "harness/inputs.h"
#include "harness/timing.h"
#include "harness/trace.h"
#include "include/dkb/backend.h"
#include "lib/err.h"
#include "oracles/compare.h"

/* 0 when a backend's plan is one dkb can run and record: known workspace kinds, LSE base, empty-row value,
 * kernel roles and match kinds, launch flags; splits >= 1; a plan document that is a JSON object; no
 * host-reading or synchronizing launch in graph mode. Else -1 with why ("workspace 'x' has kind 7, which
 * dkb does not know"). */
int run_evidence_plan_check(const struct dkb_plan *plan, int graph, char *why, size_t n);
/* Bytes the launches write in workspaces: scratch and zero-on-first-use regions (persistent plan data is
 * listed in the plan record, not counted). */
long long run_evidence_workspace_bytes(const struct dkb_plan *plan);

/* /dispatch: the admission record (an artifact), every candidate, the outcome and, with a plan, the
 * split count, workspace bytes, the plan document, the plan key and its digest, the backend record
 * (source, version, workspaces with kinds, declared kernels, conventions, launch flags) and the
 * required kernels. plan NULL: admission only (nothing selected, or its plan failed). */
int run_evidence_dispatch(json_t *bundle, const char *dir, const struct decode_call *c, const char call_sha[65],
                          const struct backend_admission *ba, const struct backend_info *sel, const struct dkb_plan *plan,
                          struct dkb_err *err);

/* /execution from a capture: the trace artifact, the NVTX range, every kernel launched in it. summary gets
 * "name xN, ..." for people. */
int run_evidence_execution(json_t *bundle, const char *dir, struct dkb_trace *tr, const char *range, char *summary,
                           size_t summary_n, struct dkb_err *err);

/* What the correctness check compares: the backend's outputs as written (never modified here) against
 * the oracle, after the conversions the plan's conventions call for. */
struct run_check {
  const struct decode_call *c;
  const struct decode_inputs *in;
  const struct dkb_plan *plan;
  const double *o_ref, *lse_ref;
  const void *o_gpu;
  const float *lse_gpu;
  const void *k_after, *v_after;   /* append calls: the caches after the call */
};
struct run_check_result {
  int passed;
  struct dkb_cmp out, lse, cache;  /* lse, cache: compared when has_lse, has_cache */
  int has_lse, has_cache;
};
/* /measurement/correctness: the one tolerance rule over O, LSE and the cache, and the conversions made
 * (a base-2 LSE times ln 2; a backend's empty-row value to O = 0, LSE = -inf where the oracle's row is
 * empty), counted. */
json_t *run_evidence_correctness(const struct run_check *k, struct run_check_result *out);
/* What failed, one clause per failing part ("O: 3 of 4096 elements outside ...; LSE: ..."), into buf. */
void run_check_failure_text(const struct run_check_result *r, double atol, double rtol, double lse_atol, double lse_rtol,
                            char *buf, size_t n);

/* /measurement/timing/repeat_check/difference, when the call after the timed samples did not reproduce the
 * checked call bitwise: its raw O and LSE against the checked call's, element by element (atol 0, rtol 0),
 * and whether they still pass the float64 oracle under the call's tolerances (a nondeterministic merge
 * order within tolerance reads differently from state kept between calls). summary gets one line. */
json_t *run_evidence_repeat_difference(const struct run_check *k, const void *o_again, const float *lse_again,
                                       char *summary, size_t n);
/* /measurement/timing/repeat_check of the call after `after` timed samples (o_again, lse_again: its raw
 * outputs; o_bytes, lse_bytes: their sizes, lse 0 without LSE). Its contract is the plan's: "bitwise"
 * (the checked output's bits) unless the plan declares DKB_LAUNCH_NONDETERMINISTIC, then "tolerance"
 * (the float64 oracle under the call's tolerances). *same: bitwise equal; *held: the contract holds. */
json_t *run_evidence_repeat_check(const struct run_check *k, const void *o_again, const float *lse_again, size_t o_bytes,
                                  size_t lse_bytes, size_t after, int *same, int *held, char *summary, size_t n);

/* /measurement/timing from a timing pass (before/after: NVML samples or NULL; nvml_loaded: whether
 * libnvidia-ml.so.1 was found). NULL with err when the samples do not summarize. */
json_t *run_evidence_timing(const struct dkb_timing *tm, const struct dkb_timing_opts *to, json_t *before, json_t *after,
                            int nvml_loaded, struct dkb_err *err);
/* /measurement/counters_pass and /measurement/counters. */
void run_evidence_counters(json_t *meas, const struct dkb_counters *cn, int cold);

/* /source and /chain: dkb's build-time manifest; when a plugin's backend was selected, dkb's nodes above
 * the backend boundary (those not scoped "builtin") joined to the plugin's chain, and its files. */
int run_evidence_source(json_t *bundle, const struct backend_info *sel, struct dkb_err *err);
/* /loaded: the loader map and build report artifacts, the device, dkb's kernel binaries (its own backends)
 * or the plugin's library, manifest and build report (a plugin's). */
int run_evidence_loaded(json_t *bundle, const char *dir, const struct dkb_device_info *dev,
                        const struct backend_info *sel, void *state, struct dkb_err *err);

#endif
