/* test_bench.c - `dkb bench` on this host: its table, CSV, JSON and SVG, no figure for a case it did not
 * time, DRAM bytes from counters, targets judged on level-6 results only (and not on K/V served by L2),
 * their errors and --require-targets, the excess over the floor and the roofline read, the same-bytes
 * read, a slowed case's clocks; and on a GPU one same-bytes read per size. (Side by side and the serving
 * matrix: test_side_by_side.c, test_serving.c.) */
#include "tests/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench.h"
#include "lib/fsutil.h"

static void bench_writes_table_csv_json_and_svg(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json fixtures/decode/split1-direct.json -o %s/bench 2>/dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench/bench.json && "
             "head -1 %s/bench/bench.csv && grep -c '<svg' %s/bench/roofline-fraction.svg",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "bandwidth = (unique K/V bytes + Q bytes + O bytes) / median time"));
  assert_non_null(strstr(r.out, "name,layout,B,S_q,H_q,H_kv,d,dtype,mean_kv_len,splits,median_us"));
  assert_non_null(strstr(r.out, ",tiles_partial,level,rel_stdev,samples,graph,excess_us,sm_mhz_after,slowed,read_us,read_fraction,backend,selected\n"));
  assert_non_null(strstr(r.out, " median_us  noise    TB/s "));
  assert_non_null(strstr(r.out, "vfrac  excess  read_us  rfrac level\n"));
  run_result_release(&r);
  /* the launch floors (plain launches and graph replay) are recorded beside the roofline; without a GPU,
   * each with its reason */
  run_sh(&r, "/usr/bin/python3 tests/bench_facts.py floors %s/bench/bench.json", tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  char why[256];
  assert_string_equal(r.out, have_gpu(why, sizeof why) ? "dkb_empty_v1 True True True True\n" : "dkb_empty_v1 False True False True\n");
  run_result_release(&r);
  /* each case's call key and spread (from its bundle) and the device, for `dkb compare`: a timed case has
   * its samples' count and relative stdev, an untimed one 0 and null */
  run_sh(&r, "/usr/bin/python3 tests/bench_facts.py cases %s/bench/bench.json", tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out, have_gpu(why, sizeof why) ? "available 2 True 0 True True True True\n"
                                                       : "unavailable 0 True 2 True True True True\n");
  run_result_release(&r);
  run_sh(&r, "build/dkb bench --matrix fixtures/bench/matrix.json fixtures/decode/dk128-dv64.json");
  assert_int_equal(r.rc, 2);
  run_result_release(&r);
}

/* A case that ran but was not timed (no GPU here; on a GPU the naive reference, forced by the fixture,
 * refuses --graph) is no measurement: its row says "not measured (level N, terminal)" and prints no figure,
 * bench.json records null for its median, bandwidths and fractions (the schema allows it, bench_check.py
 * wants it: a recorded 0.0 is refused), and the CSV leaves them empty. */
static void bench_records_no_figure_for_a_case_it_did_not_time(void **s) {
  (void)s;
  struct run_result r;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/bench-untimed", tmp_dir());
  run_sh(&r, "build/dkb bench fixtures/decode/naive-reference-backend.json --graph --no-roofline -o %s 2>/dev/null | "
             "grep '^naive-reference-backend '; /usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && "
             "/usr/bin/python3 tests/bench_check.py %s/bench.json && /usr/bin/python3 tests/jsontool.py get %s/bench.json "
             "/cases/0/ran /cases/0/median_us /cases/0/tbps /cases/0/roofline_fraction /cases/0/visible_tbps "
             "/cases/0/visible_roofline_fraction /cases/0/level /cases/0/terminal && sed -n 2p %s/bench.csv | cut -d, -f11,13-16",
         dir, dir, dir, dir, dir);
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  int level = -1;
  char terminal[64] = "", row[128];
  const char *rec = strstr(r.out, "\nTrue None None None None None ");
  if (!rec || sscanf(rec, "\nTrue None None None None None %d %63s", &level, terminal) != 2) fail_msg("no null figures in\n%s", r.out);
  snprintf(row, sizeof row, "not measured (level %d, %s)\n", level, terminal);
  const char *nl = strchr(r.out, '\n');
  if (!strstr(r.out, row) || strstr(r.out, row) > nl) fail_msg("want the row to end with '%s' in\n%s", row, r.out);
  assert_null(strstr(r.out, "0.00"));
  assert_non_null(strstr(r.out, "\n,,,,\n"));  /* CSV: median_us, tbps ... visible_roofline_fraction: none a figure */
  char why[256];
  if (!have_gpu(why, sizeof why)) assert_non_null(strstr(r.out, "not measured (level 2, cuda_runtime_unavailable)\n"));
  run_result_release(&r);
  /* a recorded zero is a figure: refused */
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/zero.json set /cases/0/median_us 0.0 && "
             "/usr/bin/python3 tests/bench_check.py %s/zero.json", dir, dir, dir);
  if (r.rc != 1 || !strstr(r.out, "naive-reference-backend: median_us 0.0 for a case that was not timed: null")) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

/* bench --counters: with a GPU every case carries the DRAM bytes of a call and their ratio to its visible
 * K/V (bench_check.py recomputes it); without one no case has them, and the table says so. */
static void bench_counters_give_each_case_its_dram_bytes_or_say_why_not(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json --counters --no-roofline -o %s/benchc > %s/benchc.txt 2>/dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/benchc/bench.json > /dev/null && "
             "/usr/bin/python3 tests/bench_check.py %s/benchc/bench.json > /dev/null && "
             "/usr/bin/python3 tests/bench_facts.py dram %s/benchc/bench.json && "
             "grep '^dram: ' %s/benchc.txt",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  char why[256];
  if (have_gpu(why, sizeof why)) {  /* the call's 0.3 MB stay in L2 between calls: whether it says so is L2's */
    if (strncmp(r.out, "True True\ndram: ", strlen("True True\ndram: ")) ||
        !strstr(r.out, " of the 1 cases with counters read less than 0.95 of their visible K/V from DRAM"))
      fail_msg("%s", r.out);
  } else {
    assert_string_equal(r.out, "False True\ndram: no counters for 1 of 1 cases (a case below level 5 never reached them; else its "
                               "bundle's /measurement/counters_pass says why)\n");
  }
  run_result_release(&r);
}

/* A bench case as bench_judge sees it after a run. */
static void measured(struct bench_case *c, const char *name, const char *fixture, int forced, double median_us, double frac,
                     double vfrac, int level) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->fixture, sizeof c->fixture, "%s", fixture);
  c->forced_splits = forced;
  c->ran = 1;
  c->level = level;
  c->median_us = median_us;
  c->frac = frac;
  c->visible_frac = vfrac;
  c->within_ref = -1;
}

/* Targets are judged only on level-6 results: floors on the fractions, "within" on medians, and auto
 * against the fastest forced split of its fixture. */
static void bench_targets_judge_level_6_results_only(void **s) {
  (void)s;
  struct bench_case c[6];
  measured(&c[0], "contig", "a.json", 0, 100.0, 0.93, 0.93, 6);
  measured(&c[1], "contig/split2", "a.json", 2, 96.0, 0.97, 0.97, 6);
  measured(&c[2], "paged", "b.json", 0, 106.0, 0.88, 0.88, 6);
  measured(&c[3], "window", "w.json", 0, 30.0, 3.9, 0.48, 6);
  measured(&c[4], "broken", "x.json", 0, 10.0, 0.99, 0.99, 5);  /* correctness failed: level 5 */
  measured(&c[5], "broken/split2", "x.json", 2, 9.0, 0.99, 0.99, 6);
  c[0].want_frac = 0.92;
  c[2].want_frac = 0.92;
  c[2].within_ref = 0;
  c[2].within_pct = 5;
  c[3].want_visible_frac = 0.60;
  c[4].want_frac = 0.50;
  struct bench_matrix m = {.name = "t", .auto_within_pct = 5, .cases = c, .n = 6};
  struct bench_roofline r = {.measured = 1, .tbps = 4.5};
  struct bench_verdict v[16];
  int n = bench_judge(&m, &r, v, 16);
  assert_int_equal(n, 7);
  assert_int_equal(v[0].state, BENCH_MET);       /* contig 0.93 >= 0.92 */
  assert_int_equal(v[1].state, BENCH_MISSED);    /* paged 0.88 < 0.92 */
  assert_true(fabs(v[1].need_us - 106.0 * 0.88 / 0.92) < 1e-9);  /* the median that would meet it */
  assert_true(isnan(v[0].need_us) && isnan(v[2].need_us));      /* met; a median comparison */
  assert_int_equal(v[2].state, BENCH_MISSED);    /* paged 6 % slower than contig: > 5 % */
  assert_true(fabs(v[2].got - 6.0) < 1e-9);
  assert_int_equal(v[3].state, BENCH_MISSED);    /* window visible 0.48 < 0.60 */
  assert_true(fabs(v[3].need_us - 24.0) < 1e-9);  /* 30 us x 0.48 / 0.60 */
  assert_int_equal(v[4].state, BENCH_NOT_MEASURED);  /* level 5: its number is not a measurement */
  assert_true(isnan(v[4].got));
  assert_int_equal(v[5].case_index, 0);          /* auto 100 us vs split 2 96 us: +4.2 % */
  assert_int_equal(v[5].state, BENCH_MET);
  assert_string_equal(v[5].what, "auto within 5% of the best forced split, contig/split2");
  assert_int_equal(v[6].state, BENCH_NOT_MEASURED);  /* its auto case is level 5 */
  /* no roofline: no fraction can be judged */
  r.measured = 0;
  n = bench_judge(&m, &r, v, 16);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_int_equal(v[2].state, BENCH_MISSED);    /* medians need no roofline */
}

/* With counters, a fraction floor is a DRAM claim: a case whose call read less than 0.95 of its visible
 * K/V from DRAM (L2 kept the rest from the calls before) has its fraction targets not measured, unless
 * the timing flushed L2 before every sample (--cold); a case without counters is judged as before. */
static void bench_fraction_targets_need_k_v_from_dram_when_counters_say_so(void **s) {
  (void)s;
  struct bench_case c[1];
  measured(&c[0], "t131072", "t.json", 0, 22.56, 0.656, 0.656, 6);
  c[0].want_frac = 0.60;
  c[0].dram_measured = 1;
  c[0].dram_read_bytes = 49.8e6;
  c[0].dram_kv_ratio = 49.8 / 67.1;
  struct bench_matrix m = {.name = "t", .cases = c, .n = 1};
  struct bench_roofline r = {.measured = 1, .tbps = 4.5};
  struct bench_verdict v[4];
  assert_int_equal(bench_judge(&m, &r, v, 4), 1);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_true(v[0].l2_served);
  assert_true(isnan(v[0].got));
  m.cold = 1;  /* the timed calls found L2 flushed: the ratio says nothing of them */
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  assert_false(v[0].l2_served);
  m.cold = 0;
  c[0].dram_kv_ratio = 0.999;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  c[0].dram_measured = 0;  /* no counters: nothing to doubt */
  c[0].dram_kv_ratio = 0.5;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  c[0].level = 5;  /* not a measurement at all: not for L2's sake */
  c[0].dram_measured = 1;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_false(v[0].l2_served);
}

/* A level-6 case of B1 T131072's size (67 MB of K/V, 2048 tiles) as bench_judge sees it after a run. */
static void t131072_case(struct bench_case *c, const char *name, double median_us) {
  measured(c, name, "a.json", 0, median_us, 0, 0, 6);
  c->io_bytes = 67112960;
  c->kv_bytes = c->visible_kv_bytes = 67108864;
  c->tiles[1] = 2048;
  c->mean_len = 131072;
  snprintf(c->layout, sizeof c->layout, "contiguous_nhd");
}

/* The roofline and launch floors of the bench run of bdd75e5 (4.527 TB/s, 2.976 us, graph 2.656 us). */
static struct bench_roofline h200_roofline(void) {
  struct bench_roofline r = {.measured = 1, .bytes = 8589934592.0, .median_us = 1897.408, .tbps = 8589934592.0 / 1897.408e-6 / 1e12};
  r.floor[0] = (struct bench_floor){.measured = 1, .us = 2.976, .samples = 100};
  r.floor[1] = (struct bench_floor){.measured = 1, .us = 2.656, .samples = 100};
  return r;
}

/* bench_write of the cases into DIR (made), then bench.json checked against its schema and recomputed by
 * tests/bench_check.py. */
static void write_checked_bench(const char *dir, struct bench_case *c, int n, const struct bench_roofline *r) {
  struct dkb_err e;
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  struct bench_matrix m = {.name = "t", .cases = c, .n = n};
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, &m, r, NULL, 0, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && /usr/bin/python3 tests/bench_check.py %s/bench.json",
         dir, dir);
  if (rr.rc != 0) fail_msg("exit %d\n%s%s", rr.rc, rr.out, rr.err);
  run_result_release(&rr);
}

/* excess_us = median - the launch floor of the case's timing mode - its visible bytes' read time at the
 * roofline: B1 T131072 of the bench run of bdd75e5 (26.08 us, 67 MB, 4.527 TB/s, floor 2.976 us) has 8.27
 * us beyond both; a graph case subtracts the graph floor; a masked call counts only its visible bytes;
 * no floor, no excess. bench.json carries it, and tests/bench_check.py recomputes it independently. */
static void bench_excess_is_the_median_beyond_the_floor_and_the_read_at_the_roofline(void **s) {
  (void)s;
  struct bench_case c[3];
  for (int i = 0; i < 3; i++) {
    t131072_case(&c[i], i == 0 ? "t131072" : i == 1 ? "t131072-graph" : "window", i == 2 ? 12.96 : 26.08);
    c[i].visible_kv_bytes = i == 2 ? 8388608 : 67108864;
    c[i].graph = i == 1;
  }
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  const double read_us = 67112960 / (r.tbps * 1e12) * 1e6;  /* 14.82 us */
  assert_true(fabs(c[0].excess_us - (26.08 - 2.976 - read_us)) < 1e-9);
  assert_true(fabs(c[0].excess_us - 8.27) < 0.01);
  assert_true(fabs(c[1].excess_us - (26.08 - 2.656 - read_us)) < 1e-9);
  assert_true(fabs(c[2].excess_us - (12.96 - 2.976 - (8388608 + 4096) / (r.tbps * 1e12) * 1e6)) < 1e-9);
  assert_true(fabs(c[0].frac - c[0].tbps / r.tbps) < 1e-12);
  /* the chain to bench.json and its independent recomputation */
  char dir[600];
  snprintf(dir, sizeof dir, "%s/excess", tmp_dir());
  write_checked_bench(dir, c, 3, &r);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json add /cases/1/excess_us 0.01 && "
              "/usr/bin/python3 tests/bench_check.py %s/bad.json", dir, dir, dir);
  assert_int_equal(rr.rc, 1);
  assert_non_null(strstr(rr.out, "t131072-graph: excess_us"));
  run_result_release(&rr);
  /* without the floor of its mode a case has no excess: null in bench.json, empty in the CSV */
  r.floor[1].measured = 0;
  bench_case_rates(&c[1], &r);
  assert_true(isnan(c[1].excess_us));
  write_checked_bench(dir, c, 3, &r);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /cases/1/excess_us && "
              "sed -n 3p %s/bench.csv | awk -F, '{print \"csv\", $(NF-4) \"|\"}'", dir, dir);
  assert_string_equal(rr.out, "None\ncsv |\n");
  run_result_release(&rr);
}

/* read_fraction = the same-bytes read's median / the case's: B1 T131072 at 24.7 us against a read of its
 * 67 MB that took 19.23 us (exp/probe/rd, H200, cold) is 0.779 of a plain read's speed. bench.json and the
 * CSV carry both; tests/bench_check.py recomputes the fraction, wants a reason where a timed case has no
 * read, and one read per size and timing mode. */
static void bench_read_fraction_is_the_same_bytes_read_over_the_median(void **s) {
  (void)s;
  struct bench_case c[3];
  for (int i = 0; i < 3; i++) {
    t131072_case(&c[i], i == 0 ? "t131072" : i == 1 ? "t131072-split128" : "t131072-graph", 24.7);
    c[i].samples = 100;
    c[i].read_us = 19.23;
    c[i].read_samples = 5000;
    c[i].graph = i == 2;
  }
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  assert_true(fabs(c[0].read_fraction - 19.23 / 24.7) < 1e-12);
  assert_true(fabs(c[0].read_fraction - 0.779) < 0.001);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/readfrac", tmp_dir());
  write_checked_bench(dir, c, 3, &r);
  struct run_result rr;
  run_sh(&rr, "sed -n 2p %s/bench.csv | awk -F, '{print $(NF-3), $(NF-2)}'", dir);  /* before backend, selected */
  assert_string_equal(rr.out, "19.230 0.7785\n");
  run_result_release(&rr);
  /* what the independent check refuses: a fraction that is not read / median, two reads of one size and
   * mode, a timed case with neither a read nor its reason */
  static const char *const bad[][2] = {
      {"add /cases/0/read_fraction 0.01", "t131072: read_fraction"},
      {"set /cases/1/read_us 19.5 set /cases/1/read_fraction 0.7894736842105263", "another case of the same bytes and mode"},  /* 19.5 / 24.7 */
      {"set /cases/1/read_us null set /cases/1/read_fraction null set /cases/1/read_samples 0",
       "t131072-split128: a timed case with no read_us and no read_reason"},
      {"set /cases/1/read_samples 0", "t131072-split128: read_us 19.23 with 0 read samples"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json %s && /usr/bin/python3 tests/bench_check.py %s/bad.json",
           dir, dir, bad[k][0], dir);
    if (rr.rc != 1 || !strstr(rr.out, bad[k][1])) fail_msg("%s: exit %d\n%s%s", bad[k][0], rr.rc, rr.out, rr.err);
    run_result_release(&rr);
  }
  /* the graph case is another mode: its own read may differ; a case without a read says why, and
   * has no fraction */
  c[2].read_us = 18.9;
  c[1].read_us = 0;
  c[1].read_samples = 0;
  snprintf(c[1].read_reason, sizeof c[1].read_reason, "--no-roofline");
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  assert_true(isnan(c[1].read_fraction));
  write_checked_bench(dir, c, 3, &r);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /cases/1/read_us /cases/1/read_fraction /cases/1/read_samples "
              "/cases/1/read_reason && sed -n 3p %s/bench.csv | "
              "awk -F, '{print \"csv\", $(NF-1) \"|\" $NF \"|\"}'", dir, dir);
  assert_string_equal(rr.out, "None None 0 --no-roofline\ncsv ||\n");
  run_result_release(&rr);
}

/* On the GPU: every timed case of a bench has its same-bytes read, one measurement per size and mode (a
 * forced split of the same fixture reads the same bytes), above the launch floor; tests/bench_check.py
 * recomputes each read_fraction. */
static void gpu_bench_times_one_same_bytes_read_per_size(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "printf '{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"rd\", \"roofline_bytes\": 4294967296, \"cases\": "
             "[{\"fixture\": \"%%s/fixtures/decode/default.json\", \"splits\": [\"auto\", 2]}]}' \"$PWD\" > %s/rd.json && "
             "build/dkb bench --matrix %s/rd.json -o %s/gpu-rd --max-time 0.3 > %s/gpu-rd.txt && "
             "/usr/bin/python3 tests/bench_check.py %s/gpu-rd/bench.json && /usr/bin/python3 tests/bench_facts.py reads %s/gpu-rd/bench.json",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 0) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.out, "2 True True\n");
  run_result_release(&r);
}

/* A case that ran slowed carries its clocks into bench.json and the CSV (the SM clock after, slowed 1); one
 * NVML reported nothing for has clocks null and empty columns. tests/bench_check.py re-derives "slowed"
 * from the reasons and catches a flag that disagrees. */
static void bench_json_and_csv_carry_a_slowed_cases_clocks(void **s) {
  (void)s;
  struct bench_case c[2];
  for (int i = 0; i < 2; i++) t131072_case(&c[i], i ? "quiet" : "hot", 26.08);
  c[0].clocks_reported = 1;
  c[0].sm_mhz[0] = 1980;
  c[0].sm_mhz[1] = 1755;
  c[0].clock_reasons = 0x24;  /* sw_power_cap, sw_thermal_slowdown */
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 2; i++) bench_case_rates(&c[i], &r);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/clocks-json", tmp_dir());
  write_checked_bench(dir, c, 2, &r);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get --json %s/bench.json /cases/*/clocks && "
              "sed -n '2,3p' %s/bench.csv | awk -F, '{print $(NF-5) \"|\" $(NF-4)}'",
         dir, dir);
  if (rr.rc != 0) fail_msg("exit %d\n%s%s", rr.rc, rr.out, rr.err);
  assert_string_equal(rr.out, "[{\"event_reasons\": [\"sw_power_cap\", \"sw_thermal_slowdown\"], \"slowed\": true, \"sm_mhz_after\": 1755, "
                              "\"sm_mhz_before\": 1980}, null]\n1755|1\n|\n");
  run_result_release(&rr);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json set /cases/0/clocks/slowed false && "
              "/usr/bin/python3 tests/bench_check.py %s/bad.json", dir, dir, dir);
  assert_int_equal(rr.rc, 1);
  assert_non_null(strstr(rr.out, "hot: clocks.slowed is False"));
  run_result_release(&rr);
}

/* The roofline-fraction chart plots a masked call at its visible-bytes fraction (hollow marker), never at
 * its whole-cache figure, which counts bytes it rightly skipped (3.86 here) and would leave the chart;
 * beside each call that has one, its same-bytes read's fraction of the roofline (a grey dash). */
static void bench_chart_plots_masked_calls_at_their_visible_fraction_and_reads_beside_them(void **s) {
  (void)s;
  struct bench_case c[2];
  measured(&c[0], "dense", "a.json", 0, 131.0, 0.883, 0.883, 6);
  measured(&c[1], "window", "w.json", 0, 30.0, 3.855, 0.483, 6);
  c[0].mean_len = c[1].mean_len = 8192;
  c[1].tiles[0] = 1792;
  snprintf(c[0].layout, sizeof c[0].layout, "contiguous_nhd");
  snprintf(c[1].layout, sizeof c[1].layout, "paged_nhd");
  struct bench_matrix m = {.name = "t", .cases = c, .n = 2};
  struct bench_roofline r = {.measured = 1, .tbps = 4.6};
  char dir[600];
  snprintf(dir, sizeof dir, "%s/chart", tmp_dir());
  struct dkb_err e;
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, &m, &r, NULL, 0, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "cat %s/roofline-fraction.svg", dir);
  assert_non_null(strstr(rr.out, "<title>window: visible 0.483</title>"));
  assert_non_null(strstr(rr.out, "<title>dense: 0.883</title>"));
  assert_null(strstr(rr.out, "3.855"));
  /* y = 30 + 340 * (1 - 0.483): inside the plot */
  assert_non_null(strstr(rr.out, "cy=\"205.8\" r=\"4\" fill=\"white\""));
  assert_null(strstr(rr.out, "same-bytes read"));  /* no case has a read: no dash, no legend entry */
  run_result_release(&rr);
  /* with their same-bytes reads: a grey dash at the read's fraction of the roofline, vfrac / rfrac (the
   * dense call at 0.883 is 0.95 of its read's speed: the read reaches 0.929; y = 30 + 340 * (1 - 0.929)) */
  c[0].read_us = 124.45;
  c[0].read_fraction = 0.95;
  c[1].read_us = 20.0;
  c[1].read_fraction = 0.6;
  assert_int_equal(bench_write(dir, &m, &r, NULL, 0, NULL, 2, argv, &e), 0);
  run_sh(&rr, "cat %s/roofline-fraction.svg", dir);
  assert_non_null(strstr(rr.out, "<title>dense: same-bytes read 0.929</title>"));
  assert_non_null(strstr(rr.out, "y1=\"54.0\" y2=\"54.0\" stroke=\"#888\""));
  assert_non_null(strstr(rr.out, "<title>window: same-bytes read 0.805</title>"));
  assert_non_null(strstr(rr.out, ">same-bytes read</text>"));
  run_result_release(&rr);
}

/* Malformed targets, and a fixture that is not there, name the matrix, the JSON Pointer and the reason;
 * --require-targets on a host that cannot measure exits 4. */
static void bench_targets_errors_and_require_targets(void **s) {
  (void)s;
  static const struct { const char *target, *err; } bad[] = {
      {"\"splits\": [2], \"target\": {\"roofline_fraction\": 0.5}",
       "/cases/0/target: needs the entry's \"auto\" case: a target judges the fixture's own split policy"},
      {"\"target\": {\"within_pct_of\": {\"fixture\": \"nope.json\", \"pct\": 5}}",
       "/cases/0/target/within_pct_of/fixture: 'nope.json' has no \"auto\" case earlier in the matrix"},
      {"\"target\": {\"fraction\": 0.5}", "/cases/0/target/fraction: unknown key"},
  };
  char fx[600], doc[1400], want[1200], name[64];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));  /* absolute: not relative to the matrix */
  struct run_result r;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"%s\", %s}]}", fx,
             bad[i].target);
    snprintf(name, sizeof name, "bench-target-%zu.json", i);
    const char *path = tmp_file(name, doc);
    run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out", path, tmp_dir());
    snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, bad[i].err);
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
  /* a fixture the matrix names but that is not there: the matrix's entry is the error */
  const char *mpath = tmp_file("bench-missing-fixture.json",
                               "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"nope-fixture.json\"}]}");
  run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out", mpath, tmp_dir());
  snprintf(want, sizeof want, "dkb: error: %s: /cases/0/fixture: cannot open '%s/nope-fixture.json': No such file or directory\n",
           mpath, tmp_dir());
  assert_int_equal(r.rc, 3);
  assert_string_equal(r.err, want);
  run_result_release(&r);
  /* a case that cannot run is named with its error's file: the others go on, the bench ends with its code */
  char fx2[600];
  assert_non_null(realpath("fixtures/decode/default.json", fx2));
  run_sh(&r, "mkdir -p %s/bench-case-err/cases && touch %s/bench-case-err/cases/000 && "
             "build/dkb bench %s %s -o %s/bench-case-err --no-roofline --max-time 0.01",
         tmp_dir(), tmp_dir(), fx, fx2, tmp_dir());
  snprintf(want, sizeof want, "dkb: error: dk128-dv64: %s/bench-case-err/cases/000: cannot create folder: Not a directory\n", tmp_dir());
  assert_int_equal(r.rc, 4);  /* the user's paths, not dkb's fault */
  assert_non_null(strstr(r.err, want));
  assert_non_null(strstr(r.out, "\ndefault "));  /* the second case ran */
  run_result_release(&r);
  char why[256];
  if (have_gpu(why, sizeof why)) return;  /* the exit-4 path is for hosts without a GPU */
  snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": "
           "\"%s\", \"target\": {\"roofline_fraction\": 0.5}}]}", fx);
  const char *path = tmp_file("bench-target-ok.json", doc);
  run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out --require-targets 2>&1; rc=$?; "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench-target-out/bench.json > /dev/null || exit 9; exit $rc",
         path, tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.out, "  not_measured dk128-dv64                         roofline_fraction >= 0.50 (no level-6 measurement)\n"));
  assert_non_null(strstr(r.out, "dkb: error: 1 of 1 bench targets could not be measured on this host\n"));
  run_result_release(&r);
}

/* A matrix without cases is malformed (its schema says minItems 1), as a missing fixture is: exit 3 with
 * the file, /cases and the reason, before anything runs. --require-targets over a run that judged no
 * target (fixtures, or a matrix that sets none) has not passed: exit 4, saying so, after the run. */
static void bench_refuses_an_empty_matrix_and_a_target_gate_with_nothing_to_judge(void **s) {
  (void)s;
  static const char *const empty = "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": []}";
  const char *path = tmp_file("bench-empty.json", empty);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py --expect-invalid schemas/bench-matrix.schema.json %s && "
             "rm -rf %s/bench-empty-out && build/dkb bench --matrix %s -o %s/bench-empty-out --require-targets; rc=$?; "
             "[ -e %s/bench-empty-out/bench.json ] && echo wrote; exit $rc",
         path, tmp_dir(), path, tmp_dir(), tmp_dir());
  char want[1200];
  snprintf(want, sizeof want, "dkb: error: %s: /cases: must hold at least one case (got an empty array)\n", path);
  if (r.rc != 3) fail_msg("exit %d, want 3\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.err, want);
  assert_string_equal(r.out, "");
  run_result_release(&r);
  char fx[600];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));
  char doc[1400];
  snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"%s\"}]}", fx);
  const char *none = tmp_file("bench-no-targets.json", doc);
  const char *const how[] = {"fixtures/decode/dk128-dv64.json", "--matrix"};
  for (int i = 0; i < 2; i++) {
    run_sh(&r, "build/dkb bench %s %s -o %s/bench-no-targets --no-roofline --max-time 0.05 --require-targets", how[i],
           i ? none : "", tmp_dir());
    if (r.rc != 4) fail_msg("%s: exit %d, want 4\n%s%s", how[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.err, "dkb: error: --require-targets: no bench target was judged: the matrix sets none\n"));
    assert_non_null(strstr(r.out, "wrote "));  /* the run's results stand beside the verdict */
    run_result_release(&r);
  }
}

/* The gate over a run's verdicts: --require-targets fails on a missed target (1) before a target this host
 * could not measure (4), and on a run that judged none (4); --require-margin also fails on a target met only
 * within the run's noise (1), the rule, and names itself when nothing was judged. */
static void the_target_gates_fail_missed_edge_and_unmeasured_targets(void **s) {
  (void)s;
  struct bench_verdict v[3];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 3; i++) { v[i].state = BENCH_MET; v[i].beyond_noise = 1; }
  char why[200];
  assert_int_equal(bench_gate(v, 3, 0, why, sizeof why), DKB_OK);
  assert_int_equal(bench_gate(v, 3, 1, why, sizeof why), DKB_OK);
  v[1].beyond_noise = 0;  /* met at the edge */
  assert_int_equal(bench_gate(v, 3, 0, why, sizeof why), DKB_OK);
  assert_int_equal(bench_gate(v, 3, 1, why, sizeof why), DKB_FAIL);
  assert_string_equal(why, "1 of 3 bench targets met only within the run's noise (at the edge)");
  v[2].state = BENCH_NOT_MEASURED;
  assert_int_equal(bench_gate(v, 3, 0, why, sizeof why), DKB_ENV);
  assert_string_equal(why, "1 of 3 bench targets could not be measured on this host");
  assert_int_equal(bench_gate(v, 3, 1, why, sizeof why), DKB_FAIL);  /* the edge is the kernel's, the host's after */
  v[0].state = BENCH_MISSED;
  v[0].beyond_noise = 0;  /* missed at the edge is missed */
  for (int margin = 0; margin < 2; margin++) {
    assert_int_equal(bench_gate(v, 3, margin, why, sizeof why), DKB_FAIL);
    assert_string_equal(why, "1 of 3 bench targets missed");
  }
  assert_int_equal(bench_gate(v, 0, 0, why, sizeof why), DKB_ENV);
  assert_string_equal(why, "--require-targets: no bench target was judged: the matrix sets none");
  assert_int_equal(bench_gate(v, 0, 1, why, sizeof why), DKB_ENV);
  assert_string_equal(why, "--require-margin: no bench target was judged: the matrix sets none");
  /* through the command: the flag is parsed and the gate runs after the results are written */
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json -o %s/bench-margin --no-roofline --max-time 0.05 --require-margin",
         tmp_dir());
  if (r.rc != 4) fail_msg("exit %d, want 4\n%s%s", r.rc, r.out, r.err);
  assert_non_null(strstr(r.err, "dkb: error: --require-margin: no bench target was judged: the matrix sets none\n"));
  assert_non_null(strstr(r.out, "wrote "));
  run_result_release(&r);
}

DKB_TEST_GROUP(bench, cmocka_unit_test(bench_writes_table_csv_json_and_svg),
               cmocka_unit_test(bench_records_no_figure_for_a_case_it_did_not_time),
               cmocka_unit_test(bench_counters_give_each_case_its_dram_bytes_or_say_why_not),
               cmocka_unit_test(bench_targets_judge_level_6_results_only),
               cmocka_unit_test(bench_fraction_targets_need_k_v_from_dram_when_counters_say_so),
               cmocka_unit_test(bench_targets_errors_and_require_targets),
               cmocka_unit_test(bench_refuses_an_empty_matrix_and_a_target_gate_with_nothing_to_judge),
               cmocka_unit_test(the_target_gates_fail_missed_edge_and_unmeasured_targets),
               cmocka_unit_test(bench_chart_plots_masked_calls_at_their_visible_fraction_and_reads_beside_them),
               cmocka_unit_test(bench_excess_is_the_median_beyond_the_floor_and_the_read_at_the_roofline),
               cmocka_unit_test(bench_read_fraction_is_the_same_bytes_read_over_the_median),
               cmocka_unit_test(bench_json_and_csv_carry_a_slowed_cases_clocks),
               cmocka_unit_test(gpu_bench_times_one_same_bytes_read_per_size))
