/* runner.h - one `dkb run` end to end (docs/DESIGN.md "One dkb run, as data flows"):
 *   call -> inputs (seeded, poisoned) -> plan -> admission -> float64 oracle -> capture pass (NVTX +
 *   CUPTI) -> correctness -> timing pass (no tracing) -> counters pass -> loader map -> bundle.
 * Nothing here prints: progress goes through a callback, and the outcome is a graded bundle written
 * atomically in the output folder. A missing GPU, driver or profiler is recorded in the bundle, which
 * then stops at the level it proves. `dkb bench` runs the same function for every case. */
#ifndef DKB_RUNNER_H
#define DKB_RUNNER_H

#include <jansson.h>

#include "harness/backends.h"
#include "harness/decode_call.h"
#include "lib/err.h"
#include "harness/timing.h"

struct run_opts {
  const char *out_dir;              /* the bundle folder (created) */
  struct dkb_timing_opts timing;    /* warmup, samples, noise rule, max time, cold, graph */
  int timing_enabled;               /* 0: no timing pass (bundle stops at level 5) */
  int counters;                     /* collect the CUPTI range-profiler counters in their own pass */
  const char *dump_dir;             /* write NumPy dumps here (NULL: none) */
  int dump_on_fail;                 /* keep the dump only when correctness fails */
  int argc;
  char **argv;
  void (*progress)(void *ctx, const char *stage, const char *detail);
  void *progress_ctx;
};

struct run_result {
  json_t *bundle;            /* the written bundle (owned) */
  int level;                 /* computed level L* */
  char terminal[64];         /* status.terminal */
  int gpu;                   /* a device was used */
  int correctness;           /* 1 passed, 0 failed, -1 not run */
  double out_max_abs, out_max_ratio, lse_max_abs;  /* ratio: share of the tolerance used (compare.h) */
  long long out_violations;
  double median_us;          /* timing median, 0 when not timed */
  double kv_bytes, io_bytes; /* unique K/V payload (visible tiles) and K/V + Q + O bytes */
  double visible_kv_bytes;
  int splits;                /* split count of the plan; DKB_SPLITS_UNREPORTED (0): the backend's engine
                              * picks its own and does not say */
  int direct;                /* the plan writes O directly: one split, no combine kernel declared */
  char selected[64];         /* selected backend, "" when none */
  char kernels[512];         /* observed kernel symbols (demangled, short), comma separated */
  long long tiles[3];        /* SKIP, FULL, PARTIAL */
  char dump_dir[512];        /* where the dump went, "" when none was kept */
  int launch_code;           /* launch_failed: its CUDA error's code (DKB_FAIL a kernel fault, DKB_ENV the
                              * machine's); DKB_OK otherwise. cmd/ ends by ladder_terminal_exit_code */
};

/* Runs the call with the backends of set (harness/backends.h; its request must name one of them or
 * "auto": backends_check_request). */
int runner_execute(struct decode_call *c, struct backend_set *set, const struct run_opts *o, struct run_result *res,
                   struct dkb_err *err);
void run_result_release(struct run_result *r);

#endif
