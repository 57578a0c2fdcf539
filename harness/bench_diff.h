/* bench_diff.h - `dkb compare`: two `dkb bench` runs (dkb.bench/v1), case by case.
 * A case's median changed when the difference exceeds the noise of the two measurements: the sum of
 * their relative standard deviations (the samples' stdev / mean, as nvbench_compare reads a run's
 * noise), and never less than a floor. The sum, not nvbench's smaller one: on the H200 the median of
 * one call timed in repeated processes on one machine moved by up to its run's own relative stdev
 * (B1 T131072: 25.06-25.66 us at 1.4-1.9 %), so a smaller band calls same kernels different. Runs
 * recorded before bench.json carried rel_stdev have no noise: their changes are "unknown" unless the
 * caller fixes one. Only level-6 medians are compared, as bench judges targets, and only cases whose
 * call keys agree where both runs recorded them (a name alone does not say the call is the same). */
#ifndef DKB_BENCH_DIFF_H
#define DKB_BENCH_DIFF_H

#include <jansson.h>

#include "lib/err.h"

struct bench_run_case {
  const char *name;  /* points into the run's document */
  int level;
  double median_us, rel_stdev;  /* rel_stdev NAN when the run did not record it */
  double frac;                  /* roofline fraction over the visible bytes (all of them unless masked) */
  const char *call_key;         /* the call-key SHA-256, NULL when the run did not record it */
  int slowed;                   /* its clocks.slowed: 1 or 0; -1 when the run recorded no clocks for it */
  const char *fixture;          /* the fixture it ran, and its forced split count (0: its own policy): what
                                 * identifies the call across backends, whose call keys differ in the request */
  long long forced_splits;
};

struct bench_run {
  json_t *doc;  /* owned */
  char path[4200];  /* the file read: the given one, or DIR/bench.json for a bench output folder */
  const char *commit, *created;
  const char *device, *uuid;  /* NULL when the run did not record its device, or had none */
  int no_gpu;                 /* the run recorded that it had no GPU */
  const char *backend;        /* the one backend whose cases were kept (a side-by-side run), NULL for all */
  int roofline_measured;
  double roofline_tbps;
  struct bench_run_case *cases;
  int n;
};

/* Reads a dkb.bench/v1 document, or DIR/bench.json when path is a folder (`dkb bench -o DIR`); errors
 * name the file, the JSON Pointer and the reason (DKB_INPUT). A timed case's roofline fractions must be
 * what its median and bytes give over the run's roofline: a file whose figures disagree is refused, not
 * recomputed, since a gate cannot tell which figure was changed and judges on the median. */
int bench_run_load(const char *path, struct bench_run *r, struct dkb_err *err);
/* The same, keeping only the cases run under one backend of a side-by-side run (their "backend"); NULL
 * keeps every case, whose names must then be unique. */
int bench_run_load_backend(const char *path, const char *backend, struct bench_run *r, struct dkb_err *err);
void bench_run_release(struct bench_run *r);
/* The index of r's case NAME, or -1. */
int bench_run_find(const struct bench_run *r, const char *name);

enum bench_change {
  CHANGE_SAME,        /* within the noise */
  CHANGE_FASTER,
  CHANGE_SLOWER,
  CHANGE_UNKNOWN,     /* no noise recorded (and none given) */
  CHANGE_UNMEASURED,  /* a side below level 6, or without a median */
  CHANGE_OTHER_CALL,  /* same name, different call keys: the fixture changed between the runs */
  CHANGE_ONLY_BASE,
  CHANGE_ONLY_NEW,
};
const char *bench_change_name(enum bench_change c);

struct bench_delta {
  int base, cand;       /* case indexes, -1 when absent from that run */
  double pct;           /* (new / base - 1) * 100, NAN when not compared */
  double band;          /* the noise band in %, NAN when unknown */
  enum bench_change change;
};

/* The noise band, in %, of a comparison of two medians whose timing samples spread rel_a and rel_b
 * (stdev / mean): 100 (rel_a + rel_b), at least min_pct; NAN when either spread is unknown. The one band
 * both `dkb compare`'s verdicts and `dkb bench`'s targets (bench_judge) are read against. */
#define BENCH_MIN_NOISE_PCT 0.5
double bench_noise_band(double rel_a, double rel_b, double min_pct);

struct bench_diff_opts {
  double min_noise_pct;  /* floor of the band (default BENCH_MIN_NOISE_PCT) */
  double noise_pct;      /* > 0: this band for every case instead of the recorded noise */
  int across_backends;   /* the two sides are two backends: one call is one fixture and forced split, since the
                          * call keys differ in their backend request */
};

/* One delta per case of either run: the base's cases in order, then the new run's unmatched ones.
 * *out is malloc'ed (caller frees); returns the count. */
int bench_diff(const struct bench_run *base, const struct bench_run *cand, const struct bench_diff_opts *o,
               struct bench_delta **out);

#endif
