/* test_check.c - `dkb check DUMP` on dumps `dkb run --dump` writes on a host without a GPU (its inputs and
 * the float64 reference; tests/data/check/candidate.py adds a candidate made from the reference) and on
 * dumps python/dkb_dump.py writes (tests/data/check/sdpa_numpy.py, its numpy path): a candidate within
 * tolerance passes, one element beyond it or a NaN fails, an append's cache is compared bit for bit, a
 * base-2 LSE passes only when declared, and a malformed dump names its file, JSON Pointer and reason. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sh(int want, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sh(int want, const char *what, const char *fmt, ...) {
  char cmd[4000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  struct run_result r;
  run_sh(&r, "%s", cmd);
  if (r.rc != want) fail_msg("%s: exit %d, want %d\n%s\n%s%s", what, r.rc, want, cmd, r.out, r.err);
  run_result_release(&r);
}

/* dkb run --dump of a fixture into a fresh folder: its inputs and the reference (and, on a GPU, its own
 * output, which the candidate replaces); no timing pass, which the check does not need. */
static const char *cpu_dump(const char *fixture, const char *name) {
  static char dir[4][600];
  static int k;
  char *d = dir[k++ % 4];
  snprintf(d, 600, "%s/%s", tmp_dir(), name);
  sh(0, "dkb run --dump", "rm -rf '%s' '%s.out' && build/dkb run %s -o '%s.out' --dump '%s' --no-timing --quiet >/dev/null", d, d, fixture, d, d);
  return d;
}

static char *check_out(const char *dir, int want, const char *opts) {
  struct run_result r;
  run_sh(&r, "build/dkb check %s '%s'", opts, dir);
  if (r.rc != want) fail_msg("dkb check %s: exit %d, want %d\n%s%s", dir, r.rc, want, r.out, r.err);
  char *out = r.out;
  r.out = NULL;
  run_result_release(&r);
  return out;
}

static void check_passes_the_oracles_own_output(void **s) {
  (void)s;
  const char *d = cpu_dump("fixtures/decode/default.json", "chk_default");
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s'", d);
  char *out = check_out(d, 0, "");
  char want[800];
  snprintf(want, sizeof want, "dkb check: %s\n  call        376515b4654d6956  B=4 S_q=1 H_q=32 H_kv=8 d=128/128 bf16 decode paged_nhd, mask causal\n"
                              "  candidate   o_gpu + lse_gpu (LSE natural, empty rows zero_neginf)\n"
                              "  oracle      float64 over the dumped inputs; 0 query rows see no key\n", d);
  if (strncmp(out, want, strlen(want))) fail_msg("got:\n%s\nwant the start:\n%s", out, want);
  assert_non_null(strstr(out, ", 0 of 16384 outside, 0 NaN, 0 Inf\n"));
  assert_non_null(strstr(out, "  cache       not applicable (decode)\n  result      passed\n"));
  free(out);
  /* the JSON report against its schema; the index (with a candidate) against the dump schema */
  sh(0, "report schema", "build/dkb check --json '%s' > '%s.json' && /usr/bin/python3 tests/schema_check.py "
                         "schemas/check-report.schema.json '%s.json' && /usr/bin/python3 tests/schema_check.py "
                         "schemas/dump.schema.json '%s/index.json'", d, d, d, d);
}

static void check_fails_one_element_beyond_tolerance_and_nan(void **s) {
  (void)s;
  const char *d = cpu_dump("fixtures/decode/default.json", "chk_perturb");
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s' --perturb 777", d);
  char *out = check_out(d, 1, "");
  assert_non_null(strstr(out, ", 1 of 16384 outside, 0 NaN, 0 Inf\n"));
  assert_non_null(strstr(out, "  result      FAILED\n"));
  free(out);
  out = check_out(d, 1, "--json");
  assert_non_null(strstr(out, "\"worst_index\": 777"));
  free(out);
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s' --nan 5", d);
  out = check_out(d, 1, "");
  assert_non_null(strstr(out, ", 1 of 16384 outside, 1 NaN, 0 Inf\n"));
  free(out);
}

static void check_compares_the_cache_after_an_append(void **s) {
  (void)s;
  const char *d = cpu_dump("fixtures/decode/append-contig-sq1.json", "chk_append");
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s'", d);
  char *out = check_out(d, 0, "");
  assert_non_null(strstr(out, "  cache       after the append: 0 of 6451200 K/V elements differ from the expected cache (bitwise)\n"));
  free(out);
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s' --perturb-cache 1000", d);
  out = check_out(d, 1, "");
  assert_non_null(strstr(out, "  cache       after the append: 1 of 6451200 K/V elements differ"));
  free(out);
  /* no after-caches: an append's cache cannot be checked, the dump is malformed */
  sh(0, "drop the caches", "/usr/bin/python3 -c \"import json; p='%s/index.json'; d=json.load(open(p)); "
                           "d['files']=[f for f in d['files'] if not f['role'].endswith('_after')]; open(p,'w').write(json.dumps(d))\"", d);
  struct run_result r;
  run_sh(&r, "build/dkb check '%s'", d);
  assert_int_equal(r.rc, 3);
  char want[900];
  snprintf(want, sizeof want, "dkb: error: %s/index.json: /files: no file with role 'k_cache_after': the call needs it\n", d);
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

static void check_converts_a_declared_base2_lse(void **s) {
  (void)s;
  const char *d = cpu_dump("fixtures/decode/default.json", "chk_base2");
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s' --lse-base2", d);
  free(check_out(d, 0, ""));
  /* the same numbers without the declaration are wrong */
  sh(0, "undeclare", "/usr/bin/python3 -c \"import json; p='%s/index.json'; d=json.load(open(p)); "
                     "d['candidate']['lse_base']='natural'; open(p,'w').write(json.dumps(d))\"", d);
  char *out = check_out(d, 1, "");
  assert_non_null(strstr(out, "  LSE         max |err|"));
  free(out);
}

static void check_reads_the_python_writers_dumps(void **s) {
  (void)s;
  static const char *const DT[] = {"fp16", "bf16", "fp32"};
  for (int i = 0; i < 3; i++) {
    char d[600];
    snprintf(d, sizeof d, "%s/chk_sdpa_%s", tmp_dir(), DT[i]);
    sh(0, "writer", "rm -rf '%s' && /usr/bin/python3 tests/data/check/sdpa_numpy.py '%s' --dtype %s >/dev/null", d, d, DT[i]);
    sh(0, "dump schema", "/usr/bin/python3 tests/schema_check.py schemas/dump.schema.json '%s/index.json'", d);
    char *out = check_out(d, 0, "");
    assert_non_null(strstr(out, "contiguous_hnd, mask none\n"));
    assert_non_null(strstr(out, "written by dkb_dump.py 1\n"));
    free(out);
  }
  char d[600];
  snprintf(d, sizeof d, "%s/chk_sdpa_wrong", tmp_dir());
  sh(0, "writer", "rm -rf '%s' && /usr/bin/python3 tests/data/check/sdpa_numpy.py '%s' --wrong >/dev/null", d, d);
  free(check_out(d, 1, ""));
  /* the writer's call key is dkb's: its digest is the one dkb recomputes */
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/data/check/sdpa_numpy.py '%s/chk_sdpa_digest' && build/dkb digest '%s/chk_sdpa_digest/index.json' --pointer /call_key",
         tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 0);
  char *nl = strchr(r.out, '\n');
  assert_non_null(nl);
  assert_true(!strncmp(r.out, nl + 1, 64));
  run_result_release(&r);
}

/* One edit of index.json per case, and the exact error it gives. */
static void check_malformed_dumps_name_file_pointer_and_reason(void **s) {
  (void)s;
  const char *base = cpu_dump("fixtures/decode/default.json", "chk_bad_base");
  sh(0, "candidate", "/usr/bin/python3 tests/data/check/candidate.py '%s'", base);
  static const struct { const char *python, *err; } CASES[] = {
      {"d['files'][0]['sha256']='0'*64", "/files/0/sha256: q.npy has sha256 "},
      {"d['files'][0]['bytes']=7", "/files/0/bytes: q.npy holds "},
      {"d['call']['B']=5", "/call_key/B: must equal the call's 5"},
      {"d['call_key']['S_k_per_request'][1]=99", "/call_key/S_k_per_request/1: must equal kv_len[1] = 3587 in kv_len.npy"},
      {"del d['call']['mask']", "/call: missing required key 'mask'"},
      {"d['zz']=1", "/zz: unknown key"},
      {"d['files']=[f for f in d['files'] if f['role']!='o_gpu']", "/files: no file with role 'o_gpu': the dump holds no candidate output to check"},
      {"d['call_key']['q_dtype']='fp16'", "/call_key/q_dtype: must be the call's dtype bf16"},
      {"d['candidate']['lse_base']='base10'", "/candidate/lse_base: must be one of"},
      {"del d['call_key']['tolerances']", "/call_key: missing required key 'tolerances'"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char d[600];
    snprintf(d, sizeof d, "%s/chk_bad_%zu", tmp_dir(), i);
    sh(0, "copy", "rm -rf '%s' && cp -r '%s' '%s' && /usr/bin/python3 -c \"import json; p='%s/index.json'; d=json.load(open(p)); "
                  "%s; open(p,'w').write(json.dumps(d))\"", d, base, d, d, CASES[i].python);
    struct run_result r;
    run_sh(&r, "build/dkb check '%s'", d);
    if (r.rc != 3) fail_msg("case %zu: exit %d\n%s%s", i, r.rc, r.out, r.err);
    char want[1200];
    snprintf(want, sizeof want, "dkb: error: %s/index.json: %s", d, CASES[i].err);
    if (strncmp(r.err, want, strlen(want))) fail_msg("case %zu:\n got: %s\nwant: %s", i, r.err, want);
    run_result_release(&r);
  }
  /* a tensor file whose contents do not match its index entry */
  char d[600];
  snprintf(d, sizeof d, "%s/chk_bad_npy", tmp_dir());
  sh(0, "copy", "rm -rf '%s' && cp -r '%s' '%s' && printf 'not numpy' > '%s/kv_len.npy'", d, base, d, d);
  struct run_result r;
  run_sh(&r, "build/dkb check '%s'", d);
  assert_int_equal(r.rc, 3);
  char want[1200];
  snprintf(want, sizeof want, "dkb: error: %s/kv_len.npy: not a .npy file (no \\x93NUMPY magic)\n", d);
  assert_string_equal(r.err, want);
  run_result_release(&r);
  run_sh(&r, "build/dkb check '%s/nothing-here'", tmp_dir());
  assert_int_equal(r.rc, 3);
  assert_non_null(strstr(r.err, "nothing-here/index.json': No such file or directory"));
  run_result_release(&r);
}

static void check_usage_errors(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb check");
  assert_int_equal(r.rc, 2);
  assert_string_equal(r.err, "dkb: error: no dump folder given\nusage: dkb check DUMP [--json]\n");
  run_result_release(&r);
  run_sh(&r, "build/dkb check a b");
  assert_int_equal(r.rc, 2);
  assert_string_equal(r.err, "dkb: error: one dump at a time (got 'b' too)\nusage: dkb check DUMP [--json]\n");
  run_result_release(&r);
}

DKB_TEST_GROUP(check, cmocka_unit_test(check_passes_the_oracles_own_output),
               cmocka_unit_test(check_fails_one_element_beyond_tolerance_and_nan),
               cmocka_unit_test(check_compares_the_cache_after_an_append), cmocka_unit_test(check_converts_a_declared_base2_lse),
               cmocka_unit_test(check_reads_the_python_writers_dumps),
               cmocka_unit_test(check_malformed_dumps_name_file_pointer_and_reason), cmocka_unit_test(check_usage_errors))
