/* test_side_by_side.c - `dkb bench --backend A,B` (and a matrix's "backends"): every entry once per
 * backend, forced, on the same inputs; the first backend judged against each other that admitted the
 * call ("median <= B's", recomputed by tests/bench_check.py); a refused backend shows its reason and is no
 * peer; `dkb compare --base-backend/--new-backend` reads two backends of one run as one call. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench.h"
#include "lib/fsutil.h"

static void bench_runs_every_case_under_every_backend_in_one_run(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json fixtures/decode/split1-direct.json -o %s/sbs --no-roofline "
             "--backend dkb_split_kv,dkb_naive_reference > %s/sbs.out && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/sbs/bench.json && "
             "/usr/bin/python3 tests/bench_check.py %s/sbs/bench.json && "
             "/usr/bin/python3 tests/jsontool.py get %s/sbs/bench.json /backends /cases/*/backend /cases/*/name && "
             "cut -d, -f29,30 %s/sbs/bench.csv | sed -n '1,3p'",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 0) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.out, "['dkb_split_kv', 'dkb_naive_reference'] ['dkb_split_kv', 'dkb_naive_reference', 'dkb_split_kv', "
                             "'dkb_naive_reference'] ['dk128-dv64', 'dk128-dv64', 'split1-direct', 'split1-direct']\n"
                             "backend,selected\ndkb_split_kv,\ndkb_naive_reference,\n");
  run_result_release(&r);
  char path[600];
  snprintf(path, sizeof path, "%s/sbs.out", tmp_dir());
  char *out = slurp(path);
  assert_non_null(strstr(out, "\nbackend                case "));
  assert_non_null(strstr(out, "\ndkb_naive_reference    dk128-dv64 "));
  assert_non_null(strstr(out, "side by side (dkb_split_kv first; ratio = its median / the fastest other backend's that admitted the call):\n"));
  free(out);
}

static void a_backend_list_is_checked_before_any_case_runs(void **s) {
  (void)s;
  static const struct { const char *args; int rc; const char *err; } cases[] = {
      {"--backend nope", 2, "dkb: error: --backend 'nope' is not a backend (known: auto, dkb_split_kv, dkb_naive_reference)\n"},
      {"--backend dkb_split_kv,dkb_split_kv", 2, "dkb: error: --backend: 'dkb_split_kv' is named twice\n"},
      {"--backend Bad-Name", 2, "dkb: error: --backend: 'Bad-Name' is not a backend name\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct run_result r;
    run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json -o %s/sbs-bad --no-roofline %s; echo rc=$?; test -e %s/sbs-bad && echo made",
           tmp_dir(), cases[i].args, tmp_dir());
    char want[32];
    snprintf(want, sizeof want, "rc=%d\n", cases[i].rc);
    if (!strstr(r.out, want) || strstr(r.out, "made") || strncmp(r.err, cases[i].err, strlen(cases[i].err)))
      fail_msg("%s: %s%s", cases[i].args, r.out, r.err);
    run_result_release(&r);
  }
  const char *mx = tmp_file("sbs-matrix.json", "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"backends\": [\"dkb_split_kv\", \"nope\"], "
                                               "\"cases\": [{\"fixture\": \"dk128-dv64.json\"}]}");
  struct run_result r;
  run_sh(&r, "cp fixtures/decode/dk128-dv64.json %s/ && build/dkb bench --matrix %s -o %s/sbs-bad2 --no-roofline", tmp_dir(), mx, tmp_dir());
  char want[800];
  snprintf(want, sizeof want, "dkb: error: %s: /backends: 'nope' is not a backend (known: auto, dkb_split_kv, dkb_naive_reference)\n", mx);
  assert_int_equal(r.rc, 3);
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

/* Two entries of two backends filled by hand as a GPU run would: the first backend faster on one call,
 * slower on the other; a third call the second backend refused. */
static void fill(struct bench_case *c, const char *sel, double median) {
  c->ran = 1;
  c->level = median > 0 ? 6 : 4;
  snprintf(c->terminal, sizeof c->terminal, "%s", median > 0 ? "complete" : "backend_rejected");
  snprintf(c->selected, sizeof c->selected, "%s", sel);
  if (!sel[0]) snprintf(c->why, sizeof c->why, "the forced backend x was refused: page_size=1 unsupported");
  c->median_us = median;
  c->io_bytes = c->kv_bytes = c->visible_kv_bytes = 1e8;
  c->samples = median > 0 ? 20 : 0;
  c->rel_stdev = 0.01;
  snprintf(c->call_key, sizeof c->call_key, "%064d", 0);
  c->tiles[1] = 10;
  if (median > 0) snprintf(c->read_reason, sizeof c->read_reason, "--no-roofline");
}

static void peers_judge_the_first_backend_against_each_that_admitted_the_call(void **s) {
  (void)s;
  char *fx[] = {"fixtures/decode/dk128-dv64.json", "fixtures/decode/split1-direct.json", "fixtures/decode/default.json"};
  struct bench_matrix m;
  struct dkb_err e;
  assert_int_equal(bench_matrix_from_fixtures(fx, 3, &m, &e), 0);
  assert_int_equal(bench_matrix_set_backends(&m, "a_backend,b_backend", &e), 0);
  assert_int_equal(m.n, 6);
  fill(&m.cases[0], "a_backend", 10.0);
  fill(&m.cases[1], "b_backend", 11.0);  /* a faster: met */
  fill(&m.cases[2], "a_backend", 12.0);
  fill(&m.cases[3], "b_backend", 11.9);  /* a slower by 0.8 %: missed, however small */
  fill(&m.cases[4], "a_backend", 5.0);
  fill(&m.cases[5], "", 0);              /* b refused the call: no peer */
  m.cases[0].splits = 4, m.cases[2].splits = m.cases[4].splits = 1;  /* b, like cuDNN, reports none */
  struct bench_roofline r = {0};
  for (int i = 0; i < m.n; i++) bench_case_rates(&m.cases[i], &r);
  struct bench_verdict v[8];
  const int nv = bench_judge(&m, &r, v, 8);
  assert_int_equal(nv, 2);
  assert_string_equal(v[0].what, "median <= b_backend's");
  assert_int_equal(v[0].state, BENCH_MET);
  assert_int_equal(v[1].state, BENCH_MISSED);
  assert_true(fabs(v[1].got - 100 * (12.0 / 11.9 - 1)) < 1e-9);
  /* dkb compare's band (1 % + 1 %): -9.1 % beyond it, +0.8 % within it, as compare's verdicts below */
  assert_near(v[0].noise_pct, 2.0, 1e-9);
  assert_near(v[1].noise_pct, 2.0, 1e-9);
  assert_true(v[0].beyond_noise);
  assert_false(v[1].beyond_noise);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/sbs-judged", tmp_dir());
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, &m, &r, v, nv, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && /usr/bin/python3 tests/bench_check.py %s/bench.json && "
              "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/flipped.json set /targets/1/verdict '\"met\"' && "
              "/usr/bin/python3 tests/bench_check.py %s/flipped.json; echo rc=$?",
         dir, dir, dir, dir, dir);
  assert_string_equal(rr.out, "split1-direct median <= b_backend's: verdict met, recomputed missed\nrc=1\n");
  run_result_release(&rr);
  /* a split the backend did not report is null in bench.json and empty in bench.csv, not a 0 */
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /cases/*/splits && cut -d, -f10 %s/bench.csv | tr '\\n' ' '",
         dir, dir);
  assert_string_equal(rr.out, "[4, None, 1, None, 1, None]\nsplits 4  1  1  ");
  run_result_release(&rr);
  /* the same run read as two backends: each call is its fixture and split; a 9 % faster beyond the 2 % band,
   * 0.8 % slower within it; the call b refused is unmeasured */
  run_sh(&rr, "build/dkb compare %s %s --base-backend b_backend --new-backend a_backend --json > %s/cmp.json; echo rc=$?; "
              "/usr/bin/python3 tests/schema_check.py schemas/compare-report.schema.json %s/cmp.json && "
              "/usr/bin/python3 tests/jsontool.py get %s/cmp.json /cases/*/verdict /base/backend",
         dir, dir, dir, dir, dir);
  assert_string_equal(rr.out, "rc=0\n['faster', 'same', 'unmeasured'] b_backend\n");
  run_result_release(&rr);
  bench_matrix_release(&m);
}

DKB_TEST_GROUP(side_by_side, cmocka_unit_test(bench_runs_every_case_under_every_backend_in_one_run),
               cmocka_unit_test(a_backend_list_is_checked_before_any_case_runs),
               cmocka_unit_test(peers_judge_the_first_backend_against_each_that_admitted_the_call))
