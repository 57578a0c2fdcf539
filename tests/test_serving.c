/* test_serving.c - the serving matrix (fixtures/bench/serving.json) and its targets: the generator writes
 * every bench fixture byte for byte; the matrix puts the issue's targets on dkb's cases, side by side with
 * FlashInfer's two decodes and cuDNN; "read_fraction >= F" (the call's speed as a fraction of its same-bytes read's),
 * paged "within P %" of contiguous and "auto within P %" of the best forced split are each met at or just
 * inside their edge and missed just past it, and recomputed by tests/bench_check.py. */
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

/* The issue's rule, a target met or missed counts only beyond the run's noise, read from bench.json: each
 * verdict carries the band its margin is read against (dkb compare's: 100 x the two medians' summed
 * rel_stdev, at least 0.5 %; a fraction floor: its case's alone) and whether got clears it. Paged at
 * +2.0 % of contiguous with 0.3 % spreads clears the 3 % line (band 0.6); at +2.999 % with 0.7 % (and
 * contiguous's 0.3 %) it
 * is met at the edge (band 1.0), as the captured B128 16-key pages were; a read fraction of 0.957 misses
 * 0.97 by 1.3 % of it beyond a 0.5 band, one of 0.968 by 0.2 % at the edge; a case with no recorded spread
 * has no band. bench_check.py recomputes both fields: an edited one is caught. */
static void targets_say_whether_they_hold_beyond_the_runs_noise(void **s) {
  (void)s;
  static const char *const entries[] = {"{\"fixture\": \"%s\", \"target\": {\"read_fraction\": 0.97}}"};
  struct bench_matrix m;
  load_matrix(&m, "serving-noise.json", "", entries, 1);
  struct bench_case one = m.cases[0];
  m.cases = realloc(m.cases, 4 * sizeof *m.cases);
  m.n = 4;
  static const char *const name[4] = {"contig", "paged-clear", "paged-edge", "unspread"};
  static const double median[4] = {100.0, 102.0, 102.999, 101.0}, read[4] = {95.7, 98.736, 99.7, 96.0};
  static const double spread[4] = {0.003, 0.003, 0.007, 0.0};
  for (int i = 0; i < 4; i++) {
    m.cases[i] = one;
    snprintf(m.cases[i].name, sizeof m.cases[i].name, "%s", name[i]);
    timed(&m.cases[i], "", median[i], read[i]);
    m.cases[i].io_bytes = m.cases[i].kv_bytes = m.cases[i].visible_kv_bytes = 1e8 + i;  /* each its own read */
    m.cases[i].rel_stdev = spread[i];
    if (i) { m.cases[i].within_ref = 0; m.cases[i].within_pct = 3; }
  }
  m.cases[3].samples = 0;  /* no spread recorded */
  m.cases[0].rel_stdev = 0.003;
  struct bench_roofline r = {0};
  snprintf(r.reason, sizeof r.reason, "not measured");
  for (int i = 0; i < 4; i++) bench_case_rates(&m.cases[i], &r);
  struct bench_verdict v[16];
  const int nv = bench_judge(&m, &r, v, 16);
  assert_int_equal(nv, 7);  /* a read floor each, a within for each of the three against contig */
  static const struct { const char *c, *what; enum bench_verdict_state st; double band; int beyond; } want[7] = {
      {"contig", "read_fraction >= 0.97", BENCH_MISSED, 0.5, 1},          /* 0.957: 1.34 % of 0.97 short */
      {"paged-clear", "read_fraction >= 0.97", BENCH_MISSED, 0.5, 0},     /* 0.968: 0.21 % short */
      {"paged-clear", "median within 3% of contig", BENCH_MET, 0.6, 1},   /* +2.0 %: 1.0 points inside */
      {"paged-edge", "read_fraction >= 0.97", BENCH_MISSED, 0.7, 0},
      {"paged-edge", "median within 3% of contig", BENCH_MET, 1.0, 0},    /* +2.999 %: 0.001 points inside */
      {"unspread", "read_fraction >= 0.97", BENCH_MISSED, NAN, 0},
      {"unspread", "median within 3% of contig", BENCH_MET, NAN, 0}};
  for (int i = 0; i < nv; i++) {
    print_message("  %s %s: %s got %.4f, noise %.3f %%, beyond %d\n", m.cases[v[i].case_index].name, v[i].what,
                  bench_verdict_name(v[i].state), v[i].got, v[i].noise_pct, v[i].beyond_noise);
    assert_string_equal(m.cases[v[i].case_index].name, want[i].c);
    assert_string_equal(v[i].what, want[i].what);
    assert_int_equal(v[i].state, want[i].st);
    if (isnan(want[i].band)) assert_true(isnan(v[i].noise_pct));
    else assert_near(v[i].noise_pct, want[i].band, 1e-9);
    assert_int_equal(v[i].beyond_noise, want[i].beyond);
  }
  char dir[600];
  snprintf(dir, sizeof dir, "%s/serving-noise", tmp_dir());
  write_judged(dir, &m, &r, v, nv);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /targets/*/beyond_noise; "
              "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/e1.json set /targets/4/beyond_noise true && "
              "/usr/bin/python3 tests/bench_check.py %s/e1.json; echo rc=$?; "
              "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/e2.json set /targets/2/noise_pct 0.5 && "
              "/usr/bin/python3 tests/bench_check.py %s/e2.json; echo rc=$?",
         dir, dir, dir, dir, dir, dir, dir);
  assert_string_equal(rr.out, "[True, False, True, False, False, None, None]\n"
                              "paged-edge median within 3% of contig: beyond_noise True, recomputed False\nrc=1\n"
                              "paged-clear median within 3% of contig: noise_pct 0.5, recomputed 0.6\nrc=1\n");
  run_result_release(&rr);
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

/* tools/gen-bench-fixtures.py writes exactly the committed fixtures, the serving batches and the older
 * roofline shapes alike (the matrices are written by hand). */
static void the_generator_writes_every_bench_fixture_byte_for_byte(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "rm -rf %s/genfx && /usr/bin/python3 tools/gen-bench-fixtures.py %s/genfx && "
             "diff -r -x matrix.json -x quick.json -x serving.json -x ends.json fixtures/bench %s/genfx && ls %s/genfx | wc -l",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.out, "65\n");
  run_result_release(&r);
}

/* serving.json's backends: dkb's and its three peers (FlashInfer's two decodes, cuDNN's SDPA) */
#define NB 4

static double dtype_bytes(const char *dtype) { return !strcmp(dtype, "fp32") ? 4 : 2; }

/* The matrix the issue asks for: its entries in order, each once per backend (dkb first); the targets on
 * dkb's auto cases only: read_fraction >= 0.97 from 512 MB of K/V, >= 0.85 at 67 MB, every paged case
 * within 3 % of the contiguous (or packed) case of its shape, and auto within 3 % where forced splits run. */
static void the_serving_matrix_puts_the_issues_targets_on_dkbs_cases(void **s) {
  (void)s;
  static const char *const names[] = {
      "b64-t2048-g4-contig", "b64-t2048-g4-contig/split1", "b64-t2048-g4-contig/split2", "b64-t2048-g4-paged1",
      "b64-t2048-g4-paged16", "b64-t2048-g4-paged64", "b64-t2048-g4-fp16-contig", "b64-t2048-g4-fp16-paged16",
      "b128-t1024-g8-contig", "b128-t1024-g8-paged16", "b64-t2048-g8-contig", "b64-t2048-g8-paged16",
      "b128-t1024-g4-contig", "b128-t1024-g4-paged16", "b256-t512-g4-contig", "b256-t512-g4-paged16",
      "b256-t512-g8-contig", "b256-t512-g8-paged16", "b512-t256-g4-contig", "b512-t256-g4-paged16",
      "b512-t256-g8-contig", "b512-t256-g8-paged16", "b64-t2048-g4-d64-contig", "b64-t2048-g4-d64-paged16",
      "b64-t2048-g4-d256-contig", "b64-t2048-g4-d256-contig/split1", "b64-t2048-g4-d256-contig/split2",
      "b64-t2048-g4-d256-paged16", "ragged64-long4-packed", "ragged64-long4-paged16", "ragged64-long4-paged16/split1",
      "ragged64-long4-paged16/split2", "ragged64-long4-paged16/split4", "ragged64-long4-paged16/split8",
      "b4-t4096-g4-contig", "b4-t4096-g4-paged16"};
  const int ne = (int)(sizeof names / sizeof names[0]);
  struct bench_matrix m;
  struct dkb_err e;
  dkb_err_clear(&e);
  if (bench_matrix_load("fixtures/bench/serving.json", &m, &e)) fail_msg("%s", e.msg);
  assert_int_equal(m.nbackends, NB);
  assert_string_equal(m.backends[0], "dkb_split_kv");
  assert_string_equal(m.backends[1], "flashinfer_decode");
  assert_string_equal(m.backends[2], "flashinfer_decode_tc");
  assert_string_equal(m.backends[3], "cudnn_sdpa");
  assert_true(m.auto_within_pct == 3);
  assert_int_equal(m.n, ne * NB);
  int read97 = 0, read85 = 0, within = 0;
  for (int i = 0; i < m.n; i++) {
    const struct bench_case *c = &m.cases[i];
    assert_string_equal(c->name, names[i / NB]);
    assert_string_equal(c->backend, m.backends[i % NB]);
    if (i % NB || c->forced_splits) {  /* a peer's case, or a forced split: no target */
      assert_int_equal(c->peer_of, i % NB ? i - i % NB : -1);
      assert_true(c->want_frac == 0 && c->want_visible_frac == 0 && c->want_read_frac == 0 && c->within_ref < 0);
      continue;
    }
    const double kv = 2.0 * c->B * c->mean_len * c->H_kv * c->d * dtype_bytes(c->dtype);
    if (kv >= 512e6) {
      assert_true(c->want_read_frac == 0.97);
      read97++;
    } else {
      if (fabs(kv - 67108864) > 1) fail_msg("%s: %.0f bytes of K/V, neither >= 512 MB nor 67 MB", c->name, kv);
      assert_true(c->want_read_frac == 0.85);
      read85++;
    }
    if (strncmp(c->layout, "paged", 5)) {
      assert_int_equal(c->within_ref, -1);
      continue;
    }
    const struct bench_case *ref = &m.cases[c->within_ref];  /* dkb's own case of the same shape, unpaged */
    assert_true(c->within_pct == 3);
    assert_string_equal(ref->backend, "dkb_split_kv");
    assert_int_equal(ref->forced_splits, 0);
    assert_true(strncmp(ref->layout, "paged", 5) != 0);
    assert_true(ref->B == c->B && ref->H_q == c->H_q && ref->H_kv == c->H_kv && ref->d == c->d && ref->mean_len == c->mean_len);
    assert_string_equal(ref->dtype, c->dtype);
    within++;
  }
  assert_int_equal(read97, 26);
  assert_int_equal(read85, 2);
  assert_int_equal(within, 15);
  bench_matrix_release(&m);
}

/* The serving matrix judged as a GPU run would leave it: every case level 6, each peer 10 % slower than
 * dkb; dkb's paged cases against its contiguous ones at +2.99 % (met) and +3.01 % (missed; not exactly
 * +3 %, whose ratio 1.03 has no exact double and computes as 3.0000000000000027 %), never against a peer's;
 * the forced splits of the plugins refused. bench.json holds every verdict, recomputed by bench_check.py. */
static void the_serving_matrix_judges_paged_against_contiguous_and_peers(void **s) {
  (void)s;
  struct bench_matrix m;
  struct dkb_err e;
  dkb_err_clear(&e);
  if (bench_matrix_load("fixtures/bench/serving.json", &m, &e)) fail_msg("%s", e.msg);
  for (int i = 0; i < m.n; i++) {
    struct bench_case *c = &m.cases[i];
    /* of the plugins' forced splits cuDNN and FlashInfer's tensor-core decode admit a fixed split of 1 only,
     * its CUDA-core decode none */
    const int split1 = c->forced_splits == 1 && (!strcmp(c->backend, "cudnn_sdpa") || !strcmp(c->backend, "flashinfer_decode_tc"));
    if (i % NB && c->forced_splits && !split1) {
      refused(c);
      continue;
    }
    timed(c, c->backend, 100.0 * (i % NB ? 1.1 : 1), 0);
  }
  struct bench_case *paged16 = &m.cases[4 * NB], *paged64 = &m.cases[5 * NB];
  assert_string_equal(paged16->name, "b64-t2048-g4-paged16");
  paged16->median_us = 102.99;
  paged64->median_us = 103.01;
  m.cases[2 * NB].median_us = 97.2;  /* b64 contig split 2: auto +2.88 % */
  struct bench_roofline r = {0};
  for (int i = 0; i < m.n; i++) bench_case_rates(&m.cases[i], &r);
  struct bench_verdict v[400];
  const int nv = bench_judge(&m, &r, v, 400);
  int peers = 0, autos = 0, withins = 0, reads = 0;
  for (int i = 0; i < nv; i++) {
    const struct bench_case *c = &m.cases[v[i].case_index];
    assert_string_equal(c->backend, "dkb_split_kv");
    if (!strncmp(v[i].what, "median <= ", 10)) {
      peers++;
      assert_int_equal(v[i].state, BENCH_MET);
    } else if (!strncmp(v[i].what, "auto within 3% ", 15)) {
      autos++;
      assert_int_equal(v[i].state, BENCH_MET);
    } else if (!strncmp(v[i].what, "read_fraction >= ", 17)) {
      reads++;
      assert_int_equal(v[i].state, BENCH_NOT_MEASURED);  /* no same-bytes read without a GPU's roofline pass */
    } else {
      withins++;
      const enum bench_verdict_state want = c == paged64 ? BENCH_MISSED : BENCH_MET;
      if (v[i].state != want) fail_msg("%s: %s: %s", c->name, v[i].what, bench_verdict_name(v[i].state));
      if (c == paged16 || c == paged64) assert_true(strstr(v[i].what, "of b64-t2048-g4-contig") != NULL);
    }
  }
  /* 28 entries x 3 peers, and two of them admitted a forced split of 1 of the 3 split-1 entries */
  assert_int_equal(peers, 28 * 3 + 2 * 3);
  assert_int_equal(autos, 3);
  assert_int_equal(reads, 28);
  assert_int_equal(withins, 15);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/serving-judged", tmp_dir());
  write_judged(dir, &m, &r, v, nv);
  bench_matrix_release(&m);
}

/* dkb bench of a side-by-side matrix with every kind of target, on this host: the verdicts name dkb's
 * cases only, bench.json is valid and recomputes (on CPU each is not measured; the read_fraction floor is
 * not measured anywhere under --no-roofline). */
static void bench_writes_each_target_kind_side_by_side(void **s) {
  (void)s;
  char fx[600], fx2[600], doc[4000];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));
  assert_non_null(realpath("fixtures/decode/split1-direct.json", fx2));
  snprintf(doc, sizeof doc,
           "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"auto_within_pct\": 3, "
           "\"backends\": [\"dkb_split_kv\", \"dkb_naive_reference\"], \"cases\": ["
           "{\"fixture\": \"%s\", \"splits\": [\"auto\", 1], \"target\": {\"read_fraction\": 0.97}}, "
           "{\"fixture\": \"%s\", \"target\": {\"read_fraction\": 0.85, \"within_pct_of\": {\"fixture\": \"%s\", \"pct\": 3}}}]}",
           fx, fx2, fx);
  const char *mx = tmp_file("serving-run.json", doc);
  struct run_result r;  /* the targets but the peers' (with a GPU the naive reference is a peer), to the comma */
  run_sh(&r, "build/dkb bench --matrix %s -o %s/serving-run --no-roofline > /dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench-matrix.schema.json %s > /dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/serving-run/bench.json > /dev/null && "
             "/usr/bin/python3 tests/bench_check.py %s/serving-run/bench.json && "
             "/usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))[\"targets\"]; "
             "print(sorted({x[\"backend\"] for x in t}), [x[\"target\"].split(\",\")[0] for x in t if \"<=\" not in x[\"target\"]])' "
             "%s/serving-run/bench.json",
         mx, tmp_dir(), mx, tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.out, "['dkb_split_kv'] ['read_fraction >= 0.97', 'read_fraction >= 0.85', 'median within 3% of dk128-dv64', "
                             "'auto within 3% of the best forced split']\n");
  run_result_release(&r);
}

DKB_TEST_GROUP(serving, cmocka_unit_test(read_fraction_floor_met_at_its_edge_and_missed_just_past_it),
               cmocka_unit_test(targets_say_whether_they_hold_beyond_the_runs_noise),
               cmocka_unit_test(read_fraction_needs_k_v_from_dram_when_counters_say_so),
               cmocka_unit_test(a_read_fraction_floor_outside_its_bounds_is_malformed),
               cmocka_unit_test(auto_within_judges_the_first_backends_auto_case_only),
               cmocka_unit_test(the_generator_writes_every_bench_fixture_byte_for_byte),
               cmocka_unit_test(the_serving_matrix_puts_the_issues_targets_on_dkbs_cases),
               cmocka_unit_test(the_serving_matrix_judges_paged_against_contiguous_and_peers),
               cmocka_unit_test(bench_writes_each_target_kind_side_by_side))
