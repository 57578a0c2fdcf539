/* test_dump.c - dump folders built through harness/dump.h pass the independent NumPy checker
 * (tests/dump_check.py) for contiguous, ragged and paged (dense and CSR) layouts, decode and append,
 * every mask kind; a flipped byte, a wrong o_ref value and a misplaced appended row fail it with the
 * exact reason; index.json validates against schemas/dump.schema.json; and the folder rules hold. The
 * cases are tests/dump_cases.c's. */
#include "tests/util.h"
#include "tests/dump_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/dump.h"
#include "lib/sha256.h"
#include "oracles/dtype.h"

/* Writes case c, runs dump_check.py on it and asserts its exit status and that each of the lines
 * (NULL-terminated; a "%s" in one stands for the dump folder) appears on its stdout. */
static void check_case(const struct tcase *c, int rc, const char *const *lines) {
  json_t *index = NULL;
  const char *dir = write_case(c, &index);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/dump_check.py '%s'", dir);
  if (r.rc != rc) fail_msg("%s: dump_check exit %d, want %d\n%s%s", c->name, r.rc, rc, r.out, r.err);
  for (; lines && *lines; lines++) {
    char want[1024];
    snprintf(want, sizeof want, *lines, dir);
    if (!strstr(r.out, want)) fail_msg("%s: no line '%s' in\n%s", c->name, want, r.out);
  }
  run_result_release(&r);
  json_decref(index);
}

static void check_passes(const struct tcase *c) {
  const char *const pass[] = {"dump_check: %s: pass\n", NULL};
  check_case(c, 0, pass);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/%s", tmp_dir(), c->name);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/dump.schema.json '%s/index.json'", dir);
  if (r.rc != 0) fail_msg("%s: index.json does not validate:\n%s%s", c->name, r.out, r.err);
  run_result_release(&r);
}

static void dump_contiguous_nhd_bf16_causal_passes_numpy_check(void **s) { (void)s; check_passes(&CONTIG_NHD); }
static void dump_paged_csr_hnd_flashmask_passes_numpy_check(void **s) { (void)s; check_passes(&PAGED_CSR); }
static void dump_paged_dense_append_sliding_window_passes_numpy_check(void **s) { (void)s; check_passes(&PAGED_DENSE_APPEND); }
static void dump_ragged_fp32_passes_numpy_check(void **s) { (void)s; check_passes(&RAGGED); }
static void dump_contiguous_hnd_append_passes_numpy_check(void **s) { (void)s; check_passes(&CONTIG_HND_APPEND); }

/* The index the checker reads: names, roles, bf16 as <u2 bits, file sizes and hashes of the files. */
static void dump_index_lists_files_with_dtype_and_hash(void **s) {
  (void)s;
  json_t *index = NULL;
  const char *dir = write_case(&CONTIG_NHD, &index);
  assert_string_equal(json_string_value(json_object_get(index, "schema")), "dkb.dump/v1");
  json_t *q = json_array_get(json_object_get(index, "files"), 0);
  assert_string_equal(json_string_value(json_object_get(q, "name")), "q.npy");
  assert_string_equal(json_string_value(json_object_get(q, "dtype")), "bf16");
  assert_string_equal(json_string_value(json_object_get(q, "npy_dtype")), "<u2");
  /* 2*2*4*8 bf16 values after numpy's 128-byte header */
  assert_json_int(q, "bytes", 128 + 2 * 2 * 4 * 8 * 2);
  char path[600], sha[65];
  struct dkb_err err;
  snprintf(path, sizeof path, "%s/q.npy", dir);
  assert_int_equal(dkb_sha256_file(path, sha, &err), 0);
  assert_string_equal(json_string_value(json_object_get(q, "sha256")), sha);
  struct run_result r; /* numpy reads the bits back as the bf16 values the reference used */
  run_sh(&r, "/usr/bin/python3 -c 'import numpy as np; a = np.load(\"%s\"); "
             "print(repr(float((a.astype(np.uint32) << 16).view(np.float32)[1, 0, 3, 7])))'", path);
  assert_int_equal(r.rc, 0);
  assert_near(strtod(r.out, NULL), dkb_round_to(DKB_BF16, case_value(0, 1, 0, 3, 7)), 0);
  run_result_release(&r);
  json_decref(index);
}

/* One byte flipped in k_cache.npy: exit 3 (malformed) naming the file and both hashes. */
static void dump_check_names_a_corrupted_file_by_its_sha256(void **s) {
  (void)s;
  json_t *index = NULL;
  struct tcase c = CONTIG_NHD;
  c.name = "corrupt";
  const char *dir = write_case(&c, &index);
  char path[600], sha[65];
  snprintf(path, sizeof path, "%s/k_cache.npy", dir);
  const char *old = NULL;
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(index, "files"), i, f) if (!strcmp(json_string_value(json_object_get(f, "name")), "k_cache.npy"))
      old = json_string_value(json_object_get(f, "sha256"));
  assert_non_null(old);
  FILE *fp = fopen(path, "r+b");
  fseek(fp, 200, SEEK_SET);
  int byte = fgetc(fp);
  fseek(fp, 200, SEEK_SET);
  fputc(byte ^ 0x01, fp);
  fclose(fp);
  struct dkb_err err;
  assert_int_equal(dkb_sha256_file(path, sha, &err), 0);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/dump_check.py '%s'", dir);
  assert_int_equal(r.rc, 3);
  char want[1024];
  snprintf(want, sizeof want, "dump_check: error: %s: sha256 %s does not match index.json (%s)\n", path, sha, old);
  assert_string_equal(r.err, want);
  run_result_release(&r);
  json_decref(index);
}

/* o_ref[0][0][0][0] off by 0.5: exit 1 with the index and size of the difference. */
static void dump_check_fails_a_wrong_o_ref_value(void **s) {
  (void)s;
  struct tcase c = CONTIG_NHD;
  c.name = "bad_o";
  c.bad_o = 1;
  const char *const lines[] = {"FAIL  o_ref: max |diff| 0.5 at [0, 0, 0, 0] exceeds tol 1e-12 (1 of 64 values)\n",
                               "ok    lse_ref: max |diff| ", "dump_check: %s: FAIL (1 check)\n", NULL};
  check_case(&c, 1, lines);
}

/* Request 0's appended K row written one key too late (HND [row 1][head][t][x]): the expected slot
 * keeps its poison and the next one changes, for both heads: 2 x 2 heads x 4 lanes = 16 elements,
 * the first at [1, 0, 1, 0] (row 1, head 0, key kv_len - 1 = 1). */
static void dump_check_fails_a_misplaced_appended_row(void **s) {
  (void)s;
  struct tcase c = CONTIG_HND_APPEND;
  c.name = "misplaced";
  c.misplace = 1;
  const char *const lines[] = {"FAIL  k_cache_after: 16 elements differ from k_cache with its 4 new (key, head) rows "
                               "at their translated addresses (first at [1, 0, 1, 0])\n",
                               "ok    v_cache_after: bitwise equal", "ok    o_ref: ", NULL};
  check_case(&c, 1, lines);
}

/* A folder with someone else's file is refused; nothing in it is touched. */
static void dump_open_refuses_a_folder_that_holds_no_dump(void **s) {
  (void)s;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/foreign", tmp_dir());
  mkdir(dir, 0777);
  tmp_file("foreign/notes.txt", "mine\n");
  struct dump *d = (struct dump *)1;
  struct dkb_err err;
  assert_int_equal(dump_open(dir, &d, &err), -1);
  assert_null(d);
  assert_int_equal(err.code, DKB_USAGE);
  assert_string_equal(err.file, dir);
  assert_string_equal(err.msg, "folder is not empty and holds no previous dump (index.json of dkb.dump/v1)");
  snprintf(dir, sizeof dir, "%s/foreign/notes.txt", tmp_dir());
  char *kept = slurp(dir);
  assert_string_equal(kept, "mine\n");
  free(kept);
}

/* A previous dump is replaced: its files go, even those the new dump does not write; a stray file
 * next to a previous dump makes the folder refused. */
static void dump_open_replaces_a_previous_dump(void **s) {
  (void)s;
  json_t *index = NULL;
  struct tcase c = PAGED_CSR;
  c.name = "replaced";
  const char *dir = write_case(&c, &index);
  json_decref(index);
  struct dump *d;
  struct dkb_err err;
  assert_int_equal(dump_open(dir, &d, &err), 0);
  const double one = 1.0;
  assert_int_equal(dump_add(d, "x", "x", "fp64", "[]", NULL, 0, &one, sizeof one, &err), 0);
  assert_int_equal(dump_close(d, NULL, NULL, &err), 0);
  struct run_result r;
  run_sh(&r, "ls '%s'", dir);
  assert_string_equal(r.out, "index.json\nx.npy\n");
  run_result_release(&r);
  run_sh(&r, "/usr/bin/python3 tests/dump_check.py '%s'", dir);
  assert_int_equal(r.rc, 0);
  char want[1024];
  snprintf(want, sizeof want,
           "ok    files: 1 file matches index.json (size, sha256, dtype, shape)\n"
           "info  no call in index.json: files checked only\n"
           "dump_check: %s: pass\n", dir);
  assert_string_equal(r.out, want);
  run_result_release(&r);
  char stray[700];
  snprintf(stray, sizeof stray, "%s/stray.txt", dir);
  FILE *f = fopen(stray, "w");
  fclose(f);
  assert_int_equal(dump_open(dir, &d, &err), -1);
  assert_string_equal(err.msg, "folder holds a previous dump and 'stray.txt', which is not part of it");
}

/* --dump-on-fail on a passing case: dump_abandon leaves nothing behind, folder included. */
static void dump_abandon_removes_what_it_wrote(void **s) {
  (void)s;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/abandoned/deep", tmp_dir());
  struct dump *d;
  struct dkb_err err;
  assert_int_equal(dump_open(dir, &d, &err), 0);
  const int32_t v[3] = {1, 2, 3};
  const int64_t n = 3;
  assert_int_equal(dump_add(d, "a", "a", "int32", "[3]", &n, 1, v, sizeof v, &err), 0);
  dump_abandon(d);
  struct stat st;
  assert_int_equal(stat(dir, &st), -1);
}

static void dump_add_refuses_bad_names_dtypes_and_sizes(void **s) {
  (void)s;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/refusals", tmp_dir());
  struct dump *d;
  struct dkb_err err;
  assert_int_equal(dump_open(dir, &d, &err), 0);
  const int32_t v[3] = {1, 2, 3};
  const int64_t n = 3;
  assert_int_equal(dump_add(d, "../up", "r", "int32", "[3]", &n, 1, v, sizeof v, &err), -1);
  assert_string_equal(err.msg, "invalid tensor name '../up'");
  assert_int_equal(dump_add(d, "a", "r", "complex64", "[3]", &n, 1, v, sizeof v, &err), -1);
  assert_string_equal(err.msg, "a: unknown dtype 'complex64'");
  assert_int_equal(dump_add(d, "a", "r", "int64", "[3]", &n, 1, v, sizeof v, &err), -1);
  assert_int_equal(err.code, DKB_INTERNAL);
  assert_string_equal(err.msg, "nbytes 12 disagrees with shape (3,) x itemsize 8 = 24");
  assert_int_equal(dump_add(d, "a", "r", "int32", "[3]", &n, 1, v, sizeof v, &err), 0);
  assert_int_equal(dump_add(d, "a", "r", "int32", "[3]", &n, 1, v, sizeof v, &err), -1);
  assert_string_equal(err.msg, "tensor 'a' added twice");
  dump_abandon(d);
}

/* The schema states what a decode dump holds: a dense-table call without block_table is invalid. */
static void dump_schema_requires_the_files_of_the_call(void **s) {
  (void)s;
  json_t *index = NULL;
  struct tcase c = PAGED_DENSE_APPEND;
  c.name = "schema_missing";
  write_case(&c, &index);
  json_t *files = json_object_get(index, "files");
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f) if (!strcmp(json_string_value(json_object_get(f, "role")), "block_table")) break;
  json_array_remove(files, i);
  char *text = json_dumps(index, 0); /* layout is irrelevant to the schema check */
  const char *path = tmp_file("schema_missing.json", text);
  free(text);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/dump.schema.json '%s'", path);
  assert_int_equal(r.rc, 1);
  char want[700];
  snprintf(want, sizeof want, "%s: /files: ", path);
  assert_non_null(strstr(r.out, want));
  assert_non_null(strstr(r.out, "does not contain items matching the given schema"));
  run_result_release(&r);
  json_decref(index);
}

/* A folder without index.json is not a dump (index.json is written last). */
static void dump_check_refuses_a_folder_without_index(void **s) {
  (void)s;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/no_index", tmp_dir());
  mkdir(dir, 0777);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/dump_check.py '%s'", dir);
  assert_int_equal(r.rc, 3);
  char want[700];
  snprintf(want, sizeof want, "dump_check: error: %s/index.json: cannot read: No such file or directory\n", dir);
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

/* page_indices naming an unused (poisoned) page: the gather reads NaN and says where, the page the
 * data really sits in (page 4: 2 rows x 2 heads x 4 K or 6 V lanes) is reported as unpoisoned, and
 * the outputs no longer match. */
static void dump_check_catches_a_page_table_pointing_into_poison(void **s) {
  (void)s;
  struct tcase c = PAGED_CSR;
  c.name = "stale_page";
  c.stale_page = 1;
  const char *const lines[] = {"FAIL  gather: k_cache: request 0 key 0 head 0 reads NaN poison (and 1 more)\n",
                               "FAIL  poison: k_cache: 16 elements no visible key addresses are not NaN\n",
                               "FAIL  poison: v_cache: 24 elements no visible key addresses are not NaN\n",
                               "FAIL  o_ref: max |diff| inf at ", NULL};
  check_case(&c, 1, lines);
}

DKB_TEST_GROUP(dump, cmocka_unit_test(dump_contiguous_nhd_bf16_causal_passes_numpy_check),
               cmocka_unit_test(dump_paged_csr_hnd_flashmask_passes_numpy_check),
               cmocka_unit_test(dump_paged_dense_append_sliding_window_passes_numpy_check),
               cmocka_unit_test(dump_ragged_fp32_passes_numpy_check),
               cmocka_unit_test(dump_contiguous_hnd_append_passes_numpy_check),
               cmocka_unit_test(dump_index_lists_files_with_dtype_and_hash),
               cmocka_unit_test(dump_check_names_a_corrupted_file_by_its_sha256),
               cmocka_unit_test(dump_check_fails_a_wrong_o_ref_value),
               cmocka_unit_test(dump_check_fails_a_misplaced_appended_row),
               cmocka_unit_test(dump_check_catches_a_page_table_pointing_into_poison),
               cmocka_unit_test(dump_open_refuses_a_folder_that_holds_no_dump),
               cmocka_unit_test(dump_open_replaces_a_previous_dump), cmocka_unit_test(dump_abandon_removes_what_it_wrote),
               cmocka_unit_test(dump_add_refuses_bad_names_dtypes_and_sizes),
               cmocka_unit_test(dump_schema_requires_the_files_of_the_call),
               cmocka_unit_test(dump_check_refuses_a_folder_without_index))
