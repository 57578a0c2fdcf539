/* test_cli.c - the command line: dispatch, help, version, usage errors, `dkb oracle` on the shipped
 * fixtures, and the exact text of malformed-fixture errors (file, JSON Pointer, reason). */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_run(const char *cmd, int rc, const char *out, const char *err) {
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != rc) fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", cmd, r.rc, rc, r.out, r.err);
  if (out) assert_string_equal(r.out, out);
  if (err) assert_string_equal(r.err, err);
  run_result_release(&r);
}

static void unknown_command_is_usage_error(void **s) {
  (void)s;
  expect_run("build/dkb frobnicate", 2, "",
             "dkb: error: unknown command 'frobnicate'\nusage: dkb [--version] [--help] COMMAND [ARGS]\n");
}

static void unknown_option_is_usage_error(void **s) {
  (void)s;
  expect_run("build/dkb oracle --frob x.json", 2, "",
             "dkb: error: unknown option '--frob'\nusage: dkb oracle FIXTURE... [--json]\n");
  expect_run("build/dkb digest x.json --pointer", 2, "",
             "dkb: error: option '--pointer' needs a value\n"
             "usage: dkb digest FILE [--pointer /json/pointer] [--canonical]\n");
  expect_run("build/dkb --frob", 2, "", "dkb: error: unknown option '--frob'\nusage: dkb [--version] [--help] COMMAND [ARGS]\n");
}

static void help_works_three_ways(void **s) {
  (void)s;
  struct run_result a, b, c;
  run_sh(&a, "build/dkb help oracle");
  run_sh(&b, "build/dkb oracle --help");
  run_sh(&c, "build/dkb oracle -h");
  assert_int_equal(a.rc, 0);
  assert_int_equal(b.rc, 0);
  assert_int_equal(c.rc, 0);
  assert_string_equal(a.out, b.out);
  assert_string_equal(a.out, c.out);
  assert_non_null(strstr(a.out, "usage: dkb oracle FIXTURE... [--json]\n"));
  assert_non_null(strstr(a.out, "  3  malformed input (fixture, bundle or bench result)\n"));
  run_result_release(&a);
  run_result_release(&b);
  run_result_release(&c);
  run_sh(&a, "build/dkb --help");
  assert_int_equal(a.rc, 0);
  assert_non_null(strstr(a.out, "  oracle     evaluate contract fixtures"));
  run_result_release(&a);
}

/* 1 when text has "--name" as a whole option (not the head of a longer one such as --dump-on-fail). */
static int has_option(const char *text, const char *name) {
  char opt[64];
  snprintf(opt, sizeof opt, "--%s", name);
  for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
    const char c = p[strlen(opt)];
    if (c == ' ' || c == ']' || c == '\n' || c == ',' || c == '|' || c == '=') return 1;
  }
  return 0;
}

/* Every long option a command's parser accepts (its struct option table in cmd/NAME.c) is in the usage
 * line of `dkb help NAME` and described among its options. */
static void help_names_every_option_the_parser_accepts(void **s) {
  (void)s;
  static const char *const cmds[] = {"oracle", "digest", "run", "bench", "compare", "validate", "backends", "trace",
                                     "check", "preflight"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char path[64];
    snprintf(path, sizeof path, "cmd/%s.c", cmds[i]);
    char *src = slurp(path);
    assert_non_null(src);
    struct run_result r;
    run_sh(&r, "build/dkb help %s", cmds[i]);
    assert_int_equal(r.rc, 0);
    char *body = strstr(r.out, "\n\n");  /* the usage line ends at the first blank line */
    assert_non_null(body);
    *body++ = '\0';
    int n = 0;
    for (const char *p = strstr(src, "{\""); p; p = strstr(p + 2, "{\"")) {
      char name[48];
      int len = 0;
      if (sscanf(p, "{\"%47[a-z-]\", %*[a-z]_argument%n", name, &len) != 1 || !len) continue;
      n++;
      /* -o DIR stands for --output in a usage line, as getopt's short form */
      if (!has_option(r.out, name) && !(!strcmp(name, "output") && strstr(r.out, "[-o DIR]")))
        fail_msg("dkb %s: --%s is accepted but not in the usage line:\n%s", cmds[i], name, r.out);
      if (!has_option(body, name)) fail_msg("dkb %s: --%s is accepted but not described:\n%s", cmds[i], name, body);
    }
    if (!n) fail_msg("%s: no option table found", path);
    run_result_release(&r);
    free(src);
  }
}

/* Every command `dkb --help` lists answers `dkb help NAME` with its usage, `help` itself included. */
static void help_answers_for_every_listed_command(void **s) {
  (void)s;
  struct run_result all;
  run_sh(&all, "build/dkb --help");
  assert_int_equal(all.rc, 0);
  const char *p = strstr(all.out, "\ncommands:\n");
  assert_non_null(p);
  int n = 0;
  for (p = strchr(p + 1, '\n') + 1; !strncmp(p, "  ", 2); p = strchr(p, '\n') + 1) {
    char name[32];
    if (sscanf(p, " %31s", name) != 1) fail_msg("unreadable command line: %.40s", p);
    struct run_result r;
    run_sh(&r, "build/dkb help %s", name);
    char want[64];
    snprintf(want, sizeof want, "usage: dkb %s", name);
    if (r.rc != 0 || strncmp(r.out, want, strlen(want)))
      fail_msg("dkb help %s: exit %d\nstdout: %s\nstderr: %s", name, r.rc, r.out, r.err);
    run_result_release(&r);
    n++;
  }
  assert_true(n >= 11);
  run_result_release(&all);
}

static void version_names_commit_and_dirty_flag(void **s) {
  (void)s;
  struct run_result r, g;
  run_sh(&r, "build/dkb --version");
  run_sh(&g, "git rev-parse HEAD 2>/dev/null || echo none");
  assert_int_equal(r.rc, 0);
  assert_true(strncmp(r.out, "dkb ", 4) == 0);
  g.out[strcspn(g.out, "\n")] = '\0';
  if (strcmp(g.out, "none")) assert_non_null(strstr(r.out, g.out));
  /* either state is named: a clean tree says so as plainly as a dirty one */
  assert_true(strstr(r.out, ", clean)\n") || strstr(r.out, ", dirty)\n"));
  run_result_release(&r);
  run_result_release(&g);
}

/* Every shipped contract fixture passes; every invalid one is reported with its reason. */
static void oracle_passes_every_shipped_fixture(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb oracle fixtures/contracts/*.json");
  if (r.rc != 0) fail_msg("dkb oracle exit %d\n%s%s", r.rc, r.out, r.err);
  assert_null(strstr(r.out, "FAIL"));
  struct run_result n;
  run_sh(&n, "ls fixtures/contracts/*.json | wc -l; grep -l expect_reject fixtures/contracts/*.json | wc -l");
  int files = 0, invalid = 0;
  sscanf(n.out, "%d %d", &files, &invalid);
  char want[128];
  snprintf(want, sizeof want, "oracle: %d fixtures: %d passed, 0 failed, 0 malformed\n", files, files);
  assert_non_null(strstr(r.out, want));
  int rejected = 0;
  for (const char *p = r.out; (p = strstr(p, "  rejected: ")); p++) rejected++;
  assert_int_equal(rejected, invalid);
  assert_true(invalid > 0);
  run_result_release(&r);
  run_result_release(&n);
}

static void oracle_json_report_is_schema_valid(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb oracle --json fixtures/contracts/*.json > %s/oracle.json && "
             "/usr/bin/python3 tests/schema_check.py schemas/oracle-report.schema.json %s/oracle.json",
         tmp_dir(), tmp_dir());
  if (r.rc != 0) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

static void contract_fixtures_are_schema_valid(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/contract.schema.json fixtures/contracts/*.json");
  if (r.rc != 0) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

static void failed_expectation_exits_1(void **s) {
  (void)s;
  const char *f = tmp_file("wrong.json",
      "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"wrong\",\n"
      " \"input\": {\"scores\": [10, 10, 0, 0], \"values\": [1, 1, 100, 100], \"splits\": [[0, 2], [2, 4]]},\n"
      " \"expect\": [{\"at\": \"/O/0\", \"equals\": 50.5}]}\n");
  struct run_result r;
  run_sh(&r, "build/dkb oracle %s", f);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.out, "FAIL  "));
  assert_non_null(strstr(r.out, "    /O/0: expected 50.5, got 1.004494389001541"));
  run_result_release(&r);
}

/* Malformed fixtures: exit 3 with file:line:column or file: pointer: reason. */
static void malformed_fixture_errors_are_exact(void **s) {
  (void)s;
  struct { const char *name, *text, *err; } cases[] = {
      {"syntax.json", "{\"schema\": \"dkb.contract/v1\",\n  \"name\": }\n",
       "%s:2:11: unexpected token near '}'\n"},
      {"dup.json", "{\"schema\": \"dkb.contract/v1\", \"schema\": \"x\"}\n",
       "%s:1:38: duplicate object key near '\"schema\"'\n"},
      {"unknown.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"n\", \"input\": {}, "
                       "\"expect\": [], \"colour\": 1}\n",
       "%s: /colour: unknown key\n"},
      {"kind.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"nope\", \"name\": \"n\", \"input\": {}, \"expect\": []}\n",
       "%s: /contract: unknown contract kind 'nope'\n"},
      {"range.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"n\", \"input\": "
                     "{\"scores\": [1, 2], \"values\": [1, 2], \"splits\": [[0, 3]]}, \"expect\": []}\n",
       "%s: /input/splits/0: must satisfy 0 <= start <= end <= 2 (got [0, 3])\n"},
      {"type.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state_laws\", \"name\": \"n\", \"input\": "
                    "{\"seed\": 1, \"trials\": 0}, \"expect\": []}\n",
       "%s: /input/trials: must be >= 1 (got 0)\n"},
      {"missing.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"n\", \"input\": "
                       "{\"scores\": [1]}, \"expect\": []}\n",
       "%s: /input: missing required key 'values'\n"},
      {"enum.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"n\", \"input\": "
                    "{\"scores\": [1], \"values\": [1], \"splits\": [[0, 1]], \"merge\": \"fast\"}, \"expect\": []}\n",
       "%s: /input/merge: must be one of: branch_on_validity, unguarded (got 'fast')\n"},
      {"expect.json", "{\"schema\": \"dkb.contract/v1\", \"contract\": \"split_state\", \"name\": \"n\", \"input\": "
                      "{\"scores\": [1], \"values\": [1], \"splits\": [[0, 1]]}, \"expect\": [{\"at\": \"/O\"}]}\n",
       "%s: /expect/0: must have exactly one of equals, le, ge, lt, gt\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *path = tmp_file(cases[i].name, cases[i].text);
    char want[1024], body[900];
    snprintf(body, sizeof body, cases[i].err, path);
    snprintf(want, sizeof want, "dkb: error: %s", body);
    struct run_result r;
    run_sh(&r, "build/dkb oracle %s", path);
    if (r.rc != 3) fail_msg("%s: exit %d, want 3 (%s)", cases[i].name, r.rc, r.err);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
  expect_run("build/dkb oracle /nonexistent.json", 3, NULL,
             "dkb: error: cannot open '/nonexistent.json': No such file or directory\n");
}

/* Every "    $ build/dkb ..." line of README.md runs with the exit code it states ("# exit N", else 0). */
static void readme_examples_run(void **s) {
  (void)s;
  char *readme = slurp("README.md");
  assert_non_null(readme);
  int n = 0;
  for (char *line = strtok(readme, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "    $ build/dkb ", 16)) continue;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s", line + 6);
    int want = 0;
    char *hash = strstr(cmd, "  # exit ");
    if (hash) { want = atoi(hash + 9); *hash = '\0'; }
    struct run_result r;
    run_sh(&r, "%s", cmd);
    if (r.rc != want) fail_msg("README: '%s' exited %d, the README says %d\n%s%s", cmd, r.rc, want, r.out, r.err);
    run_result_release(&r);
    n++;
  }
  assert_true(n >= 6);
  free(readme);
}

/* With any one heap allocation failing, every command either ends in exit 4 with "out of memory" and no
 * partial bundle, dump or bench result, or ends exactly as it does without the failure; with any one I/O
 * call failing, in exit 3-5 with an error and whole documents only (tests/failalloc.py, libfiu): 60
 * allocations spread over each of eleven commands, up to 60 I/O calls of seven. Not under the sanitizers, whose allocator
 * must come before libfiu's wrappers; make sanitize does not build the driver. */
static void a_failed_allocation_or_io_call_ends_cleanly(void **s) {
  (void)s;
  if (getenv("ASAN_OPTIONS") && access("build/dkb_failalloc", X_OK)) {
    print_message("[  SKIP    ] build/dkb_failalloc is not built under the sanitizers: libfiu's malloc cannot come before ASan's\n");
    skip();
  }
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/failalloc.py build/dkb_failalloc --per-command 60");
  const char *sum = strstr(r.out, "failalloc: ");
  int runs = 0, bad = -1;
  if (sum) sscanf(sum, "failalloc: %d runs, %d not clean", &runs, &bad);
  /* each command allocates more than 60 times (preflight least, about 200), and seven sweeps of I/O calls
   * (4 to 60 each) follow */
  if (r.rc != 0 || bad != 0 || runs < 11 * 60 + 7 * 4) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

DKB_TEST_GROUP(cli, cmocka_unit_test(unknown_command_is_usage_error), cmocka_unit_test(unknown_option_is_usage_error),
               cmocka_unit_test(help_works_three_ways), cmocka_unit_test(help_names_every_option_the_parser_accepts),
               cmocka_unit_test(help_answers_for_every_listed_command),
               cmocka_unit_test(version_names_commit_and_dirty_flag),
               cmocka_unit_test(oracle_passes_every_shipped_fixture),
               cmocka_unit_test(oracle_json_report_is_schema_valid),
               cmocka_unit_test(contract_fixtures_are_schema_valid), cmocka_unit_test(failed_expectation_exits_1),
               cmocka_unit_test(malformed_fixture_errors_are_exact), cmocka_unit_test(readme_examples_run),
               cmocka_unit_test(a_failed_allocation_or_io_call_ends_cleanly))
