/* bench.h - `dkb bench`: a sweep of decode calls, each a level-6 bundle from the same runner as
 * `dkb run`, beside a streaming-read roofline measured in the same process on the same device.
 * Achieved bandwidth = (unique K/V + Q + O bytes) / median time, in decimal TB/s, and its fraction of
 * the roofline; for masked calls also over the K/V bytes of visible tiles only. */
#ifndef DKB_BENCH_H
#define DKB_BENCH_H

#include <jansson.h>

#include "err.h"
#include "runner.h"

struct bench_case {
  char name[160];        /* fixture name + split variant */
  char fixture[512];     /* path */
  int forced_splits;     /* 0 = the fixture's own policy; > 0 = fixed S (a different call key) */
  char layout[32];
  int B, H_q, H_kv, d, C;
  char dtype[8];
  double mean_len;       /* mean keys per request */
  /* results */
  int ran, level;
  char terminal[64];
  double median_us, io_bytes, kv_bytes, visible_kv_bytes;
  double tbps, frac, visible_tbps, visible_frac;
  int splits;
  long long tiles[3];
  char bundle_dir[600];
};

struct bench_matrix {
  char name[128];
  long long roofline_bytes;   /* bytes the roofline kernel streams (>= 4 GiB) */
  struct bench_case *cases;
  int n;
};

/* Reads a dkb.bench-matrix/v1 file (schemas/bench-matrix.schema.json); fixture paths are relative to
 * the matrix file. */
int bench_matrix_load(const char *path, struct bench_matrix *m, struct dkb_err *err);
/* A matrix of the given fixtures with their own split policies. */
int bench_matrix_from_fixtures(char **paths, int n, struct bench_matrix *m, struct dkb_err *err);
void bench_matrix_release(struct bench_matrix *m);

struct bench_roofline {
  int measured;
  char reason[1100];
  double bytes, median_us, tbps;
  size_t samples;
};
/* Streams `bytes` through kernels/roofline.cu with the timing pass (dkb_timing_run). */
int bench_roofline(long long bytes, const struct dkb_timing_opts *t, struct bench_roofline *r, struct dkb_err *err);

/* Writes DIR/bench.json (dkb.bench/v1), DIR/bench.csv and DIR/roofline-fraction.svg atomically. */
int bench_write(const char *dir, const struct bench_matrix *m, const struct bench_roofline *r, int argc, char **argv,
                struct dkb_err *err);

#endif
