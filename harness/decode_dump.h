/* decode_dump.h - `dkb run --dump DIR`: every tensor of one decode call as NumPy files, in the layout
 * harness/dump.h documents (the contract tests/dump_check.py reads): inputs as the kernel reads them,
 * the float64 oracle's O and LSE, and, when a GPU ran, its O, LSE and the caches after an append. */
#ifndef DKB_DECODE_DUMP_H
#define DKB_DECODE_DUMP_H

#include <jansson.h>

#include "harness/decode_call.h"
#include "lib/err.h"
#include "harness/inputs.h"

struct decode_outputs {
  const double *o_ref, *lse_ref;  /* always */
  const void *o_gpu;              /* NULL when no GPU ran */
  const float *lse_gpu;           /* NULL when no GPU ran or LSE was not returned */
  const void *k_after, *v_after;  /* append with a GPU */
};

/* Writes the dump; *index (new reference) is the index document written as DIR/index.json. */
int decode_dump_write(const char *dir, const struct decode_call *c, const struct decode_inputs *in,
                      const struct decode_outputs *out, json_t **index, struct dkb_err *err);

#endif
