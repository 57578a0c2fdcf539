/* gpucheck.h - the one checking macro for CUDA runtime, CUPTI and NVML calls (docs/STYLE.md 7), and the
 * launch callback type every GPU pass (trace, counters, timing) runs.
 * A failed call becomes a reason in a struct dkb_err, never a print or an exit:
 *   "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version
 *    (cudaErrorInsufficientDriver; cudaGetDeviceCount(&count) at harness/device.c:57)"
 * i.e. "<function>: <library text> (<status name>; <call text> at <file>:<line>)". */
#ifndef DKB_GPUCHECK_H
#define DKB_GPUCHECK_H

#include "lib/err.h"

/* Runs the caller's kernels for one call on `stream` (a cudaStream_t; NULL = legacy default stream).
 * Returns a cudaError_t as int, 0 on success (the kernels.h launch wrappers have this shape). */
typedef int (*dkb_launch_fn)(void *arg, void *stream);

/* Evaluates `call`; on a non-zero status fills err (see the file comment) and jumps to the calling
 * function's `cleanup` label, its one exit (docs/STYLE.md 6). The CUDA form also clears the runtime's last
 * error (cudaGetLastError) so the next call does not report it again. */
#define DKB_GPU_CHECK_(err, call, fail)                                    \
  do {                                                                     \
    int dkb_status_ = (int)(call);                                         \
    if (dkb_status_ != 0) {                                                \
      fail((err), dkb_status_, #call, __FILE__, __LINE__);                 \
      goto cleanup;                                                        \
    }                                                                      \
  } while (0)
#define DKB_CUDA_CHECK(err, call) DKB_GPU_CHECK_(err, call, dkb_gpucheck_cuda)
#define DKB_CUPTI_CHECK(err, call) DKB_GPU_CHECK_(err, call, dkb_gpucheck_cupti)

/* The failure halves of the macros; each returns -1. The exit code is DKB_FAIL for errors a kernel
 * under test causes (illegal address, launch failure, ...) and DKB_ENV for everything else (no
 * driver, no device, no privileges, out of memory). */
int dkb_gpucheck_cuda(struct dkb_err *err, int status, const char *call, const char *file, int line);
/* That exit code alone, for a nonzero cudaError_t status. */
int dkb_gpucheck_cuda_code(int status);
int dkb_gpucheck_cupti(struct dkb_err *err, int status, const char *call, const char *file, int line);
/* Shared formatter for libraries with their own strings (NVML): name may equal text. */
int dkb_gpucheck_fail(struct dkb_err *err, int code, const char *name, const char *text, const char *call,
                      const char *file, int line);

#endif
