/* test_bench_claims.c - benchmark-claim accounting of article 0x0C through the C API: the two-case
 * estimator example, S = 1/(1-R), the strict comparability predicate, pinned source versions, and the
 * eight-row manifest with its twelve invalid promotions through `dkb oracle`. */
#include "tests/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "oracles/bench_claims.h"

static void estimators_answer_different_questions(void **s) {
  (void)s;
  const double b[2] = {10, 100}, c[2] = {5, 80};
  assert_near(bench_speedup_arith_mean(b, c, 2), 1.625, 0);
  assert_near(bench_speedup_ratio_of_sums(b, c, 2), 110.0 / 85.0, 1e-15);
  assert_near(bench_speedup_geo_mean(b, c, 2), sqrt(2.5), 1e-15);
  assert_near(bench_speedup_max(b, c, 2), 2.0, 0);
  /* the article's rounded values */
  assert_near(bench_speedup_ratio_of_sums(b, c, 2), 1.294, 5e-4);
  assert_near(bench_speedup_geo_mean(b, c, 2), 1.581, 5e-4);
  const double bad[2] = {10, 0};
  assert_true(isnan(bench_speedup_arith_mean(b, bad, 2)));
  assert_true(isnan(bench_speedup_max(b, c, 0)));
}

static void reduction_converts_to_speedup_exactly(void **s) {
  (void)s;
  assert_near(bench_speedup_from_reduction(0.69), 3.226, 5e-4); /* not 1.69x */
  assert_near(bench_speedup_from_reduction(0.50), 2.0, 1e-15);
  assert_near(bench_reduction_from_speedup(2.0), 0.5, 0);
  assert_near(bench_speedup_from_reduction(0.29), 1.41, 5e-3);
  assert_near(bench_speedup_from_reduction(0.69), 3.23, 5e-3);
  assert_near(bench_speedup_from_reduction(0.28), 1.39, 5e-3);
  assert_near(bench_speedup_from_reduction(0.30), 1.43, 5e-3);
  assert_near(bench_reduction_from_speedup(bench_speedup_from_reduction(0.69)), 0.69, 1e-15);
  assert_true(isnan(bench_speedup_from_reduction(1.0)));
  assert_true(isnan(bench_reduction_from_speedup(0.0)));
}

static void comparability_is_strict_equality(void **s) {
  (void)s;
  struct bench_key a = {{"attention_kernel", "decode", "attention_latency", "lower_is_better", "H200", "bf16",
                         "B=16 H=32/8 d=128 ctx=8192", "dkb decode_split_kv @abc", "median"}};
  struct bench_key b = a;
  assert_int_equal(bench_incomparable(&a, &b), 0);
  b.field[BF_STATISTIC] = "max"; /* a maximum and a median answer different questions */
  assert_int_equal(bench_incomparable(&a, &b), 1u << BF_STATISTIC);
  assert_int_equal(bench_unknown_fields(&a, &b), 0);
  b = a;
  a.field[BF_BASELINE] = b.field[BF_BASELINE] = NULL; /* null == null proves nothing */
  assert_int_equal(bench_incomparable(&a, &b), 1u << BF_BASELINE);
  assert_int_equal(bench_unknown_fields(&a, &b), 1u << BF_BASELINE);
  assert_int_equal(bench_key_unknown(&a), 1u << BF_BASELINE);
  assert_string_equal(BENCH_FIELD_NAMES[BF_BASELINE], "baseline");
}

static void source_versions_must_be_pinned(void **s) {
  (void)s;
  assert_true(bench_version_pinned("arXiv:2311.01282v4"));
  assert_true(bench_version_pinned("2023-10-12"));
  assert_true(bench_version_pinned("v2.2.0"));
  assert_true(bench_version_pinned("765fbd928364e298a38a5e4b5c540d30daa1aecb"));
  assert_false(bench_version_pinned("arXiv:2311.01282"));
  assert_false(bench_version_pinned("latest"));
  assert_false(bench_version_pinned("main"));
  assert_false(bench_version_pinned("2023-10"));
  assert_false(bench_version_pinned(NULL));
}

/* The manifest fixture through dkb: 8 rows, 8 partial, 0 comparable cross-paper pairs, 1 conflict,
 * and each of the twelve invalid promotions rejected with its own reason. */
static void manifest_and_invalid_promotions_fail_closed(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb oracle --json fixtures/contracts/bench_manifest.eight_source_rows.json");
  assert_int_equal(r.rc, 0);
  json_error_t e;
  json_t *doc = json_loads(r.out, 0, &e);
  assert_non_null(doc);
  json_t *rep = json_object_get(json_array_get(json_object_get(doc, "fixtures"), 0), "report");
  assert_json_int(rep, "source_rows", 8);
  assert_json_int(rep, "partial_coordinates", 8);
  assert_json_int(rep, "cross_paper_comparable_pairs", 0);
  assert_json_int(rep, "source_internal_conflicts", 1);
  assert_json_int(rep, "locally_reproduced_claims", 0);
  assert_json_int(rep, "local_timing_samples", 0);
  json_decref(doc);
  run_result_release(&r);

  static const char *const reasons[12] = {
      "floating_source_revision", "unknown_source_id", "relative_result_without_baseline", "estimator_relabelled",
      "reduction_relabelled_as_speedup", "no_local_runtime_bundle", "partial_coordinate_ranked",
      "aggregate_without_rule", "reversed_range", "conflict_silently_resolved", "local_samples_in_source_bundle",
      "null_field_declared_comparable"};
  for (int i = 0; i < 12; i++) {
    run_sh(&r, "build/dkb oracle --json fixtures/contracts/bench_manifest.invalid.%s.json", reasons[i]);
    if (r.rc) fail_msg("%s: exit %d\n%s", reasons[i], r.rc, r.err);
    doc = json_loads(r.out, 0, &e);
    json_t *row = json_array_get(json_object_get(doc, "fixtures"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(row, "rejected"), "reason")), reasons[i]);
    json_decref(doc);
    run_result_release(&r);
  }
}

DKB_TEST_GROUP(bench_claims, cmocka_unit_test(estimators_answer_different_questions),
               cmocka_unit_test(reduction_converts_to_speedup_exactly),
               cmocka_unit_test(comparability_is_strict_equality), cmocka_unit_test(source_versions_must_be_pinned),
               cmocka_unit_test(manifest_and_invalid_promotions_fail_closed))
