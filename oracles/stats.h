/* stats.h - summary statistics of raw timing samples (article 0x0BH). `dkb run` summarizes with
 * this and the validator recomputes the summary from the raw samples with the same function. */
#ifndef DKB_STATS_H
#define DKB_STATS_H

#include <stddef.h>

struct dkb_stats {
  size_t count;
  double min, max, mean;
  double median;    /* quantile 0.5 */
  double p95;       /* quantile 0.95 */
  double stdev;     /* sample standard deviation (n - 1); 0 when count < 2 */
  double rel_stdev; /* stdev / mean; 0 when mean == 0 */
};

/* Quantile q in [0, 1] of n samples with linear interpolation between closest ranks (numpy's default
 * "linear" method): position (n - 1) * q in the sorted samples. */
double dkb_quantile(const double *samples, size_t n, double q);
/* Fills out from n samples (n may be 0: all fields 0). The input is not modified. */
void dkb_stats_compute(const double *samples, size_t n, struct dkb_stats *out);

#endif
