/* compare.h - the one comparison function and tolerance rule of dkb (docs/STYLE.md 10).
 * An element passes when |got - ref| <= atol + rtol * |ref|. Non-finite values are never compared
 * numerically: an infinite reference must be matched exactly (LSE = -inf for an all-masked row), and
 * NaN anywhere is counted apart and is always a violation. Contract expectations, GPU-versus-oracle
 * correctness and the bundle validator all call this. */
#ifndef DKB_COMPARE_H
#define DKB_COMPARE_H

#include <stddef.h>

struct dkb_cmp {
  size_t n;            /* elements compared */
  size_t violations;   /* elements outside the tolerance, NaN and infinity mismatches included */
  size_t nan_got;      /* NaN in the candidate */
  size_t inf_got;      /* infinities in the candidate that the reference does not have */
  size_t nan_ref;      /* NaN in the reference: a broken reference, always a violation */
  size_t worst;        /* index of the largest finite absolute error (0 if none) */
  double max_abs;      /* largest |got - ref| over finite pairs */
  double max_rel;      /* largest |got - ref| / |ref| over finite pairs with ref != 0 */
  double max_ratio;    /* largest |got - ref| / (atol + rtol * |ref|) over finite pairs with a non-zero
                        * allowance: the share of its tolerance the worst element used (<= 1 passes).
                        * Unlike max_rel it is not blown up by a reference near zero. */
  double atol, rtol;   /* the rule used */
  int pass;            /* violations == 0 */
};

/* Element getters let one function compare any storage (double, float, fp16/bf16 decoded by caller). */
typedef double (*dkb_cmp_get)(const void *base, size_t i);

void dkb_compare(const void *got, dkb_cmp_get get_got, const void *ref, dkb_cmp_get get_ref, size_t n,
                 double atol, double rtol, struct dkb_cmp *out);
/* Convenience for two double arrays. */
void dkb_compare_f64(const double *got, const double *ref, size_t n, double atol, double rtol,
                     struct dkb_cmp *out);
double dkb_cmp_get_f64(const void *base, size_t i);
double dkb_cmp_get_f32(const void *base, size_t i);

#endif
