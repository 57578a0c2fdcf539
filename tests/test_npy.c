/* test_npy.c - npy_write output is what numpy itself writes: np.load returns the same dtype, shape and
 * bytes for every descr (0-d and zero-length arrays included), np.save of the loaded array reproduces
 * the file byte for byte, and the returned SHA-256 is sha256sum's. Mismatched sizes are refused. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/npy.h"

/* Prints "descr shape hex same" where same says np.save of the loaded array gives the file's bytes. */
static const char *PY_LOAD =
    "/usr/bin/python3 -c 'import sys, io, numpy as np; a = np.load(sys.argv[1], allow_pickle=False); "
    "b = io.BytesIO(); np.save(b, a); "
    "print(a.dtype.str, a.shape, a.tobytes().hex(), b.getvalue() == open(sys.argv[1], \"rb\").read())' '%s'";

/* Python's repr of a shape tuple, built independently of npy.c. */
static void py_shape(const int64_t *shape, int ndim, struct dkb_buf *out) {
  dkb_buf_adds(out, "(");
  for (int i = 0; i < ndim; i++) dkb_buf_addf(out, "%s%lld", i ? ", " : "", (long long)shape[i]);
  dkb_buf_adds(out, ndim == 1 ? ",)" : ")");
}

static void round_trips_through_numpy(const char *name, const char *descr, const int64_t *shape, int ndim,
                                      const void *data, size_t nbytes) {
  char path[512], sha[65];
  snprintf(path, sizeof path, "%s/%s.npy", tmp_dir(), name);
  struct dkb_err err;
  if (npy_write(path, descr, shape, ndim, data, nbytes, sha, &err)) fail_msg("%s: %s", name, err.msg);
  struct dkb_buf want;
  dkb_buf_init(&want);
  dkb_buf_addf(&want, "%s ", descr);
  py_shape(shape, ndim, &want);
  dkb_buf_adds(&want, " ");
  for (size_t i = 0; i < nbytes; i++) dkb_buf_addf(&want, "%02x", ((const unsigned char *)data)[i]);
  dkb_buf_adds(&want, " True\n");
  struct run_result r;
  run_sh(&r, PY_LOAD, path);
  assert_int_equal(r.rc, 0);
  if (strcmp(r.out, want.p)) fail_msg("%s:\n  numpy: %.300s\n  want:  %.300s", name, r.out, want.p);
  run_result_release(&r);
  run_sh(&r, "sha256sum '%s' | cut -c1-64", path);
  assert_int_equal(r.rc, 0);
  r.out[strcspn(r.out, "\n")] = '\0';
  assert_string_equal(sha, r.out);
  run_result_release(&r);
  dkb_buf_release(&want);
}

static void npy_f2_matrix_loads_in_numpy(void **s) {
  (void)s;
  const uint16_t v[6] = {0x3c00, 0xbc00, 0x7e00, 0x7c00, 0x0001, 0x8000}; /* 1, -1, NaN, inf, 2^-24, -0 */
  const int64_t shape[] = {2, 3};
  round_trips_through_numpy("f2", "<f2", shape, 2, v, sizeof v);
}

static void npy_u2_bf16_bits_load_in_numpy(void **s) {
  (void)s;
  const uint16_t v[4] = {0x3f80, 0xffff, 0x0000, 0x7fc0}; /* bf16 1.0, a NaN pattern, 0, NaN */
  const int64_t shape[] = {4};
  round_trips_through_numpy("u2", "<u2", shape, 1, v, sizeof v);
}

static void npy_f4_with_nan_inf_and_subnormal_loads_in_numpy(void **s) {
  (void)s;
  const float v[6] = {0.5f, -2.25f, NAN, -INFINITY, 1e-45f, 3.4028235e38f};
  const int64_t shape[] = {3, 2};
  round_trips_through_numpy("f4", "<f4", shape, 2, v, sizeof v);
}

static void npy_f8_scalar_0d_loads_in_numpy(void **s) {
  (void)s;
  const double v = 3.141592653589793;
  round_trips_through_numpy("f8_0d", "<f8", NULL, 0, &v, sizeof v);
}

static void npy_i4_rank3_loads_in_numpy(void **s) {
  (void)s;
  const int32_t v[6] = {-1, 0, 1, 2147483647, -2147483647 - 1, 42};
  const int64_t shape[] = {3, 1, 2};
  round_trips_through_numpy("i4", "<i4", shape, 3, v, sizeof v);
}

static void npy_i8_zero_length_dimension_loads_in_numpy(void **s) {
  (void)s;
  const int64_t shape[] = {0, 3};
  round_trips_through_numpy("i8_empty", "<i8", shape, 2, NULL, 0);
  const int64_t v[2] = {-9223372036854775807ll - 1, 9007199254740993ll};
  const int64_t shape2[] = {2};
  round_trips_through_numpy("i8", "<i8", shape2, 1, v, sizeof v);
}

static void npy_u1_rank5_loads_in_numpy(void **s) {
  (void)s;
  unsigned char v[120];
  for (int i = 0; i < 120; i++) v[i] = (unsigned char)(i * 37);
  const int64_t shape[] = {1, 2, 3, 4, 5};
  round_trips_through_numpy("u1", "|u1", shape, 5, v, sizeof v);
}

/* 14 dimensions put the dict (with numpy's 21-digit growth spaces) at 117 bytes: 10 + 117 + 1 = 128
 * already ends on the 64-byte boundary, and numpy then pads with a whole 64 spaces (header 182 bytes). */
static void npy_header_on_the_boundary_pads_64_like_numpy(void **s) {
  (void)s;
  int64_t shape[14];
  for (int i = 0; i < 14; i++) shape[i] = 1;
  shape[0] = 3;
  shape[13] = 100;
  float *v = calloc(300, sizeof *v);
  for (int i = 0; i < 300; i++) v[i] = (float)i / 7;
  round_trips_through_numpy("boundary", "<f4", shape, 14, v, 300 * sizeof *v);
  char path[512];
  snprintf(path, sizeof path, "%s/boundary.npy", tmp_dir());
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  assert_int_equal(fread(head, 1, 10, f), 10);
  fclose(f);
  assert_int_equal(head[8] | head[9] << 8, 182);
  free(v);
}

static void npy_refuses_nbytes_that_disagree_with_the_shape(void **s) {
  (void)s;
  char path[512];
  snprintf(path, sizeof path, "%s/bad.npy", tmp_dir());
  const float v[6] = {0};
  const int64_t shape[] = {2, 3};
  struct dkb_err err;
  assert_int_equal(npy_write(path, "<f4", shape, 2, v, 20, NULL, &err), -1);
  assert_int_equal(err.code, DKB_INTERNAL);
  assert_string_equal(err.file, path);
  assert_string_equal(err.msg, "nbytes 20 disagrees with shape (2, 3) x itemsize 4 = 24");
  assert_int_equal(npy_write(path, "<f4", NULL, 0, v, 0, NULL, &err), -1);
  assert_string_equal(err.msg, "nbytes 0 disagrees with shape () x itemsize 4 = 4");
  const int64_t neg[] = {2, -1};
  assert_int_equal(npy_write(path, "<f4", neg, 2, v, 0, NULL, &err), -1);
  assert_string_equal(err.msg, "negative dimension in shape (2, -1)");
  assert_int_equal(npy_write(path, ">f4", shape, 2, v, sizeof v, NULL, &err), -1);
  assert_string_equal(err.msg, "unsupported npy descr '>f4'");
  FILE *f = fopen(path, "rb");
  assert_null(f); /* nothing was written */
}

DKB_TEST_GROUP(npy, cmocka_unit_test(npy_f2_matrix_loads_in_numpy), cmocka_unit_test(npy_u2_bf16_bits_load_in_numpy),
               cmocka_unit_test(npy_f4_with_nan_inf_and_subnormal_loads_in_numpy),
               cmocka_unit_test(npy_f8_scalar_0d_loads_in_numpy), cmocka_unit_test(npy_i4_rank3_loads_in_numpy),
               cmocka_unit_test(npy_i8_zero_length_dimension_loads_in_numpy),
               cmocka_unit_test(npy_u1_rank5_loads_in_numpy),
               cmocka_unit_test(npy_header_on_the_boundary_pads_64_like_numpy),
               cmocka_unit_test(npy_refuses_nbytes_that_disagree_with_the_shape))
