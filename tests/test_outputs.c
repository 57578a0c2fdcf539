/* test_outputs.c - what a command is refused before it works, and what it leaves behind: the output and
 * dump folders checked at start (a file, a folder it cannot write in, a non-empty dump folder, the bundle
 * folder twice), a call larger than the machine's memory, inputs that are not regular files, and a run
 * that fails or is interrupted removing what it created, while one into an earlier run's folder leaves
 * only the new run's files. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rc, and whether the -o folder exists afterwards */
static void expect(const char *cmd, int rc, const char *err_has, const char *out_dir, int dir_exists) {
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != rc || (err_has && !strstr(r.err, err_has)))
    fail_msg("%s: exit %d (want %d), stderr:\n%s\nwant '%s' in it", cmd, r.rc, rc, r.err, err_has ? err_has : "");
  run_result_release(&r);
  if (out_dir) {
    run_sh(&r, "test -e '%s'", out_dir);
    if ((r.rc == 0) != dir_exists) fail_msg("%s: %s %s afterwards", cmd, out_dir, dir_exists ? "is missing" : "is left behind");
    run_result_release(&r);
  }
}

static void output_folder_problems_are_the_users_or_the_machines(void **s) {
  (void)s;
  char cmd[2048], file[600];
  snprintf(file, sizeof file, "%s/a-file", tmp_dir());
  FILE *f = fopen(file, "w");
  fputs("x", f);
  fclose(f);
  expect("build/dkb run fixtures/decode/dk128-dv64.json -o '' --quiet", 2, "dkb: error: -o: an empty path names no folder\n", NULL, 0);
  expect("build/dkb run fixtures/decode/dk128-dv64.json -o /dev/null --quiet", 4, "dkb: error: /dev/null: -o: not a folder\n", NULL, 0);
  snprintf(cmd, sizeof cmd, "build/dkb run fixtures/decode/dk128-dv64.json -o %s --quiet", file);
  expect(cmd, 4, ": -o: not a folder\n", NULL, 0);
  /* a folder that cannot be made (even as root: /proc refuses) */
  expect("build/dkb run fixtures/decode/dk128-dv64.json -o /proc/dkb-out/x --quiet", 4, "/proc/dkb-out: cannot create folder: ", NULL, 0);
  /* a folder that exists and cannot be written in */
  expect("build/dkb run fixtures/decode/dk128-dv64.json -o /proc --quiet", 4, "dkb: error: /proc: -o: cannot write in this folder: ", NULL, 0);
  /* a malformed fixture is refused before the folder is made */
  snprintf(cmd, sizeof cmd, "echo '{' > %s/bad.json && build/dkb run %s/bad.json -o %s/never --quiet", tmp_dir(), tmp_dir(), tmp_dir());
  char never[600];
  snprintf(never, sizeof never, "%s/never", tmp_dir());
  expect(cmd, 3, "bad.json:", never, 0);
}

static void dump_folders_are_checked_before_the_run(void **s) {
  (void)s;
  char cmd[4096], o[600], d[600];
  snprintf(o, sizeof o, "%s/dump-o", tmp_dir());
  snprintf(d, sizeof d, "%s/dump-d", tmp_dir());
  snprintf(cmd, sizeof cmd, "rm -rf %s %s; build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump %s --dump-on-fail %s --quiet", o, d, o, d, d);
  expect(cmd, 2, "dkb: error: give --dump DIR or --dump-on-fail DIR, and only once\n", o, 0);
  snprintf(cmd, sizeof cmd, "build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump %s --quiet", o, o);
  expect(cmd, 2, "is the bundle folder: a dump needs a folder of its own\n", o, 0);
  snprintf(cmd, sizeof cmd, "mkdir -p %s && touch %s/x.npy && build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump %s --quiet", d, d, o, d);
  expect(cmd, 4, "--dump: the folder is not empty (it holds 'x.npy')", o, 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s && touch %s && build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump %s --quiet", d, d, o, d);
  expect(cmd, 4, ": --dump: not a folder\n", o, 0);
  /* a folder it cannot write in (even as root: /proc makes no file) */
  snprintf(cmd, sizeof cmd, "build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump /proc --quiet", o);
  expect(cmd, 4, "dkb: error: /proc: --dump: cannot write in this folder: ", o, 0);
  /* --dump-on-fail on a call that passes (here: is not checked) keeps no dump and no empty folder */
  snprintf(cmd, sizeof cmd, "rm -rf %s %s && build/dkb run fixtures/decode/dk128-dv64.json -o %s --dump-on-fail %s --quiet", o, d, o, d);
  expect(cmd, 0, NULL, d, 0);
}

/* 64 requests of 131072 keys, 64 K/V heads of 256: 550 GB of K/V, refused before any allocation. */
static void a_call_larger_than_host_memory_is_refused_before_allocating(void **s) {
  (void)s;
  char doc[8192] = "{\"schema\": \"dkb.decode/v1\", \"name\": \"huge\", \"phase\": \"decode\", \"requests\": [";
  for (int i = 0; i < 64; i++) strcat(doc, i ? ", {\"kv_len\": 131072}" : "{\"kv_len\": 131072}");
  strcat(doc, "], \"q_len\": 1, \"heads\": {\"H_q\": 64, \"H_kv\": 64, \"d_qk\": 256, \"d_v\": 256}, \"dtype\": \"bf16\","
              " \"cache\": {\"layout\": \"contiguous_nhd\"}, \"mask\": {\"kind\": \"none\"}, \"split\": {\"policy\": \"auto\"},"
              " \"seed\": 1, \"tolerance\": {\"atol\": 0.01, \"rtol\": 0.01}}");
  const char *fx = tmp_file("huge.json", doc);
  char cmd[4096], o[600];
  snprintf(o, sizeof o, "%s/huge-o", tmp_dir());
  snprintf(cmd, sizeof cmd, "rm -rf %s; /usr/bin/time -f '%%M' -o %s/huge.rss build/dkb run %s -o %s --quiet", o, tmp_dir(), fx, o);
  expect(cmd, 4, "huge.json: the call needs 549770563648 bytes of host memory, ", o, 0);
  char rss[600];
  snprintf(rss, sizeof rss, "%s/huge.rss", tmp_dir());
  char *kb = slurp(rss);
  assert_non_null(kb);
  if (atol(kb) > 200000) fail_msg("the refused call grew to %s kB", kb);  /* nothing of the 550 GB was touched */
  free(kb);
}

static void inputs_that_are_not_regular_files_are_refused(void **s) {
  (void)s;
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -f %s/fifo && mkfifo %s/fifo && timeout 10 build/dkb run %s/fifo -o %s/fifo-o --quiet", tmp_dir(),
           tmp_dir(), tmp_dir(), tmp_dir());
  expect(cmd, 3, "/fifo': not a regular file (a FIFO)\n", NULL, 0);
  snprintf(cmd, sizeof cmd, "timeout 10 build/dkb validate %s/fifo", tmp_dir());
  expect(cmd, 3, "/fifo': not a regular file (a FIFO)\n", NULL, 0);
  expect("timeout 10 build/dkb validate fixtures", 3, "'fixtures': not a regular file (a folder)\n", NULL, 0);
}

/* A second run into the folder of a first leaves the second's files only; a folder holding a file no
 * bundle names is someone else's and is refused. */
static void a_run_into_an_earlier_runs_folder_keeps_only_its_own_files(void **s) {
  (void)s;
  char cmd[4096], o[600];
  snprintf(o, sizeof o, "%s/rerun", tmp_dir());
  struct run_result r;
  run_sh(&r, "rm -rf %s && build/dkb run fixtures/decode/dk128-dv64.json -o %s --quiet && "
             "build/dkb run fixtures/decode/split1-direct.json -o %s --quiet && ls %s | wc -l && "
             "/usr/bin/python3 tests/bundle_folder_check.py %s",
         o, o, o, o, o);
  if (r.rc != 0) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
  snprintf(cmd, sizeof cmd, "touch %s/notes.txt && build/dkb run fixtures/decode/dk128-dv64.json -o %s --quiet", o, o);
  expect(cmd, 4, "-o: the folder holds 'notes.txt', which its bundle.json does not name", o, 1);
}

static void source_root_must_be_a_folder(void **s) {
  (void)s;
  expect("build/dkb validate fixtures/bundles/synthetic.level2.bundle.json --source-root /nonexistent", 2,
         "dkb: error: --source-root '/nonexistent' is not a folder\n", NULL, 0);
}

/* SIGINT or SIGTERM during the run's host work: what it made goes, and the signal still ends it (exit
 * 128 + the signal's number, as the shell reports it). */
static void an_interrupted_run_leaves_nothing_behind(void **s) {
  (void)s;
  static const struct { const char *sig, *rc; } sigs[] = {{"INT", "rc=130\n"}, {"TERM", "rc=143\n"}};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    char o[600];
    snprintf(o, sizeof o, "%s/interrupted-%s", tmp_dir(), sigs[i].sig);
    struct run_result r;
    run_sh(&r, "rm -rf %s; build/dkb run fixtures/bench/b16-t8192-g4-contig.json -o %s --quiet & p=$!; "
               "for i in $(seq 100); do test -d %s && break; sleep 0.05; done; sleep 0.3; kill -%s $p; wait $p; echo rc=$?; "
               "test -e %s && ls -la %s",
           o, o, o, sigs[i].sig, o, o);
    if (!strstr(r.out, sigs[i].rc) || strstr(r.out, "total")) fail_msg("SIG%s: exit %d\n%s%s", sigs[i].sig, r.rc, r.out, r.err);
    run_result_release(&r);
  }
}

DKB_TEST_GROUP(outputs, cmocka_unit_test(output_folder_problems_are_the_users_or_the_machines),
               cmocka_unit_test(dump_folders_are_checked_before_the_run),
               cmocka_unit_test(a_call_larger_than_host_memory_is_refused_before_allocating),
               cmocka_unit_test(inputs_that_are_not_regular_files_are_refused),
               cmocka_unit_test(a_run_into_an_earlier_runs_folder_keeps_only_its_own_files),
               cmocka_unit_test(source_root_must_be_a_folder), cmocka_unit_test(an_interrupted_run_leaves_nothing_behind))
