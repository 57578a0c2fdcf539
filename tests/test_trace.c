/* test_trace.c - `dkb trace` and its parts without a GPU: the command line and the child's terminal
 * states (cannot start, exits nonzero, dies of a signal, uses no CUDA), the NVTX half of the injection
 * library under examples/c/nvtx_ranges (ranges, threads, a range open at exit, exit() in a range, abort,
 * fork, registered and wide strings), the record reader and the join on a hand-made record file of a GPU
 * run (tests/data/trace/gpu-run.jsonl.in), the trace ladder's findings on mutated bundles, `dkb validate`
 * on trace bundles, the library's SHA-256 against libcrypto, and the dist-info reader. Every document is
 * checked against its schema. The GPU test runs examples/cuda/inject_test under dkb trace. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "evidence/trace_ladder.h"
#include "harness/pydist.h"
#include "harness/trace_bundle.h"
#include "harness/trace_records.h"
#include "lib/jread.h"
#include "lib/sha256.h"

void inject_sha256(const void *data, size_t n, char hex[65]); /* inject/inject_sha256.c, linked in */

static const char KEY_FILE[] = "tests/data/trace/call-key.json";
/* dkb trace as a user starts it: the test runner itself routed NVTX to libcupti (trace.c), which a child
 * would inherit and dkb trace would then respect */
#define TRACE "env -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH build/dkb trace"
static const char KEY_SHA[] = "376515b4654d69566f8dc9b4188627d823a21c548af496e05b376d9aa6b2624e";

static void expect(const char *cmd, int rc, const char *out_has, const char *err_is) {
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != rc) fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", cmd, r.rc, rc, r.out, r.err);
  if (out_has && !strstr(r.out, out_has)) fail_msg("%s: stdout lacks '%s':\n%s", cmd, out_has, r.out);
  if (err_is) assert_string_equal(r.err, err_is);
  run_result_release(&r);
}

static const char *fresh_dir(const char *name) {
  static char d[4][600];
  static int k;
  char *p = d[k++ % 4];
  snprintf(p, 600, "%s/%s", tmp_dir(), name);
  struct run_result r;
  run_sh(&r, "rm -rf '%s'", p);
  run_result_release(&r);
  return p;
}

static json_t *load(const char *path) {
  json_error_t je;
  json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!j) fail_msg("%s: %s", path, je.text);
  return j;
}

static void schema_ok(const char *schema, const char *glob) {
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/%s %s", schema, glob);
  if (r.rc) fail_msg("%s against %s: %s%s", glob, schema, r.out, r.err);
  run_result_release(&r);
}

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
  return load(path);
}

static int holds(const json_t *b, const char *finding) {
  return json_is_true(json_object_get(json_object_get(json_object_get(b, "findings"), finding), "holds"));
}

/* 1 when the finding lists this reason. */
static int has_reason(const json_t *b, const char *finding, const char *reason) {
  const json_t *rs = json_object_get(json_object_get(json_object_get(b, "findings"), finding), "reasons");
  for (size_t i = 0; i < json_array_size(rs); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(rs, i), "reason")), reason)) return 1;
  return 0;
}

/* ---- the command line and the child's terminal states ---- */

static void trace_usage_errors(void **s) {
  (void)s;
  expect(TRACE, 2, NULL,
         "dkb: error: no command given (dkb trace [OPTIONS] -- CMD [ARGS...])\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
  expect(TRACE " --frob -- true", 2, NULL,
         "dkb: error: unknown option '--frob'\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
  expect(TRACE " -o", 2, NULL,
         "dkb: error: option '-o' needs a value\n"
         "usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]\n");
}

static void trace_refuses_an_injection_already_set(void **s) {
  (void)s;
  expect("CUDA_INJECTION64_PATH=/opt/nsys/libinj.so build/dkb trace -o /nonexistent/x -- true", 4, NULL,
         "dkb: error: CUDA_INJECTION64_PATH is already set ('/opt/nsys/libinj.so'): another tool injects itself into "
         "CUDA programs (nsys, ncu, a profiler); dkb trace does not replace it\n");
  expect("NV_NSIGHT_INJECTION_TRANSPORT_TYPE=uds build/dkb trace -o /nonexistent/x -- true", 4, NULL,
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
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- ./no-such-program arg", fresh_dir("nostart"));
  expect(cmd, 2, NULL, "dkb: error: cannot run './no-such-program': No such file or directory\n");
}

/* A program that never loads the library (no CUDA, no NVTX): its own status first, then "nothing traced". */
static void trace_program_without_cuda_or_nvtx(void **s) {
  (void)s;
  const char *d = fresh_dir("true");
  char cmd[1400], path[700];
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- true", d);
  struct run_result r;
  run_sh(&r, "%s", cmd);
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.out, "dkb trace: true (exit 0)\n"));
  assert_non_null(strstr(r.err, "dkb: error: nothing was traced: no process loaded the injection library"));
  run_result_release(&r);
  snprintf(path, sizeof path, "%s/summary.json", d);
  schema_ok("trace-summary.schema.json", path);
  json_t *sum = load(path);
  assert_int_equal(json_array_size(json_object_get(sum, "processes")), 0);
  json_decref(sum);
  /* a failing program: its failure is what dkb trace reports, exit 1 */
  d = fresh_dir("exit3");
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- sh -c 'exit 3'", d);
  expect(cmd, 1, "(exit 3)", "");
  d = fresh_dir("killed");
  snprintf(cmd, sizeof cmd, TRACE " -o '%s' -- sh -c 'kill -TERM $$'", d);
  expect(cmd, 1, "(killed by signal 15)", "");
  snprintf(path, sizeof path, "%s/summary.json", d);
  sum = load(path);
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
  schema_ok("trace.schema.json", glob);
  snprintf(glob, sizeof glob, "'%s'/summary.json", dir);
  schema_ok("trace-summary.schema.json", glob);
  records_schema_ok(dir);
  return only_bundle(dir, bpath, n);
}

static void trace_nvtx_ranges_are_recorded_without_a_gpu(void **s) {
  (void)s;
  char bp[900];
  const char *d = fresh_dir("nvtx_ok");
  json_t *b = run_nvtx("ok", "", 4, d, bp, sizeof bp); /* 4: no process could trace GPU work */
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "declared"), "call_key_sha256")), KEY_SHA);
  assert_true(holds(b, "declared"));
  assert_false(holds(b, "executed"));
  assert_true(has_reason(b, "executed", "executed_cupti_unavailable"));
  assert_true(has_reason(b, "loaded", "loaded_no_launch"));
  assert_true(has_reason(b, "checked", "checked_no_dump"));
  assert_true(has_reason(b, "timed", "timed_not_executed"));
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
  expect(cmd, 0, "trace bundle: loaded no, declared yes, executed no, checked no, timed no\n", "");
  snprintf(cmd, sizeof cmd, "build/dkb validate --require-level 1 '%s'", bp);
  expect(cmd, 1, "a trace bundle proves no level of the six-level ladder: below the required level 1", "");
  snprintf(cmd, sizeof cmd, "build/dkb validate --json '%s' > '%s/v.json'", bp, d);
  expect(cmd, 0, NULL, "");
  char vp[700];
  snprintf(vp, sizeof vp, "%s/v.json", d);
  schema_ok("validate-report.schema.json", vp);
}

static void trace_range_open_at_exit_and_exit_in_range(void **s) {
  (void)s;
  char bp[900];
  json_t *b = run_nvtx("open", "", 4, fresh_dir("nvtx_open"), bp, sizeof bp);
  const json_t *in0 = json_array_get(json_object_get(json_object_get(b, "range"), "instances"), 0);
  assert_false(json_is_true(json_object_get(in0, "closed")));
  assert_true(has_reason(b, "executed", "executed_range_open"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(b, "process"), "end"), "open_ranges")), 1);
  json_decref(b);
  /* exit(3) inside two ranges: the exit path ran (end record), the program's status is dkb's failure */
  b = run_nvtx("exit-in-range", "", 1, fresh_dir("nvtx_exit"), bp, sizeof bp);
  assert_true(json_is_true(json_object_get(json_object_get(b, "process"), "end_record")));
  assert_true(has_reason(b, "executed", "executed_range_open"));
  const json_t *ex = json_object_get(json_object_get(b, "program"), "exit");
  assert_int_equal(json_integer_value(json_object_get(ex, "code")), 3);
  json_decref(b);
  /* abort(): no exit path, no end record */
  b = run_nvtx("abort", "", 1, fresh_dir("nvtx_abort"), bp, sizeof bp);
  assert_false(json_is_true(json_object_get(json_object_get(b, "process"), "end_record")));
  assert_true(has_reason(b, "executed", "executed_no_exit_path"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(b, "program"), "exit"), "signal")), 6);
  json_decref(b);
}

static void trace_fork_child_writes_its_own_file(void **s) {
  (void)s;
  char bp[900], path[700];
  const char *d = fresh_dir("nvtx_fork");
  json_t *b = run_nvtx("fork", "", 4, d, bp, sizeof bp);
  json_decref(b);
  snprintf(path, sizeof path, "%s/summary.json", d);
  json_t *sum = load(path);
  const json_t *ps = json_object_get(sum, "processes");
  assert_int_equal(json_array_size(ps), 2);
  const json_t *child = json_array_get(ps, json_is_null(json_object_get(json_array_get(ps, 0), "forked_from")) ? 1 : 0);
  assert_string_equal(json_string_value(json_object_get(child, "cupti")), "forked");
  assert_int_equal(json_integer_value(json_object_get(child, "ranges")), 1);
  assert_false(json_is_true(json_object_get(child, "end_record"))); /* _exit: no exit path in the child */
  json_decref(sum);
}

static void trace_registered_and_wide_strings(void **s) {
  (void)s;
  char bp[900];
  const char *d = fresh_dir("nvtx_domain");
  json_t *b = run_nvtx("domain", "", 4, d, bp, sizeof bp);
  assert_true(holds(b, "declared")); /* the call key arrived through nvtxDomainRegisterStringA */
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
  json_t *b = run_nvtx("ok", "--range inner", 4, fresh_dir("nvtx_pattern"), bp, sizeof bp);
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "range"), "name")), "inner");
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "range"), "selected_by")), "--range");
  assert_true(has_reason(b, "declared", "declared_not_a_call_range"));
  assert_true(has_reason(b, "checked", "checked_not_declared"));
  json_decref(b);
}

/* ---- the hand-made record file of a GPU run ---- */

/* tests/data/trace/gpu-run.jsonl.in with build/dkb as the mapped object (its real identity), edited by
 * `edit` (a sed script, may be ""), into dir/records/. */
static void write_gpu_records(const char *dir, const char *edit) {
  char exe[4096];
  if (!realpath("build/dkb", exe)) fail_msg("build/dkb: not found");
  struct stat st;
  stat(exe, &st);
  struct run_result r;
  run_sh(&r, "mkdir -p '%s/records' '%s/calls' && sed -e 's|@EXE@|%s|g; s|@DEV@|%llu|; s|@INO@|%llu|; s|@SIZE@|%lld|; "
             "s|@MTIME@|%llu|' %s tests/data/trace/gpu-run.jsonl.in > '%s/records/records.4242.0.jsonl'",
         dir, dir, exe, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
         (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
         edit && *edit ? edit : "", dir);
  if (r.rc) fail_msg("writing records: %s", r.err);
  run_result_release(&r);
}

/* Reads dir/records and builds the bundles; the first one (the call range) is returned. */
static json_t *build_gpu_bundle(const char *dir, const char *dump, struct trace_bundle_set *set) {
  struct tr_proc *procs = NULL;
  size_t n = 0;
  struct dkb_err err;
  char rec[700];
  snprintf(rec, sizeof rec, "%s/records", dir);
  if (tr_read_dir(rec, &procs, &n, &err)) fail_msg("%s: %s", err.file, err.msg);
  assert_int_equal(n, 1);
  json_t *argv = json_pack("[s]", "prog"), *ex = json_pack("{s:s,s:i,s:n}", "kind", "exited", "code", 0, "signal");
  json_t *meta = json_pack("{s:s,s:s,s:s,s:b,s:[]}", "tool", "dkb", "version", "test", "commit", "0", "dirty", 0, "argv");
  const char *dumps[] = {dump};
  struct trace_run run = {dir, NULL, 0, dumps, dump ? 1 : 0, argv, 4242, ex, meta};
  if (trace_bundles_build(procs, n, &run, set, &err)) fail_msg("build: %s", err.msg);
  for (size_t i = 0; i < n; i++) tr_proc_release(&procs[i]);
  free(procs);
  json_decref(argv);
  json_decref(ex);
  json_decref(meta);
  assert_true(set->n >= 1);
  return set->docs[0];
}

static void write_bundles(const char *dir, const struct trace_bundle_set *set) {
  for (size_t i = 0; i < set->n; i++) {
    char p[900];
    snprintf(p, sizeof p, "%s/calls/%s", dir, set->names[i]);
    if (json_dump_file(set->docs[i], p, JSON_INDENT(1) | JSON_SORT_KEYS)) fail_msg("cannot write %s", p);
  }
}

static void trace_join_attributes_launches_by_correlation(void **s) {
  (void)s;
  const char *d = fresh_dir("gpu_join");
  write_gpu_records(d, "");
  struct trace_bundle_set set;
  json_t *b = build_gpu_bundle(d, NULL, &set);
  assert_int_equal(set.n, 1); /* "inner" and "worker" are no calls */
  const json_t *inst = json_object_get(json_object_get(b, "range"), "instances");
  assert_int_equal(json_array_size(inst), 2);
  const json_t *a = json_array_get(inst, 0), *c = json_array_get(inst, 1);
  /* instance 1: a driver launch nested in a runtime one (its kernel carries the driver's id), a kernel in
   * the call range itself, a memcpy, and a launch made while capturing a graph */
  assert_int_equal(json_integer_value(json_object_get(a, "kernels")), 2);
  assert_int_equal(json_integer_value(json_object_get(a, "launch_calls")), 4);
  assert_int_equal(json_integer_value(json_object_get(a, "captured_launches")), 1);
  assert_int_equal(json_integer_value(json_object_get(a, "launches_without_record")), 0);
  assert_int_equal(json_integer_value(json_object_get(a, "gpu_ns")), 6000);
  assert_int_equal(json_integer_value(json_object_get(a, "memcpys")), 1);
  assert_int_equal(json_integer_value(json_object_get(a, "memcpy_bytes")), 4096);
  assert_int_equal(json_integer_value(json_object_get(a, "loader_map")), 0);
  /* instance 2, another thread: one graph launch, two kernels replayed from it; the same loader map */
  assert_int_equal(json_integer_value(json_object_get(c, "thread_id")), 11);
  assert_int_equal(json_integer_value(json_object_get(c, "kernels")), 2);
  assert_int_equal(json_integer_value(json_object_get(c, "gpu_ns")), 3000);
  assert_int_equal(json_integer_value(json_object_get(c, "loader_map")), 0);
  const json_t *ks = json_object_get(b, "kernels");
  assert_int_equal(json_array_size(ks), 2); /* the worker's and the unattributed kernel are not here */
  const json_t *k0 = json_array_get(ks, 0), *k1 = json_array_get(ks, 1);
  assert_string_equal(json_string_value(json_object_get(k0, "demangled")), "flash_fwd_splitkv_kernel(float*, int)");
  assert_string_equal(json_string_value(json_object_get(k0, "role")), "split");
  assert_int_equal(json_integer_value(json_object_get(k1, "launches")), 3);
  assert_int_equal(json_integer_value(json_object_get(k1, "graph_launches")), 2);
  assert_string_equal(json_string_value(json_object_get(k1, "role")), "combine");
  assert_true(json_is_true(json_object_get(json_object_get(b, "split_combine"), "split")));
  assert_true(json_is_true(json_object_get(json_object_get(b, "split_combine"), "combine")));
  /* every finding but checked holds; timed is the median of 6000 and 3000 ns */
  assert_true(holds(b, "loaded"));
  assert_true(holds(b, "declared"));
  assert_true(holds(b, "executed"));
  assert_false(holds(b, "checked"));
  assert_true(holds(b, "timed"));
  assert_near(json_number_value(json_object_get(json_object_get(json_object_get(b, "timed"), "summary"), "median")), 4500, 0);
  const json_t *obj = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(b, "loaded"), "maps"), 0), "objects"), 0);
  char sha[65];
  struct dkb_err err;
  dkb_sha256_file(json_string_value(json_object_get(obj, "path")), sha, &err);
  assert_string_equal(json_string_value(json_object_get(obj, "sha256")), sha);
  assert_string_equal(json_string_value(json_object_get(obj, "identity")), "unchanged");
  write_bundles(d, &set);
  char glob[700];
  snprintf(glob, sizeof glob, "'%s'/calls/*.json", d);
  schema_ok("trace.schema.json", glob);
  char cmd[900];
  snprintf(cmd, sizeof cmd, "build/dkb validate %s", glob);
  expect(cmd, 0, "trace bundle: loaded yes, declared yes, executed yes, checked no, timed yes\n", "");
  trace_bundle_set_release(&set);
}

/* Each edit of the records takes away one requirement; the finding says which. */
static void trace_incomplete_records_are_findings(void **s) {
  (void)s;
  static const struct { const char *edit, *finding, *reason; } CASES[] = {
      {"-e '/\"r\":\"end\"/d'", "executed", "executed_no_exit_path"},
      {"-e 's|\"lines\":32|\"lines\":33|'", "executed", "executed_records_lost"},
      {"-e 's|\"why\":\"exit\",\"code\":0,\"outcome\":\"done\"|\"why\":\"exit\",\"code\":0,\"outcome\":\"timed_out\"|'", "executed", "executed_not_flushed"},
      {"-e '/\"corr\":7,\"name\"/d' -e 's|\"lines\":32|\"lines\":31|'", "executed", "executed_launch_without_record"},
      {"-e 's|\"start\":1700000000000016000|\"start\":0|'", "executed", "executed_kernel_record_incomplete"},
      {"-e 's|\"r\":\"flush\",\"why\":\"range_end\",\"code\":0,\"outcome\":\"done\"|\"r\":\"dropped\",\"n\":2|'", "executed", "executed_records_dropped"},
      {"-e 's|\"symbols\":\\[\"_Z24flash_fwd_splitkv_kernelPfi\",|\"symbols\":[|'", "loaded", "loaded_kernel_module_unbound"},
      {"-e 's|\"mtime_ns\":[0-9]*|\"mtime_ns\":1|'", "loaded", "loaded_object_changed"},
      {"-e 's|\"code\":0,\"text\":\"CUPTI_SUCCESS\"}|\"code\":39,\"text\":\"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\"}|'", "executed", "executed_cupti_unavailable"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "gpu_edit%zu", i);
    const char *d = fresh_dir(name);
    write_gpu_records(d, CASES[i].edit);
    struct trace_bundle_set set;
    json_t *b = build_gpu_bundle(d, NULL, &set);
    if (!has_reason(b, CASES[i].finding, CASES[i].reason))
      fail_msg("edit %s: no %s in %s: %s", CASES[i].edit, CASES[i].reason, CASES[i].finding,
               json_dumps(json_object_get(b, "findings"), JSON_INDENT(1)));
    assert_false(holds(b, CASES[i].finding));
    if (!strcmp(CASES[i].finding, "executed")) assert_false(holds(b, "timed")); /* timed needs executed */
    trace_bundle_set_release(&set);
  }
}

static void trace_records_reader_names_file_line_and_pointer(void **s) {
  (void)s;
  static const struct { const char *text, *err; } CASES[] = {
      {"{\"r\":\"push\",\"id\":1,\"parent\":0,\"tid\":1,\"depth\":0,\"t\":1,\"name\":\"x\"}\n", ":1: /r: the first record must be start (got 'push')"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"bogus\"}\n", ":2: /r: unknown record kind 'bogus'"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"pop\",\"id\":5,\"tid\":1,\"t\":2}\n", ":2: /id: pops range 5, which was never pushed"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null,\"zz\":1}\n", ":1: /zz: unknown key"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"kernel\",\"corr\":1}\n", ":2: /: missing required key 'name'"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\nnot json\n", ":2: not a JSON record"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const char *path = tmp_file("records.9.0.jsonl", CASES[i].text);
    struct tr_proc p;
    struct dkb_err err;
    dkb_err_clear(&err);
    assert_int_equal(tr_proc_read(path, &p, &err), -1);
    assert_int_equal(err.code, DKB_INPUT);
    char msg[2048];
    dkb_err_format(&err, msg, sizeof msg);
    if (!strstr(msg, CASES[i].err)) fail_msg("case %zu: '%s' lacks '%s'", i, msg, CASES[i].err);
  }
  /* a last line cut off by a dying process is counted, not an error */
  const char *path = tmp_file("records.9.1.jsonl", "{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"pu");
  struct tr_proc p;
  struct dkb_err err;
  assert_int_equal(tr_proc_read(path, &p, &err), 0);
  assert_true(p.truncated);
  assert_int_equal(p.lines, 1);
  tr_proc_release(&p);
}

/* ---- the trace ladder on mutated bundles ---- */

/* The split/combine rule on the kernel names dkb trace met on the H200 (PyTorch's flash and cuDNN SDPA,
 * FlashInfer, FlexAttention) and on names it must not take for either. */
static void trace_kernel_roles_follow_the_stated_rule(void **s) {
  (void)s;
  static const struct { const char *name; int role; } CASES[] = {
      {"void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", 2},
      {"void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", 1},
      {"void cudnn::fusion::lean_reduction_kernel<false, false, false>", 1},
      {"flashinfer::PersistentVariableLengthMergeStatesKernel", 1},
      {"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_64x64x128_4x1x1_kernel0_0", 0},
      {"triton_tem_fused_flex_attention_0", 0},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", 0},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    if (trace_kernel_role(CASES[i].name) != CASES[i].role)
      fail_msg("%s: role %d, want %d", CASES[i].name, trace_kernel_role(CASES[i].name), CASES[i].role);
  assert_non_null(strstr(TRACE_SPLIT_RULE, "lean_reduction"));
}

static void trace_ladder_recomputes_instead_of_trusting(void **s) {
  (void)s;
  const char *d = fresh_dir("gpu_ladder");
  write_gpu_records(d, "");
  struct trace_bundle_set set;
  json_t *good = build_gpu_bundle(d, NULL, &set);
  static const struct { const char *ptr, *key; const char *value_json, *finding, *reason; } CASES[] = {
      {"/declared", "call_key_sha256", "\"0000000000000000000000000000000000000000000000000000000000000000\"", "declared", "declared_digest_mismatch"},
      {"/declared/call_key", "B", "5", "declared", "declared_key_inconsistent"},
      {"/timed/summary", "median", "1.0", "timed", "timed_summary_mismatch"},
      {"/timed", "tracing", "false", "timed", "timed_not_labelled_tracing"},
      {"", "article_levels", "\"6\"", NULL, "bundle_article_level_claimed"},
      {"", "claims", "[\"checked\"]", NULL, "bundle_claim_unproven"},
      {"/kernels/0", "launches", "7", "executed", "executed_counts_inconsistent"},
      {"/kernels/0", "role", "null", NULL, "bundle_split_combine_mismatch"},
      {"/split_combine", "combine", "false", NULL, "bundle_split_combine_mismatch"},
      {"/split_combine", "rule", "\"by name\"", NULL, "bundle_split_combine_mismatch"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    json_t *doc = json_deep_copy(good);
    json_error_t je;
    json_object_set_new(jr_resolve(doc, CASES[i].ptr), CASES[i].key, json_loads(CASES[i].value_json, JSON_DECODE_ANY, &je));
    struct trace_grade g;
    trace_grade_init(&g);
    struct dkb_err err;
    assert_int_equal(trace_ladder_evaluate(doc, "mutant", NULL, &g, &err), 0);
    int found = 0;
    for (size_t k = 0; k < g.n; k++) found |= !strcmp(g.items[k].reason, CASES[i].reason);
    if (!found) fail_msg("mutation %s/%s: no %s", CASES[i].ptr, CASES[i].key, CASES[i].reason);
    if (CASES[i].finding) {
      int f = 0;
      while (strcmp(trace_finding_names[f], CASES[i].finding)) f++;
      assert_false(g.holds[f]);
    } else {
      assert_false(trace_grade_honest(&g));
    }
    trace_grade_release(&g);
    json_decref(doc);
  }
  /* structure errors are a malformed document */
  json_t *doc = json_deep_copy(good);
  json_object_set_new(json_object_get(doc, "range"), "instances", json_string("x"));
  struct trace_grade g;
  trace_grade_init(&g);
  struct dkb_err err;
  assert_int_equal(trace_ladder_evaluate(doc, "bad.json", NULL, &g, &err), -1);
  char msg[1200];
  dkb_err_format(&err, msg, sizeof msg);
  assert_string_equal(msg, "bad.json: /range/instances: must be an array (got string)");
  trace_grade_release(&g);
  json_decref(doc);
  /* dkb validate: a record file changed after the bundle was written; a claim edited in */
  write_bundles(d, &set);
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "build/dkb validate '%s'/calls/*.json", d);
  expect(cmd, 0, NULL, "");
  snprintf(cmd, sizeof cmd, "echo >> '%s/records/records.4242.0.jsonl' && build/dkb validate '%s'/calls/*.json", d, d);
  expect(cmd, 1, "bundle_records_mismatch", "");
  trace_bundle_set_release(&set);
}

/* ---- pieces ---- */

static void inject_sha256_equals_libcrypto(void **s) {
  (void)s;
  static const size_t N[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 1 << 20};
  unsigned char *buf = malloc(1 << 20);
  for (size_t i = 0; i < (1 << 20); i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  for (size_t i = 0; i < sizeof N / sizeof N[0]; i++) {
    char a[65], b[65];
    struct dkb_err err;
    inject_sha256(buf, N[i], a);
    dkb_sha256_buf(buf, N[i], b, &err);
    if (strcmp(a, b)) fail_msg("%zu bytes: %s, libcrypto %s", N[i], a, b);
  }
  free(buf);
}

/* The module records of a cubin, of the same cubin in a fatbin container and of bytes that are neither, and
 * two loader maps, from a driver linked with the library's objects (tests/data/trace/inject_selftest.c). */
static void inject_module_records_hash_and_list_symbols(void **s) {
  (void)s;
  const char *d = fresh_dir("selftest");
  struct run_result r;
  run_sh(&r, "mkdir -p '%s' && DKB_TRACE_DIR='%s' build/tests/inject_selftest build/tests/tiny.cubin", d, d);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  struct tr_proc *p = NULL;
  size_t n = 0;
  struct dkb_err err;
  if (tr_read_dir(d, &p, &n, &err)) fail_msg("%s: %s", err.file, err.msg);
  assert_int_equal(n, 1);
  assert_int_equal(p->nmodules, 3);
  char sha[65];
  dkb_sha256_file("build/tests/tiny.cubin", sha, &err);
  assert_string_equal(p->modules[0].sha256, sha);
  for (int m = 0; m < 2; m++) {
    assert_string_equal(p->modules[m].format, m ? "fatbin" : "elf");
    assert_int_equal(p->modules[m].nsymbols, 3);
    int plain = 0, templ = 0, internal = 0;
    for (size_t k = 0; k < p->modules[m].nsymbols; k++) {
      plain |= !strcmp(p->modules[m].symbols[k], "dkb_tiny_plain");
      templ |= !strcmp(p->modules[m].symbols[k], "_Z17dkb_tiny_templateILi3EEvPf");
      internal |= strstr(p->modules[m].symbols[k], "dkb_tiny_internal") != NULL;
    }
    assert_true(plain && templ && internal);
  }
  assert_string_equal(p->modules[2].format, "other");
  assert_int_equal(p->modules[2].nsymbols, 0);
  char exe[4096];
  assert_non_null(realpath("build/tests/inject_selftest", exe));
  assert_string_equal(p->modules[0].in_object, exe);
  assert_int_equal(p->nmaps, 2);
  assert_int_equal(p->maps[1].same_as, 0);
  int main_seen = 0;
  for (size_t k = 0; k < p->maps[0].nobjects; k++) main_seen |= p->maps[0].objects[k].main && !strcmp(p->maps[0].objects[k].path, exe);
  assert_true(main_seen);
  assert_true(p->has_end);
  tr_proc_release(p);
  free(p);
}

static void pydist_maps_installed_files_and_checks_record(void **s) {
  (void)s;
  const char *d = fresh_dir("site");
  struct run_result r;
  run_sh(&r, "mkdir -p '%s/lib/python3.12/site-packages/pkg/sub' '%s/lib/python3.12/site-packages/demo_pkg-1.2.dist-info' && "
             "printf 'ext bytes' > '%s/lib/python3.12/site-packages/pkg/_ext.so' && "
             "printf 'other' > '%s/lib/python3.12/site-packages/pkg/sub/a,b.so' && "
             "printf 'tampered' > '%s/lib/python3.12/site-packages/pkg/old.so' && "
             "printf 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.2\\n\\nbody Name: no\\n' > "
             "'%s/lib/python3.12/site-packages/demo_pkg-1.2.dist-info/METADATA' && cd '%s/lib/python3.12/site-packages' && "
             "{ printf 'pkg/_ext.so,sha256=%%s,9\\n' $(/usr/bin/python3 -c \"import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'ext bytes').digest()).rstrip(b'=').decode())\"); "
             "printf '\"pkg/sub/a,b.so\",sha256=%%s,5\\n' $(/usr/bin/python3 -c \"import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'other').digest()).rstrip(b'=').decode())\"); "
             "printf 'pkg/old.so,sha256=AAAA,3\\ndemo_pkg-1.2.dist-info/RECORD,,\\n'; } > demo_pkg-1.2.dist-info/RECORD",
         d, d, d, d, d, d, d);
  if (r.rc) fail_msg("%s", r.err);
  run_result_release(&r);
  struct pydist *pd = pydist_new();
  struct pydist_match m;
  const char *files[] = {"pkg/_ext.so", "pkg/sub/a,b.so", "pkg/old.so"};
  const int want[] = {1, 1, 0};
  for (int i = 0; i < 3; i++) {
    char path[900], real[4096], sha[65];
    struct dkb_err err;
    snprintf(path, sizeof path, "%s/lib/python3.12/site-packages/%s", d, files[i]);
    assert_non_null(realpath(path, real));
    dkb_sha256_file(real, sha, &err);
    assert_int_equal(pydist_lookup(pd, real, sha, &m), 1);
    assert_string_equal(m.name, "demo-pkg");
    assert_string_equal(m.version, "1.2");
    assert_int_equal(m.record_match, want[i]);
  }
  char zero[65];
  memset(zero, '0', 64);
  zero[64] = '\0';
  assert_int_equal(pydist_lookup(pd, "/usr/lib/x86_64-linux-gnu/libc.so.6", zero, &m), 0);
  pydist_free(pd);
}

/* ---- on the GPU ---- */

static void gpu_inject_test_program_runs_unchanged_and_attributed(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result plain, traced;
  run_sh(&plain, "build/examples/inject_test ok");
  assert_int_equal(plain.rc, 0);
  const char *d = fresh_dir("gpu_inject");
  run_sh(&traced, TRACE " -o '%s' --range 'inject/*' --range 'dkb/call/*' -- build/examples/inject_test ok %s", d, KEY_FILE);
  if (traced.rc) fail_msg("dkb trace exit %d\n%s%s", traced.rc, traced.out, traced.err);
  /* the program's own output is identical: the library changed nothing it computes */
  assert_non_null(strstr(traced.out, plain.out));
  run_result_release(&plain);
  run_result_release(&traced);
  char path[700];
  snprintf(path, sizeof path, "%s/summary.json", d);
  json_t *sum = load(path);
  const json_t *calls = json_object_get(sum, "calls");
  assert_int_equal(json_array_size(calls), 5); /* four thread ranges and the call range */
  for (size_t i = 0; i < json_array_size(calls); i++) {
    const json_t *row = json_array_get(calls, i), *f = json_object_get(row, "findings");
    assert_true(json_is_true(json_object_get(f, "executed")));
    assert_true(json_is_true(json_object_get(f, "loaded")));
    assert_true(json_is_true(json_object_get(f, "timed")));
    const char *range = json_string_value(json_object_get(row, "range"));
    /* a thread's range: fill + 3 adds + 2 graph replays of one add */
    if (!strncmp(range, "inject/thread", 13)) assert_int_equal(json_integer_value(json_object_get(row, "launches")), 6);
  }
  json_decref(sum);
  char glob[700];
  snprintf(glob, sizeof glob, "'%s'/calls/*.json", d);
  if (!have_jsonschema()) {
    print_message("[  INFO    ] bundles and records not checked against their schemas: /usr/bin/python3 has no jsonschema here\n");
    return;
  }
  schema_ok("trace.schema.json", glob);
  records_schema_ok(d);
}

static void gpu_inject_test_open_range_and_exit_in_range(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  static const struct { const char *mode; int rc; } CASES[] = {{"open", 0}, {"exit-in-range", 1}, {"exit-unsynced", 1}, {"nvtx-first", 0}};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char name[40];
    snprintf(name, sizeof name, "gpu_mode_%zu", i);
    const char *d = fresh_dir(name);
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
      assert_true(holds(b, "executed"));
      run_sh(&r, "grep -c '\"name\":\"inject/before-cuinit\"' '%s'/records/*.jsonl", d); /* pushed before cuInit */
      assert_int_equal(r.rc, 0);
      run_result_release(&r);
    } else {
      assert_true(has_reason(b, "executed", "executed_range_open"));
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
               cmocka_unit_test(trace_join_attributes_launches_by_correlation),
               cmocka_unit_test(trace_incomplete_records_are_findings),
               cmocka_unit_test(trace_records_reader_names_file_line_and_pointer),
               cmocka_unit_test(trace_kernel_roles_follow_the_stated_rule),
    cmocka_unit_test(trace_ladder_recomputes_instead_of_trusting), cmocka_unit_test(inject_sha256_equals_libcrypto),
               cmocka_unit_test(inject_module_records_hash_and_list_symbols),
               cmocka_unit_test(pydist_maps_installed_files_and_checks_record),
               cmocka_unit_test(gpu_inject_test_program_runs_unchanged_and_attributed),
               cmocka_unit_test(gpu_inject_test_open_range_and_exit_in_range))
