/* bench_claims.c - estimators, conversions and the comparability predicate (see bench_claims.h). */
#include "oracles/bench_claims.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

const char *const BENCH_FIELD_NAMES[] = {"scope",     "phase",    "metric",   "direction", "accelerator",
                                         "precision", "workload", "baseline", "statistic", NULL};

static int positive(const double *b, const double *c, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(b[i] > 0 && c[i] > 0 && isfinite(b[i]) && isfinite(c[i]))) return 0;
  return 1;
}

double bench_speedup_max(const double *b, const double *c, size_t n) {
  if (!positive(b, c, n)) return NAN;
  double m = b[0] / c[0];
  for (size_t i = 1; i < n; i++) m = fmax(m, b[i] / c[i]);
  return m;
}

double bench_speedup_arith_mean(const double *b, const double *c, size_t n) {
  if (!positive(b, c, n)) return NAN;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += b[i] / c[i];
  return s / (double)n;
}

double bench_speedup_ratio_of_sums(const double *b, const double *c, size_t n) {
  if (!positive(b, c, n)) return NAN;
  double sb = 0, sc = 0;
  for (size_t i = 0; i < n; i++) sb += b[i], sc += c[i];
  return sb / sc;
}

double bench_speedup_geo_mean(const double *b, const double *c, size_t n) {
  if (!positive(b, c, n)) return NAN;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += log(b[i] / c[i]);
  return exp(s / (double)n);
}

double bench_speedup_from_reduction(double r) { return isfinite(r) && r < 1 ? 1.0 / (1.0 - r) : NAN; }

double bench_reduction_from_speedup(double s) { return isfinite(s) && s > 0 ? 1.0 - 1.0 / s : NAN; }

unsigned bench_incomparable(const struct bench_key *a, const struct bench_key *b) {
  unsigned bits = 0;
  for (int f = 0; f < BF_COUNT; f++)
    if (!a->field[f] || !b->field[f] || strcmp(a->field[f], b->field[f])) bits |= 1u << f;
  return bits;
}

unsigned bench_unknown_fields(const struct bench_key *a, const struct bench_key *b) {
  return bench_key_unknown(a) | bench_key_unknown(b);
}

unsigned bench_key_unknown(const struct bench_key *k) {
  unsigned bits = 0;
  for (int f = 0; f < BF_COUNT; f++)
    if (!k->field[f]) bits |= 1u << f;
  return bits;
}

static int all(const char *s, size_t n, int (*pred)(int)) {
  if (strlen(s) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!pred((unsigned char)s[i])) return 0;
  return 1;
}

static int is_lower_hex(int c) { return isdigit(c) || (c >= 'a' && c <= 'f'); }

int bench_version_pinned(const char *v) {
  if (!v) return 0;
  if (!strncmp(v, "arXiv:", 6)) { /* arXiv:YYMM.NNNNN then vN */
    const char *p = v + 6;
    while (isdigit((unsigned char)*p) || *p == '.') p++;
    if (p == v + 6 || *p != 'v' || !isdigit((unsigned char)p[1])) return 0;
    for (p++; *p; p++)
      if (!isdigit((unsigned char)*p)) return 0;
    return 1;
  }
  if (strlen(v) == 10 && v[4] == '-' && v[7] == '-') { /* YYYY-MM-DD */
    for (int i = 0; i < 10; i++)
      if (i != 4 && i != 7 && !isdigit((unsigned char)v[i])) return 0;
    return 1;
  }
  if (all(v, 40, is_lower_hex)) return 1;
  if (v[0] == 'v' && isdigit((unsigned char)v[1])) { /* vX.Y[.Z] */
    int dots = 0;
    for (const char *p = v + 1; *p; p++) {
      if (*p == '.') dots++;
      else if (!isdigit((unsigned char)*p)) return 0;
    }
    return dots >= 1;
  }
  return 0;
}
