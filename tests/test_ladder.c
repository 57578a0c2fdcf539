/* test_ladder.c - the ladder's C API (evidence/ladder.h) and the bundle writer (evidence/bundle.h) as
 * `dkb run` uses them: a written bundle claims exactly the level it proves and validates; artifact
 * files are only trusted when the folder is given; terminal-state ceilings; every field a real bundle
 * derives from its artifacts, its call key or its plan is recomputed; artifacts are the folder's own
 * files. */
#include "tests/util.h"

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

#define CAPTURED "fixtures/captured/default"

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

DKB_TEST_GROUP(ladder, cmocka_unit_test(artifact_files_count_only_when_the_folder_is_given),
               cmocka_unit_test(terminal_ceilings_follow_the_ladder), cmocka_unit_test(exit_codes_follow_the_final_status),
               cmocka_unit_test(wrong_type_is_not_a_bundle),
               cmocka_unit_test(bundle_write_claims_exactly_what_it_proves),
               cmocka_unit_test(captured_fields_recompute_from_artifacts_key_and_plan), cmocka_unit_test(ledgers_are_required),
               cmocka_unit_test(artifacts_are_the_folders_own_bytes))
