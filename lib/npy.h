/* npy.h - NumPy .npy format version 1.0 writer (numpy.lib.format): magic "\x93NUMPY", version 1.0,
 * a little-endian uint16 header length, the header dict exactly as numpy 1.24 writes it, then the data
 * in C order. The file is byte-identical to numpy.save of the same array, so np.load reads it with
 * allow_pickle=False and any .npy reader accepts it. Used by harness/dump.c for `dkb run --dump`. */
#ifndef DKB_NPY_H
#define DKB_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

/* Most dimensions numpy accepts (NPY_MAXDIMS). */
#define NPY_MAX_DIMS 32

/* Bytes per element of a supported descr ("<f2" "<u2" "<f4" "<f8" "<i4" "<i8" "|u1"), 0 otherwise. */
size_t npy_itemsize(const char *descr);

/* Writes data (nbytes, C order, host = little-endian) as a .npy array of shape[0..ndim) to path,
 * atomically (temp file + rename). ndim 0 is a scalar; a zero dimension is an empty array and data
 * may then be NULL. sha256 (may be NULL) gets the SHA-256 of the whole file, as `sha256sum` prints it.
 * Errors are DKB_INTERNAL: an unsupported descr, ndim outside 0..NPY_MAX_DIMS, a negative dimension,
 * nbytes that disagrees with shape x itemsize, or an I/O failure. */
int npy_write(const char *path, const char *descr, const int64_t *shape, int ndim, const void *data, size_t nbytes,
              char sha256[65], struct dkb_err *err);

#endif
