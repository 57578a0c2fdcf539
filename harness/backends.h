/* backends.h - dkb's own CUDA decode backends, registered in the registry machinery of
 * dispatch/registry.h with predicates that tell the truth about what kernels/decode.cu was built for:
 *   dkb_split_kv         (priority 10)  split-KV producer + combine (kernels/decode.cu)
 *   dkb_naive_reference  (priority 100) one CTA per output row, no split; not graph-capturable
 * backends_select freezes a decode call into a dispatch key and runs every admission stage. */
#ifndef DKB_BACKENDS_H
#define DKB_BACKENDS_H

#include "harness/decode_call.h"
#include "dispatch/registry.h"

extern const struct dispatch_registry backends_registry;

/* The dispatch key of a decode call on device cuda:0 of compute capability cc (10*major+minor, or
 * DK_ABSENT when no device could be probed). */
void backends_key(const struct decode_call *c, long long cc, struct dispatch_key *k);
/* Admits the call; returns the kernel family (DKB_FAMILY_SPLIT_KV / DKB_FAMILY_NAIVE) of the selected
 * backend, or -1 when none was selected (a->outcome says why: forced error, no eligible, malformed). */
int backends_select(const struct decode_call *c, long long cc, struct admission *a);

#endif
