/* test_serving.c - the targets of the serving matrix (fixtures/bench/serving.json): "read_fraction >= F",
 * the call's speed as a fraction of its same-bytes read's, met at its edge and missed just past it, not
 * measured without a read, a level-6 case or a DRAM figure, and recomputed by tests/bench_check.py. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench.h"
#include "lib/fsutil.h"

/* A case as a GPU run leaves it: level 6 with a median, 100 MB read, and its same-bytes read (read_us 0:
 * none, as under --no-roofline). */
static void timed(struct bench_case *c, const char *backend, double median_us, double read_us) {
  c->ran = 1;
  c->level = 6;
  snprintf(c->terminal, sizeof c->terminal, "complete");
  snprintf(c->selected, sizeof c->selected, "%s", backend);
  c->median_us = median_us;
  c->io_bytes = c->kv_bytes = c->visible_kv_bytes = 1e8;
  c->samples = 20;
  c->rel_stdev = 0.01;
  snprintf(c->call_key, sizeof c->call_key, "%064d", 0);
  c->tiles[1] = 10;
  c->read_us = read_us;
  c->read_samples = read_us > 0 ? 20 : 0;
  if (read_us <= 0) snprintf(c->read_reason, sizeof c->read_reason, "--no-roofline");
}

/* The matrix of `entries` (each a JSON object of the "cases" array, %s for the fixture's absolute path)
 * over dk128-dv64, loaded as dkb bench loads it. */
static void load_matrix(struct bench_matrix *m, const char *name, const char *extra, const char *const *entries, int n) {
  char fx[600], doc[4000];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));
  int len = snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\"%s, \"cases\": [", extra);
  for (int i = 0; i < n; i++) {
    len += snprintf(doc + len, sizeof doc - (size_t)len, i ? ", " : "");
    len += snprintf(doc + len, sizeof doc - (size_t)len, entries[i], fx);
  }
  snprintf(doc + len, sizeof doc - (size_t)len, "]}");
  struct dkb_err e;
  dkb_err_clear(&e);
  if (bench_matrix_load(tmp_file(name, doc), m, &e)) fail_msg("%s", e.msg);
}

/* bench.json of the judged matrix into DIR, checked against its schema and by tests/bench_check.py. */
static void write_judged(const char *dir, const struct bench_matrix *m, const struct bench_roofline *r,
                         const struct bench_verdict *v, int nv) {
  struct dkb_err e;
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, m, r, v, nv, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && "
              "/usr/bin/python3 tests/bench_check.py %s/bench.json", dir, dir);
  if (rr.rc != 0) fail_msg("exit %d\n%s%s", rr.rc, rr.out, rr.err);
  run_result_release(&rr);
}

/* 97 / 100 is the double nearest 0.97, as the floor is: a call at exactly 0.97 of its read's speed meets
 * "read_fraction >= 0.97", one 0.01 us slower misses it, and the miss says the median that would meet
 * it (read_us / 0.97). The read needs no roofline figure; a case without one is not measured. */
static void read_fraction_floor_met_at_its_edge_and_missed_just_past_it(void **s) {
  (void)s;
  static const char *const entries[] = {"{\"fixture\": \"%s\", \"target\": {\"read_fraction\": 0.97}}"};
  struct bench_matrix m;
  load_matrix(&m, "serving-rfrac.json", "", entries, 1);
  assert_int_equal(m.n, 1);
  assert_true(m.cases[0].want_read_frac == 0.97);
  /* three results of the same call: at the edge, 0.01 us past it, and without a read */
  struct bench_case one = m.cases[0];
  m.cases = realloc(m.cases, 3 * sizeof *m.cases);
  m.n = 3;
  for (int i = 0; i < 3; i++) m.cases[i] = one;
  snprintf(m.cases[1].name, sizeof m.cases[1].name, "past-edge");
  snprintf(m.cases[2].name, sizeof m.cases[2].name, "no-read");
  timed(&m.cases[0], "", 100.0, 97.0);
  timed(&m.cases[1], "", 100.01, 97.0);
  timed(&m.cases[2], "", 50.0, 0);
  struct bench_roofline r = {0};  /* --no-roofline measures no roofline; here the reads stand in for a GPU's */
  snprintf(r.reason, sizeof r.reason, "not measured");
  for (int i = 0; i < 3; i++) bench_case_rates(&m.cases[i], &r);
  struct bench_verdict v[8];
  int nv = bench_judge(&m, &r, v, 8);
  assert_int_equal(nv, 3);
  assert_string_equal(v[0].what, "read_fraction >= 0.97");
  assert_int_equal(v[0].state, BENCH_MET);
  assert_true(v[0].got == 0.97);
  assert_true(isnan(v[0].need_us));
  assert_int_equal(v[1].state, BENCH_MISSED);
  assert_near(v[1].got, 97.0 / 100.01, 1e-15);
  assert_near(v[1].need_us, 100.0, 1e-9);  /* the read's 97 us over 0.97 */
  assert_int_equal(v[2].state, BENCH_NOT_MEASURED);
  assert_true(isnan(v[2].got));
  char dir[600];
  snprintf(dir, sizeof dir, "%s/serving-rfrac", tmp_dir());
  write_judged(dir, &m, &r, v, nv);
  struct run_result rr;  /* bench_check.py recomputes each verdict: a flipped one is caught */
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/flipped.json set /targets/1/verdict '\"met\"' && "
              "/usr/bin/python3 tests/bench_check.py %s/flipped.json; echo rc=$?; "
              "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/flipped2.json set /targets/2/verdict '\"missed\"' && "
              "/usr/bin/python3 tests/bench_check.py %s/flipped2.json; echo rc=$?",
         dir, dir, dir, dir, dir, dir);
  assert_string_equal(rr.out, "past-edge read_fraction >= 0.97: verdict met, recomputed missed\nrc=1\n"
                              "no-read read_fraction >= 0.97: verdict missed, recomputed not_measured\nrc=1\n");
  run_result_release(&rr);
  /* below level 6 the median is no measurement, whatever its read */
  m.cases[0].level = 5;
  nv = bench_judge(&m, &r, v, 8);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  bench_matrix_release(&m);
}

/* A call whose counters say L2 served part of its K/V is no DRAM figure, against its read or the
 * roofline alike: not measured (l2_served), unless the timed calls found L2 flushed (--cold). */
static void read_fraction_needs_k_v_from_dram_when_counters_say_so(void **s) {
  (void)s;
  static const char *const entries[] = {"{\"fixture\": \"%s\", \"target\": {\"read_fraction\": 0.85}}"};
  struct bench_matrix m;
  load_matrix(&m, "serving-rfrac-l2.json", "", entries, 1);
  timed(&m.cases[0], "", 30.0, 27.0);
  m.cases[0].dram_measured = 1;
  m.cases[0].dram_read_bytes = 0.5e8;
  struct bench_roofline r = {0};
  bench_case_rates(&m.cases[0], &r);
  assert_near(m.cases[0].dram_kv_ratio, 0.5, 1e-12);
  struct bench_verdict v[4];
  assert_int_equal(bench_judge(&m, &r, v, 4), 1);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_true(v[0].l2_served);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/serving-rfrac-l2", tmp_dir());
  write_judged(dir, &m, &r, v, 1);
  m.cold = 1;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  assert_false(v[0].l2_served);
  snprintf(dir, sizeof dir, "%s/serving-rfrac-cold", tmp_dir());
  write_judged(dir, &m, &r, v, 1);
  bench_matrix_release(&m);
}

/* The key's bounds are the other fraction floors': above 0, at most 2; the error names the pointer. */
static void a_read_fraction_floor_outside_its_bounds_is_malformed(void **s) {
  (void)s;
  static const struct { const char *target, *err; } bad[] = {
      {"{\"read_fraction\": 0}", "/cases/0/target/read_fraction: must be >= 1.0000000000000001e-09 (got 0)"},
      {"{\"read_fraction\": 2.5}", "/cases/0/target/read_fraction: must be <= 2 (got 2.5)"},
      {"{\"read_fraction\": \"0.97\"}", "/cases/0/target/read_fraction: must be a number (got string)"},
  };
  char fx[600], doc[1400], want[1200], name[64];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"%s\", \"target\": %s}]}",
             fx, bad[i].target);
    snprintf(name, sizeof name, "serving-bad-%zu.json", i);
    const char *path = tmp_file(name, doc);
    struct run_result r;
    run_sh(&r, "build/dkb bench --matrix %s -o %s/serving-bad-out; echo rc=$?; "
               "/usr/bin/python3 tests/schema_check.py schemas/bench-matrix.schema.json %s > /dev/null 2>&1; echo schema=$?",
           path, tmp_dir(), path);
    snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, bad[i].err);
    assert_string_equal(r.out, "rc=3\nschema=1\n");
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
}

/* A case the forced backend refused (a fixed split, say): it ran to level 4 and is no peer. */
static void refused(struct bench_case *c) {
  c->ran = 1;
  c->level = 4;
  snprintf(c->terminal, sizeof c->terminal, "backend_rejected");
  c->selected[0] = '\0';
  snprintf(c->why, sizeof c->why, "the forced backend b_backend was refused: split=fixed unsupported");
  snprintf(c->call_key, sizeof c->call_key, "%064d", 1);
}

/* Side by side, "auto within P % of the best forced split" judges the first backend's auto case against
 * its own forced splits, met just inside P and missed just past it; another backend's auto case is not
 * judged (it is a peer, and the plugins refuse forced splits: its verdict could only be not_measured, and
 * --require-targets would exit 4 on every such matrix). tests/bench_check.py wants every target on the
 * first backend's cases. */
static void auto_within_judges_the_first_backends_auto_case_only(void **s) {
  (void)s;
  static const char *const entries[] = {"{\"fixture\": \"%s\", \"splits\": [\"auto\", 1, 2]}"};
  struct bench_matrix m;
  load_matrix(&m, "serving-auto.json", ", \"auto_within_pct\": 3, \"backends\": [\"a_backend\", \"b_backend\"]", entries, 1);
  assert_int_equal(m.n, 6);  /* auto, split 1, split 2; each under a then b */
  timed(&m.cases[0], "a_backend", 100.0, 0);
  timed(&m.cases[1], "b_backend", 90.0, 0);
  timed(&m.cases[2], "a_backend", 103.0, 0);
  refused(&m.cases[3]);
  timed(&m.cases[4], "a_backend", 97.1, 0);  /* auto +2.99 % over it */
  refused(&m.cases[5]);
  struct bench_roofline r = {0};
  for (int i = 0; i < m.n; i++) bench_case_rates(&m.cases[i], &r);
  struct bench_verdict v[8];
  int nv = bench_judge(&m, &r, v, 8);
  assert_int_equal(nv, 2);
  assert_string_equal(v[0].what, "median <= b_backend's");
  assert_int_equal(v[0].state, BENCH_MISSED);
  assert_int_equal(v[1].case_index, 0);
  assert_string_equal(v[1].what, "auto within 3% of the best forced split, dk128-dv64/split2");
  assert_int_equal(v[1].state, BENCH_MET);
  assert_near(v[1].got, 100 * (100.0 / 97.1 - 1), 1e-12);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/serving-auto", tmp_dir());
  write_judged(dir, &m, &r, v, nv);
  m.cases[4].median_us = 97.08;  /* auto +3.01 % */
  bench_case_rates(&m.cases[4], &r);
  nv = bench_judge(&m, &r, v, 8);
  assert_int_equal(nv, 2);
  assert_int_equal(v[1].state, BENCH_MISSED);
  struct run_result rr;  /* a verdict on b's case is not the matrix's */
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/on-b.json set /targets/1/backend '\"b_backend\"' && "
              "/usr/bin/python3 tests/bench_check.py %s/on-b.json; echo rc=$?",
         dir, dir, dir);
  if (!strstr(rr.out, "dk128-dv64 auto within 3% of the best forced split, dk128-dv64/split2: a target on b_backend's case, "
                      "not the first backend's (a_backend)\n") || !strstr(rr.out, "rc=1\n"))
    fail_msg("%s", rr.out);
  run_result_release(&rr);
  bench_matrix_release(&m);
}

DKB_TEST_GROUP(serving, cmocka_unit_test(read_fraction_floor_met_at_its_edge_and_missed_just_past_it),
               cmocka_unit_test(read_fraction_needs_k_v_from_dram_when_counters_say_so),
               cmocka_unit_test(a_read_fraction_floor_outside_its_bounds_is_malformed),
               cmocka_unit_test(auto_within_judges_the_first_backends_auto_case_only))
