/* decode_ref.h - the float64 reference of a whole decode call: for every (request, query row, query
 * head), the scores q.k * scale over the keys the mask shows, reduced with the split-state algebra of
 * oracles/split_state.h in blocks of keys (exact in float64), finalized with the all-masked policy
 * O = 0, LSE = -inf. Inputs are read in their stored dtype and widened element by element; no float64
 * copy of the cache is made. Runs in parallel over (request, K/V head) groups. */
#ifndef DKB_DECODE_REF_H
#define DKB_DECODE_REF_H

#include "harness/decode_call.h"
#include "harness/inputs.h"

/* o: [B][C][H_q][dv], lse: [B][C][H_q] (natural log; -inf for all-masked rows). */
void decode_ref_compute(const struct decode_call *c, const struct decode_inputs *in, double *o, double *lse);
/* Keys visible to each output row summed over the call, and rows with no visible key. */
void decode_ref_visibility(const struct decode_call *c, const struct decode_inputs *in, int64_t *visible_cells,
                           int64_t *all_masked_rows);

#endif
