/* decode_ref.c - float64 reference of a decode call (see decode_ref.h). */
#include "harness/decode_ref.h"
#include "lib/parallel.h"
#include "oracles/dtype.h"
#include "oracles/split_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KB = 256 };  /* keys per block: K/V rows of a block are widened once for all g * C rows */

struct ref_ctx {
  const struct decode_call *c;
  const struct decode_inputs *in;
  double *o, *lse;
};

static void ref_group(void *vctx, int64_t task) {
  struct ref_ctx *r = vctx;
  const struct decode_call *c = r->c;
  const struct decode_inputs *in = r->in;
  const int64_t b = task / c->H_kv, h = task % c->H_kv, g = c->H_q / c->H_kv, R = g * c->C;
  const int64_t N = c->kv_len[b], dk = c->dk, dv = c->dv;
  double *kb = DKB_MALLOC((size_t)(KB * dk) * sizeof *kb), *vb = DKB_MALLOC((size_t)(KB * dv) * sizeof *vb);
  double *q = DKB_MALLOC((size_t)(R * dk) * sizeof *q), *s = DKB_MALLOC((size_t)KB * sizeof *s);
  unsigned char *al = DKB_MALLOC(KB);
  double *u = DKB_CALLOC((size_t)(2 * R * dv), sizeof *u);
  struct ss_state *run = DKB_CALLOC((size_t)R, sizeof *run), blk;
  blk.u = DKB_MALLOC((size_t)dv * sizeof *blk.u);
  for (int64_t row = 0; row < R; row++) {
    int64_t j = row / c->C, i = row % c->C, hq = h * g + j;
    for (int64_t x = 0; x < dk; x++)
      q[row * dk + x] = dkb_load((enum dkb_dtype)c->dtype, in->q, (size_t)(((b * c->C + i) * c->H_q + hq) * dk + x));
    run[row].u = u + row * dv;
    ss_empty(&run[row], (size_t)dv);
  }
  for (int64_t t0 = 0; t0 < N; t0 += KB) {
    int64_t n = N - t0 < KB ? N - t0 : KB;
    for (int64_t t = 0; t < n; t++) {
      inputs_kv_row(c, in, 0, b, t0 + t, h, kb + t * dk);
      inputs_kv_row(c, in, 1, b, t0 + t, h, vb + t * dv);
    }
    for (int64_t row = 0; row < R; row++) {
      int64_t qpos = N - c->C + row % c->C;
      for (int64_t t = 0; t < n; t++) {
        al[t] = (unsigned char)mask_visible(&in->mask, b, qpos, t0 + t);
        double d = 0;
        if (al[t])
          for (int64_t x = 0; x < dk; x++) d += q[row * dk + x] * kb[t * dk + x];
        s[t] = d * c->scale;
      }
      ss_summarize(s, vb, al, 0, (size_t)n, (size_t)dv, SS_F64, &blk);
      ss_merge(&run[row], &blk, (size_t)dv, SS_F64, &run[row]);
    }
  }
  for (int64_t row = 0; row < R; row++) {
    int64_t j = row / c->C, i = row % c->C, hq = h * g + j, orow = (b * c->C + i) * c->H_q + hq;
    ss_finalize(&run[row], (size_t)dv, r->o + orow * dv, &r->lse[orow]);
  }
  free(kb); free(vb); free(q); free(s); free(al); free(u); free(run); free(blk.u);
}

void decode_ref_compute(const struct decode_call *c, const struct decode_inputs *in, double *o, double *lse) {
  struct ref_ctx r = {c, in, o, lse};
  dkb_parallel_for((int64_t)c->B * c->H_kv, ref_group, &r);
}

void decode_ref_visibility(const struct decode_call *c, const struct decode_inputs *in, int64_t *visible_cells,
                           int64_t *all_masked_rows) {
  int64_t vis = 0, empty = 0;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t i = 0; i < c->C; i++) {
      int64_t N = c->kv_len[b], qpos = N - c->C + i, n = 0;
      for (int64_t t = 0; t < N; t++) n += mask_visible(&in->mask, b, qpos, t);
      vis += n * c->H_q;
      empty += n == 0 ? c->H_q : 0;
    }
  *visible_cells = vis;
  *all_masked_rows = empty;
}
