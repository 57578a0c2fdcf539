/* test_ladder.c - the ladder's C API (evidence/ladder.h) and the bundle writer (evidence/bundle.h) as
 * `dkb run` uses them: a written bundle claims exactly the level it proves and validates; artifact
 * files are only trusted when the folder is given; terminal-state ceilings. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "evidence/bundle.h"
#include "evidence/ladder.h"
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

DKB_TEST_GROUP(ladder, cmocka_unit_test(artifact_files_count_only_when_the_folder_is_given),
               cmocka_unit_test(terminal_ceilings_follow_the_ladder), cmocka_unit_test(exit_codes_follow_the_final_status),
               cmocka_unit_test(wrong_type_is_not_a_bundle),
               cmocka_unit_test(bundle_write_claims_exactly_what_it_proves))
