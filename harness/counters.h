/* counters.h - one CUPTI range-profiler pass over a workload (article 0x0BH: a counter is evidence
 * only with its name, unit, numerator, denominator and scope). Collects dram__bytes_read.sum,
 * dram__bytes_write.sum and gpu__time_duration.sum for one user range around the workload callback.
 * Counters perturb timing: run this in its own pass, never inside the timed one. */
#ifndef DKB_COUNTERS_H
#define DKB_COUNTERS_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"
#include "harness/gpucheck.h"

#define DKB_COUNTERS_N 3

struct dkb_counter {
  const char *name;        /* CUPTI metric name, e.g. "dram__bytes_read.sum" */
  const char *unit;        /* "byte" or "nsecond" (dkb's definition) */
  const char *numerator;   /* what is counted */
  const char *denominator; /* what it is divided by ("none: a total over the range") */
  const char *scope;       /* which work it covers */
  double value;            /* valid when the pass succeeded */
  char cupti_description[256]; /* cuptiProfilerHostGetMetricProperties text, "" when not given */
  char cupti_unit[32];         /* its dimension unit, "" when not given */
};

struct dkb_counters {
  int available;           /* 1 when values are valid */
  char reason[1024];       /* why not, else "" */
  char range_name[256];
  char chip[64];           /* cuptiDeviceGetChipName, e.g. "GH100" */
  unsigned cupti_version;
  int passes;              /* replay passes the workload ran (1 for these metrics on GH100) */
  struct dkb_counter v[DKB_COUNTERS_N];
};

/* Longest user-range name the counters pass accepts (longer names crash the NVIDIA decoder). */
#define DKB_COUNTERS_RANGE_MAX 32

/* Runs workload(arg, stream) once per replay pass inside a CUPTI user range named range_name on
 * `device` and evaluates the three metrics. The workload must be replay-safe (same inputs each
 * pass). before (NULL: nothing) runs before each pass, outside the range, and is synchronized: the
 * cold pass's L2 flush (struct dkb_l2_flush). Returns 0 with out->available = 1, or -1 with err and
 * out->reason (e.g. no device: the runtime's reason; CUPTI_ERROR_INSUFFICIENT_PRIVILEGES where
 * profiling is restricted); the metric definitions in out->v are filled either way. Never links
 * -lcuda: the context comes from cudaGetDriverEntryPointByVersion("cuCtxGetCurrent"). */
int dkb_counters_collect(int device, const char *range_name, dkb_launch_fn workload, void *arg, void *stream,
                         dkb_launch_fn before, void *before_arg, struct dkb_counters *out, struct dkb_err *err);
/* out as a pass that never ran: the metric definitions, no values, why's text as the reason (why NULL:
 * no reason yet). */
void dkb_counters_unavailable(struct dkb_counters *out, const char *range_name, const struct dkb_err *why);
/* {"status": "measured" | "unavailable", "reason"?, "profiler", "replay_mode", "range", "chip",
 *  "passes", "metrics": [{name, unit, value?, numerator, denominator, scope, cupti_description?}]}. */
json_t *dkb_counters_json(const struct dkb_counters *c);

#endif
