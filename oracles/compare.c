/* compare.c - the one tolerance rule (see compare.h). */
#include "oracles/compare.h"

#include <math.h>
#include <string.h>

double dkb_cmp_get_f64(const void *base, size_t i) { return ((const double *)base)[i]; }
double dkb_cmp_get_f32(const void *base, size_t i) { return ((const float *)base)[i]; }

void dkb_compare(const void *got, dkb_cmp_get get_got, const void *ref, dkb_cmp_get get_ref, size_t n,
                 double atol, double rtol, struct dkb_cmp *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  out->atol = atol;
  out->rtol = rtol;
  for (size_t i = 0; i < n; i++) {
    double g = get_got(got, i), r = get_ref(ref, i);
    if (isnan(r)) { out->nan_ref++; out->violations++; continue; }
    if (isnan(g)) { out->nan_got++; out->violations++; continue; }
    if (isinf(r) || isinf(g)) {
      if (g != r) {
        if (isinf(g)) out->inf_got++;
        out->violations++;
      }
      continue;
    }
    double d = fabs(g - r);
    if (d > out->max_abs) { out->max_abs = d; out->worst = i; }
    if (r != 0.0 && d / fabs(r) > out->max_rel) out->max_rel = d / fabs(r);
    const double allow = atol + rtol * fabs(r);
    if (allow > 0 && d / allow > out->max_ratio) out->max_ratio = d / allow;
    if (!(d <= allow)) out->violations++;
  }
  out->pass = out->violations == 0;
}

void dkb_compare_f64(const double *got, const double *ref, size_t n, double atol, double rtol,
                     struct dkb_cmp *out) {
  dkb_compare(got, dkb_cmp_get_f64, ref, dkb_cmp_get_f64, n, atol, rtol, out);
}
