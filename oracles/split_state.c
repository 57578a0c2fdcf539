/* split_state.c - the split-state algebra of article 0x02 (see split_state.h). */
#include "oracles/split_state.h"
#include "oracles/dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every arithmetic result passes through R(): identity in float64, float16 rounding in the model. */
static double R(enum ss_arith ar, double x) { return ar == SS_F16_EACH_OP ? dkb_round_to(DKB_F16, x) : x; }

void ss_empty(struct ss_state *s, size_t d) {
  s->valid = 0;
  s->m = -INFINITY;
  s->l = 0.0;
  s->count = 0;
  for (size_t i = 0; i < d; i++) s->u[i] = 0.0;
}

void ss_summarize(const double *scores, const double *values, const unsigned char *allowed, size_t lo,
                  size_t hi, size_t d, enum ss_arith ar, struct ss_state *out) {
  ss_empty(out, d);
  for (size_t j = lo; j < hi; j++) {     /* validity and max before any exponential */
    if (allowed && !allowed[j]) continue;
    out->count++;
    if (!out->valid || scores[j] > out->m) out->m = scores[j];
    out->valid = 1;
  }
  if (!out->valid) return;
  for (size_t j = lo; j < hi; j++) {
    if (allowed && !allowed[j]) continue;
    double w = R(ar, exp(R(ar, scores[j] - out->m)));
    out->l = R(ar, out->l + w);
    for (size_t x = 0; x < d; x++) out->u[x] = R(ar, out->u[x] + R(ar, w * values[j * d + x]));
  }
}

void ss_merge(const struct ss_state *a, const struct ss_state *b, size_t d, enum ss_arith ar,
              struct ss_state *out) {
  const struct ss_state *src = NULL;
  if (!a->valid) src = b;                /* e (+) S = S: no arithmetic on an empty state */
  else if (!b->valid) src = a;
  if (src) {
    if (src != out) {
      out->valid = src->valid; out->m = src->m; out->l = src->l; out->count = src->count;
      if (out->u != src->u) memmove(out->u, src->u, d * sizeof *out->u);
    }
    return;
  }
  double m = a->m > b->m ? a->m : b->m;
  double alpha = R(ar, exp(R(ar, a->m - m))), beta = R(ar, exp(R(ar, b->m - m)));
  double l = R(ar, R(ar, alpha * a->l) + R(ar, beta * b->l));
  size_t count = a->count + b->count;
  for (size_t x = 0; x < d; x++) out->u[x] = R(ar, R(ar, alpha * a->u[x]) + R(ar, beta * b->u[x]));
  out->valid = 1; out->m = m; out->l = l; out->count = count;
}

void ss_merge_unguarded(const struct ss_state *a, const struct ss_state *b, size_t d, struct ss_state *out) {
  double m = a->m > b->m ? a->m : b->m;
  if (isnan(a->m) || isnan(b->m)) m = NAN;
  double alpha = exp(a->m - m), beta = exp(b->m - m);   /* -inf - -inf = NaN when both are empty */
  double l = alpha * a->l + beta * b->l;
  size_t count = a->count + b->count;
  for (size_t x = 0; x < d; x++) out->u[x] = alpha * a->u[x] + beta * b->u[x];
  out->valid = 1; out->m = m; out->l = l; out->count = count;
}

void ss_finalize(const struct ss_state *s, size_t d, double *o, double *lse) {
  if (!s->valid) {                        /* all-masked row: O = 0, LSE = -inf (0x02C) */
    for (size_t x = 0; x < d; x++) o[x] = 0.0;
    *lse = -INFINITY;
    return;
  }
  for (size_t x = 0; x < d; x++) o[x] = s->u[x] / s->l;
  *lse = s->m + log(s->l);
}

void ss_to_lse(const struct ss_state *s, size_t d, struct ss_lse_state *out) {
  out->valid = s->valid;
  ss_finalize(s, d, out->o, &out->lse);
}

void ss_from_lse(const struct ss_lse_state *s, size_t d, struct ss_state *out) {
  if (!s->valid) { ss_empty(out, d); return; }
  out->valid = 1;
  out->m = s->lse;
  out->l = 1.0;
  out->count = 0;
  for (size_t x = 0; x < d; x++) out->u[x] = s->o[x];
}

void ss_merge_lse(const struct ss_lse_state *a, const struct ss_lse_state *b, size_t d, struct ss_lse_state *out) {
  const struct ss_lse_state *src = NULL;
  if (!a->valid) src = b;
  else if (!b->valid) src = a;
  if (src) {
    if (src != out) {
      out->valid = src->valid; out->lse = src->lse;
      if (out->o != src->o) memmove(out->o, src->o, d * sizeof *out->o);
    }
    return;
  }
  double p = a->lse > b->lse ? a->lse : b->lse;
  double lse = p + log(exp(a->lse - p) + exp(b->lse - p));
  double wa = exp(a->lse - lse), wb = exp(b->lse - lse);
  for (size_t x = 0; x < d; x++) out->o[x] = wa * a->o[x] + wb * b->o[x];
  out->valid = 1;
  out->lse = lse;
}

/* Balanced tree over items [lo, hi) of `order`, result into dst (u buffer owned by dst). */
static void reduce_balanced(const struct ss_state *states, const size_t *order, size_t lo, size_t hi, size_t d,
                            enum ss_arith ar, struct ss_state *dst, double *scratch) {
  if (hi - lo == 1) {
    const struct ss_state *s = &states[order ? order[lo] : lo];
    dst->valid = s->valid; dst->m = s->m; dst->l = s->l; dst->count = s->count;
    memcpy(dst->u, s->u, d * sizeof *dst->u);
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  struct ss_state right = {.u = scratch + mid * d};
  reduce_balanced(states, order, lo, mid, d, ar, dst, scratch);
  reduce_balanced(states, order, mid, hi, d, ar, &right, scratch);
  ss_merge(dst, &right, d, ar, dst);
}

void ss_reduce(const struct ss_state *states, const size_t *order, size_t n, size_t d, enum ss_tree tree,
               enum ss_arith ar, struct ss_state *out, double *scratch) {
  if (n == 0) { ss_empty(out, d); return; }
  if (tree == SS_BALANCED) { reduce_balanced(states, order, 0, n, d, ar, out, scratch); return; }
  ss_empty(out, d);
  for (size_t i = 0; i < n; i++) ss_merge(out, &states[order ? order[i] : i], d, ar, out);
}

void ss_balanced_bounds(long long T, long long S, long long s, long long *start, long long *end) {
  long long q = T / S, r = T % S;
  *start = s * q + (s < r ? s : r);
  *end = *start + q + (s < r ? 1 : 0);
}
