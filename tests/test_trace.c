/* test_trace.c - `dkb trace` as a user runs it, without a GPU: the command line and the child's terminal
 * states (cannot start, exits nonzero, dies of a signal, uses no CUDA), the NVTX half of the injection
 * library under examples/c/nvtx_ranges (ranges, threads, a range open at exit, exit() in a range, abort,
 * fork, registered and wide strings), and `dkb validate` on the bundles it writes; every document against
 * its schema. On a GPU, examples/cuda/inject_test under dkb trace. The join, the ladder and the pieces
 * are tests/test_trace_bundle.c's. */
#include "tests/util.h"
#include "tests/trace_util.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

static const char KEY_FILE[] = "tests/data/trace/call-key.json";
/* dkb trace as a user starts it: the test runner itself routed NVTX to libcupti (trace.c), which a child
 * would inherit and dkb trace would then respect */
#define TRACE "env -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH build/dkb trace"

/* Every line of every record file under dir against the record schema. */
static void records_schema_ok(const char *dir) {
  struct run_result r;
  run_sh(&r, "d=$(mktemp -d) && i=0 && for f in '%s'/records/*.jsonl; do while IFS= read -r l; do i=$((i+1)); "
             "printf '%%s' \"$l\" > $d/$i.json; done < $f; done && /usr/bin/python3 tests/schema_check.py "
             "schemas/inject-record.schema.json $d/*.json; rc=$?; rm -rf $d; exit $rc", dir);
  if (r.rc) fail_msg("records under %s: %s%s", dir, r.out, r.err);
  run_result_release(&r);
}

/* The one bundle under dir/calls (fails unless exactly one). */
static json_t *only_bundle(const char *dir, char *path, size_t n) {
  struct run_result r;
  run_sh(&r, "ls '%s'/calls/*.json", dir);
  if (r.rc || strchr(r.out, '\n') != r.out + strlen(r.out) - 1) fail_msg("want one bundle in %s/calls: %s", dir, r.out);
  r.out[strcspn(r.out, "\n")] = '\0';
  snprintf(path, n, "%s", r.out);
  run_result_release(&r);
  return trace_load(path);
}

/* ---- the command line and the child's terminal states ---- */

static void trace_usage_errors(void **s) {
  (void)s;
  trace_expect(TRACE, 2, NULL,
         "dkb: error: no command given (dkb trace [OPTIONS] -- CMD [ARGS...])\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
  trace_expect(TRACE " --frob -- true", 2, NULL,
         "dkb: error: unknown option '--frob'\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
  trace_expect(TRACE " -o", 2, NULL,
         "dkb: error: option '-o' needs a value\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
}

static void trace_refuses_an_injection_already_set(void **s) {
  (void)s;
  trace_expect("CUDA_INJECTION64_PATH=/opt/nsys/libinj.so build/dkb trace -o /nonexistent/x -- true", 4, NULL,
         "dkb: error: CUDA_INJECTION64_PATH is already set ('/opt/nsys/libinj.so'): another tool injects itself into "
         "CUDA programs (nsys, ncu, a profiler); dkb trace does not replace it\n");
  trace_expect("NV_NSIGHT_INJECTION_TRANSPORT_TYPE=uds build/dkb trace -o /nonexistent/x -- true", 4, NULL,
         "dkb: error: dkb trace runs under an Nsight tool (NV_NSIGHT_INJECTION_TRANSPORT_TYPE is set): its injection in "
         "CMD would refuse dkb's and end CMD with an error; run dkb trace outside the profiler\n");
}

static void trace_refuses_a_non_empty_output_folder(void **s) {
  (void)s;
  char cmd[1400];
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- true", tmp_dir());
  struct run_result r;
  run_sh(&r, "%s", cmd);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "exists and is not empty"));
  run_result_release(&r);
}

static void trace_command_that_cannot_start_is_a_usage_error(void **s) {
  (void)s;
  char cmd[1400];
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- ./no-such-program arg", trace_fresh_dir("nostart"));
  trace_expect(cmd, 2, NULL, "dkb: error: cannot run './no-such-program': No such file or directory\n");
}

/* A program that never loads the library (no CUDA, no NVTX): its own status first, then "nothing traced". */
static void trace_program_without_cuda_or_nvtx(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("true");
  char cmd[1400], path[700];
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- true", d);
  struct run_result r;
  run_sh(&r, "%s", cmd);
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.out, "dkb trace: true (exit 0)\n"));
  assert_non_null(strstr(r.err, "dkb: error: nothing was traced: no process loaded the injection library"));
  run_result_release(&r);
  snprintf(path, sizeof path, "%s/summary.json", d);
  trace_schema_ok("trace-summary.schema.json", path);
  json_t *sum = trace_load(path);
  assert_int_equal(json_array_size(json_object_get(sum, "processes")), 0);
  json_decref(sum);
  /* a failing program: its failure is what dkb trace reports, exit 1 */
  d = trace_fresh_dir("exit3");
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- sh -c 'exit 3'", d);
  trace_expect(cmd, 1, "(exit 3)", "");
  d = trace_fresh_dir("killed");
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- sh -c 'kill -TERM $$'", d);
  trace_expect(cmd, 1, "(killed by signal 15)", "");
  snprintf(path, sizeof path, "%s/summary.json", d);
  sum = trace_load(path);
  assert_string_equal(json_string_value(json_object_get(json_object_get(sum, "exit"), "kind")), "signaled");
  json_decref(sum);
}

/* ---- the NVTX half of the library, in a program without CUDA ---- */

static json_t *run_nvtx(const char *mode, const char *extra, int want_rc, const char *dir, char *bpath, size_t n) {
  char cmd[2000];
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' %s -- build/examples/nvtx_ranges %s %s", dir, extra, mode, KEY_FILE);
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != want_rc) fail_msg("%s: exit %d, want %d\n%s%s", cmd, r.rc, want_rc, r.out, r.err);
  run_result_release(&r);
  char glob[700];
  snprintf(glob, sizeof glob, "'%s'/calls/*.json", dir);
  trace_schema_ok("trace.schema.json", glob);
  snprintf(glob, sizeof glob, "'%s'/summary.json", dir);
  trace_schema_ok("trace-summary.schema.json", glob);
  records_schema_ok(dir);
  return only_bundle(dir, bpath, n);
}

static void trace_nvtx_ranges_are_recorded_without_a_gpu(void **s) {
  (void)s;
  char bp[900];
  const char *d = trace_fresh_dir("nvtx_ok");
  json_t *b = run_nvtx("ok", "", 4, d, bp, sizeof bp); /* 4: no process could trace GPU work */
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "declared"), "call_key_sha256")), TRACE_KEY_SHA);
  assert_true(finding_holds(b, "declared"));
  assert_false(finding_holds(b, "executed"));
  assert_true(finding_has_reason(b, "executed", "executed_cupti_unavailable"));
  assert_true(finding_has_reason(b, "loaded", "loaded_no_launch"));
  assert_true(finding_has_reason(b, "checked", "checked_no_dump"));
  assert_true(finding_has_reason(b, "timed", "timed_not_executed"));
  const json_t *inst = json_object_get(json_object_get(b, "range"), "instances");
  assert_int_equal(json_array_size(inst), 1); /* the worker thread's range is no call */
  assert_true(json_is_true(json_object_get(json_array_get(inst, 0), "closed")));
  const json_t *pr = json_object_get(b, "process");
  assert_string_equal(json_string_value(json_object_get(json_object_get(pr, "cupti"), "status")), "not_initialized");
  assert_true(json_is_true(json_object_get(pr, "end_record")));
  assert_string_equal(json_string_value(json_object_get(pr, "how")), "nvtx");
  const json_t *claims = json_object_get(b, "claims");
  assert_int_equal(json_array_size(claims), 1);
  assert_string_equal(json_string_value(json_array_get(claims, 0)), "declared");
  json_decref(b);
  /* dkb validate grades it with the same code, and the record file it names is re-hashed */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "build/dkb validate '%s'", bp);
  trace_expect(cmd, 0, "trace bundle: loaded no, declared yes, executed no, checked no, timed no\n", "");
  snprintf(cmd, sizeof cmd, "build/dkb validate --require-level 1 '%s'", bp);
  trace_expect(cmd, 1, "a trace bundle proves no level of the six-level ladder: below the required level 1", "");
  snprintf(cmd, sizeof cmd, "build/dkb validate --json '%s' > '%s/v.json'", bp, d);
  trace_expect(cmd, 0, NULL, "");
  char vp[700];
  snprintf(vp, sizeof vp, "%s/v.json", d);
  trace_schema_ok("validate-report.schema.json", vp);
}

static void trace_range_open_at_exit_and_exit_in_range(void **s) {
  (void)s;
  char bp[900];
  json_t *b = run_nvtx("open", "", 4, trace_fresh_dir("nvtx_open"), bp, sizeof bp);
  const json_t *in0 = json_array_get(json_object_get(json_object_get(b, "range"), "instances"), 0);
  assert_false(json_is_true(json_object_get(in0, "closed")));
  assert_true(finding_has_reason(b, "executed", "executed_range_open"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(b, "process"), "end"), "open_ranges")), 1);
  json_decref(b);
  /* exit(3) inside two ranges: the exit path ran (end record), the program's status is dkb's failure */
  b = run_nvtx("exit-in-range", "", 1, trace_fresh_dir("nvtx_exit"), bp, sizeof bp);
  assert_true(json_is_true(json_object_get(json_object_get(b, "process"), "end_record")));
  assert_true(finding_has_reason(b, "executed", "executed_range_open"));
  const json_t *ex = json_object_get(json_object_get(b, "program"), "exit");
  assert_json_int(ex, "code", 3);
  json_decref(b);
  /* abort(): no exit path, no end record */
  b = run_nvtx("abort", "", 1, trace_fresh_dir("nvtx_abort"), bp, sizeof bp);
  assert_false(json_is_true(json_object_get(json_object_get(b, "process"), "end_record")));
  assert_true(finding_has_reason(b, "executed", "executed_no_exit_path"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(b, "program"), "exit"), "signal")), 6);
  json_decref(b);
}

static void trace_fork_child_writes_its_own_file(void **s) {
  (void)s;
  char bp[900], path[700];
  const char *d = trace_fresh_dir("nvtx_fork");
  json_t *b = run_nvtx("fork", "", 4, d, bp, sizeof bp);
  json_decref(b);
  snprintf(path, sizeof path, "%s/summary.json", d);
  json_t *sum = trace_load(path);
  const json_t *ps = json_object_get(sum, "processes");
  assert_int_equal(json_array_size(ps), 2);
  const json_t *child = json_array_get(ps, json_is_null(json_object_get(json_array_get(ps, 0), "forked_from")) ? 1 : 0);
  assert_string_equal(json_string_value(json_object_get(child, "cupti")), "forked");
  assert_json_int(child, "ranges", 1);
  assert_false(json_is_true(json_object_get(child, "end_record"))); /* _exit: no exit path in the child */
  json_decref(sum);
}

static void trace_registered_and_wide_strings(void **s) {
  (void)s;
  char bp[900];
  const char *d = trace_fresh_dir("nvtx_domain");
  json_t *b = run_nvtx("domain", "", 4, d, bp, sizeof bp);
  assert_true(finding_holds(b, "declared")); /* the call key arrived through nvtxDomainRegisterStringA */
  json_decref(b);
  struct run_result r;
  run_sh(&r, "cat '%s'/records/*.jsonl", d);
  assert_non_null(strstr(r.out, "\"message\":\"registered\""));
  assert_non_null(strstr(r.out, "\"name\":\"wide \xc3\xa9\""));
  assert_non_null(strstr(r.out, "{\"r\":\"domain\",\"index\":1,\"name\":\"dkb\"}"));
  run_result_release(&r);
}

static void trace_range_pattern_selects_other_ranges(void **s) {
  (void)s;
  char bp[900];
  json_t *b = run_nvtx("ok", "--range inner", 4, trace_fresh_dir("nvtx_pattern"), bp, sizeof bp);
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "range"), "name")), "inner");
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "range"), "selected_by")), "--range");
  assert_true(finding_has_reason(b, "declared", "declared_not_a_call_range"));
  assert_true(finding_has_reason(b, "checked", "checked_not_declared"));
  json_decref(b);
}

/* ---- on the GPU ---- */

static void gpu_inject_test_program_runs_unchanged_and_attributed(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result plain, traced;
  run_sh(&plain, "build/examples/inject_test ok");
  assert_int_equal(plain.rc, 0);
  const char *d = trace_fresh_dir("gpu_inject");
  run_sh(&traced, TRACE " -o '%s' --range 'inject/*' --range 'dkb/call/*' -- build/examples/inject_test ok %s", d, KEY_FILE);
  if (traced.rc) fail_msg("dkb trace exit %d\n%s%s", traced.rc, traced.out, traced.err);
  /* the program's own output is identical: the library changed nothing it computes */
  assert_non_null(strstr(traced.out, plain.out));
  run_result_release(&plain);
  run_result_release(&traced);
  char path[700];
  snprintf(path, sizeof path, "%s/summary.json", d);
  json_t *sum = trace_load(path);
  const json_t *calls = json_object_get(sum, "calls");
  assert_int_equal(json_array_size(calls), 5); /* four thread ranges and the call range */
  for (size_t i = 0; i < json_array_size(calls); i++) {
    const json_t *row = json_array_get(calls, i), *f = json_object_get(row, "findings");
    assert_true(json_is_true(json_object_get(f, "executed")));
    assert_true(json_is_true(json_object_get(f, "loaded")));
    assert_true(json_is_true(json_object_get(f, "timed")));
    const char *range = json_string_value(json_object_get(row, "range"));
    /* a thread's range: fill + 3 adds + 2 graph replays of one add */
    if (!strncmp(range, "inject/thread", 13)) assert_json_int(row, "launches", 6);
  }
  json_decref(sum);
  char glob[700];
  snprintf(glob, sizeof glob, "'%s'/calls/*.json", d);
  if (!have_jsonschema()) {
    print_message("[  INFO    ] bundles and records not checked against their schemas: /usr/bin/python3 has no jsonschema here\n");
    return;
  }
  trace_schema_ok("trace.schema.json", glob);
  records_schema_ok(d);
}

static void gpu_inject_test_open_range_and_exit_in_range(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  static const struct { const char *mode; int rc; } CASES[] = {{"open", 0}, {"exit-in-range", 1}, {"exit-unsynced", 1}, {"nvtx-first", 0}};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char name[40];
    snprintf(name, sizeof name, "gpu_mode_%zu", i);
    const char *d = trace_fresh_dir(name);
    struct run_result r;
    run_sh(&r, TRACE " -o '%s' -- build/examples/inject_test %s %s", d, CASES[i].mode, KEY_FILE);
    if (r.rc != CASES[i].rc) fail_msg("%s: exit %d, want %d\n%s%s", CASES[i].mode, r.rc, CASES[i].rc, r.out, r.err);
    run_result_release(&r);
    char bp[900];
    json_t *b = only_bundle(d, bp, sizeof bp);
    const json_t *pr = json_object_get(b, "process");
    assert_true(json_is_true(json_object_get(pr, "end_record"))); /* exit() inside a range still flushes */
    assert_string_equal(json_string_value(json_object_get(pr, "exit_flush")), "done");
    const json_t *in0 = json_array_get(json_object_get(json_object_get(b, "range"), "instances"), 0);
    /* exit-unsynced: its kernel may not have finished; whatever arrived is in the bundle */
    if (strcmp(CASES[i].mode, "exit-unsynced")) assert_true(json_integer_value(json_object_get(in0, "kernels")) >= 1);
    if (!strcmp(CASES[i].mode, "nvtx-first")) {
      assert_true(finding_holds(b, "executed"));
      run_sh(&r, "grep -c '\"name\":\"inject/before-cuinit\"' '%s'/records/*.jsonl", d); /* pushed before cuInit */
      assert_int_equal(r.rc, 0);
      run_result_release(&r);
    } else {
      assert_true(finding_has_reason(b, "executed", "executed_range_open"));
    }
    json_decref(b);
  }
}

DKB_TEST_GROUP(trace, cmocka_unit_test(trace_usage_errors), cmocka_unit_test(trace_refuses_an_injection_already_set),
               cmocka_unit_test(trace_refuses_a_non_empty_output_folder),
               cmocka_unit_test(trace_command_that_cannot_start_is_a_usage_error),
               cmocka_unit_test(trace_program_without_cuda_or_nvtx),
               cmocka_unit_test(trace_nvtx_ranges_are_recorded_without_a_gpu),
               cmocka_unit_test(trace_range_open_at_exit_and_exit_in_range),
               cmocka_unit_test(trace_fork_child_writes_its_own_file), cmocka_unit_test(trace_registered_and_wide_strings),
               cmocka_unit_test(trace_range_pattern_selects_other_ranges),
               cmocka_unit_test(gpu_inject_test_program_runs_unchanged_and_attributed),
               cmocka_unit_test(gpu_inject_test_open_range_and_exit_in_range))
