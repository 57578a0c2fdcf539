/* device_call.h - one decode call on the GPU as dkb owns it, whichever backend runs it: the inputs
 * uploaded (Q, the caches with their poison, lengths and page tables), O and LSE, the workspaces the
 * backend's plan declared (include/dkb/backend.h: scratch ones poisoned with NaN before every checked
 * launch, zero-on-first-use ones zeroed once, persistent ones left to the backend's setup), the ABI view
 * of all of it (struct dkb_call), and the results brought back. */
#ifndef DKB_DEVICE_CALL_H
#define DKB_DEVICE_CALL_H

#include <stddef.h>

#include "harness/decode_call.h"
#include "harness/inputs.h"
#include "include/dkb/backend.h"
#include "lib/err.h"

struct device_call {
  struct dkb_call call;          /* scalars, host arrays and device pointers */
  void *stream;                  /* cudaStream_t the call runs on (NULL: the legacy default stream) */
  void *allocs[32];              /* every device allocation, freed by device_call_release */
  int nallocs;
  size_t device_bytes;           /* bytes allocated on the device */
  size_t o_bytes, lse_bytes, k_bytes, v_bytes;
  int nws;
  void *ws[DKB_MAX_WORKSPACES];
  struct dkb_workspace wsdecl[DKB_MAX_WORKSPACES];
};

/* Uploads the inputs and allocates O and LSE; call must hold the ABI call of c (backends_call) and is
 * copied in. Errors: DKB_ENV with the runtime's reason. */
int device_call_setup(const struct dkb_call *call, const struct decode_inputs *in, struct device_call *d,
                      struct dkb_err *err);
/* Allocates the plan's workspaces and zeroes the zero-on-first-use ones. */
int device_call_workspaces(struct device_call *d, const struct dkb_plan *plan, struct dkb_err *err);
void device_call_release(struct device_call *d);
/* Fills O, LSE and every scratch workspace with NaN (0xFF bytes) on the call's stream. */
int device_call_poison(struct device_call *d, struct dkb_err *err);
/* Synchronizes and copies O (storage dtype), LSE (fp32) and, when k/v are given, the caches back. */
int device_call_download(struct device_call *d, void *o, float *lse, void *k, void *v, struct dkb_err *err);

#endif
