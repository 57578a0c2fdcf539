/* test_validate.c - `dkb validate` on the bundle fixtures (fixtures/bundles, tools/gen-bundle-fixtures.py):
 * every fixture's computed level and exact findings (level, reason id, JSON Pointer) as its manifest
 * states, every reason id covered, the independent schema validator agreeing on what is a bundle, the
 * --require-level / --allow-synthetic gate, and the exact text of the human output and of errors. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "evidence/ladder.h"
#include "evidence/trace_ladder.h"

#define FIXTURES "fixtures/bundles"

static json_t *manifest(void) {
  json_error_t je;
  json_t *m = json_load_file(FIXTURES "/manifest.json", JSON_REJECT_DUPLICATES, &je);
  if (!m) fail_msg("manifest.json: %d:%d: %s", je.line, je.column, je.text);
  return m;
}

/* "level reason pointer" lines of a findings array, sorted, joined by newlines (malloc'ed). */
static char *finding_lines(const json_t *findings) {
  size_t n = json_array_size(findings);
  char **lines = calloc(n + 1, sizeof *lines);
  for (size_t i = 0; i < n; i++) {
    const json_t *f = json_array_get(findings, i);
    lines[i] = malloc(DKB_PTR_MAX + 128);
    snprintf(lines[i], DKB_PTR_MAX + 128, "%lld %s %s", (long long)json_integer_value(json_object_get(f, "level")),
             json_string_value(json_object_get(f, "reason")), json_string_value(json_object_get(f, "pointer")));
  }
  for (size_t i = 1; i < n; i++) /* insertion sort: n is small */
    for (size_t j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
      char *t = lines[j];
      lines[j] = lines[j - 1];
      lines[j - 1] = t;
    }
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += strlen(lines[i]) + 1;
  char *out = calloc(len, 1);
  for (size_t i = 0; i < n; i++) {
    strcat(out, lines[i]);
    strcat(out, "\n");
    free(lines[i]);
  }
  free(lines);
  return out;
}

static json_t *validate_json(const char *opts, const char *file, int *rc) {
  struct run_result r;
  run_sh(&r, "build/dkb validate --json %s %s", opts, file);
  *rc = r.rc;
  json_error_t je;
  json_t *doc = json_loads(r.out, 0, &je);
  if (!doc) fail_msg("%s: validate --json printed no JSON (%s)\n%s", file, je.text, r.err);
  run_result_release(&r);
  return doc;
}

/* The manifest's expectations, fixture by fixture: level, claim, exact findings, exit status; and for
 * the non-bundles exit 3 with the exact message. */
static void every_fixture_grades_as_its_manifest_says(void **s) {
  (void)s;
  json_t *m = manifest();
  json_t *fixtures = json_object_get(m, "fixtures");
  size_t graded = 0, malformed = 0;
  for (size_t i = 0; i < json_array_size(fixtures); i++) {
    const json_t *f = json_array_get(fixtures, i);
    const char *name = json_string_value(json_object_get(f, "file"));
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s", name);
    const json_t *err = json_object_get(f, "malformed");
    if (err) {
      const char *e = json_string_value(err);
      char want[2048];
      snprintf(want, sizeof want, "dkb: error: %s%s%s\n", path, e[0] >= '0' && e[0] <= '9' ? ":" : ": ", e);
      struct run_result r;
      run_sh(&r, "build/dkb validate %s", path);
      if (r.rc != 3) fail_msg("%s: exit %d, want 3", name, r.rc);
      assert_string_equal(r.err, want);
      run_result_release(&r);
      malformed++;
      continue;
    }
    char opts[512] = "";
    const json_t *o = json_object_get(f, "options");
    for (size_t k = 0; k < json_array_size(o); k++) {
      strcat(opts, json_string_value(json_array_get(o, k)));
      strcat(opts, " ");
    }
    int rc;
    json_t *rep = validate_json(opts, path, &rc);
    const json_t *row = json_array_get(json_object_get(rep, "bundles"), 0);
    long long computed = json_integer_value(json_object_get(row, "computed_level"));
    long long claimed = json_integer_value(json_object_get(row, "claimed_level"));
    if (computed != json_integer_value(json_object_get(f, "computed_level")))
      fail_msg("%s: computed level %lld, manifest says %lld", name, computed,
               (long long)json_integer_value(json_object_get(f, "computed_level")));
    assert_int_equal(claimed, json_integer_value(json_object_get(f, "claimed_level")));
    char *got = finding_lines(json_object_get(row, "findings"));
    char *want = finding_lines(json_object_get(f, "findings"));
    if (strcmp(got, want)) fail_msg("%s: findings differ\ngot:\n%swant:\n%s", name, got, want);
    /* honest (claims no more than it proves, nothing bundle-wide) is exactly exit 0 */
    int honest = claimed <= computed;
    for (const char *p = want; *p; p = strchr(p, '\n') + 1)
      if (p[0] == '0' && p[1] == ' ') honest = 0;
    assert_int_equal(rc, honest ? 0 : 1);
    free(got);
    free(want);
    json_decref(rep);
    graded++;
  }
  assert_true(graded >= 130);
  assert_true(malformed >= 10);
  json_decref(m);
}

/* "One fixture per requirement": every reason id of the catalogue is expected by some fixture, except
 * the entries naming what cannot be recomputed offline, which no finding ever has. */
static void every_reason_id_has_a_fixture(void **s) {
  (void)s;
  json_t *m = manifest();
  json_t *fixtures = json_object_get(m, "fixtures");
  size_t ids = 0, unrecomputable = 0;
  for (const struct ladder_reason *r = ladder_reasons; r->id; r++, ids++) {
    int seen = 0;
    for (size_t i = 0; i < json_array_size(fixtures) && !seen; i++) {
      const json_t *fs = json_object_get(json_array_get(fixtures, i), "findings");
      for (size_t k = 0; k < json_array_size(fs) && !seen; k++)
        seen = !strcmp(json_string_value(json_object_get(json_array_get(fs, k), "reason")), r->id);
    }
    if (r->kind == LADDER_NOT_RECOMPUTABLE) {
      if (seen) fail_msg("a fixture expects '%s', which names what cannot be recomputed: never a finding", r->id);
      assert_int_equal(strncmp(r->summary, "not recomputable offline: ", 26), 0);
      unrecomputable++;
    } else if (!seen) fail_msg("no fixture in %s/manifest.json expects reason '%s'", FIXTURES, r->id);
  }
  assert_true(ids > 100);
  assert_true(unrecomputable >= 4);
  json_decref(m);
}

static void reason_catalogue_is_well_formed(void **s) {
  (void)s;
  for (const struct ladder_reason *r = ladder_reasons; r->id; r++) {
    assert_true(r->level >= -1 && r->level <= LADDER_MAX_LEVEL);
    for (const char *c = r->id; *c; c++) assert_true((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
    assert_ptr_equal(ladder_reason_find(r->id), r); /* ids are unique */
  }
  struct run_result rr;
  run_sh(&rr, "build/dkb validate --list-reasons --json > %s/reasons.json && "
              "/usr/bin/python3 tests/schema_check.py schemas/reason-catalogue.schema.json %s/reasons.json",
         tmp_dir(), tmp_dir());
  if (rr.rc) fail_msg("%s%s", rr.out, rr.err);
  run_result_release(&rr);
  run_sh(&rr, "build/dkb validate --list-reasons");
  assert_int_equal(rr.rc, 0);
  assert_non_null(strstr(rr.out, "\n6    unmet         timing_too_few_samples              fewer than 20 raw samples\n"));
  assert_non_null(strstr(rr.out, "\n3    not_recomputable  device_not_recomputable             not recomputable offline: the device's name, sm_count,"));
  run_result_release(&rr);
}

/* --list-reasons lists the trace ladder's reasons too, in a section of their own after the ladder's, each
 * with its finding; --json has them as trace_reasons (the schema check above covers their shape). */
static void list_reasons_lists_the_trace_ladders_reasons_apart(void **s) {
  (void)s;
  struct run_result rr;
  run_sh(&rr, "build/dkb validate --list-reasons");
  assert_int_equal(rr.rc, 0);
  const char *sec = strstr(rr.out, "\ntrace bundles (dkb.trace/v1, no level of the ladder): finding, kind, reason, what is required\n");
  assert_non_null(sec);
  assert_true(strstr(rr.out, "\n6    unmet         timing_too_few_samples ") < sec);
  size_t n = 0;
  for (const struct trace_reason *r = trace_reasons; r->id; r++, n++) {
    char line[256];
    snprintf(line, sizeof line, "\n%-8s  %-12s  %-36s  %s\n", r->finding < 0 ? "bundle" : trace_finding_names[r->finding],
             ladder_kind_name(r->kind), r->id, r->summary);
    if (!strstr(sec, line)) fail_msg("no line '%s' in the trace section:\n%s", line + 1, sec);
  }
  assert_true(n > 30);
  run_result_release(&rr);
  run_sh(&rr, "build/dkb validate --list-reasons --json > %s/reasons.json && "
              "/usr/bin/python3 tests/jsontool.py get %s/reasons.json /trace_reasons/0/id /trace_reasons/0/finding",
         tmp_dir(), tmp_dir());
  assert_int_equal(rr.rc, 0);
  char want[128];
  snprintf(want, sizeof want, "%s %s\n", trace_reasons[0].id, trace_finding_names[trace_reasons[0].finding]);
  assert_string_equal(rr.out, want);
  run_result_release(&rr);
}

/* The independent validator accepts every well-formed bundle (valid or downgraded) and rejects every
 * non-bundle. */
static void schema_accepts_bundles_and_rejects_non_bundles(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json " FIXTURES "/*.bundle.json");
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py --expect-invalid schemas/bundle.schema.json " FIXTURES "/malformed/*.json");
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* Type changes, deletions and unknown keys at every place of a complete bundle: dkb's strict reader and
 * the schema agree on which mutants are not bundles (every third mutant of about 3200). */
static void reader_and_schema_agree_on_mutants(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_agreement.py " FIXTURES "/synthetic.level6.bundle.json %s/mutants 3", tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, " mutants of " FIXTURES "/synthetic.level6.bundle.json: 0 disagreements\n"));
  run_result_release(&r);
}

static void validate_json_report_is_schema_valid(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb validate --json --require-level 4 " FIXTURES "/*.bundle.json " FIXTURES "/malformed/*.json > %s/vr.json; "
             "test $? = 3 && /usr/bin/python3 tests/schema_check.py schemas/validate-report.schema.json %s/vr.json",
         tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* The synthetic bundles are honest at their level, also re-hashed against their source tree. */
static void synthetic_bundles_are_honest_with_source_root(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb validate --source-root " FIXTURES "/source-tree " FIXTURES "/synthetic.level*.bundle.json");
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_non_null(strstr(r.out, "PASS  " FIXTURES "/synthetic.level6.bundle.json: computed level 6, claimed 6 (synthetic)\n"));
  assert_non_null(strstr(r.out, "PASS  " FIXTURES "/synthetic.level6.plugin.bundle.json: computed level 6, claimed 6 (synthetic)\n"));
  /* a backend that declares a nondeterministic reduction order, its repeat call's bits differing within tolerance */
  assert_non_null(strstr(r.out, "PASS  " FIXTURES "/synthetic.level6.plugin-nondeterministic.bundle.json: computed level 6, claimed 6 (synthetic)\n"));
  assert_non_null(strstr(r.out, "validate: 8 bundles: 8 passed, 0 failed, 0 malformed\n"));
  run_result_release(&r);
}

static void expect(const char *args, int rc, const char *out_has, const char *err) {
  struct run_result r;
  run_sh(&r, "build/dkb validate %s", args);
  if (r.rc != rc) fail_msg("validate %s: exit %d, want %d\n%s%s", args, r.rc, rc, r.out, r.err);
  if (out_has && !strstr(r.out, out_has)) fail_msg("validate %s: output lacks '%s'\n%s", args, out_has, r.out);
  if (err) assert_string_equal(r.err, err);
  run_result_release(&r);
}

/* --require-level: below N fails; a synthetic bundle never satisfies it without --allow-synthetic. */
static void require_level_gates_level_and_synthetic(void **s) {
  (void)s;
  expect(FIXTURES "/synthetic.level2.bundle.json", 0, "PASS  ", "");
  expect("--require-level 6 " FIXTURES "/synthetic.level6.bundle.json", 1,
         "  synthetic bundle (a schema test) never satisfies --require-level without --allow-synthetic\n", "");
  expect("--require-level 6 --allow-synthetic " FIXTURES "/synthetic.level6.bundle.json", 0, "PASS  ", "");
  expect("--require-level 6 --allow-synthetic " FIXTURES "/synthetic.level5.bundle.json", 1,
         "  below the required level 6\n", "");
  expect("--require-level 5 --allow-synthetic " FIXTURES "/synthetic.level5.bundle.json", 0, "PASS  ", "");
  expect("--require-level 0 " FIXTURES "/synthetic.level2.bundle.json", 1, "synthetic bundle (a schema test)", "");
  /* one non-bundle among bundles: exit 3 */
  expect(FIXTURES "/synthetic.level2.bundle.json " FIXTURES "/malformed/unknown-key.json", 3,
         "validate: 2 bundles: 1 passed, 0 failed, 1 malformed\n",
         "dkb: error: " FIXTURES "/malformed/unknown-key.json: /colour: unknown key\n");
}

static void usage_errors_are_exact(void **s) {
  (void)s;
  const char *usage = "usage: dkb validate BUNDLE... [--require-level N] [--json] [--source-root DIR] "
                      "[--allow-synthetic] [--list-reasons]\n";
  char want[512];
  snprintf(want, sizeof want, "dkb: error: --require-level must be an integer from 0 to 6 (got '7')\n%s", usage);
  expect("--require-level 7 x.json", 2, NULL, want);
  snprintf(want, sizeof want, "dkb: error: no bundle given\n%s", usage);
  expect("--json", 2, NULL, want);
  expect("/nonexistent/bundle.json", 3, NULL, "dkb: error: cannot open '/nonexistent/bundle.json': No such file or directory\n");
  expect("tests", 3, NULL, "dkb: error: cannot open 'tests': not a regular file (a folder)\n");  /* opens, but does not read */
}

/* The brief's example, as a person reads it. */
static void human_output_names_level_pointer_and_reason(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb validate " FIXTURES "/requirement.timing_too_few_samples.bundle.json");
  assert_int_equal(r.rc, 1);
  assert_string_equal(r.out,
      "FAIL  " FIXTURES "/requirement.timing_too_few_samples.bundle.json: computed level 5, claimed 6 (synthetic)\n"
      "  level 6  unmet         timing_too_few_samples  /measurement/timing/samples_us: 19 raw samples, at least 20 required\n"
      "  level 0  inconsistent  status_contradicts_evidence  /status/terminal: terminal state complete, but the evidence proves only level 5\n"
      "  level 0  inconsistent  claimed_level_exceeds_computed  /claimed_level: claims level 6, the evidence proves level 5\n"
      "validate: 1 bundle: 0 passed, 1 failed, 0 malformed\n");
  run_result_release(&r);
}

/* A bundle copied without its artifacts cannot keep the levels they prove. */
static void bundle_without_its_artifacts_drops_to_level_2(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "mkdir -p %s/alone && cp " FIXTURES "/synthetic.level6.bundle.json %s/alone/bundle.json", tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  char file[512];
  snprintf(file, sizeof file, "%s/alone/bundle.json", tmp_dir());
  int rc;
  json_t *rep = validate_json("", file, &rc);
  const json_t *row = json_array_get(json_object_get(rep, "bundles"), 0);
  assert_int_equal(rc, 1);
  assert_json_int(row, "computed_level", 2);
  char *got = finding_lines(json_object_get(row, "findings"));
  assert_string_equal(got, "0 claimed_level_exceeds_computed /claimed_level\n"
                           "0 status_contradicts_evidence /status/terminal\n"
                           "3 artifact_file_missing /artifacts/0/name\n"
                           "3 artifact_file_missing /artifacts/1/name\n"
                           "4 artifact_file_missing /artifacts/2/name\n"
                           "5 artifact_file_missing /artifacts/3/name\n");
  free(got);
  json_decref(rep);
}

/* The checked-in fixtures are exactly what the generator writes (digests from build/dkb). */
static void fixtures_regenerate_identically(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tools/gen-bundle-fixtures.py %s/regen && diff -r " FIXTURES " %s/regen", tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

DKB_TEST_GROUP(validate, cmocka_unit_test(every_fixture_grades_as_its_manifest_says),
               cmocka_unit_test(every_reason_id_has_a_fixture), cmocka_unit_test(reason_catalogue_is_well_formed),
               cmocka_unit_test(list_reasons_lists_the_trace_ladders_reasons_apart),
               cmocka_unit_test(schema_accepts_bundles_and_rejects_non_bundles),
               cmocka_unit_test(reader_and_schema_agree_on_mutants), cmocka_unit_test(validate_json_report_is_schema_valid),
               cmocka_unit_test(synthetic_bundles_are_honest_with_source_root),
               cmocka_unit_test(require_level_gates_level_and_synthetic), cmocka_unit_test(usage_errors_are_exact),
               cmocka_unit_test(human_output_names_level_pointer_and_reason),
               cmocka_unit_test(bundle_without_its_artifacts_drops_to_level_2),
               cmocka_unit_test(fixtures_regenerate_identically))
