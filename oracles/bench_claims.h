/* bench_claims.h - accounting rules for benchmark claims (article 0x0C): aggregate-speedup estimators,
 * the exact latency-reduction <-> speedup conversion, and the strict comparability predicate over the
 * field set F of 0x0CE. Plain arrays and structs, so `dkb compare` can apply the same rules to dkb's own
 * evidence bundles that the source-reported manifest fixtures apply to paper rows. */
#ifndef DKB_BENCH_CLAIMS_H
#define DKB_BENCH_CLAIMS_H

#include <stddef.h>

/* Estimators over n cases with baseline latency b[i] and candidate latency c[i]; s_i = b_i / c_i is a
 * latency speedup (0x0CA). Each returns NAN when n == 0 or a latency is not a positive finite number.
 *   max           S_max = max_i s_i (an "up to" claim; the sweep is part of the claim)
 *   arith_mean    (1/n) sum_i s_i: equal weight per case ratio
 *   ratio_of_sums sum_i b_i / sum_i c_i: cases weighted by their time
 *   geo_mean      exp((1/n) sum_i log s_i): symmetric in ratio space */
double bench_speedup_max(const double *b, const double *c, size_t n);
double bench_speedup_arith_mean(const double *b, const double *c, size_t n);
double bench_speedup_ratio_of_sums(const double *b, const double *c, size_t n);
double bench_speedup_geo_mean(const double *b, const double *c, size_t n);

/* S_L = 1 / (1 - R_L) and R_L = 1 - 1 / S_L for one identical workload point (0x0CB); R is a fraction
 * (0.69 for 69%). NAN outside the domain (R >= 1, S <= 0, non-finite). A 69% reduction is 3.226x, not
 * 1.69x; the conversion re-expresses a reported ratio, it adds no sample. */
double bench_speedup_from_reduction(double r);
double bench_reduction_from_speedup(double s);

/* The field set F of the strict comparability predicate (0x0CE). */
enum bench_field {
  BF_SCOPE,        /* kernel, attention microbenchmark, end-to-end generation, online serving */
  BF_PHASE,        /* decode, prefill, mixed serving */
  BF_METRIC,       /* the measured quantity: attention latency, generation throughput, ITL */
  BF_DIRECTION,    /* lower_is_better / higher_is_better */
  BF_ACCELERATOR,  /* the machine */
  BF_PRECISION,    /* input/compute precision */
  BF_WORKLOAD,     /* model, shapes, request trace */
  BF_BASELINE,     /* baseline identity: implementation and version (family alone is not an identity) */
  BF_STATISTIC,    /* max, mean, range, point */
  BF_COUNT
};
/* "scope", "phase", "metric", "direction", "accelerator", "precision", "workload", "baseline",
 * "statistic"; NULL terminated. */
extern const char *const BENCH_FIELD_NAMES[];

/* One benchmark coordinate: field[f] is the readable value, NULL when the source does not supply it. */
struct bench_key {
  const char *field[BF_COUNT];
};

/* C(i,j) of 0x0CE as a vector: bit f is set when field f blocks the comparison because the two values
 * differ or either is unknown. 0 means the rows answer the same measured question. */
unsigned bench_incomparable(const struct bench_key *a, const struct bench_key *b);
/* Of those, the fields unknown on at least one side (equality cannot be established). */
unsigned bench_unknown_fields(const struct bench_key *a, const struct bench_key *b);
/* Bit f set when the row itself lacks field f: any set bit makes it a partial coordinate. */
unsigned bench_key_unknown(const struct bench_key *k);

/* 1 when a source version names one immutable revision: an arXiv id with its version suffix
 * ("arXiv:2311.01282v4"), an ISO date of a dated note ("2023-10-12"), a 40-hex commit, or a release tag
 * ("v2.2.0"). "arXiv:2311.01282", "latest" or "main" float: the text behind them can change. */
int bench_version_pinned(const char *version);

#endif
