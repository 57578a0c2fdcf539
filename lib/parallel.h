/* parallel.h - a plain pthreads parallel-for for the host-side loops that touch every input element
 * (input generation, the float64 reference). No OpenMP: the binary must start on the GPU machine,
 * which is not guaranteed to have libgomp. */
#ifndef DKB_PARALLEL_H
#define DKB_PARALLEL_H

#include <stdint.h>

/* Calls fn(ctx, i) for every i in [0, n) from up to nproc threads; items are handed out in order by an
 * atomic counter, so fn must not depend on which thread runs it. */
void dkb_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx);
/* Threads dkb_parallel_for uses (online processors, at least 1). */
int dkb_parallel_threads(void);

#endif
