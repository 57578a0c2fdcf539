/* schedule_contract.c - contract kinds of the paper schedules (article 0x09, 0x0AB, 0x0AD):
 * "schedule_fa2_splits", "schedule_flashinfer_plan", "schedule_work", "schedule_shared_shift" and
 * "schedule_paper_axes": fixture input -> schedule.h calls -> report. The failure table of 0x09I is
 * enforced here: each invalid inference is executed or checked and rejected with its reason. The
 * row "average Flash-Decoding outputs" is the split-state failure of 0x02F and lives there
 * (split_state.invalid.averaging_without_lse). */
#include "contracts/contract.h"
#include "oracles/schedule.h"
#include "oracles/split_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1LL << 53)

/* ---- schedule_fa2_splits --------------------------------------------------------------------- */

int oracle_eval_schedule_fa2_splits(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                    struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"cases", NULL};
  char cp[DKB_PTR_MAX], p[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, NULL)) return -1;
  const json_t *cases = jr_get(r, in, ptr, "cases", 1, JSON_ARRAY);
  if (!cases) return -1;
  jr_ptr_key(cp, ptr, "cases");
  json_t *out = json_array();
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    static const char *const creq[] = {"name", "blocks", "num_sms", "num_kv_blocks", "max_splits", NULL};
    const char *name;
    long long blocks, sms, nk, ms;
    jr_ptr_idx(p, cp, i);
    if (jr_keys(r, c, p, creq, NULL) || jr_str(r, c, p, "name", 1, &name) ||
        jr_int(r, c, p, "blocks", 1, 1, BIG, &blocks) || jr_int(r, c, p, "num_sms", 1, 1, 1 << 20, &sms) ||
        jr_int(r, c, p, "num_kv_blocks", 1, 1, 1 << 30, &nk) || jr_int(r, c, p, "max_splits", 1, 1, 1 << 20, &ms)) {
      json_decref(out);
      return -1;
    }
    struct sched_fa2_trace *t = DKB_MALLOC(sizeof *t);
    int splits = sched_fa2_num_splits(blocks, (int)sms, (int)nk, (int)ms, t);
    json_t *eff = json_array(), *el = json_array();
    for (size_t s = 0; s < t->n; s++) {
      json_array_append_new(eff, json_real(t->efficiency[s]));
      json_array_append_new(el, json_boolean(t->eligible[s]));
    }
    json_array_append_new(out, json_pack("{s:s,s:i,s:b,s:i,s:f,s:o,s:o}", "name", name, "splits", splits, "early_exit",
                                         t->early_exit, "cap", t->cap, "best_efficiency", (double)t->best,
                                         "efficiency", eff, "eligible", el));
    free(t);
  }
  *report = json_pack("{s:o}", "cases", out);
  return 0;
}

/* ---- schedule_flashinfer_plan ---------------------------------------------------------------- */

int oracle_eval_schedule_flashinfer_plan(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                         struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"num_pages", "num_kv_heads", "num_sms", "ctas_per_sm", "page_size", "cuda_graph",
                                    NULL};
  static const char *const opt[] = {"min_chunk_pages", NULL};
  long long *pages = NULL, hkv, sms, cps, ps, minc = 0;
  size_t n = 0;
  int graph;
  if (jr_keys(r, in, ptr, req, opt) || jr_int_array(r, in, ptr, "num_pages", 1, 0, BIG, -1, &pages, &n) ||
      jr_int(r, in, ptr, "num_kv_heads", 1, 1, 1 << 20, &hkv) || jr_int(r, in, ptr, "num_sms", 1, 1, 1 << 20, &sms) ||
      jr_int(r, in, ptr, "ctas_per_sm", 1, 1, 1 << 10, &cps) || jr_int(r, in, ptr, "page_size", 1, 1, 1 << 20, &ps) ||
      jr_bool(r, in, ptr, "cuda_graph", 1, &graph) || jr_int(r, in, ptr, "min_chunk_pages", 0, 1, BIG, &minc)) {
    free(pages);
    return -1;
  }
  if (n == 0) { free(pages); return jr_fail(r, ptr, "num_pages", "must not be empty"); }
  struct sched_fi_plan p;
  sched_fi_decode_plan(pages, n, hkv, (int)sms, (int)cps, ps, graph, minc, &p);
  *report = json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o}", "split_kv", p.split_kv, "max_grid",
                      (json_int_t)p.max_grid, "gdy", (json_int_t)p.gdy, "chunk_pages", (json_int_t)p.chunk_pages,
                      "chunk_tokens", (json_int_t)p.chunk_tokens, "new_batch_size", (json_int_t)p.new_batch_size,
                      "padded_batch_size", (json_int_t)p.padded_batch_size, "request_indices",
                      oracle_int_array(p.request_indices, (size_t)p.o_indptr[n]), "kv_tile_indices",
                      oracle_int_array(p.kv_tile_indices, (size_t)p.o_indptr[n]), "o_indptr",
                      oracle_int_array(p.o_indptr, n + 1));
  sched_fi_plan_release(&p);
  free(pages);
  return 0;
}

/* ---- schedule_work --------------------------------------------------------------------------- */

static json_t *schedule_json(const struct sched_schedule *s) {
  json_t *workers = json_array();
  for (int w = 0; w < s->workers; w++) {
    json_t *frags = json_array();
    for (size_t i = 0; i < s->nfrag; i++)
      if (s->frag[i].worker == w)
        json_array_append_new(frags, json_pack("{s:I,s:I,s:I,s:I}", "output", (json_int_t)s->frag[i].output, "start",
                                               (json_int_t)s->frag[i].start, "end", (json_int_t)s->frag[i].end, "units",
                                               (json_int_t)(s->frag[i].end - s->frag[i].start)));
    json_array_append_new(workers, json_pack("{s:I,s:I,s:o}", "load", (json_int_t)s->load[w], "outputs",
                                             (json_int_t)sched_worker_outputs(s, w), "fragments", frags));
  }
  return json_pack("{s:o,s:I,s:I,s:f,s:f,s:f,s:o}", "loads", oracle_int_array(s->load, (size_t)s->workers), "total",
                   (json_int_t)s->total, "max", (json_int_t)s->max_load, "mean", s->mean, "max_over_mean",
                   s->max_over_mean, "efficiency", s->efficiency, "workers", workers);
}

static const char *const FRAGMENT_STATE[] = {"per_output_fragment", "per_worker", NULL};
static const char *const AGGREGATION[] = {"ordered", "atomic", NULL};
static const char *const CLAIM[] = {"logical_work_units", "measured_occupancy", NULL};

int oracle_eval_schedule_work(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                              struct oracle_reject *rej) {
  static const char *const req[] = {"work", "workers", "fixed_splits", NULL};
  static const char *const opt[] = {"q_len", "q_tile", "alpha", "beta", "fragment_state", "aggregation",
                                    "claim_deterministic", "claim", NULL};
  long long *work = NULL, *q_len = NULL, workers, splits, q_tile = 1;
  size_t n = 0, nq = 0;
  double alpha = 0, beta = 1;
  int state = 0, aggregation = 0, claim_det = 0, claim = 0, rc = -1;
  struct sched_schedule fixed = {0}, global = {0}, planned = {0};
  if (jr_keys(r, in, ptr, req, opt) || jr_int_array(r, in, ptr, "work", 1, 0, BIG, -1, &work, &n) ||
      jr_int(r, in, ptr, "workers", 1, 1, 1 << 20, &workers) ||
      jr_int(r, in, ptr, "fixed_splits", 1, 1, 1 << 20, &splits) ||
      jr_int_array(r, in, ptr, "q_len", 0, 1, BIG, (long)n, &q_len, &nq) ||
      jr_int(r, in, ptr, "q_tile", 0, 1, 1 << 20, &q_tile) || jr_num(r, in, ptr, "alpha", 0, 0, 1e12, &alpha) ||
      jr_num(r, in, ptr, "beta", 0, 0, 1e12, &beta) ||
      jr_enum(r, in, ptr, "fragment_state", 0, FRAGMENT_STATE, &state) ||
      jr_enum(r, in, ptr, "aggregation", 0, AGGREGATION, &aggregation) ||
      jr_bool(r, in, ptr, "claim_deterministic", 0, &claim_det) || jr_enum(r, in, ptr, "claim", 0, CLAIM, &claim))
    goto cleanup;
  if (n == 0) { jr_fail(r, ptr, "work", "must not be empty"); goto cleanup; }
  sched_fixed_splits(work, n, (int)splits, (int)workers, &fixed);
  sched_global_equal(work, n, (int)workers, &global);
  sched_planned_chunks(work, q_len, n, (int)workers, q_tile, alpha, beta, &planned);
  if (claim == 1) {
    rc = oracle_reject(rej, "logical_work_is_not_measurement",
                       "max/mean %.3g is a ratio of logical K/V units; equal units do not prove equal cycles, occupancy "
                       "or latency without profiler and timing evidence", planned.max_over_mean);
    goto cleanup;
  }
  if (state == 1)
    for (int w = 0; w < (int)workers; w++)
      if (sched_worker_outputs(&global, w) > 1) {
        rc = oracle_reject(rej, "merged_output_identities",
                           "worker %d holds fragments of %zu outputs in the global schedule; one state per worker would "
                           "merge softmax rows of different outputs", w, sched_worker_outputs(&global, w));
        goto cleanup;
      }
  if (aggregation == 1 && claim_det) {
    rc = oracle_reject(rej, "atomic_aggregation_claimed_deterministic",
                       "atomic aggregation of partial states has no frozen order; associativity in real arithmetic does "
                       "not make the floating-point result bitwise reproducible");
    goto cleanup;
  }
  json_t *chunks = json_array();
  for (size_t i = 0; i < planned.nfrag; i++)
    json_array_append_new(chunks, json_integer(planned.frag[i].end - planned.frag[i].start));
  json_t *pj = schedule_json(&planned);
  json_object_set_new(pj, "chunk_limit", json_integer(planned.chunk_limit));
  json_object_set_new(pj, "sorted_chunks", chunks);
  *report = json_pack("{s:o,s:o,s:o,s:s}", "fixed_splits", schedule_json(&fixed), "global_equal",
                      schedule_json(&global), "planned_chunks", pj, "evidence", "logical_work_units_not_measured");
  rc = 0;
cleanup:
  sched_schedule_release(&fixed);
  sched_schedule_release(&global);
  sched_schedule_release(&planned);
  free(work);
  free(q_len);
  return rc;
}

/* ---- schedule_shared_shift ------------------------------------------------------------------- */

static const char *const GUARD[] = {"range_check_with_fallback", "none", NULL};

/* Reads ranges [[a,b],...] into a malloc'ed array. */
static int read_parts(struct jr *r, const json_t *in, const char *ptr, long long (**parts)[2], size_t *np) {
  const json_t *a = jr_get(r, in, ptr, "partitions", 1, JSON_ARRAY);
  if (!a) return -1;
  char p[DKB_PTR_MAX], e[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, "partitions");
  *np = json_array_size(a);
  if (*np == 0) return jr_fail(r, ptr, "partitions", "must not be empty");
  *parts = DKB_CALLOC(*np, sizeof **parts);
  for (size_t i = 0; i < *np; i++) {
    const json_t *g = json_array_get(a, i);
    jr_ptr_idx(e, p, i);
    if (!json_is_array(g) || json_array_size(g) != 2 || !json_is_integer(json_array_get(g, 0)) ||
        !json_is_integer(json_array_get(g, 1)))
      return jr_fail(r, e, NULL, "must be a half-open range [start, end] of two integers");
    (*parts)[i][0] = json_integer_value(json_array_get(g, 0));
    (*parts)[i][1] = json_integer_value(json_array_get(g, 1));
  }
  return 0;
}

int oracle_eval_schedule_shared_shift(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                      struct oracle_reject *rej) {
  static const char *const req[] = {"rows", "partitions", "phi", "range", NULL};
  static const char *const opt[] = {"guard", "phi_per_partition", NULL};
  long long (*parts)[2] = NULL;
  size_t np = 0, nr = 0, nphi = 0;
  double phi, *range = NULL, *phis = NULL;
  int guard = 0, rc = -1;
  json_t *rows_out = NULL;
  char rp[DKB_PTR_MAX], p[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, opt) || read_parts(r, in, ptr, &parts, &np) ||
      jr_num(r, in, ptr, "phi", 1, -1e300, 1e300, &phi) ||
      jr_num_array(r, in, ptr, "range", 1, -1e300, 1e300, 2, &range, &nr) ||
      jr_enum(r, in, ptr, "guard", 0, GUARD, &guard) ||
      jr_num_array(r, in, ptr, "phi_per_partition", 0, -1e300, 1e300, (long)np, &phis, &nphi))
    goto cleanup;
  if (!(range[0] < range[1])) { jr_fail(r, ptr, "range", "must be [lower, upper] with lower < upper"); goto cleanup; }
  const json_t *rows = jr_get(r, in, ptr, "rows", 1, JSON_ARRAY);
  if (!rows) goto cleanup;
  jr_ptr_key(rp, ptr, "rows");
  rows_out = json_array();
  for (size_t i = 0; i < json_array_size(rows); i++) {
    const json_t *row = json_array_get(rows, i);
    static const char *const rreq[] = {"scores", "values", NULL};
    double *sc = NULL, *va = NULL;
    size_t n = 0, nv = 0;
    jr_ptr_idx(p, rp, i);
    if (jr_keys(r, row, p, rreq, NULL) || jr_num_array(r, row, p, "scores", 1, -1e300, 1e300, -1, &sc, &n) ||
        jr_num_array(r, row, p, "values", 1, -1e300, 1e300, -1, &va, &nv)) {
      free(sc); free(va);
      goto cleanup;
    }
    if (n == 0 || nv % n) {
      free(sc); free(va);
      jr_fail(r, p, "values", "must hold d values per score (%zu scores, got %zu values)", n, nv);
      goto cleanup;
    }
    size_t d = nv / n;
    double *o = DKB_CALLOC(d, sizeof *o), *ref = DKB_CALLOC(d, sizeof *ref), ref_lse;
    /* exact dense reference over the whole row */
    struct ss_state dense = {.u = DKB_CALLOC(d, sizeof(double))};
    ss_summarize(sc, va, NULL, 0, n, d, SS_F64, &dense);
    ss_finalize(&dense, d, ref, &ref_lse);
    free(dense.u);
    struct sched_shift_result res;
    int bad = sched_shared_shift(sc, va, n, d, (const long long (*)[2])parts, np, phi, range[0], range[1], o, &res);
    int stop = 0;
    if (bad) stop = jr_fail(r, ptr, "partitions", "must cover [0, %zu) of row %zu exactly once", n, i);
    else if (phis) {
      /* sum raw partials taken in different frames: the invalid composition */
      double num0 = 0, den = 0;
      int differ = 0;
      for (size_t j = 0; j < np; j++) {
        differ |= phis[j] != phis[0];
        for (long long k = parts[j][0]; k < parts[j][1]; k++) {
          double e = exp(sc[k] - phis[j]);
          den += e;
          num0 += e * va[(size_t)k * d];
        }
      }
      if (differ)
        stop = oracle_reject(rej, "mixed_shift_frames",
                             "row %zu: partitions shifted by different phi summed raw give O[0] = %.10g, exact %.10g; "
                             "freeze one shift or rescale before composing", i, num0 / den, ref[0]);
    } else if (guard == 1 && res.fallback) {
      stop = oracle_reject(rej, "missing_shift_fallback",
                           "row %zu: position %zu has delta = %.6g outside (%.6g, %.6g); without the guard exp(delta) = "
                           "%.6g%s is used unchecked - the profiled range is not a proof for every row", i,
                           res.guard_index, res.guard_delta, range[0], range[1], exp(res.guard_delta),
                           exp(res.guard_delta) > 65504 ? " (beyond the float16 maximum 65504)" : "");
    }
    if (stop) { free(sc); free(va); free(o); free(ref); rc = stop; goto cleanup; }
    double err = 0;
    for (size_t x = 0; x < d; x++) err = fmax(err, fabs(o[x] - ref[x]));
    json_t *row_out = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "path", res.fallback ? "synchronized_fallback" : "shared_shift",
                               "O", oracle_num_array(o, d), "LSE", oracle_num(res.lse), "exact_O",
                               oracle_num_array(ref, d), "exact_LSE", oracle_num(ref_lse), "max_abs_err",
                               oracle_num(err));
    if (res.fallback)
      json_object_set_new(row_out, "guard", json_pack("{s:I,s:I,s:o}", "partition", (json_int_t)res.guard_part, "index",
                                                      (json_int_t)res.guard_index, "delta", oracle_num(res.guard_delta)));
    json_array_append_new(rows_out, row_out);
    free(sc); free(va); free(o); free(ref);
  }
  *report = json_pack("{s:O}", "rows", rows_out);
  rc = 0;
cleanup:
  json_decref(rows_out);
  free(parts);
  free(range);
  free(phis);
  return rc;
}

/* ---- schedule_paper_axes (0x09A, 0x09F) ------------------------------------------------------ */

static const char *const AXES[] = {"problem_phase", "parallel_axis", "work_granularity", "partial_state_abi",
                                   "reduction_topology", "planning_locus", "cache_address_contract",
                                   "numerical_policy", "measurement_coordinate", NULL};

/* 0x09F: the axis each orthogonal method changes. */
static const struct { const char *method, *axis; } ORTHOGONAL[] = {
    {"paged_attention", "cache_address_contract"}, {"vattention", "cache_address_contract"},
    {"flashmask", "mask_representation"},          {"pod_attention", "phase_overlap"},
    {"fa3_fa4", "hardware_pipeline"},
};

int oracle_eval_schedule_paper_axes(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                    struct oracle_reject *rej) {
  static const char *const req[] = {"methods", NULL};
  static const char *const opt[] = {"claimed_interchangeable", "orthogonal", NULL};
  char mp[DKB_PTR_MAX], p[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, opt)) return -1;
  const json_t *methods = jr_get(r, in, ptr, "methods", 1, JSON_OBJECT);
  if (!methods) return -1;
  jr_ptr_key(mp, ptr, "methods");
  const char *name;
  json_t *m;
  json_object_foreach((json_t *)methods, name, m) {
    jr_ptr_key(p, mp, name);
    if (jr_keys(r, m, p, AXES, NULL)) return -1;
    for (int a = 0; AXES[a]; a++) {
      const char *v;
      if (jr_str(r, m, p, AXES[a], 1, &v)) return -1;
    }
  }
  const json_t *orth = jr_get(r, in, ptr, "orthogonal", 0, JSON_OBJECT);
  if (!orth && json_object_get(in, "orthogonal")) return -1;
  jr_ptr_key(mp, ptr, "orthogonal");
  json_t *v;
  json_object_foreach((json_t *)orth, name, v) {
    const char *axis = NULL;
    if (jr_str(r, orth, mp, name, 1, &axis)) return -1;
    size_t k = 0;
    while (k < sizeof ORTHOGONAL / sizeof *ORTHOGONAL && strcmp(ORTHOGONAL[k].method, name)) k++;
    if (k == sizeof ORTHOGONAL / sizeof *ORTHOGONAL) return jr_fail(r, mp, name, "not a method of the 0x09F table");
    if (strcmp(axis, ORTHOGONAL[k].axis))
      return oracle_reject(rej, "orthogonal_axis_misclassified",
                           "%s changes the %s axis, not %s: it does not choose work ownership or the reduction", name,
                           ORTHOGONAL[k].axis, axis);
  }
  /* pairwise: every pair of methods differs on at least one of the nine axes */
  json_t *pairs = json_array();
  size_t npairs = 0, ndiffer = 0;
  const char *a_name;
  json_t *a;
  json_object_foreach((json_t *)methods, a_name, a) {
    const char *b_name;
    json_t *b;
    int after = 0;
    json_object_foreach((json_t *)methods, b_name, b) {
      if (!strcmp(a_name, b_name)) { after = 1; continue; }
      if (!after) continue;
      json_t *diff = json_array();
      for (int k = 0; AXES[k]; k++)
        if (!json_equal(json_object_get(a, AXES[k]), json_object_get(b, AXES[k])))
          json_array_append_new(diff, json_string(AXES[k]));
      npairs++;
      ndiffer += json_array_size(diff) > 0;
      json_array_append_new(pairs, json_pack("{s:[s,s],s:o}", "methods", a_name, b_name, "differing_axes", diff));
    }
  }
  const json_t *claims = jr_get(r, in, ptr, "claimed_interchangeable", 0, JSON_ARRAY);
  if (!claims && json_object_get(in, "claimed_interchangeable")) { json_decref(pairs); return -1; }
  jr_ptr_key(mp, ptr, "claimed_interchangeable");
  for (size_t i = 0; i < json_array_size(claims); i++) {
    const json_t *c = json_array_get(claims, i);
    jr_ptr_idx(p, mp, i);
    const char *x = json_string_value(json_array_get(c, 0)), *y = json_string_value(json_array_get(c, 1));
    if (!json_is_array(c) || json_array_size(c) != 2 || !x || !y || !json_object_get(methods, x) ||
        !json_object_get(methods, y)) {
      json_decref(pairs);
      return jr_fail(r, p, NULL, "must name two methods of /methods");
    }
    for (int k = 0; AXES[k]; k++)
      if (!json_equal(json_object_get(json_object_get(methods, x), AXES[k]),
                      json_object_get(json_object_get(methods, y), AXES[k]))) {
        json_decref(pairs);
        return oracle_reject(rej, "interchangeable_label_hides_axes",
                             "%s and %s are called the same method but differ on %s (and maybe more): compare all nine "
                             "contract axes", x, y, AXES[k]);
      }
  }
  *report = json_pack("{s:I,s:I,s:I,s:o}", "methods", (json_int_t)json_object_size(methods), "pairs",
                      (json_int_t)npairs, "pairs_differing", (json_int_t)ndiffer, "differences", pairs);
  return 0;
}
