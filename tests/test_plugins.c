/* test_plugins.c - the backend ABI from the loading side (include/dkb/backend.h, harness/plugin.c): dkb's
 * test plugin (tests/plugin/test_plugin.c, one library per broken rule) loads or is refused with the file
 * and the reason and the exit code the README gives, DKB_PLUGIN_PATH loads like --plugin, `dkb backends`
 * lists every backend with its identity; dkb_reason_add stops at cap; the example plugin admits what it is
 * built for; and the real plugins' own CPU tests (make plugin-tests) pass once `make plugins` has built
 * them. */
#include "tests/util.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/backends.h"
#include "harness/plugin.h"

#define TP "build/tests/plugins/libtest_"

static void expect_refusal(const char *variant, int rc, const char *msg) {
  struct run_result r;
  run_sh(&r, "build/dkb backends --plugin " TP "%s.so", variant);
  char want[512];
  snprintf(want, sizeof want, "dkb: error: " TP "%s.so: %s\n", variant, msg);
  if (r.rc != rc || strcmp(r.err, want)) fail_msg("%s: exit %d (want %d)\n%s\nwant: %s", variant, r.rc, rc, r.err, want);
  assert_string_equal(r.out, "");
  run_result_release(&r);
}

static void a_plugin_that_breaks_the_abi_is_refused_naming_the_file_and_the_reason(void **s) {
  (void)s;
  expect_refusal("abi2", 3, "plugin ABI version 2, this dkb speaks 1");
  expect_refusal("noentry", 3, "not a dkb plugin: no entry point dkb_plugin_entry_v1");
  expect_refusal("dupname", 3, "backend dkb_split_kv is already registered (by dkb itself)");
  expect_refusal("missing", 3, "cannot load plugin: no such file");
  struct run_result r;
  run_sh(&r, "printf 'not an ELF' > %s/junk.so && build/dkb backends --plugin %s/junk.so", tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 3);
  assert_non_null(strstr(r.err, "junk.so: cannot load plugin: "));
  run_result_release(&r);
  /* dkb run refuses before any work: no output folder */
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/abi2-out --plugin " TP "abi2.so; echo rc=$?; test -e %s/abi2-out && echo made",
         tmp_dir(), tmp_dir());
  assert_non_null(strstr(r.out, "rc=3\n"));
  assert_null(strstr(r.out, "made"));
  run_result_release(&r);
}

static void dkb_backends_lists_every_backend_with_its_identity(void **s) {
  (void)s;
  struct run_result r, sum;
  run_sh(&r, "build/dkb backends --json --plugin " TP "ok.so > %s/backends.json && "
             "/usr/bin/python3 tests/schema_check.py schemas/backends.schema.json %s/backends.json && "
             "/usr/bin/python3 tests/jsontool.py get %s/backends.json /backends/1/name /backends/1/plugin/sha256 /backends/1/source "
             "/backends/0/name /backends/2/name",
         tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 0) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_sh(&sum, "sha256sum " TP "ok.so | cut -d' ' -f1");
  char want[256];
  /* in the order auto considers them: dkb_split_kv (10), the plugin's test_backend (70), dkb_naive_reference (100) */
  snprintf(want, sizeof want, "test_backend %.64s plugin dkb_split_kv dkb_naive_reference\n", sum.out);
  assert_string_equal(r.out, want);
  run_result_release(&r);
  run_result_release(&sum);
  /* the same through DKB_PLUGIN_PATH, colon-separated, with the priority order the listing says */
  run_sh(&r, "DKB_PLUGIN_PATH=" TP "ok.so: build/dkb backends");
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "dkb backends: 3 (priority order decides auto selection)\n"));
  assert_non_null(strstr(r.out, "  test_backend           priority 70   version 1.0\n"));
  assert_non_null(strstr(r.out, "source: plugin test 1.0 (ABI 1)\n"));
  const char *split = strstr(r.out, "\n  dkb_split_kv "), *test = strstr(r.out, "\n  test_backend "),
             *naive = strstr(r.out, "\n  dkb_naive_reference ");
  if (!split || !test || !naive || !(split < test && test < naive))
    fail_msg("not listed by priority (10, 70, 100):\n%s", r.out);
  run_result_release(&r);
  /* one library named twice, by a flag and the environment in two spellings, is loaded once */
  run_sh(&r, "DKB_PLUGIN_PATH=$PWD/" TP "ok.so build/dkb backends --plugin " TP "ok.so");
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "dkb backends: 3 (priority order decides auto selection)\n"));
  run_result_release(&r);
  run_sh(&r, "DKB_PLUGIN_PATH=" TP "abi2.so build/dkb backends");
  assert_int_equal(r.rc, 3);
  assert_non_null(strstr(r.err, "plugin ABI version 2, this dkb speaks 1 (from DKB_PLUGIN_PATH)\n"));
  run_result_release(&r);
}

/* The test plugin's variants that break a rule at admission or plan time, run on this host (admit accepts
 * compute capability -1, so plan runs without a GPU): each ends the run with its reason in the bundle and
 * the summary, a failed plan in the backend's own words (its last_error), and the exit code docs/backends.md
 * gives. */
static void a_plugin_whose_admit_or_plan_fails_ends_the_run_with_its_reason(void **s) {
  (void)s;
  static const struct { const char *variant; int rc; const char *reason; } cases[] = {
      {"planfail", 1, "backend_plan_failed: backend test_backend: plan failed: the test plugin's plan fails on purpose"},
      {"badws", 1, "backend_plan_invalid: backend test_backend: workspace 'scratch' has kind 7, which dkb does not know"},
      {"badlse", 1, "backend_plan_invalid: backend test_backend: plan lse_base 9, which dkb does not know"},
      {"badkernel", 1, "backend_plan_invalid: backend test_backend: kernel test_plugin_kernel has match kind 5, which dkb does not know"},
      {"badjson", 1, "backend_plan_invalid: backend test_backend: its plan document is not a JSON object: "},
      {"admitfail", -1, "backend_rejected: the forced backend test_backend was refused: admit failed: the test plugin's admit fails on purpose"},
  };
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit fixtures/decode/dk128-dv64.json %s/plugin-call.json set /split '{\"policy\": \"auto\"}'",
         tmp_dir());
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_sh(&r, "build/dkb run %s/plugin-call.json -o %s/plugin-%s --plugin " TP "%s.so --backend test_backend", tmp_dir(), tmp_dir(),
           cases[i].variant, cases[i].variant);
    char want[400];
    snprintf(want, sizeof want, "\n  reason      %s", cases[i].reason);
    if ((cases[i].rc >= 0 && r.rc != cases[i].rc) || !strstr(r.out, want))
      fail_msg("%s: exit %d (want %d)\n%s%s\nwant: %s", cases[i].variant, r.rc, cases[i].rc, r.out, r.err, want + 1);
    run_result_release(&r);
  }
}

/* "direct output" is said of a plugin's plan only when it declares no merge kernel: a backend may run its
 * merge at one split (FlashInfer's graph mode by design, cuDNN whenever its engine splits on its own). */
static void a_plugin_plan_that_declares_a_merge_is_not_called_direct(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit fixtures/decode/dk128-dv64.json %s/merge-call.json set /split '{\"policy\": \"auto\"}' && "
             "for v in ok merge; do build/dkb run %s/merge-call.json -o %s/merge-$v --plugin " TP "$v.so --backend test_backend "
             "| grep '^  plan '; done",
         tmp_dir(), tmp_dir(), tmp_dir());
  assert_string_equal(r.out, "  plan        split 1 (direct output); tiles SKIP 0 FULL 7 PARTIAL 0\n"
                             "  plan        split 1; tiles SKIP 0 FULL 7 PARTIAL 0\n");
  run_result_release(&r);
}

/* A plugin whose engine picks a split it does not report (DKB_SPLITS_UNREPORTED, as cuDNN's) is said to:
 * the summary, the dispatch record and its plan key say none, not 1, and the ladder finds nothing missing. */
static void a_plugin_that_does_not_report_its_split_is_recorded_with_none(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit fixtures/decode/dk128-dv64.json %s/unrep-call.json set /split '{\"policy\": \"auto\"}' && "
             "build/dkb run %s/unrep-call.json -o %s/unrep --plugin " TP "unreported.so --backend test_backend | grep '^  plan ' && "
             "/usr/bin/python3 tests/jsontool.py get --json %s/unrep/bundle.json /dispatch/selected /dispatch/split_count /dispatch/plan_key/split_count && "
             "build/dkb validate --json %s/unrep/bundle.json | grep -c split_count",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  assert_string_equal(r.out, "  plan        split unreported (the backend's engine picks its own); tiles SKIP 0 FULL 7 PARTIAL 0\n"
                             "\"test_backend\" null null\n0\n");
  run_result_release(&r);
}

/* A backend's failure in its own words, and the exit code: a CUDA error by what caused it (a faulting
 * kernel: 1, the machine: 4), DKB_BACKEND_ERROR the thing under test (1). */
static void a_backends_failure_carries_its_last_error_and_exit_code(void **s) {
  (void)s;
  char msg[512];
  assert_int_equal(backends_failure("test_backend", "launch", DKB_BACKEND_ERROR, "the test plugin has no kernel", msg, sizeof msg),
                   DKB_FAIL);
  assert_string_equal(msg, "backend test_backend: launch failed: the test plugin has no kernel");
  assert_int_equal(backends_failure("test_backend", "setup", 2 /* cudaErrorMemoryAllocation */, "", msg, sizeof msg), DKB_ENV);
  assert_string_equal(msg, "backend test_backend: setup returned out of memory: no reason given");
  assert_int_equal(backends_failure("test_backend", "plan", 700 /* cudaErrorIllegalAddress */, NULL, msg, sizeof msg), DKB_FAIL);
  assert_non_null(strstr(msg, "backend test_backend: plan returned an illegal memory access was encountered: no reason given"));
}

/* On a GPU, the test plugin's launch fails (it has no kernel): the run says so in the backend's words
 * (its last_error), with exit 1, not as a profiler that refused nor as an unknown CUDA error. */
static void gpu_a_failed_launch_reports_the_backends_own_error(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit fixtures/decode/dk128-dv64.json %s/launch.json set /split '{\"policy\": \"auto\"}' && "
             "build/dkb run %s/launch.json -o %s/launch-out --quiet --plugin " TP "ok.so --backend test_backend; echo rc=$?; "
             "/usr/bin/python3 tests/jsontool.py get %s/launch-out/bundle.json /status/terminal /status/reasons/0/detail",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (!strstr(r.out, "rc=1\nlaunch_failed backend test_backend: launch of the traced call failed: the test plugin has no kernel\n") ||
      strstr(r.out, "CUPTI") || strstr(r.out, "unrecognized"))
    fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* The example plugin admits exactly what plugins/example/plugin.mk builds (dkb's GENCODE: sm_90 SASS and
 * compute_90 PTX): compute capability 9.0 and later, nothing before it, and says so under H. */
static void the_example_plugin_admits_the_capabilities_it_is_built_for(void **s) {
  (void)s;
  const char *path = "build/plugins/libdkb_example.so";
  if (access(path, R_OK)) {
    print_message("[  SKIP    ] %s is not built: run make plugins\n", path);
    skip();
  }
  struct dkb_plugin_lib lib;
  struct dkb_err err;
  dkb_err_clear(&err);
  if (dkb_plugin_open(path, &lib, &err)) fail_msg("%s", err.msg);
  const struct dkb_backend *b = &lib.table->backends[0];
  static const struct { int cc; const char *h; } cases[] = {
      {-1, "compute_capability unknown: no CUDA device"}, {80, "compute_capability=80 unsupported (built for sm_90)"},
      {89, "compute_capability=89 unsupported (built for sm_90)"}, {90, NULL}, {100, NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct dkb_call call;  /* zero: decode, fp16, contiguous NHD, no mask */
    memset(&call, 0, sizeof call);
    call.size = sizeof call;
    call.abi_version = DKB_BACKEND_ABI_VERSION;
    call.compute_capability = cases[i].cc;
    call.B = call.q_len = call.H_q = call.H_kv = 1;
    call.d_qk = call.d_v = 128;
    call.split_policy = DKB_ABI_SPLIT_AUTO;
    struct dkb_reason r[DKB_MAX_REASONS];
    int n = -1;
    assert_int_equal(b->admit(b, &call, r, DKB_MAX_REASONS, &n), 0);
    if (!cases[i].h) {
      if (n) fail_msg("cc %d: refused (%c: %s)", cases[i].cc, r[0].factor, r[0].text);
      continue;
    }
    assert_int_equal(n, 1);
    assert_int_equal(r[0].factor, 'H');
    assert_string_equal(r[0].text, cases[i].h);
  }
  dkb_plugin_close(&lib);
}

/* The one reason writer every admit uses (include/dkb/backend.h): it stops at cap, cuts a long text to the
 * field with its terminator, and keeps the factor letter. */
static void dkb_reason_add_stops_at_cap_and_cuts_the_text_to_the_field(void **s) {
  (void)s;
  struct dkb_reason r[3];
  memset(r, 'x', sizeof r);
  int n = 0;
  dkb_reason_add(r, 2, &n, 'L', "page_size=%d unsupported", 1);
  dkb_reason_add(r, 2, &n, 'Q', "%0200d", 7);
  dkb_reason_add(r, 2, &n, 'C', "past the cap");
  assert_int_equal(n, 2);
  assert_int_equal(r[0].factor, 'L');
  assert_string_equal(r[0].text, "page_size=1 unsupported");
  assert_int_equal(r[1].factor, 'Q');
  assert_int_equal(strlen(r[1].text), DKB_REASON_TEXT_MAX - 1);
  assert_int_equal(r[2].factor, 'x');  /* the slot past cap is untouched */
}

/* Each plugin's source manifest hashes the make fragment that builds it: plugins/P/chain.json lists
 * plugins/P/plugin.mk among its "files" (its flags and gencode are part of what was built). */
static void every_plugins_chain_spec_lists_its_plugin_mk(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "for m in plugins/*/plugin.mk; do d=${m%%/plugin.mk}; "
             "/usr/bin/python3 -c 'import json,sys; sys.exit(sys.argv[2] not in json.load(open(sys.argv[1])).get(\"files\", []))' "
             "$d/chain.json $m || echo \"$d/chain.json: no $m in /files\"; done; ls plugins/*/plugin.mk | wc -l");
  assert_int_equal(r.rc, 0);
  if (atoi(r.out) < 3 || strchr(r.out, ':')) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* The real plugins (plugins/, FlashInfer and cuDNN) run their CPU tests: loading, admission with reasons,
 * their source manifests against the wheels' RECORD. They need `make plugins` (CI runs it first). */
static void the_real_plugins_pass_their_cpu_tests(void **s) {
  (void)s;
  glob_t g;
  int missing = 0;
  char first[600] = "";
  if (glob("plugins/*/plugin.mk", 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) {
      char lib[600], dir[256];
      snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(g.gl_pathv[i], '/') - g.gl_pathv[i] - 8), g.gl_pathv[i] + 8);
      snprintf(lib, sizeof lib, "build/plugins/libdkb_%s.so", dir);
      if (access(lib, R_OK)) {
        missing++;
        if (!first[0]) snprintf(first, sizeof first, "%s", lib);
      }
    }
    globfree(&g);
  }
  if (missing) {
    print_message("[  SKIP    ] %d backend plugin(s) not built (%s): run make plugins\n", missing, first);
    skip();
  }
  struct run_result r;
  run_sh(&r, "make --no-print-directory plugin-tests 2>&1");
  if (r.rc != 0) fail_msg("make plugin-tests: exit %d\n%s", r.rc, r.out);
  run_result_release(&r);
}

DKB_TEST_GROUP(plugins, cmocka_unit_test(a_plugin_that_breaks_the_abi_is_refused_naming_the_file_and_the_reason),
               cmocka_unit_test(dkb_backends_lists_every_backend_with_its_identity),
               cmocka_unit_test(a_plugin_whose_admit_or_plan_fails_ends_the_run_with_its_reason),
               cmocka_unit_test(a_plugin_plan_that_declares_a_merge_is_not_called_direct),
               cmocka_unit_test(a_plugin_that_does_not_report_its_split_is_recorded_with_none),
               cmocka_unit_test(a_backends_failure_carries_its_last_error_and_exit_code),
               cmocka_unit_test(gpu_a_failed_launch_reports_the_backends_own_error),
               cmocka_unit_test(the_example_plugin_admits_the_capabilities_it_is_built_for),
               cmocka_unit_test(dkb_reason_add_stops_at_cap_and_cuts_the_text_to_the_field),
               cmocka_unit_test(every_plugins_chain_spec_lists_its_plugin_mk),
               cmocka_unit_test(the_real_plugins_pass_their_cpu_tests))
