/* gpu_call.h - one decode call on the GPU: device buffers, the kernel parameter block, launches and
 * results. Outputs, LSE and workspace are filled with NaN before every checked launch so an unwritten
 * row cannot pass; page tails and unused pool pages arrive already poisoned from inputs.c. */
#ifndef DKB_GPU_CALL_H
#define DKB_GPU_CALL_H

#include <stddef.h>

#include "harness/decode_call.h"
#include "lib/err.h"
#include "harness/inputs.h"
#include "kernels/decode.h"
#include "harness/plan.h"

struct gpu_call {
  struct dkb_decode_params p;  /* device pointers + plan: what the kernels read */
  int family;                  /* DKB_FAMILY_SPLIT_KV or DKB_FAMILY_NAIVE */
  void *stream;                /* cudaStream_t the call runs on */
  float *scratch;              /* naive family: scores */
  void *allocs[40];            /* every device allocation, freed by gpu_call_release */
  int nallocs;
  size_t device_bytes;         /* bytes allocated on the device */
  size_t o_bytes, lse_bytes, ws_bytes[4];
};

/* Allocates and uploads everything. Errors: DKB_ENV with the runtime's reason. */
int gpu_call_setup(const struct decode_call *c, const struct decode_inputs *in, const struct decode_plan *pl,
                   int family, struct gpu_call *g, struct dkb_err *err);
void gpu_call_release(struct gpu_call *g);
/* Fills O, LSE and the workspace with NaN (0xFF bytes) on the call's stream. */
int gpu_call_poison(struct gpu_call *g, struct dkb_err *err);
/* Launches the call (append kernel first when the phase is append). Matches dkb_launch_fn. */
int gpu_call_launch(void *gpu_call, void *stream);
/* Synchronizes and copies O (storage dtype), LSE (fp32) and, for append, the K and V caches back. */
int gpu_call_download(struct gpu_call *g, const struct decode_inputs *in, void *o, float *lse, void *k, void *v,
                      struct dkb_err *err);

#endif
