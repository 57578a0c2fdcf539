/* npy.c - the .npy v1.0 writer (see npy.h). */
#include "lib/npy.h"

#include <stdio.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fsutil.h"
#include "lib/sha256.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c writes host memory as little-endian descrs: port it before building on a big-endian host"
#endif

#define NPY_ALIGN 64            /* numpy.lib.format.ARRAY_ALIGN: magic + length + header end on it */
#define NPY_GROWTH_DIGITS 21    /* numpy.lib.format.GROWTH_AXIS_MAX_DIGITS (numpy >= 1.23) */
#define NPY_PREFIX 10           /* "\x93NUMPY", major, minor, uint16 header length */

static const struct {
  const char *descr;
  size_t size;
} DESCRS[] = {{"<f2", 2}, {"<u2", 2}, {"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"|u1", 1}};

size_t npy_itemsize(const char *descr) {
  for (size_t i = 0; descr && i < sizeof DESCRS / sizeof DESCRS[0]; i++)
    if (!strcmp(DESCRS[i].descr, descr)) return DESCRS[i].size;
  return 0;
}

/* Python's repr of the shape tuple: "()", "(5,)", "(2, 3)". */
static void shape_repr(const int64_t *shape, int ndim, struct dkb_buf *out) {
  dkb_buf_addc(out, '(');
  for (int i = 0; i < ndim; i++) dkb_buf_addf(out, "%s%lld", i ? ", " : "", (long long)shape[i]);
  dkb_buf_adds(out, ndim == 1 ? ",)" : ")");
}

int npy_write(const char *path, const char *descr, const int64_t *shape, int ndim, const void *data, size_t nbytes,
              char sha256[65], struct dkb_err *err) {
  size_t item = npy_itemsize(descr);
  if (!item) return dkb_err_set(err, DKB_INTERNAL, path, NULL, "unsupported npy descr '%s'", descr ? descr : "(null)");
  if (ndim < 0 || ndim > NPY_MAX_DIMS)
    return dkb_err_set(err, DKB_INTERNAL, path, NULL, "ndim %d outside 0..%d", ndim, NPY_MAX_DIMS);
  struct dkb_buf shp, hdr;
  dkb_buf_init(&shp);
  dkb_buf_init(&hdr);
  shape_repr(shape, ndim, &shp);
  int rc = -1;
  uint64_t elems = 1;
  int overflow = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      dkb_err_set(err, DKB_INTERNAL, path, NULL, "negative dimension in shape %s", shp.p);
      goto cleanup;
    }
    overflow |= __builtin_mul_overflow(elems, (uint64_t)shape[i], &elems);
  }
  uint64_t want = 0;
  overflow |= __builtin_mul_overflow(elems, (uint64_t)item, &want);
  if (overflow) {
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "shape %s x itemsize %zu overflows 64 bits", shp.p, item);
    goto cleanup;
  }
  if (want != (uint64_t)nbytes) {
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "nbytes %zu disagrees with shape %s x itemsize %zu = %llu", nbytes, shp.p,
                item, (unsigned long long)want);
    goto cleanup;
  }
  if (nbytes && !data) {
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "no data for %zu bytes", nbytes);
    goto cleanup;
  }
  /* The header as numpy._write_array_header builds it: the dict repr with keys sorted, spare spaces
   * for growing the first axis in place, then spaces and "\n" up to the next multiple of 64 bytes
   * (always at least one space: numpy pads by 64 when the dict already ends on the boundary). */
  dkb_buf_add(&hdr, "\x93NUMPY\x01\x00\x00\x00", NPY_PREFIX);
  dkb_buf_addf(&hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shp.p);
  if (ndim > 0) {
    char first[24];
    int w = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
    for (int i = w; i < NPY_GROWTH_DIGITS; i++) dkb_buf_addc(&hdr, ' ');
  }
  size_t pad = NPY_ALIGN - (hdr.n + 1) % NPY_ALIGN;
  for (size_t i = 0; i < pad; i++) dkb_buf_addc(&hdr, ' ');
  dkb_buf_addc(&hdr, '\n');
  size_t hlen = hdr.n - NPY_PREFIX;
  if (hlen > 0xffff) {  /* cannot happen below NPY_MAX_DIMS dimensions of int64: kept as a guard */
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "npy header of %zu bytes needs format 2.0", hlen);
    goto cleanup;
  }
  hdr.p[8] = (char)(hlen & 0xff);
  hdr.p[9] = (char)(hlen >> 8);
  struct dkb_span parts[2] = {{hdr.p, hdr.n}, {data, nbytes}};
  if (dkb_write_atomic_parts(path, parts, 2, err)) goto cleanup;
  if (sha256 && dkb_sha256_file(path, sha256, err)) goto cleanup;
  rc = 0;
cleanup:
  dkb_buf_release(&shp);
  dkb_buf_release(&hdr);
  return rc;
}
