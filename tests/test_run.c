/* test_run.c - the decode call end to end: fixture loading and its exact errors, `dkb run` without a GPU
 * (an honest level-2 bundle, exit codes), NumPy dumps that an independent float64 reference reproduces to
 * 1e-12, the SASS and ncu tools, run budgets; and on a GPU every decode fixture at level 6 with split = k
 * agreeing with split = 1, TMA tiles as cp.async ones. (The planner: test_plan.c; `dkb bench`:
 * test_bench.c.) */
#include "tests/util.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/backends.h"
#include "harness/decode_call.h"
#include "harness/inputs.h"
#include "harness/plan.h"
#include "lib/jread.h"
#include "kernels/decode.h"
#include "oracles/compare.h"
#include "oracles/dtype.h"

static void decode_fixtures_are_schema_valid_and_load(void **s) {
  (void)s;
  struct run_result r;
  /* fixtures/bench holds the bench matrices beside the fixtures they list: told apart by their schema */
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/decode.schema.json fixtures/decode/*.json "
             "$(grep -L '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json) && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench-matrix.schema.json "
             "$(grep -l '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json)");
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  run_sh(&r, "ls fixtures/decode/*.json; grep -L '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json");
  char *save = NULL;
  for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct decode_call c;
    struct dkb_err e;
    if (decode_call_load(line, &c, &e)) fail_msg("%s: %s", line, e.msg);
    decode_call_release(&c);
  }
  run_result_release(&r);
}

/* The fixture schema names backends by the form the loader checks (decode_call.c: "auto" or a table's name
 * of [a-z0-9_], at most 47 characters, harness/plugin.c), since plugins bring names of their own: every
 * registered name fits it, and a name outside it is refused by the schema too. */
static void schema_backend_names_have_the_registrys_form(void **s) {
  (void)s;
  json_error_t je;
  json_t *doc = json_load_file("schemas/decode.schema.json", 0, &je);
  if (!doc) fail_msg("schemas/decode.schema.json: %s", je.text);
  const char *pat = json_string_value(json_object_get(json_object_get(json_object_get(doc, "properties"), "backend"), "pattern"));
  assert_non_null(pat);
  assert_string_equal(pat, "^(auto|[a-z0-9_]{1,47})$");
  regex_t re;
  assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
  struct backend_set *set = calloc(1, sizeof *set);
  struct dkb_err e;
  dkb_err_clear(&e);
  assert_int_equal(backend_set_open(set, NULL, 0, &e), 0);
  assert_int_equal(set->n, 2);
  for (size_t i = 0; i < set->n; i++) assert_int_equal(regexec(&re, set->v[i].t->name, 0, NULL, 0), 0);
  assert_int_not_equal(regexec(&re, "Flash-V9", 0, NULL, 0), 0);
  assert_int_not_equal(regexec(&re, "a_backend_name_of_forty_eight_characters_is_long", 0, NULL, 0), 0);
  regfree(&re);
  backend_set_close(set);
  free(set);
  json_decref(doc);
}

/* The one comparison's max_ratio is the share of its allowance the worst element used: a reference
 * near zero makes max_rel huge but not it, and it exceeds 1 only where an element is a violation (an element
 * with no allowance at all, atol = rtol = 0, leaves it out). */
static void tolerance_ratio_is_the_share_of_the_allowance(void **s) {
  (void)s;
  const double ref[4] = {1.0, 1e-6, -2.0, 0.0}, got[4] = {1.001, 2e-6, -2.0, 0.0005};
  struct dkb_cmp c;
  dkb_compare_f64(got, ref, 4, 0.001, 0.01, &c);  /* allowances 0.011, ~0.001, 0.021, 0.001 */
  assert_true(c.pass);
  assert_true(c.max_rel > 0.99 && c.max_rel < 1.01);  /* 1e-6 / 1e-6: the element near zero */
  assert_true(fabs(c.max_ratio - 0.5) < 1e-12);       /* 0.0005 / 0.001 at ref 0 */
  const double worse[4] = {1.02, 1e-6, -2.0, 0.0};
  dkb_compare_f64(worse, ref, 4, 0.001, 0.01, &c);
  assert_int_equal(c.violations, 1);
  assert_true(fabs(c.max_ratio - 0.02 / 0.011) < 1e-9);
  dkb_compare_f64(worse, ref, 4, 0, 0, &c);  /* no allowance anywhere: ratio undefined, left 0 */
  assert_int_equal(c.violations, 1);
  assert_true(c.max_ratio == 0);
}

static void malformed_decode_fixtures_name_pointer_and_reason(void **s) {
  (void)s;
  const char *base = "{\"schema\": \"dkb.decode/v1\", \"name\": \"x\", \"phase\": \"decode\", \"q_len\": 1, "
                     "\"heads\": {\"H_q\": %s, \"H_kv\": 2, \"d_qk\": 64, \"d_v\": 64}, \"dtype\": \"bf16\", "
                     "\"requests\": %s, \"cache\": %s, \"mask\": {\"kind\": \"none\"}, \"split\": {\"policy\": \"auto\"}, "
                     "\"seed\": 1, \"tolerance\": {\"atol\": 0.001, \"rtol\": 0.01}}";
  struct { const char *hq, *req, *cache, *err; } cases[] = {
      {"5", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}", "/heads/H_q: must be a multiple of H_kv 2 (got 5)"},
      {"4", "[{\"kv_len\": 0}]", "{\"layout\": \"contiguous_nhd\"}", "/requests/0/kv_len: must be >= 1 (got 0)"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"paged_nhd\"}", "/cache: missing required key 'page_size'"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\", \"page_size\": 16}",
       "/cache/page_size: only applies to paged layouts (layout is 'contiguous_nhd')"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\", \"shuffle_group\": 64}",
       "/cache/shuffle_group: only applies to paged layouts (layout is 'contiguous_nhd')"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"paged_nhd\", \"page_size\": 4, \"page_order\": \"sequential\", \"shuffle_group\": 64}",
       "/cache/shuffle_group: only applies to page_order 'shuffled' (page_order is 'sequential')"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"paged_nhd\", \"page_size\": 4, \"shuffle_group\": 1}",
       "/cache/shuffle_group: must be >= 2 (got 1)"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\", \"capacity\": 4}",
       "/cache/capacity: must be >= the longest request's kv_len 8 (got 4)"},
      {"4", "[{\"kv_len\": 8, \"cache_row\": 1}, {\"kv_len\": 8, \"cache_row\": 1}]", "{\"layout\": \"contiguous_nhd\"}",
       "/requests/1/cache_row: duplicates the cache row 1 of request 0"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"tiled\"}",
       "/cache/layout: must be one of: contiguous_nhd, contiguous_hnd, ragged_nhd, paged_nhd, paged_hnd (got 'tiled')"},
      /* a backend nothing could ever admit is the fixture's error, not an admission outcome */
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}, \"backend\": \"flash_v9\"",
       "/backend: 'flash_v9' is not a backend (known: auto, dkb_split_kv, dkb_naive_reference)"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}, \"backend\": \"Flash-V9\"",
       "/backend: must be \"auto\" or a backend name of [a-z0-9_], at most 47 characters (got 'Flash-V9')"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char doc[2048], want[1024];
    snprintf(doc, sizeof doc, base, cases[i].hq, cases[i].req, cases[i].cache);
    const char *path = tmp_file("bad-decode.json", doc);
    struct run_result r;
    run_sh(&r, "build/dkb run %s -o %s/bad-out --quiet", path, tmp_dir());
    snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, cases[i].err);
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
}

/* The page ids of a shuffled cache of 4 requests of 64 keys in 4-key pages (64 pages and 8 spare: 72 in the
 * pool): with shuffle_group 8 every page stays in its group of 8 pool pages and some move within it; over the
 * whole pool (no shuffle_group) some leave their group, so the check can tell the two apart; in both tables
 * every pool page appears at most once. */
static void shuffle_group_keeps_each_page_within_its_group_of_the_pool(void **s) {
  (void)s;
  const char *fmt = "{\"schema\": \"dkb.decode/v1\", \"name\": \"g\", \"phase\": \"decode\", \"q_len\": 1, "
                    "\"heads\": {\"H_q\": 4, \"H_kv\": 2, \"d_qk\": 64, \"d_v\": 64}, \"dtype\": \"bf16\", "
                    "\"requests\": {\"count\": 4, \"kv_len\": 64}, \"cache\": {\"layout\": \"paged_nhd\", \"page_size\": 4%s}, "
                    "\"mask\": {\"kind\": \"none\"}, \"split\": {\"policy\": \"auto\"}, \"seed\": 3, "
                    "\"tolerance\": {\"atol\": 0.001, \"rtol\": 0.01}}";
  int out_of_group[2], moved[2];
  for (int grouped = 0; grouped < 2; grouped++) {
    char doc[1024];
    snprintf(doc, sizeof doc, fmt, grouped ? ", \"shuffle_group\": 8" : "");
    const char *path = tmp_file("shuffle-group.json", doc);
    struct decode_call c;
    struct decode_inputs in;
    struct dkb_err e;
    if (decode_call_load(path, &c, &e)) fail_msg("%s", e.msg);
    assert_int_equal(c.shuffle_group, grouped ? 8 : 0);
    if (inputs_build(&c, 64, &in, &e)) fail_msg("%s", e.msg);
    assert_int_equal(in.n_page_indices, 64);
    assert_int_equal(in.L.num_pages, 72);
    char seen[72] = {0};
    out_of_group[grouped] = moved[grouped] = 0;
    for (int i = 0; i < 64; i++) {
      const int p = in.page_indices[i];
      assert_true(p >= 0 && p < 72 && !seen[p]);
      seen[p] = 1;
      out_of_group[grouped] += p / 8 != i / 8;
      moved[grouped] += p != i;
    }
    inputs_release(&in);
    decode_call_release(&c);
  }
  assert_int_equal(out_of_group[1], 0);
  assert_true(moved[1] > 0);
  assert_true(out_of_group[0] > 0);
}

static void run_without_gpu_stops_at_level_2_with_reason(void **s) {
  (void)s;
  char why[256];
  if (have_gpu(why, sizeof why)) { print_message("[  SKIP    ] a GPU is present: this test is for hosts without one\n"); skip(); }
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/run-cpu/", tmp_dir());  /* a trailing slash: one separator */
  assert_int_equal(r.rc, 0);
  char line[512];
  snprintf(line, sizeof line, "  bundle      %s/run-cpu/bundle.json\n", tmp_dir());
  assert_non_null(strstr(r.out, line));
  assert_non_null(strstr(r.out, "  level       2 (cuda_runtime_unavailable)\n"));
  assert_non_null(strstr(r.out, "  reason      cuda_runtime_unavailable: cudaGetDeviceCount: "));  /* the bundle's why */
  /* the admission's why names every refused candidate and its reasons */
  assert_non_null(strstr(r.out, "  reason      no_eligible_backend: every candidate was refused: dkb_split_kv "
                                "(compute_capability unknown: no CUDA device); dkb_naive_reference (compute_capability "
                                "unknown: no CUDA device)\n"));
  assert_non_null(strstr(r.out, "  correctness not checked: the call stopped at cuda_runtime_unavailable (the float64 oracle ran on the host)\n"));
  /* the summary says first which levels need a GPU, in words that are not CUDA's when no driver is loaded
   * (cudaErrorInsufficientDriver reads as "update the driver"), and ends with the commands to run next */
  assert_non_null(strstr(r.out, "dkb run: default\n  host        levels 3-6 need a GPU, and "));
  if (access("/proc/driver/nvidia/version", F_OK)) {
    assert_non_null(strstr(r.out, "  host        levels 3-6 need a GPU, and this host has none: no NVIDIA driver is loaded\n"));
    assert_non_null(strstr(r.out, "  reason      cuda_runtime_unavailable: cudaGetDeviceCount: no NVIDIA driver is loaded "
                                  "(cudaErrorInsufficientDriver)\n"));
    assert_null(strstr(r.out, "driver version is insufficient"));
    assert_null(strstr(r.err, "driver version is insufficient"));
  }
  snprintf(line, sizeof line, "  next        build/dkb validate %s/run-cpu/bundle.json  # re-grades the bundle", tmp_dir());
  assert_non_null(strstr(r.out, line));
  assert_non_null(strstr(r.out, "\n              build/dkb preflight "));
  run_result_release(&r);
  run_sh(&r, "build/dkb validate %s/run-cpu/bundle.json --source-root . && "
             "/usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json %s/run-cpu/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "computed level 2, claimed 2"));
  run_result_release(&r);
  /* the environment cannot give level 6: exit 4 */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu2 --quiet --require-level 6", tmp_dir());
  assert_int_equal(r.rc, 4);
  assert_string_equal(r.err, "dkb: error: level 2 is below the required 6 (cuda_runtime_unavailable)\n");
  run_result_release(&r);
  /* a registered backend that refuses the call is recorded with its reasons, never a crash */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu3 --backend dkb_split_kv && "
             "build/dkb validate %s/run-cpu3/bundle.json", tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "  reason      backend_rejected: the forced backend dkb_split_kv was refused: "
                                "compute_capability unknown: no CUDA device\n"));
  run_result_release(&r);
  /* a name no backend has is a usage error before any work: exit 2, no bundle */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu4 --backend no_such_backend; echo rc=$?; "
             "test -e %s/run-cpu4 && echo wrote", tmp_dir(), tmp_dir());
  assert_non_null(strstr(r.out, "rc=2\n"));
  assert_null(strstr(r.out, "wrote"));
  assert_non_null(strstr(r.err, "dkb: error: --backend 'no_such_backend' is not a backend "
                                "(known: auto, dkb_split_kv, dkb_naive_reference)\n"));
  run_result_release(&r);
}

/* Issue 10: the dumped tensors recompute, independently of the C oracle, to 1e-12. */
static void dumps_recompute_in_numpy_to_1e12(void **s) {
  (void)s;
  const char *fx[] = {"dk128-dv64", "paged-csr-p1-more-splits-than-pages", "flashmask-documents", "append-paged-sq3"};
  for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
    struct run_result r;
    run_sh(&r, "rm -rf %s/dump-%s && build/dkb run fixtures/decode/%s.json -o %s/dump-run-%s --quiet --dump %s/dump-%s && "
               "/usr/bin/python3 tests/dump_check.py %s/dump-%s --tol 1e-12 && "
               "/usr/bin/python3 tests/schema_check.py schemas/dump.schema.json %s/dump-%s/index.json",
           tmp_dir(), fx[i], fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i]);
    if (r.rc) fail_msg("%s: exit %d\n%s%s", fx[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, ": pass"));
    run_result_release(&r);
  }
}

/* On the GPU: every decode fixture passes correctness and reaches level 6; split = k agrees with
 * split = 1 within the fixture's tolerance. */
static void gpu_every_decode_fixture_reaches_level_6(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "for f in fixtures/decode/*.json; do n=$(basename $f .json); "
             "build/dkb run $f -o %s/gpu-$n --quiet --max-time 0.2 --require-level 6 > /dev/null || echo \"FAIL $n\"; done",
         tmp_dir());
  if (strstr(r.out, "FAIL")) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* `dkb run --counters` on a split call: the bundle still reaches level 6 and its counters pass measured
 * DRAM bytes and GPU time. Not the K/V size: the range profiler flushes no L2, and most of the 36 MB of
 * K/V is still in the 60 MiB L2 from the earlier passes (5.3 MB came from DRAM on the H200). */
static void gpu_run_with_counters_measures_dram_bytes(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/gpu-counters --quiet --max-time 0.2 --counters "
             "--require-level 6 > /dev/null && /usr/bin/python3 tests/bench_facts.py counters %s/gpu-counters/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc != 0 || strncmp(r.out, "measured ", 9)) fail_msg("%s%s", r.out, r.err);
  double bytes = 0, ns = 0;
  assert_int_equal(sscanf(r.out + 9, "%lf %lf", &bytes, &ns), 2);
  print_message("[  INFO    ] counters: dram read %.0f B, gpu time %.0f ns\n", bytes, ns);
  assert_true(ns > 0);
  assert_true(bytes > 0);
  run_result_release(&r);
}

/* `dkb run --cold --counters`: the counted call starts from a flushed L2, as each timed sample does, so
 * it reads all of its K/V from DRAM (the warm call above read 5.3 of 36.7 MB there), and the flush, a read,
 * leaves nothing dirty for the call to write back (after a memset flush a 64 MiB read wrote back 21 MB:
 * gpu_l2_flush_leaves_no_dirty_lines_where_a_memset_does). */
static void gpu_cold_counters_read_all_k_v_from_dram_and_write_back_no_flush(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/gpu-cold --quiet --max-time 0.2 --cold --counters "
             "--require-level 6 > /dev/null && /usr/bin/python3 tests/bench_facts.py cold-counters %s/gpu-cold/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc != 0 || strncmp(r.out, "flushed ", 8)) fail_msg("%s%s", r.out, r.err);
  double rd = 0, wr = 0, kv = 0, out = 0;
  assert_int_equal(sscanf(r.out + 8, "%lf %lf %lf %lf", &rd, &wr, &kv, &out), 4);
  print_message("[  INFO    ] cold counters: dram read %.0f B of %.0f B K/V, write %.0f B (outputs and workspace %.0f B)\n",
                rd, kv, wr, out);
  assert_true(rd >= 0.95 * kv);
  assert_true(wr <= 2 * out + (1 << 20));  /* what the call writes, not dirty lines a flush left */
  run_result_release(&r);
}

/* Elements of a dumped .npy (v1.0 header) decoded as the dump index says. */
static double *npy_read(const char *path, const char *dtype, size_t *n) {
  char *raw = NULL;
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  len = (size_t)ftell(f);
  rewind(f);
  raw = malloc(len);
  if (fread(raw, 1, len, f) != len) { fclose(f); free(raw); return NULL; }
  fclose(f);
  size_t off = 10 + (size_t)(unsigned char)raw[8] + 256 * (size_t)(unsigned char)raw[9];
  enum dkb_dtype t = (enum dkb_dtype)dkb_dtype_parse(dtype);
  *n = (len - off) / dkb_dtype_bytes(t);
  double *v = malloc(*n * sizeof *v);
  for (size_t i = 0; i < *n; i++) v[i] = dkb_load(t, raw + off, i);
  free(raw);
  return v;
}

/* Runs fixture fx with the members of patch set at its top level (patch NULL: as declared; the reference
 * is taken), dumping into tmp_dir()/<tag>d; the test fails when the run does. Returns the fixture run. */
static const char *run_dumped(const char *fx, json_t *patch, const char *tag) {
  if (patch) {
    struct dkb_err e;
    json_t *doc = jr_load_file(fx, &e);
    assert_non_null(doc);
    json_object_update(doc, patch);
    json_decref(patch);
    char *text = json_dumps(doc, 0), name[64];
    json_decref(doc);
    snprintf(name, sizeof name, "%s.json", tag);
    fx = tmp_file(name, text);
    free(text);
  }
  struct run_result r;
  run_sh(&r, "rm -rf %s/%sd && build/dkb run %s -o %s/%s --no-timing --quiet --dump %s/%sd > /dev/null", tmp_dir(), tag, fx,
         tmp_dir(), tag, tmp_dir(), tag);
  if (r.rc) fail_msg("%s: %s%s", tag, r.out, r.err);
  run_result_release(&r);
  return fx;
}

/* Array `name` of the dump of run `tag`, decoded as dtype (*n elements). */
static double *dump_array(const char *tag, const char *name, const char *dtype, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%sd/%s.npy", tmp_dir(), tag, name);
  double *v = npy_read(path, dtype, n);
  assert_non_null(v);
  return v;
}

/* Runs a fixture with split = 1, as declared (split 8, merged in the last producer CTA) and with 16 and
 * 17 splits (the last fused plan and the first one merged by the combine kernel: kFusedSlots), dumping
 * each; compares array `name` of each split run with split 1's. */
static void split_k_against_split_1(const char *name, const char *dtype, double atol, double rtol) {
  const char *fx = "fixtures/decode/ragged-contig-nhd-bf16-g4.json";
  static const struct { const char *tag; int splits; const char *combine; } v[] = {
      {"s8", 0, "fused (last producer CTA)"}, {"s16", 16, "fused (last producer CTA)"}, {"s17", 17, "kernel"}};
  run_dumped(fx, json_pack("{s:{s:s,s:i}}", "split", "policy", "fixed", "splits", 1), "s1");
  size_t n1 = 0;
  double *a = dump_array("s1", name, dtype, &n1);
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    const char *ran = run_dumped(fx, v[k].splits ? json_pack("{s:{s:s,s:i}}", "split", "policy", "fixed", "splits", v[k].splits) : NULL, v[k].tag);
    struct decode_call dc;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture(ran, &dc, &in, &pl);  /* the plan the run launched: which merge the comparison covers */
    if (strcmp(plan_combine_name(&pl), v[k].combine)) fail_msg("%s: combine \"%s\", want \"%s\"", v[k].tag, plan_combine_name(&pl), v[k].combine);
    release_planned(&dc, &in, &pl);
    size_t n = 0;
    double *b = dump_array(v[k].tag, name, dtype, &n);
    assert_int_equal(n1, n);
    struct dkb_cmp c;
    dkb_compare_f64(b, a, n1, atol, rtol, &c);
    print_message("[  INFO    ] %s %s vs split 1 (%s): max |diff| %.3g over %zu elements\n", name, v[k].tag, v[k].combine, c.max_abs, c.n);
    if (!c.pass)
      fail_msg("%s %s: %zu of %zu elements differ beyond atol %g + rtol %g (max %.3g)", name, v[k].tag, c.violations, c.n, atol, rtol, c.max_abs);
    free(b);
  }
  free(a);
}

/* The float64 reference does not depend on the split policy (the harness of the GPU check). */
static void split_policy_does_not_change_the_reference(void **s) {
  (void)s;
  split_k_against_split_1("o_ref", "fp64", 1e-12, 0);
}

/* On the GPU: splits 8, 16 (both merged by the last producer CTA) and 17 (merged by the combine kernel)
 * agree with split = 1 within the fixture's tolerance. */
static void gpu_split_k_agrees_with_split_1(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  split_k_against_split_1("o_gpu", "bf16", 2e-3, 1.6e-2);
}

/* On the GPU: the tensor-core producer's two copy paths fill the same shared-memory layout. One call
 * (ragged lengths: whole tiles and edge tiles, three splits) in four cache layouts with the same logical
 * K/V: NHD caches take TMA boxes for whole tiles, HND caches take cp.async for every tile, so O and LSE
 * must agree bit for bit. */
static void gpu_tma_tiles_match_cp_async_tiles_bit_for_bit(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  static const char *const layout[] = {"paged_nhd", "paged_hnd", "contiguous_nhd", "contiguous_hnd"};
  static const char *const dump[2] = {"o_gpu", "lse_gpu"}, *const dt[2] = {"bf16", "fp32"};
  double *first[2] = {NULL, NULL};
  size_t n_first[2] = {0, 0};
  for (int l = 0; l < 4; l++) {
    char tag[16];
    snprintf(tag, sizeof tag, "cp%d", l);
    run_dumped("fixtures/decode/paged-nhd-p32-auto.json",
               json_pack("{s:{s:s,s:i},s:o}", "split", "policy", "fixed", "splits", 3, "cache",
                         l < 2 ? json_pack("{s:s,s:i}", "layout", layout[l], "page_size", 32) : json_pack("{s:s}", "layout", layout[l])),
               tag);
    for (int k = 0; k < 2; k++) {
      size_t n = 0;
      double *v = dump_array(tag, dump[k], dt[k], &n);
      if (!l) {
        first[k] = v;
        n_first[k] = n;
        continue;
      }
      assert_int_equal(n, n_first[k]);
      struct dkb_cmp c;
      dkb_compare_f64(v, first[k], n, 0, 0, &c);
      print_message("[  INFO    ] %s %s vs paged_nhd: max |diff| %.3g over %zu elements\n", layout[l], dump[k], c.max_abs, c.n);
      if (!c.pass) fail_msg("%s %s: %zu of %zu elements differ from paged_nhd (max %.3g)", layout[l], dump[k], c.violations, c.n, c.max_abs);
      free(v);
    }
  }
  free(first[0]);
  free(first[1]);
}

/* tools/sass-check.py (run by gpu-smoke on `cuobjdump -sass`) flags an async copy whose memory descriptor
 * register the function never writes (the ptxas miscompile that crashed the d = 64 producer), and passes
 * one whose descriptor is written, predicated or not; reading the register is not writing it. */
static void sass_check_flags_an_unwritten_copy_descriptor(void **s) {
  (void)s;
  static const char head[] = "\tcode for sm_90\n\t\tFunction : _Zgood\n\t.headerflags\t@\"EF_CUDA_SM90\"\n"
                             "        /*0110*/                   ULDC.64 UR16, c[0x0][0x218] ;\n"
                             "        /*0120*/              @!P3 R2UR UR18, R6 ;\n"
                             "        /*2c00*/                   LDGSTS.E.BYPASS.LTC128B.128 [R37], desc[UR16][R24.64], !P6 ;\n"
                             "        /*2c20*/                   LDGSTS.E.BYPASS.LTC128B.128 [R37+0x800], desc[UR18][R26.64], !P1 ;\n";
  static const char bad[] = "\t\tFunction : _Zbad\n"
                            "        /*02f0*/                   IMAD.U32 R2, RZ, RZ, UR1 ;\n"
                            "        /*98a0*/                   LDGSTS.E.BYPASS.LTC128B.128 [R99+UR0], desc[UR1][R148.64], !P1 ;\n";
  char both[1024];
  snprintf(both, sizeof both, "%s%s", head, bad);
  struct run_result r;
  run_sh(&r, "python3 tools/sass-check.py < %s", tmp_file("good.sass", head));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "sass-check: 1 functions with async copies, 0 unwritten descriptors\n");
  run_result_release(&r);
  run_sh(&r, "python3 tools/sass-check.py < %s", tmp_file("bad.sass", both));
  assert_int_equal(r.rc, 1);
  assert_string_equal(r.out, "unwritten descriptor UR1 in _Zbad\nsass-check: 2 functions with async copies, 1 unwritten descriptors\n");
  run_result_release(&r);
}

/* tools/ncu-summary.py (docs/profiles/ keeps its output) reads each launch's figures and stall reasons from
 * `ncu --print-details all` lines as ncu writes them, and shares the first kernel's stall samples by
 * opcode and instruction, predicates dropped, the second kernel's rows not counted; a report with no
 * launch is exit 1. */
static void ncu_summary_shares_a_profiles_stalls_by_reason_and_instruction(void **s) {
  (void)s;
  static const char txt[] =
      "[673] dkb@127.0.0.1\n"
      "  void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, 256, 0>(dkb_decode_params, <unnamed>::KvMaps) (4, 64, 1)x(128, 1, 1), Context 1, Stream 13, Device 0, CC 9.0\n"
      "    dram__bytes_read.sum                                     Mbyte       537.52\n"
      "    gpu__time_duration.sum                                      us       165.28\n"
      "    DRAM Throughput                   %        67.90\n"
      "    Registers Per Thread             register/thread             254\n"
      "    Registers Per Thread       register/thread                            255\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_barrier)                                     warp        5,000\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_wait)                                        warp        3,000\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_long_scoreboard)                             warp        2,000\n";
  static const char csv[] =
      "\"Kernel Name\",\"void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, (int)256, (bool)0>(dkb_decode_params, <unnamed>::KvMaps)\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"# Samples\"\n"
      "\"0x10\",\"      LDS.64 R250, [R250+UR52]\",\"60\",\"60\"\n"
      "\"0x20\",\"@!P0  BRA 0x7f72677bf170\",\"30\",\"30\"\n"
      "\"0x30\",\"      LDS R1, [R2]\",\"10\",\"10\"\n"
      "\"Kernel Name\",\"void other()\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"# Samples\"\n"
      "\"0x10\",\"      HMMA.16816.F32.BF16 R84, R32, R172, R84\",\"900\",\"900\"\n";
  tmp_file("prof.txt", txt);
  tmp_file("prof-source.csv", csv);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tools/ncu-summary.py %s/prof", tmp_dir());
  assert_int_equal(r.rc, 0);
  static const char *want[] = {
      "`void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, 256, 0>(dkb_decode_params, <unnamed>::KvMaps)`, grid (4, 64, 1), block (128, 1, 1)\n",
      "| duration | 165.28 us |\n", "| DRAM read | 537.52 Mbyte |\n", "| DRAM throughput | 67.90 % |\n",
      "| registers per thread | 254 register/thread |\n",
      "| stall samples | barrier 50.0 %, wait 30.0 %, long_scoreboard 20.0 % |\n",
      "Stall samples of `void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, (int)256, (bool)0>(dkb_decode_params, <unnamed>::KvMaps)`: 100\n",
      "| LDS | 70.0 % |\n| BRA | 30.0 % |\n", "| `LDS.64 R250, [R250+UR52]` | 60.0 % |\n"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(r.out, want[i])) fail_msg("missing %s in\n%s%s", want[i], r.out, r.err);
  assert_null(strstr(r.out, "HMMA"));
  run_result_release(&r);
  tmp_file("empty.txt", "==PROF== Disconnected\n");
  run_sh(&r, "/usr/bin/python3 tools/ncu-summary.py %s/empty", tmp_dir());
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "empty.txt: no kernel launch"));
  run_result_release(&r);
}

/* tools/timeline-summary.py (docs/profiles/timeline-*) parts a launch's CTAs into those that entered with it and
 * the later ones, and gives each part's phase medians and mean lifetime, entry to exit: the later CTAs' lifetime
 * is what a call of many CTAs a slot pays per CTA (docs/kernels.md, "A B512 CTA's lifetime"). Two SMs, two CTAs
 * each; the later pair lives 5 and 6 us. */
static void timeline_summary_gives_the_later_ctas_mean_lifetime(void **s) {
  (void)s;
  static const char csv[] = "0,1000000,1001000,1003000,1004000,0,0\n1,1000000,1002000,1005000,1006000,1,0\n"
                            "2,1004000,1005000,1008000,1009000,0,0\n3,1006000,1008000,1010000,1012000,1,0\n";
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tools/timeline-summary.py %s", tmp_file("tl.csv", csv));
  assert_int_equal(r.rc, 0);
  static const char *want[] = {
      "4 CTAs, span 12.00 us",
      "at launch     2 CTAs: entry -> first tile p50 2.00 us, loop p50 3.00, epilogue p50 1.00, entry -> exit mean 5.00\n",
      "later         2 CTAs: entry -> first tile p50 2.00 us, loop p50 3.00, epilogue p50 2.00, entry -> exit mean 5.50\n",
      "exit -> the SM's next first tile: p10/p50/p90 1.00/2.00/2.00 us\n"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(r.out, want[i])) fail_msg("missing %s in\n%s%s", want[i], r.out, r.err);
  run_result_release(&r);
}

/* The verdict tools/budgets.py printed for one budget: the rest of the line that starts with name. */
static void assert_budget(const char *out, const char *name, const char *verdict) {
  char key[64];
  snprintf(key, sizeof key, "\n%s ", name);
  char *buf = malloc(strlen(out) + 2);
  assert_non_null(buf);
  buf[0] = '\n';
  strcpy(buf + 1, out);
  const char *l = strstr(buf, key);
  if (!l) {
    free(buf);
    fail_msg("no %s line in:\n%s", name, out);
    return;
  }
  const char *e = strchr(l + 1, '\n');
  const size_t n = e ? (size_t)(e - l) : strlen(l);
  char one[512];
  snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), l + 1);
  if (!strstr(one, verdict)) fail_msg("%s: want '%s' in '%s'", name, verdict, one);
  free(buf);
}

/* tools/budgets.py (docs/DESIGN.md's budgets, run on the GPU machine by gpu-smoke --budgets) against a
 * stand-in dkb whose `run` holds MB MiB and writes a bundle of the given level and K/V bytes: a peak resident
 * memory over 1.5x the call's bytes is missed (exit 1), one under is met; the wall budget is judged only
 * for a level-6 run, the memory ratio only from 256 MiB of K/V; a run that leaves no bundle is exit 4,
 * and never read from an earlier run's folder. */
static void budgets_judge_peak_memory_and_wall_time_of_real_runs(void **s) {
  (void)s;
  const char *fake = "tests/fake_dkb.py";
  const char *b = tmp_file("budget-bundle.json", "{}");
  struct run_result r;
  /* 400 MiB resident against 1.5 x 256.25 MiB: missed */
  run_sh(&r, "MB=400 LEVEL=6 KV=268435456 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 1);
  assert_budget(r.out, "run_memory", "missed");
  assert_budget(r.out, "run_wall", "met");
  assert_budget(r.out, "validate_wall", "met");
  run_result_release(&r);
  run_sh(&r, "MB=0 LEVEL=6 KV=268435456 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 0);
  assert_budget(r.out, "run_memory", "met");
  run_result_release(&r);
  /* a run without the GPU work, or with too few bytes for the ratio to mean anything: not judged */
  run_sh(&r, "MB=400 LEVEL=2 KV=1048576 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 0);
  assert_budget(r.out, "run_wall", "not judged: exit 0, level 2");
  assert_budget(r.out, "run_memory", "not judged");
  run_result_release(&r);
  /* the folder still holds the last run's bundle: a run that writes none must not be judged on it */
  run_sh(&r, "LEVEL=none python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.err, "left no readable bundle"));
  run_result_release(&r);
}

DKB_TEST_GROUP(run, cmocka_unit_test(decode_fixtures_are_schema_valid_and_load),
               cmocka_unit_test(malformed_decode_fixtures_name_pointer_and_reason), cmocka_unit_test(schema_backend_names_have_the_registrys_form),
               cmocka_unit_test(shuffle_group_keeps_each_page_within_its_group_of_the_pool),
               cmocka_unit_test(tolerance_ratio_is_the_share_of_the_allowance),
               cmocka_unit_test(run_without_gpu_stops_at_level_2_with_reason),
               cmocka_unit_test(dumps_recompute_in_numpy_to_1e12),
               cmocka_unit_test(split_policy_does_not_change_the_reference),
               cmocka_unit_test(sass_check_flags_an_unwritten_copy_descriptor),
               cmocka_unit_test(ncu_summary_shares_a_profiles_stalls_by_reason_and_instruction),
               cmocka_unit_test(timeline_summary_gives_the_later_ctas_mean_lifetime),
               cmocka_unit_test(budgets_judge_peak_memory_and_wall_time_of_real_runs),
               cmocka_unit_test(gpu_every_decode_fixture_reaches_level_6), cmocka_unit_test(gpu_split_k_agrees_with_split_1),
               cmocka_unit_test(gpu_tma_tiles_match_cp_async_tiles_bit_for_bit),
               cmocka_unit_test(gpu_run_with_counters_measures_dram_bytes),
               cmocka_unit_test(gpu_cold_counters_read_all_k_v_from_dram_and_write_back_no_flush))
