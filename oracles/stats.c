/* stats.c - timing summary statistics (see stats.h). */
#include "oracles/stats.h"
#include "lib/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile_sorted(const double *s, size_t n, double q) {
  double pos = (double)(n - 1) * q;
  size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
  return s[lo] + (s[hi] - s[lo]) * (pos - (double)lo);
}

double dkb_quantile(const double *samples, size_t n, double q) {
  if (n == 0) return 0.0;
  double *s = DKB_MALLOC(n * sizeof *s);
  memcpy(s, samples, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double v = quantile_sorted(s, n, q);
  free(s);
  return v;
}

void dkb_stats_compute(const double *samples, size_t n, struct dkb_stats *out) {
  memset(out, 0, sizeof *out);
  if (n == 0) return;
  double *s = DKB_MALLOC(n * sizeof *s);
  memcpy(s, samples, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  out->count = n;
  out->min = s[0];
  out->max = s[n - 1];
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += s[i];
  out->mean = sum / (double)n;
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (s[i] - out->mean) * (s[i] - out->mean);
  out->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
  out->rel_stdev = out->mean != 0 ? out->stdev / out->mean : 0.0;
  out->median = quantile_sorted(s, n, 0.5);
  out->p95 = quantile_sorted(s, n, 0.95);
  free(s);
}
