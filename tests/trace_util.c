/* trace_util.c - helpers the two trace test files share (see trace_util.h). */
#include "tests/trace_util.h"
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

void trace_expect(const char *cmd, int rc, const char *out_has, const char *err_is) {
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != rc) fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", cmd, r.rc, rc, r.out, r.err);
  if (out_has && !strstr(r.out, out_has)) fail_msg("%s: stdout lacks '%s':\n%s", cmd, out_has, r.out);
  if (err_is) assert_string_equal(r.err, err_is);
  run_result_release(&r);
}

const char *trace_fresh_dir(const char *name) {
  static char d[4][600];
  static int k;
  char *p = d[k++ % 4];
  snprintf(p, 600, "%s/%s", tmp_dir(), name);
  struct run_result r;
  run_sh(&r, "rm -rf '%s'", p);
  run_result_release(&r);
  return p;
}

json_t *trace_load(const char *path) {
  json_error_t je;
  json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!j) fail_msg("%s: %s", path, je.text);
  return j;
}

void trace_schema_ok(const char *schema, const char *glob) {
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/%s %s", schema, glob);
  if (r.rc) fail_msg("%s against %s: %s%s", glob, schema, r.out, r.err);
  run_result_release(&r);
}

int finding_holds(const json_t *b, const char *finding) {
  return json_is_true(json_object_get(json_object_get(json_object_get(b, "findings"), finding), "holds"));
}

int finding_has_reason(const json_t *b, const char *finding, const char *reason) {
  const json_t *rs = json_object_get(json_object_get(json_object_get(b, "findings"), finding), "reasons");
  for (size_t i = 0; i < json_array_size(rs); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(rs, i), "reason")), reason)) return 1;
  return 0;
}
