/* bench_claims_contract.c - contract kinds "bench_manifest" and "bench_estimators" (article 0x0C):
 * a source-reported benchmark manifest is audited (sources pinned, rows tied to a source, units,
 * baselines, estimators, ranges, conflicts, evidence classes, comparability through bench_claims.h)
 * and the twelve invalid promotions of 0x0CI are rejected with their reasons. The report is not a
 * leaderboard: it counts partial coordinates, comparable pairs, conflicts and local evidence. */
#include "oracles/bench_claims.h"
#include "contracts/contract.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 256

static const char *const CLAIM_CLASSES[] = {"source_reported",  "transcription_audited", "algebraically_re_expressed",
                                            "figure_digitized", "locally_reproduced",    "independently_compared",
                                            NULL};
static const char *const QUANTITIES[] = {"speedup", "latency_reduction", NULL};
static const char *const UNITS[] = {"x", "percent", NULL};
/* How the source words the number, and the estimator that wording fixes. */
static const char *const WORDINGS[] = {"up_to", "maximum_at_point", "average", "range", "point", NULL};
static const char *const ESTIMATORS[] = {"max", "max", "mean", "range", "point", NULL};
static const char *const ESTIMATOR_NAMES[] = {"max", "mean", "range", "point", NULL};

struct row {
  const char *id, *source;
  size_t source_index;
  struct bench_key key;
  int claim_class, quantity, unit, wording, estimator;
  double lo, hi;          /* range endpoints, or lo = hi = value */
  const json_t *missing;  /* array of strings */
};

static int read_key(struct jr *r, const json_t *row, const char *ptr, struct bench_key *k) {
  const json_t *kj = jr_get(r, row, ptr, "key", 1, JSON_OBJECT);
  if (!kj) return -1;
  char p[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, "key");
  if (jr_keys(r, kj, p, BENCH_FIELD_NAMES, NULL)) return -1;
  for (int f = 0; f < BF_COUNT; f++) {
    const json_t *v = json_object_get(kj, BENCH_FIELD_NAMES[f]);
    if (json_is_null(v)) { k->field[f] = NULL; continue; }
    if (jr_str(r, kj, p, BENCH_FIELD_NAMES[f], 1, &k->field[f])) return -1;
  }
  return 0;
}

static json_t *field_names(unsigned bits) {
  json_t *a = json_array();
  for (int f = 0; f < BF_COUNT; f++)
    if (bits & (1u << f)) json_array_append_new(a, json_string(BENCH_FIELD_NAMES[f]));
  return a;
}

static int find_row(const struct row *rows, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].id, id)) return (int)i;
  return -1;
}

/* A pair [id, id] of rows; -1 on a malformed pair. */
static int read_pair(struct jr *r, const json_t *pair, const char *ptr, const struct row *rows, size_t n, int *a, int *b) {
  const char *x = json_string_value(json_array_get(pair, 0)), *y = json_string_value(json_array_get(pair, 1));
  if (!json_is_array(pair) || json_array_size(pair) != 2 || !x || !y || (*a = find_row(rows, n, x)) < 0 ||
      (*b = find_row(rows, n, y)) < 0)
    return jr_fail(r, ptr, NULL, "must name two row ids");
  return 0;
}

static int read_row(struct jr *r, const json_t *rj, const char *p, const json_t *sources, struct row *w,
                    struct oracle_reject *rej) {
  static const char *const req[] = {"id", "source", "locator", "claim_class", "quantity", "wording", "estimator", "unit",
                                    "baseline", "key", "missing", NULL};
  static const char *const opt[] = {"value", "range", "aggregation_rule", "note", NULL};
  const char *locator, *est_name;
  int est_index = 0;
  if (jr_keys(r, rj, p, req, opt) || jr_str(r, rj, p, "id", 1, &w->id) || jr_str(r, rj, p, "source", 1, &w->source) ||
      jr_str(r, rj, p, "locator", 1, &locator) || jr_enum(r, rj, p, "claim_class", 1, CLAIM_CLASSES, &w->claim_class) ||
      jr_enum(r, rj, p, "quantity", 1, QUANTITIES, &w->quantity) || jr_enum(r, rj, p, "unit", 1, UNITS, &w->unit) ||
      jr_enum(r, rj, p, "wording", 1, WORDINGS, &w->wording) ||
      jr_enum(r, rj, p, "estimator", 1, ESTIMATOR_NAMES, &est_index) || read_key(r, rj, p, &w->key))
    return -1;
  est_name = ESTIMATOR_NAMES[est_index];
  if (!(w->missing = jr_get(r, rj, p, "missing", 1, JSON_ARRAY))) return -1;
  w->source_index = (size_t)-1;
  for (size_t s = 0; s < json_array_size(sources); s++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(sources, s), "id")), w->source)) w->source_index = s;
  if (w->source_index == (size_t)-1)
    return oracle_reject(rej, "unknown_source_id", "row %s cites source '%s', which is not in /sources: the value has "
                         "no primary-source coordinate", w->id, w->source);
  if (w->quantity == 1 && w->unit == 0)
    return oracle_reject(rej, "reduction_relabelled_as_speedup",
                         "row %s is a latency reduction written in x: a reduction R is a percentage and converts to "
                         "S = 1/(1-R), not to 1 + R", w->id);
  if (w->quantity == 0 && w->unit == 1)
    return oracle_reject(rej, "speedup_relabelled_as_reduction", "row %s is a speedup written in percent", w->id);
  if (strcmp(ESTIMATORS[w->wording], est_name))
    return oracle_reject(rej, "estimator_relabelled", "row %s: the source says '%s', which is a %s, but the row records %s",
                         w->id, WORDINGS[w->wording], ESTIMATORS[w->wording], est_name);
  const json_t *base = json_object_get(rj, "baseline");
  if (!json_is_object(base) || !json_is_string(json_object_get(base, "family")))
    return oracle_reject(rej, "relative_result_without_baseline",
                         "row %s is a relative result (%s) without a baseline: its denominator is missing", w->id,
                         QUANTITIES[w->quantity]);
  if (!strcmp(est_name, "mean") && !json_object_get(rj, "aggregation_rule"))
    return oracle_reject(rej, "aggregate_without_rule",
                         "row %s is an average without an aggregation rule (or an explicit 'unresolved'): the published "
                         "scalar cannot be reconstructed", w->id);
  double *range = NULL;
  size_t nr = 0;
  if (!strcmp(est_name, "range")) {
    if (jr_num_array(r, rj, p, "range", 1, -1e300, 1e300, 2, &range, &nr)) return -1;
    w->lo = range[0], w->hi = range[1];
    free(range);
    if (w->lo > w->hi)
      return oracle_reject(rej, "reversed_range", "row %s reports the range [%g, %g]: its endpoints are reversed", w->id,
                           w->lo, w->hi);
  } else {
    if (jr_num(r, rj, p, "value", 1, 0, 1e300, &w->lo)) return -1;
    w->hi = w->lo;
  }
  return 0;
}

int oracle_eval_bench_manifest(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                               struct oracle_reject *rej) {
  static const char *const req[] = {"evidence_class", "sources", "rows", "conflicts", "local_runtime", NULL};
  static const char *const opt[] = {"ranking", "comparable_pairs", NULL};
  char p[DKB_PTR_MAX], ap[DKB_PTR_MAX];
  const char *evidence;
  if (jr_keys(r, in, ptr, req, opt) || jr_str(r, in, ptr, "evidence_class", 1, &evidence)) return -1;
  const json_t *sources = jr_get(r, in, ptr, "sources", 1, JSON_ARRAY), *rowsj = jr_get(r, in, ptr, "rows", 1, JSON_ARRAY),
               *conflicts = jr_get(r, in, ptr, "conflicts", 1, JSON_ARRAY),
               *local = jr_get(r, in, ptr, "local_runtime", 1, JSON_OBJECT);
  if (!sources || !rowsj || !conflicts || !local) return -1;

  /* sources: an identity that cannot drift */
  jr_ptr_key(ap, ptr, "sources");
  for (size_t i = 0; i < json_array_size(sources); i++) {
    const json_t *s = json_array_get(sources, i);
    static const char *const sreq[] = {"id", "kind", "version", NULL}, *const sopt[] = {"title", "url", NULL};
    const char *id, *kind, *version;
    jr_ptr_idx(p, ap, i);
    if (jr_keys(r, s, p, sreq, sopt) || jr_str(r, s, p, "id", 1, &id) || jr_str(r, s, p, "kind", 1, &kind) ||
        jr_str(r, s, p, "version", 1, &version))
      return -1;
    if (!bench_version_pinned(version))
      return oracle_reject(rej, "floating_source_revision",
                           "source %s has version '%s', which names no immutable revision: the value can drift "
                           "without a new row identity", id, version);
  }

  /* local evidence: a source-reported bundle holds no local measurement */
  static const char *const lreq[] = {"bundles", "samples", NULL};
  jr_ptr_key(p, ptr, "local_runtime");
  if (jr_keys(r, local, p, lreq, NULL)) return -1;
  const json_t *bundles = jr_get(r, local, p, "bundles", 1, JSON_ARRAY), *samples = jr_get(r, local, p, "samples", 1, JSON_ARRAY);
  if (!bundles || !samples) return -1;

  size_t n = json_array_size(rowsj);
  if (n == 0 || n > MAX_ROWS) return jr_fail(r, ptr, "rows", "must hold 1 to %d rows", MAX_ROWS);
  struct row *rows = DKB_CALLOC(n, sizeof *rows);
  int rc = -1;
  json_t *rows_out = NULL;
  jr_ptr_key(ap, ptr, "rows");
  for (size_t i = 0; i < n; i++) {
    jr_ptr_idx(p, ap, i);
    if ((rc = read_row(r, json_array_get(rowsj, i), p, sources, &rows[i], rej))) goto cleanup;
    rc = -1;
    if (find_row(rows, i, rows[i].id) >= 0) { jr_fail(r, p, "id", "duplicate row id '%s'", rows[i].id); goto cleanup; }
    if (rows[i].claim_class >= 4 && json_array_size(bundles) == 0) {
      rc = oracle_reject(rej, "no_local_runtime_bundle",
                         "row %s is marked %s, but the manifest holds no runtime level-6 bundle: a paper row is not a "
                         "reproduction", rows[i].id, CLAIM_CLASSES[rows[i].claim_class]);
      goto cleanup;
    }
  }

  /* conflicts survive transcription */
  jr_ptr_key(ap, ptr, "conflicts");
  for (size_t i = 0; i < json_array_size(conflicts); i++) {
    const json_t *c = json_array_get(conflicts, i);
    static const char *const creq[] = {"source", "version", "locators", "policy", NULL};
    static const char *const copt[] = {"device_rows", "resolution", NULL};
    const char *policy;
    jr_ptr_idx(p, ap, i);
    if (jr_keys(r, c, p, creq, copt) || jr_str(r, c, p, "policy", 1, &policy)) goto cleanup;
    const json_t *locs = jr_get(r, c, p, "locators", 1, JSON_ARRAY);
    if (!locs) goto cleanup;
    size_t distinct = 0;
    for (size_t a = 0; a < json_array_size(locs); a++) {
      const json_t *va = json_object_get(json_array_get(locs, a), "value");
      int dup = 0;
      for (size_t b = 0; b < a; b++) dup |= json_equal(va, json_object_get(json_array_get(locs, b), "value"));
      distinct += !dup;
    }
    if (strcmp(policy, "unresolved") || json_object_get(c, "resolution") || distinct < 2) {
      rc = oracle_reject(rej, "conflict_silently_resolved",
                         "conflict %zu keeps %zu distinct locator values under policy '%s'%s: contrary evidence from the "
                         "source must be kept with both locators, unranked and unaveraged", i, distinct, policy,
                         json_object_get(c, "resolution") ? " with a resolution" : "");
      goto cleanup;
    }
  }
  if (!strcmp(evidence, "source_reported") && (json_array_size(samples) || json_array_size(bundles))) {
    rc = oracle_reject(rej, "local_samples_in_source_bundle",
                       "a source_reported manifest holds %zu local timing samples and %zu runtime bundles: evidence "
                       "classes are conflated", json_array_size(samples), json_array_size(bundles));
    goto cleanup;
  }

  /* ranking and declared comparisons go through the strict predicate */
  const json_t *ranking = jr_get(r, in, ptr, "ranking", 0, JSON_ARRAY);
  jr_ptr_key(ap, ptr, "ranking");
  for (size_t i = 0; i < json_array_size(ranking); i++) {
    const char *id = json_string_value(json_array_get(ranking, i));
    int k = id ? find_row(rows, n, id) : -1;
    jr_ptr_idx(p, ap, i);
    if (k < 0) { jr_fail(r, p, NULL, "must be a row id"); goto cleanup; }
    unsigned unknown = bench_key_unknown(&rows[k].key);
    if (unknown || json_array_size(rows[k].missing)) {
      json_t *names = field_names(unknown);
      rc = oracle_reject(rej, "partial_coordinate_ranked",
                         "row %s is ranked with %zu unknown comparison fields (first: %s) and %zu missing coordinates",
                         id, json_array_size(names),
                         json_array_size(names) ? json_string_value(json_array_get(names, 0)) : "none",
                         json_array_size(rows[k].missing));
      json_decref(names);
      goto cleanup;
    }
  }
  const json_t *declared = jr_get(r, in, ptr, "comparable_pairs", 0, JSON_ARRAY);
  jr_ptr_key(ap, ptr, "comparable_pairs");
  for (size_t i = 0; i < json_array_size(declared); i++) {
    int a = -1, b = -1;
    jr_ptr_idx(p, ap, i);
    if (read_pair(r, json_array_get(declared, i), p, rows, n, &a, &b)) goto cleanup;
    unsigned bits = bench_incomparable(&rows[a].key, &rows[b].key), unknown = bench_unknown_fields(&rows[a].key, &rows[b].key);
    if (bits & unknown) {
      int f = __builtin_ctz(bits & unknown);
      rc = oracle_reject(rej, "null_field_declared_comparable",
                         "%s and %s are declared comparable, but %s is unknown: equality cannot be established",
                         rows[a].id, rows[b].id, BENCH_FIELD_NAMES[f]);
      goto cleanup;
    }
    if (bits) {
      rc = oracle_reject(rej, "incomparable_pair_declared", "%s and %s are declared comparable but differ in %s",
                         rows[a].id, rows[b].id, BENCH_FIELD_NAMES[__builtin_ctz(bits)]);
      goto cleanup;
    }
  }

  /* the report: partial coordinates, comparable pairs, conflicts, local evidence */
  size_t partial = 0, pairs = 0, cross = 0, comparable = 0, cross_comparable = 0, reproduced = 0;
  rows_out = json_array();
  for (size_t i = 0; i < n; i++) {
    unsigned unknown = bench_key_unknown(&rows[i].key);
    partial += unknown || json_array_size(rows[i].missing);
    reproduced += rows[i].claim_class >= 4;
    json_t *row = json_pack("{s:s,s:s,s:o,s:O}", "id", rows[i].id, "source", rows[i].source, "unknown_fields",
                            field_names(unknown), "missing", rows[i].missing);
    if (rows[i].quantity == 1) /* algebraic re-expression of a reported reduction, not a new sample */
      json_object_set_new(row, "re_expressed_speedup",
                          json_pack("[f,f]", bench_speedup_from_reduction(rows[i].lo / 100),
                                    bench_speedup_from_reduction(rows[i].hi / 100)));
    json_array_append_new(rows_out, row);
    for (size_t j = i + 1; j < n; j++) {
      int same_source = rows[i].source_index == rows[j].source_index, ok = !bench_incomparable(&rows[i].key, &rows[j].key);
      pairs++;
      cross += !same_source;
      comparable += ok;
      cross_comparable += ok && !same_source;
    }
  }
  *report = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:O,s:s}", "sources",
                      (json_int_t)json_array_size(sources), "source_rows", (json_int_t)n, "partial_coordinates",
                      (json_int_t)partial, "pairs", (json_int_t)pairs, "cross_paper_pairs", (json_int_t)cross,
                      "comparable_pairs", (json_int_t)comparable, "cross_paper_comparable_pairs",
                      (json_int_t)cross_comparable, "source_internal_conflicts", (json_int_t)json_array_size(conflicts),
                      "locally_reproduced_claims", (json_int_t)reproduced, "local_timing_samples",
                      (json_int_t)json_array_size(samples), "rows", rows_out, "conflicts", conflicts, "claim_ceiling",
                      "source_reported_not_a_leaderboard");
  rows_out = NULL;
  rc = 0;
cleanup:
  json_decref(rows_out);
  free(rows);
  return rc;
}

int oracle_eval_bench_estimators(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                 struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"baseline_ms", "candidate_ms", NULL};
  static const char *const opt[] = {"reductions_percent", "reduction_ranges_percent", NULL};
  double *b = NULL, *c = NULL, *red = NULL;
  size_t nb = 0, nc = 0, nr = 0;
  int rc = -1;
  if (jr_keys(r, in, ptr, req, opt) || jr_num_array(r, in, ptr, "baseline_ms", 1, 1e-300, 1e300, -1, &b, &nb) ||
      jr_num_array(r, in, ptr, "candidate_ms", 1, 1e-300, 1e300, (long)nb, &c, &nc) ||
      jr_num_array(r, in, ptr, "reductions_percent", 0, -1e300, 99.999999, -1, &red, &nr))
    goto cleanup;
  if (nb == 0) { jr_fail(r, ptr, "baseline_ms", "must not be empty"); goto cleanup; }
  json_t *per = json_array();
  for (size_t i = 0; i < nb; i++) json_array_append_new(per, json_real(b[i] / c[i]));
  json_t *conv = json_array();
  for (size_t i = 0; i < nr; i++) json_array_append_new(conv, json_real(bench_speedup_from_reduction(red[i] / 100)));
  json_t *ranges = json_array();
  const json_t *rr = jr_get(r, in, ptr, "reduction_ranges_percent", 0, JSON_ARRAY);
  char ap[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(ap, ptr, "reduction_ranges_percent");
  for (size_t i = 0; i < json_array_size(rr); i++) {
    const json_t *g = json_array_get(rr, i);
    jr_ptr_idx(p, ap, i);
    if (!json_is_array(g) || json_array_size(g) != 2 || !json_is_number(json_array_get(g, 0)) ||
        !json_is_number(json_array_get(g, 1)) || json_number_value(json_array_get(g, 0)) > json_number_value(json_array_get(g, 1)) ||
        json_number_value(json_array_get(g, 1)) >= 100) {
      json_decref(per); json_decref(conv); json_decref(ranges);
      jr_fail(r, p, NULL, "must be [low, high] percentages with low <= high < 100");
      goto cleanup;
    }
    json_array_append_new(ranges, json_pack("[f,f]", bench_speedup_from_reduction(json_number_value(json_array_get(g, 0)) / 100),
                                            bench_speedup_from_reduction(json_number_value(json_array_get(g, 1)) / 100)));
  }
  *report = json_pack("{s:o,s:f,s:f,s:f,s:f,s:o,s:o}", "speedups", per, "max", bench_speedup_max(b, c, nb),
                      "arithmetic_mean", bench_speedup_arith_mean(b, c, nb), "ratio_of_sums",
                      bench_speedup_ratio_of_sums(b, c, nb), "geometric_mean", bench_speedup_geo_mean(b, c, nb),
                      "speedup_from_reduction", conv, "speedup_ranges_from_reduction_ranges", ranges);
  rc = 0;
cleanup:
  free(b);
  free(c);
  free(red);
  return rc;
}
