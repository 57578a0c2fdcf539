/* test_split_state.c - the split-state algebra of article 0x02 through its C API: the worked
 * three-split trace, the empty identity, the (LSE,O) form, averaging failure and float16 trees. */
#include "tests/util.h"

#include <math.h>
#include <string.h>

#include "oracles/split_state.h"

static const double SC[7] = {4, -1, 0, 0, 3, -2, 1};
static const double VA[14] = {1, 0, 0, 2, 99, 99, -99, -99, 2, 3, -1, 4, 4, -2};
static const unsigned char AL[7] = {1, 1, 0, 0, 1, 1, 1};

static void worked_trace_reproduces_article_numbers(void **s) {
  (void)s;
  double u[4][2];
  struct ss_state st[4] = {{.u = u[0]}, {.u = u[1]}, {.u = u[2]}, {.u = u[3]}};
  ss_summarize(SC, VA, AL, 0, 2, 2, SS_F64, &st[0]);
  ss_summarize(SC, VA, AL, 2, 4, 2, SS_F64, &st[1]);
  ss_summarize(SC, VA, AL, 4, 7, 2, SS_F64, &st[2]);
  assert_true(st[0].valid && !st[1].valid && st[2].valid);
  assert_true(st[0].m == 4 && st[2].m == 3 && isinf(st[1].m) && st[1].m < 0 && st[1].l == 0);
  assert_near(st[0].l, 1.0067379469990854, 1e-16);
  assert_near(st[0].u[1], 0.013475893998170934, 1e-18);
  assert_near(st[2].l, 1.142073230235698, 1e-15);
  assert_near(st[2].u[0], 2.5346031859473657, 1e-15);
  assert_near(st[2].u[1], 2.7562812215231167, 1e-15);
  double scratch[6];
  ss_reduce(st, NULL, 3, 2, SS_SEQUENTIAL, SS_F64, &st[3], scratch);
  assert_true(st[3].m == 4);
  assert_near(st[3].l, 1.4268832087150578, 1e-15);
  assert_near(st[3].u[0], 1.9324284036376742, 1e-15);
  assert_near(st[3].u[1], 1.0274550894834356, 1e-15);
  double o[2], lse;
  ss_finalize(&st[3], 2, o, &lse);
  assert_near(o[0], 1.3543003322450418, 1e-15);
  assert_near(o[1], 0.7200695075868776, 1e-15);
  assert_near(lse, 4.355492491217523, 1e-15);
}

static void empty_state_is_exact_identity_both_sides(void **s) {
  (void)s;
  double u[3][2];
  struct ss_state a = {.u = u[0]}, e = {.u = u[1]}, r = {.u = u[2]};
  ss_summarize(SC, VA, AL, 4, 7, 2, SS_F64, &a);
  ss_empty(&e, 2);
  ss_merge(&e, &a, 2, SS_F64, &r);
  assert_memory_equal(r.u, a.u, sizeof u[0]);
  assert_true(r.m == a.m && r.l == a.l && r.valid);
  ss_merge(&a, &e, 2, SS_F64, &r);
  assert_memory_equal(r.u, a.u, sizeof u[0]);
  ss_merge(&e, &e, 2, SS_F64, &r);       /* e (+) e = e, no NaN */
  assert_false(r.valid);
  assert_true(isinf(r.m) && r.l == 0 && r.u[0] == 0);
  ss_merge_unguarded(&e, &e, 2, &r);     /* the invalid implementation: NaN */
  assert_true(isnan(r.m) || isnan(r.l) || isnan(r.u[0]));
  double o[2], lse;
  ss_finalize(&e, 2, o, &lse);           /* all-masked policy */
  assert_true(o[0] == 0 && o[1] == 0 && isinf(lse) && lse < 0);
}

static void lse_form_merge_equals_mlu_merge(void **s) {
  (void)s;
  double u[3][2], ob[3][2];
  struct ss_state a = {.u = u[0]}, b = {.u = u[1]}, m = {.u = u[2]};
  struct ss_lse_state la = {.o = ob[0]}, lb = {.o = ob[1]}, lm = {.o = ob[2]};
  ss_summarize(SC, VA, AL, 0, 2, 2, SS_F64, &a);
  ss_summarize(SC, VA, AL, 4, 7, 2, SS_F64, &b);
  ss_merge(&a, &b, 2, SS_F64, &m);
  ss_to_lse(&a, 2, &la);
  ss_to_lse(&b, 2, &lb);
  ss_merge_lse(&la, &lb, 2, &lm);
  double o[2], lse;
  ss_finalize(&m, 2, o, &lse);
  assert_near(lm.lse, lse, 1e-15);
  assert_near(lm.o[0], o[0], 1e-15);
  assert_near(lm.o[1], o[1], 1e-15);
}

static void averaging_normalized_outputs_is_wrong(void **s) {
  (void)s;
  const double sc[4] = {10, 10, 0, 0}, v[4] = {1, 1, 100, 100};
  double u[3];
  struct ss_state a = {.u = &u[0]}, b = {.u = &u[1]}, m = {.u = &u[2]};
  ss_summarize(sc, v, NULL, 0, 2, 1, SS_F64, &a);
  ss_summarize(sc, v, NULL, 2, 4, 1, SS_F64, &b);
  double oa, ob, l;
  ss_finalize(&a, 1, &oa, &l);
  ss_finalize(&b, 1, &ob, &l);
  assert_near((oa + ob) / 2, 50.5, 0);
  ss_merge(&a, &b, 1, SS_F64, &m);
  double o;
  ss_finalize(&m, 1, &o, &l);
  assert_near(o, 1.0044943890, 5e-11);
}

static void float16_model_tree_order_matters(void **s) {
  (void)s;
  const double sc[4] = {0, 0, 0, 0}, v[4] = {2048, 1, -2048, 1};
  double u[5], scratch[4];
  struct ss_state st[5];
  for (int i = 0; i < 5; i++) st[i].u = &u[i];
  for (int i = 0; i < 4; i++) ss_summarize(sc, v, NULL, (size_t)i, (size_t)i + 1, 1, SS_F16_EACH_OP, &st[i]);
  double o, l;
  ss_reduce(st, NULL, 4, 1, SS_SEQUENTIAL, SS_F16_EACH_OP, &st[4], scratch);
  ss_finalize(&st[4], 1, &o, &l);
  assert_true(o == 0.25);
  ss_reduce(st, NULL, 4, 1, SS_BALANCED, SS_F16_EACH_OP, &st[4], scratch);
  ss_finalize(&st[4], 1, &o, &l);
  assert_true(o == 0.25);
  const size_t perm[4] = {0, 2, 1, 3};
  ss_reduce(st, perm, 4, 1, SS_SEQUENTIAL, SS_F16_EACH_OP, &st[4], scratch);
  ss_finalize(&st[4], 1, &o, &l);
  assert_true(o == 0.5);
}

static void balanced_bounds_cover_ragged_request(void **s) {
  (void)s;
  const long long want[8] = {449, 449, 449, 448, 448, 448, 448, 448};
  long long prev = 0;
  for (int i = 0; i < 8; i++) {
    long long a, e;
    ss_balanced_bounds(3587, 8, i, &a, &e);
    assert_int_equal(a, prev);
    assert_int_equal(e - a, want[i]);
    prev = e;
  }
  assert_int_equal(prev, 3587);
}

DKB_TEST_GROUP(split_state, cmocka_unit_test(worked_trace_reproduces_article_numbers),
               cmocka_unit_test(empty_state_is_exact_identity_both_sides),
               cmocka_unit_test(lse_form_merge_equals_mlu_merge),
               cmocka_unit_test(averaging_normalized_outputs_is_wrong),
               cmocka_unit_test(float16_model_tree_order_matters),
               cmocka_unit_test(balanced_bounds_cover_ragged_request))
