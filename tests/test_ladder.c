/* test_ladder.c - the ladder's C API (evidence/ladder.h) and the bundle writer (evidence/bundle.h) as
 * `dkb run` uses them: a written bundle claims exactly the level it proves and validates; artifact
 * files are only trusted when the folder is given; terminal-state ceilings; every field a real bundle
 * derives from its artifacts, its call key or its plan is recomputed; artifacts are the folder's own
 * files; and every numeric threshold holds exactly at its edge. */
#include "tests/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "evidence/bundle.h"
#include "evidence/ladder.h"
#include "lib/cjson.h"
#include "lib/jread.h"
#include "lib/sha256.h"
#include "oracles/stats.h"

static json_t *load(const char *path) {
  struct dkb_err err;
  json_t *doc = jr_load_file(path, &err);
  if (!doc) fail_msg("%s: %s", path, err.msg);
  return doc;
}

static int grade(const json_t *b, const char *dir, struct ladder_result *res) {
  struct dkb_err err;
  struct ladder_opts o = {dir, NULL};
  ladder_result_init(res);
  int rc = ladder_evaluate(b, "test", &o, res, &err);
  if (rc) fail_msg("not a bundle: %s: %s", err.pointer, err.msg);
  return res->computed;
}

/* Without a folder the artifact files are not checked; with an empty one, levels 3-5 lose them. */
static void artifact_files_count_only_when_the_folder_is_given(void **s) {
  (void)s;
  json_t *b = load("fixtures/bundles/synthetic.level6.bundle.json");
  struct ladder_result res;
  assert_int_equal(grade(b, NULL, &res), 6);
  assert_int_equal(res.n, 0);
  assert_true(ladder_result_honest(&res));
  ladder_result_release(&res);
  assert_int_equal(grade(b, "fixtures/bundles", &res), 6);
  ladder_result_release(&res);
  assert_int_equal(grade(b, tmp_dir(), &res), 2);
  assert_false(ladder_result_honest(&res));
  assert_string_equal(res.findings[0].reason, "artifact_file_missing");
  assert_int_equal(res.findings[0].level, 3);
  assert_string_equal(res.findings[res.n - 1].reason, "claimed_level_exceeds_computed");
  ladder_result_release(&res);
  json_decref(b);
}

static void terminal_ceilings_follow_the_ladder(void **s) {
  (void)s;
  assert_int_equal(ladder_terminal_ceiling("complete"), 6);
  assert_int_equal(ladder_terminal_ceiling("cuda_runtime_unavailable"), 2);
  assert_int_equal(ladder_terminal_ceiling("no_gpu"), 2);
  assert_int_equal(ladder_terminal_ceiling("profiler_unavailable"), 4);
  assert_int_equal(ladder_terminal_ceiling("backend_rejected"), 4);
  assert_int_equal(ladder_terminal_ceiling("correctness_failed"), 5);
  assert_int_equal(ladder_terminal_ceiling("ready"), -1);
}

/* `dkb run` and `dkb bench` end by the final status, not by the first check: a call whose output passed
 * and was then not reproduced after the timed samples (correctness_failed) exits 1, as a wrong output
 * does; a launch that failed exits by whose fault its CUDA error was (a faulting kernel 1, the machine 4,
 * never 0); states a machine caps exit 0 and are left to --require-level. */
static void exit_codes_follow_the_final_status(void **s) {
  (void)s;
  assert_int_equal(ladder_terminal_exit_code("correctness_failed", DKB_ENV), DKB_FAIL);
  assert_int_equal(ladder_terminal_exit_code("launch_failed", DKB_ENV), DKB_ENV);
  assert_int_equal(ladder_terminal_exit_code("launch_failed", DKB_FAIL), DKB_FAIL);
  assert_int_equal(ladder_terminal_exit_code("launch_failed", DKB_OK), DKB_FAIL);
  static const char *const capped[] = {"complete", "cuda_runtime_unavailable", "no_gpu", "profiler_unavailable",
                                       "backend_rejected", "no_eligible_backend"};
  for (size_t i = 0; i < sizeof capped / sizeof *capped; i++) {
    assert_true(ladder_terminal_ceiling(capped[i]) >= 2);  /* a state the ladder knows */
    assert_int_equal(ladder_terminal_exit_code(capped[i], DKB_FAIL), DKB_OK);
  }
  assert_int_equal(ladder_terminal_exit_code("internal_error", DKB_OK), DKB_INTERNAL);
  assert_int_equal(ladder_terminal_exit_code("ready", DKB_OK), DKB_INTERNAL);
}

/* A type error anywhere is "not a bundle", with the pointer. */
static void wrong_type_is_not_a_bundle(void **s) {
  (void)s;
  json_t *b = load("fixtures/bundles/synthetic.level6.bundle.json");
  json_array_set_new(json_object_get(json_object_get(b, "execution"), "kernels"), 0, json_string("k"));
  struct dkb_err err;
  struct ladder_result res;
  ladder_result_init(&res);
  assert_int_equal(ladder_evaluate(b, "b.json", NULL, &res, &err), -1);
  assert_int_equal(err.code, DKB_INPUT);
  char msg[1024];
  dkb_err_format(&err, msg, sizeof msg);
  assert_string_equal(msg, "b.json: /execution/kernels/0: must be an object (got string)");
  ladder_result_release(&res);
  json_decref(b);
}

/* What `dkb run` does on a host without CUDA: source and chain, then bundle_write grades it, claims
 * the computed level, and the written bundle validates and matches the schema. */
static void bundle_write_claims_exactly_what_it_proves(void **s) {
  (void)s;
  json_t *src = load("fixtures/bundles/synthetic.level6.bundle.json");
  char *argv[] = {"dkb", "run", "fixtures/decode/gqa-paged.json", "-o", "out/"};
  char sha[65];
  struct dkb_err err;
  assert_int_equal(dkb_sha256_buf("fixture", 7, sha, &err), 0);
  json_t *b = bundle_new(5, argv, "fixtures/decode/gqa-paged.json", "gqa-paged", sha);
  /* meta describes this build: the source section must carry the same commit and dirty flag */
  json_t *source = json_deep_copy(json_object_get(src, "source"));
  json_object_set(source, "commit", json_object_get(json_object_get(b, "meta"), "commit"));
  json_object_set(source, "dirty", json_object_get(json_object_get(b, "meta"), "dirty"));
  json_object_set_new(b, "source", source);
  json_object_set(b, "chain", json_object_get(src, "chain"));
  bundle_set_status(b, "cuda_runtime_unavailable", "cuda_runtime_unavailable", "cudaGetDeviceCount returned %d", 35);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/written", tmp_dir());
  assert_int_equal(mkdir(dir, 0777), 0);
  json_t *ref = NULL;
  json_t *report = json_pack("{s:s,s:s}", "schema", "dkb.build-report/v1", "commit", "x");
  assert_int_equal(bundle_add_json_artifact(b, dir, "build-report", report, &ref, &err), 0);
  const char *name = json_string_value(json_object_get(ref, "artifact"));
  assert_int_equal(strncmp(name, "build-report.", 13), 0);
  assert_int_equal(strlen(name), strlen("build-report.") + 16 + strlen(".json"));
  char path[1024], hex[65];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(dkb_sha256_file(path, hex, &err), 0);
  assert_string_equal(hex, json_string_value(json_object_get(ref, "sha256")));
  json_decref(ref);
  json_decref(report);
  struct ladder_result res;
  ladder_result_init(&res);
  if (bundle_write(b, dir, &res, &err)) fail_msg("%s: %s", err.file, err.msg);
  assert_int_equal(res.computed, 2);
  assert_int_equal(res.claimed, 2);
  assert_true(ladder_result_honest(&res));
  ladder_result_release(&res);
  struct run_result r;
  run_sh(&r, "build/dkb validate %s/bundle.json && /usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json %s/bundle.json",
         dir, dir);
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_non_null(strstr(r.out, "computed level 2, claimed 2\n"));
  run_result_release(&r);
  json_decref(b);
  json_decref(src);
}

/* ---- recomputation, artifact files and thresholds --------------------------------------------------- */

#define CAPTURED "fixtures/captured/bundles/default"

/* doc[pointer] = v (new reference); the parent must exist. */
static void set_at(json_t *doc, const char *pointer, json_t *v) {
  char parent[DKB_PTR_MAX];
  const char *slash = strrchr(pointer, '/');
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - pointer), pointer);
  json_t *p = jr_resolve(doc, parent);
  if (!p) fail_msg("no %s", parent);
  if (json_is_array(p)) json_array_set_new(p, (size_t)atoi(slash + 1), v);
  else json_object_set_new(p, slash + 1, v);
}

static double num_at(const json_t *doc, const char *pointer) { return json_number_value(jr_resolve(doc, pointer)); }

/* Grades b against the artifacts in dir (NULL: none) under source_root; asserts the computed level and,
 * with reason, that a finding (reason, pointer) is among the findings; without, that there is none. */
static void expect(const json_t *b, const char *dir, const char *source_root, int level, const char *reason,
                   const char *pointer, const char *what) {
  struct dkb_err err;
  struct ladder_opts o = {dir, source_root};
  struct ladder_result res;
  ladder_result_init(&res);
  if (ladder_evaluate(b, "test", &o, &res, &err)) fail_msg("%s: not a bundle: %s: %s", what, err.pointer, err.msg);
  int found = 0;
  for (size_t i = 0; i < res.n; i++)
    found |= reason && !strcmp(res.findings[i].reason, reason) && !strcmp(res.findings[i].pointer, pointer);
  if (res.computed != level || (reason && !found) || (!reason && res.n)) {
    for (size_t i = 0; i < res.n; i++)
      print_message("  level %d %s %s: %s\n", res.findings[i].level, res.findings[i].reason, res.findings[i].pointer,
                    res.findings[i].detail);
    fail_msg("%s: computed level %d (want %d), %s %s", what, res.computed, level, reason ? reason : "no finding",
             reason ? (found ? "found" : "not found") : "");
  }
  ladder_result_release(&res);
}

/* Every field of the H200's default bundle that derives from an artifact it hashes, its call key or its
 * plan record is recomputed: one field changed in a copy, against the unchanged artifacts, is found. */
static void captured_fields_recompute_from_artifacts_key_and_plan(void **s) {
  (void)s;
  static const struct {
    const char *pointer, *value, *reason, *at;
    int level;
  } edits[] = {
      {"/execution/kernels/0/grid", "[8, 1, 1]", "kernel_record_contradicts_trace", "/execution/kernels/0/grid", 4},
      {"/execution/kernels/0/registers", "32", "kernel_record_contradicts_trace", "/execution/kernels/0/registers", 4},
      {"/execution/kernels/0/launches", "2", "kernel_record_contradicts_trace", "/execution/kernels/0/launches", 4},
      {"/execution/kernels/0/shared_bytes", "81920", "kernel_record_contradicts_trace", "/execution/kernels/0/shared_bytes", 4},
      {"/execution/kernels/0/symbol", "\"_Z6renamedv\"", "kernel_record_contradicts_trace", "/execution/kernels/0/symbol", 4},
      {"/execution/nvtx_range", "\"dkb/call/other\"", "trace_contradicts_execution", "/execution/nvtx_range", 4},
      {"/execution/external_correlation_id", "2", "trace_contradicts_execution", "/execution/external_correlation_id", 4},
      {"/execution/profiler/version", "\"130002\"", "trace_contradicts_execution", "/execution/profiler/version", 4},
      {"/loaded/device/compute_capability", "\"8.0\"", "device_contradicts_admission", "/loaded/device/compute_capability", 2},
      {"/loaded/objects/0/bytes", "704289", "loaded_object_not_in_loader_map", "/loaded/objects/0", 2},
      {"/dispatch/candidates/1/priority", "101", "dispatch_contradicts_diagnostic", "/dispatch/candidates/1/priority", 3},
      {"/dispatch/plan/workspace_bytes", "500352", "dispatch_contradicts_plan", "/dispatch/workspace_bytes", 3},
      {"/dispatch/plan/max_slots_per_request", "12", "dispatch_contradicts_plan", "/dispatch/split_count", 3},
      {"/ledgers/unique_kv_bytes", "36716546", "ledgers_mismatch", "/ledgers/unique_kv_bytes", 3},
      {"/ledgers/q_o_bytes", "65537", "ledgers_mismatch", "/ledgers/q_o_bytes", 3},
      {"/ledgers/visible_kv_bytes", "36716544000", "ledgers_mismatch", "/ledgers/visible_kv_bytes", 3},
      {"/ledgers/workspace_round_trip_bytes", "500288", "ledgers_mismatch", "/ledgers/workspace_round_trip_bytes", 3},
      {"/measurement/correctness/lse_atol", "0.0004", "correctness_tolerance_not_frozen", "/measurement/correctness/lse_atol", 5},
      {"/measurement/timing/repeat_check/after_samples", "23324", "timing_summary_mismatch", "/measurement/timing/repeat_check/after_samples", 5},
  };
  json_t *orig = load(CAPTURED "/bundle.json");
  expect(orig, CAPTURED, NULL, 6, NULL, NULL, "the captured bundle");
  for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
    json_t *b = json_deep_copy(orig);
    json_error_t je;
    set_at(b, edits[i].pointer, json_loads(edits[i].value, JSON_DECODE_ANY, &je));
    char what[256];
    snprintf(what, sizeof what, "%s = %s", edits[i].pointer, edits[i].value);
    expect(b, CAPTURED, NULL, edits[i].level, edits[i].reason, edits[i].at, what);
    json_decref(b);
  }
  /* the fixture's digest: re-hashed under a source root that holds the fixture (here: only it) */
  char root[512];
  snprintf(root, sizeof root, "%s/src", tmp_dir());
  struct run_result r;
  run_sh(&r, "mkdir -p %s/fixtures/decode && cp fixtures/decode/default.json %s/fixtures/decode/", root, root);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  json_t *b = json_deep_copy(orig);
  set_at(b, "/fixture/sha256", json_string("0000000000000000000000000000000000000000000000000000000000000000"));
  expect(b, CAPTURED, NULL, 6, NULL, NULL, "a null fixture digest without --source-root (not recomputable offline)");
  expect(b, CAPTURED, root, 0, "fixture_sha256_mismatch", "/fixture/sha256", "a null fixture digest under --source-root");
  set_at(b, "/fixture/path", json_string("fixtures/decode/absent.json"));
  expect(b, CAPTURED, root, 0, "fixture_unreadable", "/fixture/path", "a fixture not under --source-root");
  json_decref(b);
  /* named as not recomputable (dkb validate --list-reasons): the device's name and SM count are the run's word */
  b = json_deep_copy(orig);
  set_at(b, "/loaded/device/name", json_string("NVIDIA A100-SXM4-80GB"));
  set_at(b, "/loaded/device/sm_count", json_integer(108));
  expect(b, CAPTURED, NULL, 6, NULL, NULL, "another device name and SM count (device_not_recomputable)");
  json_decref(b);
  json_decref(orig);
}

/* dkb writes the ledgers of every call it plans: without them the dispatch record is incomplete. */
static void ledgers_are_required(void **s) {
  (void)s;
  json_t *b = load(CAPTURED "/bundle.json");
  json_object_del(b, "ledgers");
  expect(b, CAPTURED, NULL, 3, "ledgers_missing", "/ledgers", "no ledgers");
  json_decref(b);
}

/* b's plan_key_sha256 recomputed from its plan key, after an edit of the key. */
static void redigest_plan_key(json_t *b) {
  char hex[65];
  struct dkb_err err;
  assert_int_equal(cjson_digest(jr_resolve(b, "/dispatch/plan_key"), hex, &err), 0);
  set_at(b, "/dispatch/plan_key_sha256", json_string(hex));
}

/* b with split_count v in its dispatch record and (key: also) its plan key, the key's digest recomputed. */
static void set_split(json_t *b, json_t *v, int key) {
  if (key) set_at(b, "/dispatch/plan_key/split_count", json_incref(v));
  set_at(b, "/dispatch/split_count", v);
  redigest_plan_key(b);
}

/* A backend that does not expose its split (cuDNN's engine picks its own) records split_count null, which
 * 0x0BE allows ("when exposed"): the cuDNN bundle captured on the H200 so records it and holds level 6. dkb's
 * own planner always knows its split, so a null there contradicts the plan record, and a plan key must agree. */
static void an_unreported_split_is_recorded_as_null_and_holds_only_for_a_plugin(void **s) {
  (void)s;
  const char *cudnn = "fixtures/captured/bundles/cudnn_sdpa-default";
  char path[256];
  snprintf(path, sizeof path, "%s/bundle.json", cudnn);
  json_t *b = load(path);
  assert_true(json_is_null(jr_resolve(b, "/dispatch/split_count")) && json_is_null(jr_resolve(b, "/dispatch/plan_key/split_count")));
  expect(b, cudnn, NULL, 6, NULL, NULL, "the captured cuDNN bundle, its split unreported");
  set_split(b, json_integer(1), 0);
  expect(b, cudnn, NULL, 3, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count", "split 1, the plan key's null");
  set_split(b, json_integer(1), 1);
  set_split(b, json_null(), 0);
  expect(b, cudnn, NULL, 3, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count", "split null, the plan key's 1");
  json_decref(b);
  b = load(CAPTURED "/bundle.json");
  set_split(b, json_null(), 1);
  expect(b, CAPTURED, NULL, 3, "dispatch_contradicts_plan", "/dispatch/split_count", "dkb's own backend, its split null");
  json_decref(b);
}

/* An artifact beside the bundle must be a file of the folder: a symbolic link, to the right bytes outside
 * the folder or inside it, is refused with its pointer; so is one changed byte of the same size. */
static void artifacts_are_the_folders_own_bytes(void **s) {
  (void)s;
  json_t *b = load(CAPTURED "/bundle.json");
  const char *trace = json_string_value(jr_resolve(b, "/execution/trace/artifact"));
  const char *adm = json_string_value(jr_resolve(b, "/dispatch/diagnostic/artifact"));
  char dir[512];
  snprintf(dir, sizeof dir, "%s/links", tmp_dir());
  struct run_result r;
  run_sh(&r, "rm -rf %s %s/elsewhere && mkdir -p %s/elsewhere && cp -r " CAPTURED " %s && mv %s/%s %s/elsewhere/ && "
             "ln -s %s/elsewhere/%s %s/%s", dir, tmp_dir(), tmp_dir(), dir, dir, trace, tmp_dir(), tmp_dir(), trace, dir, trace);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  expect(b, dir, NULL, 4, "artifact_not_a_file", "/artifacts/1/name", "the trace, a link to the same file outside the folder");
  run_sh(&r, "cd %s && rm %s && cp %s/elsewhere/%s copy.jsonl && ln -s copy.jsonl %s", dir, trace, tmp_dir(), trace, trace);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  expect(b, dir, NULL, 4, "artifact_not_a_file", "/artifacts/1/name", "the trace, a link inside the folder");
  /* the hash check on the bytes: one byte of the admission record changed, same size */
  run_sh(&r, "cd %s && rm %s && mv copy.jsonl %s && /usr/bin/python3 -c \"import sys; p=sys.argv[1]; d=bytearray(open(p,'rb').read()); "
             "d[d.index(b'dkb_split_kv')] = ord('D'); open(p,'wb').write(d)\" %s", dir, trace, trace, adm);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  expect(b, dir, NULL, 3, "artifact_sha256_mismatch", "/artifacts/0/sha256", "an admission record with one byte changed");
  json_decref(b);
}

/* The synthetic level-6 bundle with its raw samples replaced by the first n of them (with sample `at`
 * set to v when at < n), its summary and repeat check recomputed. */
static void resample(json_t *b, size_t n, size_t at, double v) {
  json_t *t = jr_resolve(b, "/measurement/timing"), *old = json_object_get(t, "samples_us"), *a = json_array();
  double *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) {
    x[i] = i == at ? v : json_number_value(json_array_get(old, i));
    json_array_append_new(a, json_real(x[i]));
  }
  json_object_set_new(t, "samples_us", a);
  struct dkb_stats st;
  dkb_stats_compute(x, n, &st);
  free(x);
  json_object_set_new(t, "summary", json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)st.count, "min", st.min,
                                              "median", st.median, "p95", st.p95, "max", st.max, "mean", st.mean, "stdev",
                                              st.stdev, "rel_stdev", st.rel_stdev));
  set_at(b, "/measurement/timing/repeat_check/after_samples", json_integer((json_int_t)n));
}

/* The synthetic bundle's dispatch with split count n and ws workspace bytes (dispatch, plan key, plan record
 * and the backend record agree: its scratch workspaces are one of ws bytes, its persistent ones stay). */
static void resplit(json_t *b, long long n, long long ws) {
  json_t *wss = jr_resolve(b, "/dispatch/backend/workspaces"), *keep = json_array();
  for (size_t i = 0; i < json_array_size(wss); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(wss, i), "kind")), "persistent"))
      json_array_append(keep, json_array_get(wss, i));
  json_array_append_new(keep, json_pack("{s:s,s:I,s:s}", "name", "state_u", "bytes", (json_int_t)ws, "kind", "scratch"));
  set_at(b, "/dispatch/backend/workspaces", keep);
  set_at(b, "/dispatch/split_count", json_integer(n));
  set_at(b, "/dispatch/plan_key/split_count", json_integer(n));
  set_at(b, "/dispatch/plan/max_slots_per_request", json_integer(n));
  set_at(b, "/dispatch/workspace_bytes", json_integer(ws));
  set_at(b, "/dispatch/plan_key/workspace_bytes", json_integer(ws));
  set_at(b, "/dispatch/plan/workspace_bytes", json_integer(ws));
  set_at(b, "/ledgers/workspace_round_trip_bytes", json_integer(2 * ws));
  redigest_plan_key(b);
}

/* Each threshold of the ladder, exactly at its edge and one step past it (no artifact files: the rules of
 * levels 4-6 on the record). */
static void thresholds_hold_at_their_edges(void **s) {
  (void)s;
  json_t *base = load("fixtures/bundles/synthetic.level6.bundle.json"), *b;
  expect(base, NULL, NULL, 6, NULL, NULL, "the synthetic bundle");
#define EDGE(setup, level, reason, pointer, what) \
  do { b = json_deep_copy(base); setup; expect(b, NULL, NULL, level, reason, pointer, what); json_decref(b); } while (0)
  /* at least 20 raw samples (the stop rule's own minimum lowered to 10) */
  EDGE((resample(b, 20, 99, 0), set_at(b, "/measurement/timing/stop_rule/min_samples", json_integer(10))), 6, NULL, NULL, "20 samples");
  EDGE((resample(b, 19, 99, 0), set_at(b, "/measurement/timing/stop_rule/min_samples", json_integer(10))), 5,
       "timing_too_few_samples", "/measurement/timing/samples_us", "19 samples");
  /* every sample > 0: the least positive double is a sample, 0 is not (no spread target: one tiny sample) */
  EDGE((resample(b, 40, 3, 5e-324), set_at(b, "/measurement/timing/stop_rule/max_rel_stdev", json_null())), 6, NULL, NULL,
       "a 5e-324 us sample");
  EDGE((resample(b, 40, 3, 0.0), set_at(b, "/measurement/timing/stop_rule/max_rel_stdev", json_null())), 5,
       "timing_sample_not_positive", "/measurement/timing/samples_us/3", "a 0 us sample");
  /* a warm-up of at least one call */
  EDGE(set_at(b, "/measurement/timing/warmup", json_integer(1)), 6, NULL, NULL, "warmup 1");
  EDGE(set_at(b, "/measurement/timing/warmup", json_integer(0)), 5, "timing_warmup_missing", "/measurement/timing/warmup", "warmup 0");
  /* an element may use its whole tolerance, not more */
  EDGE(set_at(b, "/measurement/correctness/output/max_ratio", json_real(1.0)), 6, NULL, NULL, "max_ratio 1");
  EDGE(set_at(b, "/measurement/correctness/output/max_ratio", json_real(nextafter(1.0, 2.0))), 5,
       "correctness_ratio_beyond_tolerance", "/measurement/correctness/output/max_ratio", "max_ratio 1 + 1 ulp");
  EDGE(set_at(b, "/measurement/correctness/lse/max_ratio", json_real(nextafter(1.0, 2.0))), 5,
       "correctness_ratio_beyond_tolerance", "/measurement/correctness/lse/max_ratio", "an LSE max_ratio 1 + 1 ulp");
  /* the tolerances are the frozen ones, to the last bit */
  EDGE(set_at(b, "/measurement/correctness/rtol", json_real(nextafter(0.002, 1.0))), 5, "correctness_tolerance_not_frozen",
       "/measurement/correctness/rtol", "rtol one ulp looser than frozen");
  EDGE(set_at(b, "/measurement/correctness/atol", json_real(nextafter(0.002, 0.0))), 5, "correctness_tolerance_not_frozen",
       "/measurement/correctness/atol", "atol one ulp tighter than frozen");
  /* the summary recomputes to 1e-9 relative: 5e-10 off is a summation order, 2e-9 is not */
  EDGE(set_at(b, "/measurement/timing/summary/median", json_real(num_at(b, "/measurement/timing/summary/median") * (1 + 5e-10))), 6,
       NULL, NULL, "a median 5e-10 off");
  EDGE(set_at(b, "/measurement/timing/summary/median", json_real(num_at(b, "/measurement/timing/summary/median") * (1 + 2e-9))), 5,
       "timing_summary_mismatch", "/measurement/timing/summary/median", "a median 2e-9 off");
  /* the stop rule's bounds: 40 samples may stop at min 40 or max 40, not at min 41 or max 39 */
  EDGE(set_at(b, "/measurement/timing/stop_rule/min_samples", json_integer(40)), 6, NULL, NULL, "min_samples = n");
  EDGE(set_at(b, "/measurement/timing/stop_rule/min_samples", json_integer(41)), 5, "timing_stop_rule_violated",
       "/measurement/timing/stop_rule", "min_samples = n + 1");
  EDGE(set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(40)), 6, NULL, NULL, "max_samples = n");
  EDGE(set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(39)), 5, "timing_stop_rule_violated",
       "/measurement/timing/stop_rule", "max_samples = n - 1");
  /* met: the spread at its target, not one ulp above it */
  EDGE(set_at(b, "/measurement/timing/stop_rule/max_rel_stdev", json_real(num_at(b, "/measurement/timing/summary/rel_stdev"))), 6,
       NULL, NULL, "rel_stdev = max_rel_stdev");
  EDGE(set_at(b, "/measurement/timing/stop_rule/max_rel_stdev",
              json_real(nextafter(num_at(b, "/measurement/timing/summary/rel_stdev"), 0.0))), 5,
       "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "rel_stdev one ulp above max_rel_stdev");
  /* not met: stopped at max_samples, not one before */
  EDGE((set_at(b, "/measurement/timing/stop_rule/met", json_false()), set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(40))),
       6, NULL, NULL, "not met, at max_samples");
  EDGE((set_at(b, "/measurement/timing/stop_rule/met", json_false()), set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(41))),
       5, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "not met, one before max_samples");
  /* stopped_by max_time: at the limit, not just before it */
  EDGE((set_at(b, "/measurement/timing/stop_rule/met", json_false()), set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("max_time")),
        set_at(b, "/measurement/timing/stop_rule/max_time_s", json_real(0.5)), set_at(b, "/measurement/timing/stop_rule/elapsed_s", json_real(0.5))),
       6, NULL, NULL, "elapsed = max_time_s");
  EDGE((set_at(b, "/measurement/timing/stop_rule/met", json_false()), set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("max_time")),
        set_at(b, "/measurement/timing/stop_rule/max_time_s", json_real(0.5)),
        set_at(b, "/measurement/timing/stop_rule/elapsed_s", json_real(nextafter(0.5, 0.0)))),
       5, "timing_stop_rule_violated", "/measurement/timing/stop_rule/elapsed_s", "elapsed one ulp before max_time_s");
  /* stopped_by noise_reached: after min_time_s of samples (the samples sum to 40 * 12.49 us) */
  EDGE((set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("noise_reached")),
        set_at(b, "/measurement/timing/stop_rule/min_time_s", json_real(num_at(b, "/measurement/timing/summary/mean") * 40 * 1e-6))),
       6, NULL, NULL, "noise reached at min_time_s");
  EDGE((set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("noise_reached")),
        set_at(b, "/measurement/timing/stop_rule/min_time_s", json_real(num_at(b, "/measurement/timing/summary/mean") * 40 * 1e-6 * (1 + 1e-8)))),
       5, "timing_stop_rule_violated", "/measurement/timing/stop_rule/min_time_s", "noise reached before min_time_s");
  /* stopped_by max_samples: exactly at it */
  EDGE((set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("max_samples")),
        set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(40))), 6, NULL, NULL, "stopped at max_samples");
  EDGE((set_at(b, "/measurement/timing/stop_rule/stopped_by", json_string("max_samples")),
        set_at(b, "/measurement/timing/stop_rule/max_samples", json_integer(41))), 5, "timing_stop_rule_violated",
       "/measurement/timing/stop_rule/max_samples", "stopped one before max_samples");
  /* no dropped record (the requirement fixture drops 12, its .one fixture 1) */
  EDGE(set_at(b, "/execution/dropped_records", json_integer(1)), 4, "trace_dropped_records", "/execution/dropped_records",
       "1 dropped record");
  /* one launch is a launch */
  EDGE(set_at(b, "/execution/kernels/1/launches", json_integer(0)), 4, "kernel_launches_not_positive",
       "/execution/kernels/1/launches", "0 launches");
  /* a merge is required above one split: split 1 without a combine stands, split 2 does not (the plan
   * declares no combine kernel) */
  EDGE((resplit(b, 1, 0), json_array_remove(jr_resolve(b, "/execution/kernels"), 1),
        json_array_remove(jr_resolve(b, "/dispatch/required_kernels"), 1),
        json_array_remove(jr_resolve(b, "/dispatch/backend/kernels"), 1)), 6, NULL, NULL, "split 1, no combine");
  EDGE((resplit(b, 2, 199680), json_array_remove(jr_resolve(b, "/execution/kernels"), 1),
        json_array_remove(jr_resolve(b, "/dispatch/required_kernels"), 1),
        json_array_remove(jr_resolve(b, "/dispatch/backend/kernels"), 1)), 4, "combine_kernel_not_observed", "/execution/kernels",
       "split 2, no combine");
  /* more than one split needs a workspace: one byte is one */
  EDGE(resplit(b, 4, 1), 6, NULL, NULL, "4 splits, 1 workspace byte");
  EDGE(resplit(b, 4, 0), 3, "workspace_inconsistent", "/dispatch/workspace_bytes", "4 splits, no workspace");
  /* auto takes the first eligible by priority: a tie with the selected backend is not a better one */
  EDGE((set_at(b, "/dispatch/candidates/1/priority", json_integer(0)), set_at(b, "/dispatch/candidates/1/eligible", json_true()),
        set_at(b, "/dispatch/candidates/1/reasons", json_array())), 6, NULL, NULL, "an eligible candidate of the same priority");
  EDGE((set_at(b, "/dispatch/candidates/0/priority", json_integer(1)), set_at(b, "/dispatch/candidates/1/priority", json_integer(0)),
        set_at(b, "/dispatch/candidates/1/eligible", json_true()), set_at(b, "/dispatch/candidates/1/reasons", json_array())),
       3, "auto_selection_not_first_eligible", "/dispatch/selected", "an eligible candidate one priority ahead");
#undef EDGE
  json_decref(base);
}

DKB_TEST_GROUP(ladder, cmocka_unit_test(artifact_files_count_only_when_the_folder_is_given),
               cmocka_unit_test(terminal_ceilings_follow_the_ladder), cmocka_unit_test(exit_codes_follow_the_final_status),
               cmocka_unit_test(wrong_type_is_not_a_bundle),
               cmocka_unit_test(bundle_write_claims_exactly_what_it_proves),
               cmocka_unit_test(captured_fields_recompute_from_artifacts_key_and_plan), cmocka_unit_test(ledgers_are_required),
               cmocka_unit_test(an_unreported_split_is_recorded_as_null_and_holds_only_for_a_plugin),
               cmocka_unit_test(artifacts_are_the_folders_own_bytes), cmocka_unit_test(thresholds_hold_at_their_edges))
