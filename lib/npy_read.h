/* npy_read.h - reading a NumPy .npy file (format versions 1.0, 2.0 and 3.0, numpy.lib.format) whose
 * dtype is one lib/npy.h writes: the header dict must hold exactly 'descr', 'fortran_order' (False) and
 * 'shape', and the data must be exactly prod(shape) x itemsize bytes. What NumPy's np.save writes for a
 * C-contiguous array of those dtypes reads back here byte for byte. */
#ifndef DKB_NPY_READ_H
#define DKB_NPY_READ_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"
#include "lib/npy.h"

struct npy_array {
  char descr[8];                 /* "<f2", "<u2", "<f4", "<f8", "<i4", "<i8" or "|u1" */
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  size_t itemsize, count;        /* elements */
  void *data;                    /* count x itemsize bytes, malloc'ed (at least 1 byte) */
  size_t file_bytes;
  char sha256[65];               /* of the whole file */
};

/* Reads path. Errors are DKB_INPUT with the path and what is wrong (bad magic, an unsupported dtype, a
 * Fortran-order array, a header that is not a dict of those three keys, data of the wrong length),
 * or DKB_INTERNAL when the file cannot be read. */
int npy_read(const char *path, struct npy_array *a, struct dkb_err *err);
void npy_array_release(struct npy_array *a);

#endif
