/* test_repeat.c - what the repeat check records when the call after the timed samples does not reproduce
 * the checked call bit for bit (harness/run_evidence.c, run_evidence_repeat_difference): the elements that
 * differ, counted and measured against the checked call's raw output, and whether the repeat call's output
 * still passes the float64 oracle under the call's tolerances; and its verdict under the plan's contract
 * (run_evidence_repeat_check: bitwise, or the oracle's tolerance for a nondeterministic backend). The checked call here is the oracle's own
 * output stored in the fixture's dtype; the repeat call is a copy with chosen elements moved. */
#include "tests/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/decode_call.h"
#include "harness/decode_ref.h"
#include "harness/inputs.h"
#include "harness/run_evidence.h"
#include "include/dkb/backend.h"
#include "kernels/decode.h"
#include "oracles/dtype.h"

struct checked {
  struct decode_call c;
  struct decode_inputs in;
  struct dkb_plan plan;
  double *o_ref, *lse_ref;
  void *o;
  float *lse;
  size_t rows, n_o;
};

/* default.json's oracle output as a backend in dkb's conventions would write it. */
static void checked_call(struct checked *k) {
  struct dkb_err e;
  memset(k, 0, sizeof *k);
  if (decode_call_load("fixtures/decode/default.json", &k->c, &e)) fail_msg("%s", e.msg);
  const struct decode_call *c = &k->c;
  const int tile = dkb_decode_tile_tokens(c->dtype, c->dk, c->dv, (c->H_q / c->H_kv) * c->C);
  if (inputs_build(c, tile, &k->in, &e)) fail_msg("%s", e.msg);
  k->rows = (size_t)c->B * c->C * c->H_q;
  k->n_o = k->rows * (size_t)c->dv;
  k->o_ref = malloc(k->n_o * sizeof(double));
  k->lse_ref = malloc(k->rows * sizeof(double));
  decode_ref_compute(c, &k->in, k->o_ref, k->lse_ref);
  k->o = malloc(k->n_o * dkb_dtype_bytes((enum dkb_dtype)c->dtype));
  k->lse = malloc(k->rows * sizeof(float));
  for (size_t i = 0; i < k->n_o; i++) dkb_store((enum dkb_dtype)c->dtype, k->o, i, k->o_ref[i]);
  for (size_t i = 0; i < k->rows; i++) k->lse[i] = (float)k->lse_ref[i];
  k->plan.lse_base = DKB_LSE_NATURAL;
  k->plan.empty_row = DKB_EMPTY_ZERO_NEGINF;
}

static void checked_release(struct checked *k) {
  free(k->o_ref);
  free(k->lse_ref);
  free(k->o);
  free(k->lse);
  inputs_release(&k->in);
  decode_call_release(&k->c);
}

static json_int_t member_int(const json_t *d, const char *part, const char *key) {
  const json_t *v = json_object_get(json_object_get(d, part), key);
  if (!json_is_integer(v)) fail_msg("difference/%s/%s is not an integer", part, key);
  return json_integer_value(v);
}

/* Moves element i of the repeat call's O by delta (in the dtype's own rounding). */
static void move(const struct checked *k, void *o, size_t i, double delta) {
  const enum dkb_dtype t = (enum dkb_dtype)k->c.dtype;
  dkb_store(t, o, i, dkb_load(t, o, i) + delta);
}

static json_t *difference(const struct checked *k, const void *o_again, const float *lse_again, char *summary, size_t n) {
  struct run_check chk = {&k->c, &k->in, &k->plan, k->o_ref, k->lse_ref, k->o, k->lse, NULL, NULL};
  return run_evidence_repeat_difference(&chk, o_again, lse_again, summary, n);
}

/* The repeat call's outputs, before any element is moved: copies of the checked call's. */
static void *repeat_copy(const struct checked *k, float **lse) {
  const size_t ob = k->n_o * dkb_dtype_bytes((enum dkb_dtype)k->c.dtype);
  void *o = malloc(ob);
  memcpy(o, k->o, ob);
  *lse = malloc(k->rows * sizeof(float));
  memcpy(*lse, k->lse, k->rows * sizeof(float));
  return o;
}

static void repeat_difference_counts_the_elements_that_differ_within_tolerance(void **s) {
  (void)s;
  struct checked k;
  checked_call(&k);
  float *lse;
  void *o = repeat_copy(&k, &lse);
  /* three elements one rounding step away (bf16: 2^-8 relative near 1), as a varying merge order gives */
  for (size_t i = 5; i < 8; i++) move(&k, o, i * 97, fabs(dkb_load((enum dkb_dtype)k.c.dtype, o, i * 97)) * 0.0079 + 1e-6);
  lse[3] = nextafterf(lse[3], INFINITY);
  char summary[256];
  json_t *d = difference(&k, o, lse, summary, sizeof summary);
  assert_int_equal(member_int(d, "output", "n"), (json_int_t)k.n_o);
  assert_int_equal(member_int(d, "output", "violations"), 3);
  assert_int_equal(member_int(d, "lse", "violations"), 1);
  assert_true(json_is_true(json_object_get(d, "within_tolerance")));
  assert_non_null(strstr(summary, "3 of "));
  assert_non_null(strstr(summary, "1 of "));
  assert_non_null(strstr(summary, "within the tolerance"));
  json_decref(d);
  free(o);
  free(lse);
  checked_release(&k);
}

static void repeat_difference_beyond_tolerance_says_so(void **s) {
  (void)s;
  struct checked k;
  checked_call(&k);
  float *lse;
  void *o = repeat_copy(&k, &lse);
  move(&k, o, 11, 1.0);  /* far outside atol + rtol * |ref| */
  char summary[256];
  json_t *d = difference(&k, o, lse, summary, sizeof summary);
  assert_int_equal(member_int(d, "output", "violations"), 1);
  assert_int_equal(member_int(d, "output", "worst_index"), 11);
  assert_int_equal(member_int(d, "lse", "violations"), 0);
  assert_true(json_is_false(json_object_get(d, "within_tolerance")));
  assert_non_null(strstr(summary, "outside the tolerance"));
  json_decref(d);
  free(o);
  free(lse);
  checked_release(&k);
}

enum { STAY, ONE_STEP, FAR };
/* The repeat check's verdict under the plan's contract: (flags, how far element 11 moves: not, one rounding
 * step, far outside atol + rtol * |ref|) -> contract, bitwise equal, held. */
static void repeat_verdict(unsigned flags, int how, const char *contract, int want_same, int want_held) {
  struct checked k;
  checked_call(&k);
  k.plan.launch_flags = flags;
  float *lse;
  void *o = repeat_copy(&k, &lse);
  const double x = fabs(dkb_load((enum dkb_dtype)k.c.dtype, o, 11));
  if (how != STAY) move(&k, o, 11, how == FAR ? 1.0 : x * 0.0079 + 1e-6);
  struct run_check chk = {&k.c, &k.in, &k.plan, k.o_ref, k.lse_ref, k.o, k.lse, NULL, NULL};
  char summary[256];
  int same = -1, held = -1;
  json_t *rep = run_evidence_repeat_check(&chk, o, lse, k.n_o * dkb_dtype_bytes((enum dkb_dtype)k.c.dtype),
                                          k.rows * sizeof(float), 40, &same, &held, summary, sizeof summary);
  assert_string_equal(json_string_value(json_object_get(rep, "contract")), contract);
  assert_int_equal(same, want_same);
  assert_int_equal(held, want_held);
  assert_true(json_is_boolean(json_object_get(rep, "output_bitwise_equal")));
  assert_int_equal(json_is_true(json_object_get(rep, "output_bitwise_equal")), want_same);
  assert_int_equal(json_object_get(rep, "difference") != NULL, !want_same);  /* a difference only when the bits differ */
  json_decref(rep);
  free(o);
  free(lse);
  checked_release(&k);
}

static void a_deterministic_backend_is_held_to_the_checked_bits(void **s) {
  (void)s;
  repeat_verdict(0, STAY, "bitwise", 1, 1);
  repeat_verdict(0, ONE_STEP, "bitwise", 0, 0);  /* within tolerance, and still not reproduced */
}

static void a_nondeterministic_backend_is_held_to_the_oracle_tolerance(void **s) {
  (void)s;
  repeat_verdict(DKB_LAUNCH_NONDETERMINISTIC, STAY, "tolerance", 1, 1);
  repeat_verdict(DKB_LAUNCH_NONDETERMINISTIC, ONE_STEP, "tolerance", 0, 1);
  repeat_verdict(DKB_LAUNCH_NONDETERMINISTIC, FAR, "tolerance", 0, 0);
}

DKB_TEST_GROUP(repeat, cmocka_unit_test(repeat_difference_counts_the_elements_that_differ_within_tolerance),
               cmocka_unit_test(repeat_difference_beyond_tolerance_says_so),
               cmocka_unit_test(a_deterministic_backend_is_held_to_the_checked_bits),
               cmocka_unit_test(a_nondeterministic_backend_is_held_to_the_oracle_tolerance))
