/* mask_contract.c - contract kinds of article 0x05-0x06: "mask_column" (one FlashMask column and the
 * representability gate), "mask_program" (a mask, its tile classes and tiled execution against the
 * dense float64 reference), "mask_ledger" (payload bytes and evidence claims) and "mask_laws" (random
 * masks: the conservative classifier, interval arithmetic, tiled == dense, the column gate).
 * A fixture may declare how the implementation under test deviates (interval ends read inclusively,
 * summaries read as membership, the partial mask applied after the update); the deviation is executed
 * and the input is rejected with the 0x06J reason only when the result really differs. */
#include "contracts/claims.h"
#include "oracles/compare.h"
#include "contracts/contract.h"
#include "oracles/mask.h"
#include "oracles/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const POLARITY[] = {"true_means_visible", "true_means_masked", NULL};
static const char *const ENDS[] = {"half_open", "inclusive", NULL};
static const char *const CLASSIFIER[] = {"exact", "program", "summary_as_membership", NULL};
static const char *const PARTIAL[] = {"before_online_update", "after_online_update", NULL};
static const char *const KINDS[] = {"none", "causal", "sliding_window", "flashmask", NULL};

static json_t *rows_json(const unsigned char *masked, int64_t n, int want) {
  json_t *a = json_array();
  for (int64_t q = 0; q < n; q++)
    if (!!masked[q] == want) json_array_append_new(a, json_integer(q));
  return a;
}

/* A dense truth {"polarity", "cells"}: cells is [n] (cols == 0) or [rows][cols] of 0/1; writes
 * visible[] (row-major) in the C API's polarity. */
static int read_dense(struct jr *r, const json_t *in, const char *ptr, int64_t rows, int64_t cols, unsigned char *visible,
                      int *polarity) {
  char p[DKB_PTR_MAX], cp[DKB_PTR_MAX], e[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, "dense");
  const json_t *d = json_object_get(in, "dense");
  static const char *const req[] = {"polarity", "cells", NULL};
  if (jr_keys(r, d, p, req, NULL) || jr_enum(r, d, p, "polarity", 1, POLARITY, polarity)) return -1;
  const json_t *cells = jr_get(r, d, p, "cells", 1, JSON_ARRAY);
  if (!cells) return -1;
  jr_ptr_key(cp, p, "cells");
  int64_t nr = cols ? rows : 1, nc = cols ? cols : rows;
  if ((int64_t)json_array_size(cells) != (cols ? rows : rows))
    return jr_fail(r, p, "cells", "must have %lld entries (got %zu)", (long long)rows, json_array_size(cells));
  unsigned char *raw = DKB_MALLOC((size_t)(rows * (cols ? cols : 1)));
  for (int64_t i = 0; i < nr; i++) {
    const json_t *row = cols ? json_array_get(cells, (size_t)i) : cells;
    jr_ptr_idx(e, cp, (size_t)i);
    if (cols && (!json_is_array(row) || (int64_t)json_array_size(row) != cols)) {
      free(raw);
      return jr_fail(r, e, NULL, "must be an array of %lld cells", (long long)cols);
    }
    for (int64_t j = 0; j < nc; j++) {
      const json_t *v = json_array_get(row, (size_t)j);
      char vp[DKB_PTR_MAX];
      if (cols) jr_ptr_idx(vp, e, (size_t)j);
      else jr_ptr_idx(vp, cp, (size_t)j);
      if (!json_is_integer(v) || (json_integer_value(v) != 0 && json_integer_value(v) != 1)) {
        free(raw);
        return jr_fail(r, vp, NULL, "must be 0 or 1");
      }
      raw[i * nc + j] = (unsigned char)json_integer_value(v);
    }
  }
  mask_to_visible(raw, nr * nc, *polarity, visible);
  free(raw);
  return 0;
}

/* Compares the reader's visibility with the dense truth and names what went wrong. halfopen is the
 * visibility of the same vectors read half-open when the reader reads them inclusively, else NULL. */
static int diagnose(const unsigned char *truth, const unsigned char *reader, const unsigned char *halfopen, int64_t rows,
                    int64_t cols, int polarity, struct oracle_reject *rej) {
  int64_t n = rows * cols, bad = 0, first = -1, fixed = 0;
  for (int64_t i = 0; i < n; i++)
    if (truth[i] != reader[i]) { bad++; if (first < 0) first = i; }
  if (!bad) return 0;
  for (int64_t i = 0; halfopen && i < n; i++) fixed += truth[i] == halfopen[i];
  long long fq = first / cols, fk = first % cols;
  char at[64];
  if (cols == 1) snprintf(at, sizeof at, "row %lld", fq);
  else snprintf(at, sizeof at, "row %lld key %lld", fq, fk);
  if (bad == n)
    return oracle_reject(rej, "inverted_polarity",
                         "all %lld cells disagree: the dense mask declared %s computes the complement of the FlashMask "
                         "intervals (%s is %s in the truth); bind and test polarity",
                         (long long)n, POLARITY[polarity], at, truth[first] ? "visible" : "masked");
  if (halfopen && fixed == n)
    return oracle_reject(rej, "inclusive_interval_ends",
                         "reading the interval ends as inclusive hides %lld cell%s the truth shows (first: %s); the same "
                         "vectors read half-open match the truth", (long long)bad, bad == 1 ? "" : "s", at);
  return oracle_reject(rej, "representation_mismatch",
                       "%lld of %lld cells differ between the intervals and the dense truth (first: %s)",
                       (long long)bad, (long long)n, at);
}

/* ------------------------------------------------------------------------------------------------ */

int oracle_eval_mask_column(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  static const char *const req[] = {"n_rows", "column", NULL};
  static const char *const opt[] = {"intervals", "interval_ends", "dense", NULL};
  long long n = 0, col = 0;
  int ends = 0, polarity = 0, rc = -1;
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "n_rows", 1, 1, 1 << 20, &n) ||
      jr_int(r, in, ptr, "column", 1, 0, INT32_MAX, &col) || jr_enum(r, in, ptr, "interval_ends", 0, ENDS, &ends))
    return -1;
  const json_t *ivj = jr_get(r, in, ptr, "intervals", 0, JSON_ARRAY);
  if (!ivj && json_object_get(in, "intervals")) return -1;
  if (!ivj && !json_object_get(in, "dense")) return jr_fail(r, ptr, NULL, "needs intervals, a dense column, or both");
  unsigned char *truth = NULL, *reader = DKB_CALLOC((size_t)n, 1), *half = DKB_CALLOC((size_t)n, 1), *masked = DKB_CALLOC((size_t)n, 1);
  json_t *rep = json_object();
  int32_t iv[4] = {0, 0, 0, 0};
  if (ivj) {
    long long *v = NULL;
    size_t k = 0;
    if (jr_int_array(r, in, ptr, "intervals", 1, INT32_MIN, INT32_MAX, 4, &v, &k)) goto cleanup;
    for (int i = 0; i < 4; i++) iv[i] = (int32_t)v[i];
    free(v);
    char reason[64], detail[256];
    /* The column is the diagonal's column: its diagonal row is `column`. */
    if (flashmask_check(&iv[0], &iv[1], &iv[2], &iv[3], 1, col, n, reason, detail)) {
      rc = oracle_reject(rej, reason, "%s", detail);
      goto cleanup;
    }
    int32_t rd[4] = {iv[0], iv[1] + (ends == 1), iv[2], iv[3] + (ends == 1)};
    int64_t ci[2] = {0, 1};
    struct mask_program m = {.kind = MASK_FLASHMASK, .col_indptr = ci, .uts = &rd[0], .ute = &rd[1], .lts = &rd[2], .lte = &rd[3]};
    struct mask_program h = {.kind = MASK_FLASHMASK, .col_indptr = ci, .uts = &iv[0], .ute = &iv[1], .lts = &iv[2], .lte = &iv[3]};
    for (int64_t q = 0; q < n; q++) {
      reader[q] = (unsigned char)mask_visible(&m, 0, q, 0);
      half[q] = (unsigned char)mask_visible(&h, 0, q, 0);
      masked[q] = !reader[q];
    }
    json_object_set_new(rep, "intervals", json_pack("{s:[i,i],s:[i,i]}", "UT", iv[0], iv[1], "LT", iv[2], iv[3]));
  }
  if (json_object_get(in, "dense")) {
    truth = DKB_CALLOC((size_t)n, 1);
    if (read_dense(r, in, ptr, n, 0, truth, &polarity)) goto cleanup;
    unsigned char *tm = DKB_CALLOC((size_t)n, 1);
    for (int64_t q = 0; q < n; q++) tm[q] = !truth[q];
    int32_t g[4];
    int64_t runs = mask_column_runs(tm, n);
    int ok = flashmask_from_column(tm, n, col, g) == 0;
    json_object_set_new(rep, "truth_masked_rows", rows_json(tm, n, 1));
    json_object_set_new(rep, "runs", json_integer(runs));
    json_object_set_new(rep, "representable", json_boolean(ok));
    json_object_set_new(rep, "gate_intervals", ok ? json_pack("{s:[i,i],s:[i,i]}", "UT", g[0], g[1], "LT", g[2], g[3]) : json_null());
    free(tm);
    if (ivj && !ok) {
      rc = oracle_reject(rej, "runs_exceed_two_intervals",
                         "column %lld hides %lld separate runs of rows; one upper and one lower interval (UT [%d, %d), "
                         "LT [%d, %d)) cannot represent it: use another representation or a dense fallback",
                         col, (long long)runs, iv[0], iv[1], iv[2], iv[3]);
      goto cleanup;
    }
    if (ivj && (rc = diagnose(truth, reader, ends ? half : NULL, n, 1, polarity, rej))) goto cleanup;
    rc = -1;
  }
  if (ivj) {
    json_object_set_new(rep, "masked_rows", rows_json(masked, n, 1));
    json_object_set_new(rep, "visible_rows", rows_json(masked, n, 0));
  }
  *report = rep;
  rep = NULL;
  rc = 0;
cleanup:
  json_decref(rep);
  free(truth); free(reader); free(half); free(masked);
  return rc;
}

/* ------------------------------------------------------------------------------------------------ */

/* Scores [rows][cols] and values [cols][d]. "uniform": scores in [-scale, scale), values in [-1, 1).
 * "exact_arithmetic": a visible score is the row's base or 1000 below it, so every exp(s - m) is 1 or
 * 0 in float64 and every sum is exact (tiled and dense then agree bit for bit, whatever the order);
 * hidden scores lie above every visible one, so any hidden cell that leaks into a max shows; values
 * are multiples of 1/16. */
static void make_scores(struct dkb_rng *g, int exact, double scale, const unsigned char *visible, int64_t rows, int64_t cols,
                        int64_t d, double *s, double *v) {
  for (int64_t i = 0; i < rows; i++) {
    double base = (double)(int64_t)dkb_rng_below(g, 8) - 4;
    for (int64_t k = 0; k < cols; k++) {
      double *c = &s[i * cols + k];
      if (!exact) *c = dkb_rng_uniform(g, -scale, scale);
      else if (visible[i * cols + k]) *c = base - (dkb_rng_unit(g) < 0.5 ? 1000 : 0);
      else *c = base + 1 + (double)(int64_t)dkb_rng_below(g, 8);
    }
  }
  for (int64_t k = 0; k < cols * d; k++)
    v[k] = exact ? ((double)(int64_t)dkb_rng_below(g, 65) - 32) / 16 : dkb_rng_uniform(g, -1, 1);
}

static json_t *class_counts(const int64_t t[3]) {
  return json_pack("{s:I,s:I,s:I}", "FULL", (json_int_t)t[TILE_FULL], "SKIP", (json_int_t)t[TILE_SKIP], "PARTIAL",
                   (json_int_t)t[TILE_PARTIAL]);
}

struct program_in {
  struct mask_program m;
  int64_t ci[2], si[2];
  int32_t *v[4], *sum;      /* the four vectors (as read) and the block summaries */
  int32_t *rd[2];           /* the reader's ends when it reads them inclusively */
};

static void program_release(struct program_in *p) {
  for (int i = 0; i < 4; i++) free(p->v[i]);
  free(p->rd[0]); free(p->rd[1]); free(p->sum);
}

static int read_program(struct jr *r, const json_t *in, const char *ptr, long long cols, long long block, int ends,
                        struct program_in *p) {
  char pp[DKB_PTR_MAX];
  jr_ptr_key(pp, ptr, "program");
  const json_t *pj = jr_get(r, in, ptr, "program", 1, JSON_OBJECT);
  if (!pj) return -1;
  int kind = 0;
  if (jr_enum(r, pj, pp, "kind", 1, KINDS, &kind)) return -1;
  p->m.kind = kind;
  p->ci[0] = 0; p->ci[1] = cols;
  static const char *const fm[] = {"kind", "uts", "ute", "lts", "lte", NULL}, *const sw[] = {"kind", "window", NULL},
                           *const swo[] = {"sink", NULL}, *const plain[] = {"kind", NULL};
  if (kind == MASK_SLIDING_WINDOW) {
    long long w = 1, sk = 0;
    if (jr_keys(r, pj, pp, sw, swo) || jr_int(r, pj, pp, "window", 1, 1, INT32_MAX, &w) ||
        jr_int(r, pj, pp, "sink", 0, 0, INT32_MAX, &sk))
      return -1;
    p->m.window = w; p->m.sink = sk;
    return 0;
  }
  if (kind != MASK_FLASHMASK) return jr_keys(r, pj, pp, plain, NULL);
  static const char *const doc[] = {"kind", "documents", NULL};
  if (json_object_get(pj, "documents")) {   /* a document mask through flashmask_documents */
    long long *len = NULL;
    size_t n = 0;
    if (jr_keys(r, pj, pp, doc, NULL) || jr_int_array(r, pj, pp, "documents", 1, 0, INT32_MAX, -1, &len, &n)) return -1;
    int64_t *l64 = DKB_MALLOC(n * sizeof *l64);
    for (size_t i = 0; i < n; i++) l64[i] = len[i];
    free(len);
    for (int f = 0; f < 4; f++) p->v[f] = DKB_MALLOC((size_t)cols * sizeof(int32_t));
    int bad = flashmask_documents(l64, (int64_t)n, cols, p->v[0], p->v[1], p->v[2], p->v[3]);
    free(l64);
    if (bad) return jr_fail(r, pp, "documents", "document lengths must sum to cols (%lld)", cols);
  } else {
    if (jr_keys(r, pj, pp, fm, NULL)) return -1;
    for (int f = 0; f < 4; f++) {
      long long *x = NULL;
      size_t n = 0;
      if (jr_int_array(r, pj, pp, fm[f + 1], 1, INT32_MIN, INT32_MAX, cols, &x, &n)) return -1;
      p->v[f] = DKB_MALLOC((size_t)cols * sizeof(int32_t));
      for (size_t j = 0; j < n; j++) p->v[f][j] = (int32_t)x[j];
      free(x);
    }
  }
  p->m.col_indptr = p->ci;
  p->m.uts = p->v[0]; p->m.ute = p->v[1]; p->m.lts = p->v[2]; p->m.lte = p->v[3];
  if (ends == 1) {   /* the reader takes [s, e] as closed: its half-open end is e + 1 */
    for (int f = 0; f < 2; f++) {
      p->rd[f] = DKB_MALLOC((size_t)cols * sizeof(int32_t));
      for (long long j = 0; j < cols; j++) p->rd[f][j] = p->v[2 * f + 1][j] + 1;
    }
  }
  p->si[0] = 0;
  p->sum = DKB_MALLOC((size_t)((cols + block - 1) / block) * 8 * sizeof(int32_t));
  flashmask_summary_rows(p->ci, 1, block, p->si);
  flashmask_summarize(p->v[0], p->v[1], p->v[2], p->v[3], cols, block, p->sum);
  p->m.summary_block = block;
  p->m.summary_indptr = p->si;
  p->m.summaries = p->sum;
  return 0;
}

int oracle_eval_mask_program(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  static const char *const req[] = {"rows", "cols", "tile_rows", "tile_cols", "program", "scores", NULL};
  static const char *const opt[] = {"row_position0", "summary_block", "interval_ends", "dense", "classifier",
                                    "partial_tile_masking", "parity_atol", NULL};
  long long rows = 0, cols = 0, tr = 0, tc = 0, q0 = 0, block = 0, seed = 0, dv = 4;
  int ends = 0, classifier = 1, partial = 0, polarity = 0, gen = 0, rc = -1;
  double atol = 0, scale = 4;
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "rows", 1, 1, 4096, &rows) ||
      jr_int(r, in, ptr, "cols", 1, 1, 4096, &cols) || jr_int(r, in, ptr, "tile_rows", 1, 1, 4096, &tr) ||
      jr_int(r, in, ptr, "tile_cols", 1, 1, 4096, &tc) || jr_int(r, in, ptr, "row_position0", 0, -4096, 1 << 20, &q0) ||
      jr_enum(r, in, ptr, "interval_ends", 0, ENDS, &ends) || jr_enum(r, in, ptr, "classifier", 0, CLASSIFIER, &classifier) ||
      jr_enum(r, in, ptr, "partial_tile_masking", 0, PARTIAL, &partial) ||
      jr_num(r, in, ptr, "parity_atol", 0, 0, 1, &atol))
    return -1;
  block = tc;
  if (jr_int(r, in, ptr, "summary_block", 0, 1, 4096, &block)) return -1;
  char sp[DKB_PTR_MAX];
  jr_ptr_key(sp, ptr, "scores");
  const json_t *sj = jr_get(r, in, ptr, "scores", 1, JSON_OBJECT);
  static const char *const GEN[] = {"exact_arithmetic", "uniform", NULL};
  static const char *const sreq[] = {"generator", "seed", NULL}, *const sopt[] = {"d_v", "scale", NULL};
  if (!sj || jr_keys(r, sj, sp, sreq, sopt) || jr_enum(r, sj, sp, "generator", 1, GEN, &gen) ||
      jr_int(r, sj, sp, "seed", 1, 0, INT64_MAX, &seed) || jr_int(r, sj, sp, "d_v", 0, 1, 256, &dv) ||
      jr_num(r, sj, sp, "scale", 0, 0, 1e6, &scale))
    return -1;

  struct program_in P;
  memset(&P, 0, sizeof P);
  size_t cells = (size_t)(rows * cols);
  unsigned char *truth = NULL, *reader = DKB_CALLOC(cells, 1), *half = DKB_CALLOC(cells, 1), *map = NULL;
  double *s = NULL, *v = NULL, *o = NULL, *lse = NULL, *od = NULL, *lsed = NULL;
  json_t *rep = NULL;
  if (read_program(r, in, ptr, cols, block, ends, &P)) goto cleanup;
  if (P.m.kind != MASK_FLASHMASK && (ends || classifier == 2)) {
    jr_fail(r, ptr, ends ? "interval_ends" : "classifier", "applies to flashmask programs only");
    goto cleanup;
  }
  char reason[64], detail[256];
  int64_t bound = q0 + rows > cols ? q0 + rows : cols;   /* rows are positions [0, bound) */
  if (P.m.kind == MASK_FLASHMASK &&
      flashmask_check(P.v[0], P.v[1], P.v[2], P.v[3], cols, 0, bound, reason, detail)) {
    rc = oracle_reject(rej, reason, "%s", detail);
    goto cleanup;
  }
  if (mask_program_check(&P.m, 1, reason, detail)) { rc = oracle_reject(rej, reason, "%s", detail); goto cleanup; }

  /* The reader under test: the program as the implementation reads it. */
  struct mask_program R = P.m;
  if (ends == 1) { R.ute = P.rd[0]; R.lte = P.rd[1]; R.summaries = NULL; R.summary_block = 0; }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = 0; k < cols; k++) {
      reader[i * cols + k] = (unsigned char)mask_visible(&R, 0, q0 + i, k);
      half[i * cols + k] = (unsigned char)mask_visible(&P.m, 0, q0 + i, k);
    }
  rep = json_object();
  if (json_object_get(in, "dense")) {
    truth = DKB_CALLOC(cells, 1);
    if (read_dense(r, in, ptr, rows, cols, truth, &polarity)) goto cleanup;
    unsigned char *col = DKB_CALLOC((size_t)rows, 1);
    int64_t worst_runs = 0, worst_col = -1;
    for (int64_t k = 0; k < cols; k++) {
      for (int64_t i = 0; i < rows; i++) col[i] = !truth[i * cols + k];
      int64_t runs = mask_column_runs(col, rows);
      if (runs > 2 && runs > worst_runs) { worst_runs = runs; worst_col = k; }
    }
    free(col);
    if (worst_col >= 0 && P.m.kind == MASK_FLASHMASK) {
      rc = oracle_reject(rej, "runs_exceed_two_intervals", "key column %lld of the truth hides %lld runs; two intervals per "
                         "column cannot represent it", (long long)worst_col, (long long)worst_runs);
      goto cleanup;
    }
    if ((rc = diagnose(truth, reader, ends ? half : NULL, rows, cols, polarity, rej))) goto cleanup;
    rc = -1;
    json_object_set_new(rep, "dense_truth", json_pack("{s:s,s:I,s:I}", "polarity", POLARITY[polarity], "cells",
                                                      (json_int_t)cells, "disagreements", (json_int_t)0));
  }

  /* Tiles, then execution through the classifier and partial policy under test. */
  struct mask_exec ex = {tr, tc, (enum mask_classifier)classifier, (enum mask_partial)partial};
  int64_t rt = (rows + tr - 1) / tr, ct = (cols + tc - 1) / tc;
  map = DKB_CALLOC((size_t)(rt * ct), 1);
  struct mask_tile_counts cnt = {.map = map}, prog = {0};
  struct mask_exec pex = ex;
  pex.classifier = MASK_CLASSIFY_PROGRAM;
  mask_classify_tiles(&R, 0, q0, rows, cols, &pex, &prog);
  s = DKB_MALLOC(cells * sizeof *s); v = DKB_MALLOC((size_t)(cols * dv) * sizeof *v);
  o = DKB_MALLOC((size_t)(rows * dv) * sizeof *o); od = DKB_MALLOC((size_t)(rows * dv) * sizeof *od);
  lse = DKB_MALLOC((size_t)rows * sizeof *lse); lsed = DKB_MALLOC((size_t)rows * sizeof *lsed);
  struct dkb_rng g;
  dkb_rng_seed(&g, (uint64_t)seed);
  make_scores(&g, gen == 0, scale, half, rows, cols, dv, s, v);
  mask_attention_tiled(&R, 0, q0, rows, cols, s, v, dv, &ex, o, lse, &cnt);
  mask_attention_dense(&P.m, 0, q0, rows, cols, s, v, dv, od, lsed);
  struct dkb_cmp co, cl;
  dkb_compare_f64(o, od, (size_t)(rows * dv), atol, 0, &co);
  dkb_compare_f64(lse, lsed, (size_t)rows, atol, 0, &cl);
  if (cnt.unsafe_full || cnt.unsafe_skip) {
    rc = oracle_reject(rej, classifier == 2 ? "summary_overlap_as_membership" : "unsafe_tile_class",
                       "%lld tiles classified FULL hold a hidden cell and %lld classified SKIP hold a visible cell; "
                       "output error %.3g, LSE error %.3g against the dense reference; route undecided tiles to PARTIAL",
                       (long long)cnt.unsafe_full, (long long)cnt.unsafe_skip, co.max_abs, cl.max_abs);
    goto cleanup;
  }
  if (!co.pass || !cl.pass) {
    rc = oracle_reject(rej, partial ? "partial_mask_after_softmax" : "tiled_dense_mismatch",
                       "tiled execution differs from the dense float64 reference: output error %.3g (%zu violations), "
                       "LSE error %.3g (%zu) beyond atol %.3g%s", co.max_abs, co.violations, cl.max_abs, cl.violations, atol,
                       partial ? "; hidden scores entered the tile max and denominator: mask scores before the online update" : "");
    goto cleanup;
  }
  json_t *tmap = json_array();
  for (int64_t i = 0; i < rt; i++) {
    char line[4097];
    for (int64_t j = 0; j < ct && j < 4096; j++) line[j] = "SFP"[map[i * ct + j]];
    line[ct < 4096 ? ct : 4096] = 0;
    json_array_append_new(tmap, json_string(line));
  }
  json_t *sums = json_array();
  for (int64_t b = 0; P.sum && b < P.si[1]; b++) {
    json_t *row = json_array();
    for (int f = 0; f < 8; f++) json_array_append_new(row, json_integer(P.sum[b * 8 + f]));
    json_array_append_new(sums, row);
  }
  int64_t masked_cells = 0, empty_rows = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t vis = 0;
    for (int64_t k = 0; k < cols; k++) vis += half[i * cols + k];
    masked_cells += cols - vis;
    empty_rows += vis == 0;
  }
  json_object_set_new(rep, "classifier", json_string(CLASSIFIER[classifier]));
  json_object_set_new(rep, "tiles", class_counts(cnt.tiles));
  json_object_set_new(rep, "exact_tiles", class_counts(cnt.exact));
  json_object_set_new(rep, "program_tiles", class_counts(prog.tiles));
  json_object_set_new(rep, "tile_count", json_integer(rt * ct));
  json_object_set_new(rep, "tile_map", tmap);
  json_object_set_new(rep, "skipped_cells", json_integer(cnt.skipped_cells));
  json_object_set_new(rep, "masked_cells", json_integer(masked_cells));
  json_object_set_new(rep, "all_masked_rows", json_integer(empty_rows));
  json_object_set_new(rep, "unsafe_full", json_integer(cnt.unsafe_full));
  json_object_set_new(rep, "unsafe_skip", json_integer(cnt.unsafe_skip));
  json_object_set_new(rep, "conservative_partials", json_integer(prog.conservative));
  json_object_set_new(rep, "block_summaries", sums);
  json_object_set_new(rep, "output_max_abs_err", oracle_num(co.max_abs));
  json_object_set_new(rep, "lse_max_abs_err", oracle_num(cl.max_abs));
  json_object_set_new(rep, "O", oracle_num_array(o, (size_t)(rows * dv)));
  json_object_set_new(rep, "LSE", oracle_num_array(lse, (size_t)rows));
  *report = rep;
  rep = NULL;
  rc = 0;
cleanup:
  json_decref(rep);
  program_release(&P);
  free(truth); free(reader); free(half); free(map);
  free(s); free(v); free(o); free(od); free(lse); free(lsed);
  return rc;
}

/* ------------------------------------------------------------------------------------------------ */

static const char *const PHASES[] = {"decode", "prefill", "training", NULL};

/* A phase claim: {"claim": {"phase", "query_rows"?}, "evidence": {"source", "api"?, "phase", "batch"?,
 * "query_rows"?}}. Evidence supports a claim only at the claim's own coordinate (0x06I). */
static int phase_claim(struct jr *r, const json_t *in, const char *ptr, json_t **out, struct oracle_reject *rej) {
  *out = json_null();
  const json_t *c = json_object_get(in, "decode_claim");
  if (!c) return 0;
  char p[DKB_PTR_MAX], cp[DKB_PTR_MAX], ep[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, "decode_claim");
  static const char *const req[] = {"claim", "evidence", NULL};
  if (jr_keys(r, c, p, req, NULL)) return -1;
  const json_t *cl = json_object_get(c, "claim"), *ev = json_object_get(c, "evidence");
  jr_ptr_key(cp, p, "claim");
  jr_ptr_key(ep, p, "evidence");
  static const char *const creq[] = {"phase", NULL}, *const copt[] = {"query_rows", "statement", NULL};
  static const char *const ereq[] = {"source", "phase", NULL}, *const eopt[] = {"api", "batch", "query_rows", NULL};
  int cph = 0, eph = 0;
  long long cq = -1, eq = -1, batch = -1;
  const char *source = NULL, *statement = "";
  if (jr_keys(r, cl, cp, creq, copt) || jr_enum(r, cl, cp, "phase", 1, PHASES, &cph) ||
      jr_int(r, cl, cp, "query_rows", 0, 1, INT32_MAX, &cq) || jr_str(r, cl, cp, "statement", 0, &statement) ||
      jr_keys(r, ev, ep, ereq, eopt) || jr_str(r, ev, ep, "source", 1, &source) || jr_enum(r, ev, ep, "phase", 1, PHASES, &eph) ||
      jr_int(r, ev, ep, "batch", 0, 1, INT32_MAX, &batch) || jr_int(r, ev, ep, "query_rows", 0, 1, INT32_MAX, &eq))
    return -1;
  const json_t *api = json_object_get(ev, "api");
  if (api && !json_is_array(api)) return jr_fail(r, ep, "api", "must be an array of API names");
  if (eph != cph || (cq > 0 && eq > 0 && cq != eq))
    return oracle_reject(rej, cph == 0 ? "prefill_evidence_as_decode_proof" : "phase_mismatch",
                         "the claim is about %s%s, but '%s' is %s evidence%s; evidence supports a claim only at its own "
                         "API and shape coordinate", PHASES[cph], cq == 1 ? " with one query row" : "", source, PHASES[eph],
                         eq > 0 ? " with many query rows" : "");
  json_decref(*out);
  *out = json_pack("{s:s,s:s}", "phase", PHASES[cph], "source", source);
  return 0;
}

int oracle_eval_mask_ledger(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  static const char *const req[] = {"N", "block", NULL}, *const opt[] = {"traffic_claim", "decode_claim", NULL};
  long long N = 0, block = 0;
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "N", 1, 1, 1LL << 26, &N) ||
      jr_int(r, in, ptr, "block", 1, 1, 1 << 20, &block))
    return -1;
  struct mask_payload pl;
  mask_payload_ledger(N, N, block, &pl);
  json_t *measured = NULL, *phase = NULL;
  int rc = oracle_traffic_claim(r, in, ptr, "traffic_claim", pl.interval_bytes + pl.summary_bytes, &measured, rej);
  if (rc) return rc;
  if ((rc = phase_claim(r, in, ptr, &phase, rej))) { json_decref(measured); return rc; }
  *report = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "dense_mask_bytes", (json_int_t)pl.dense_bytes, "dense_mask_mib",
                      (json_int_t)(pl.dense_bytes >> 20), "interval_bytes", (json_int_t)pl.interval_bytes, "interval_mib",
                      (json_int_t)(pl.interval_bytes >> 20), "summary_bytes", (json_int_t)pl.summary_bytes, "summary_kib",
                      (json_int_t)(pl.summary_bytes >> 10), "measured_traffic", measured, "decode_claim", phase);
  return 0;
}

/* ------------------------------------------------------------------------------------------------ */

/* Random programs: every sub-rectangle tile against the exact class, tiled against dense, and the
 * column gate against run counts. */
int oracle_eval_mask_laws(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"seed", "trials", NULL}, *const opt[] = {"rows_max", "cols_max", "d_v", NULL};
  long long seed = 0, trials = 0, rmax = 12, cmax = 12, dv = 3;
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "seed", 1, 0, INT64_MAX, &seed) ||
      jr_int(r, in, ptr, "trials", 1, 1, 100000, &trials) || jr_int(r, in, ptr, "rows_max", 0, 1, 64, &rmax) ||
      jr_int(r, in, ptr, "cols_max", 0, 1, 64, &cmax) || jr_int(r, in, ptr, "d_v", 0, 1, 64, &dv))
    return -1;
  struct dkb_rng g;
  dkb_rng_seed(&g, (uint64_t)seed);
  int64_t nmax = rmax > cmax ? rmax : cmax;
  int32_t *vec = DKB_MALLOC((size_t)(4 * cmax) * sizeof *vec), *sum = DKB_MALLOC((size_t)(8 * cmax) * sizeof *sum);
  double *s = DKB_MALLOC((size_t)(rmax * cmax) * sizeof *s), *v = DKB_MALLOC((size_t)(cmax * dv) * sizeof *v);
  double *o = DKB_MALLOC((size_t)(rmax * dv) * sizeof *o), *od = DKB_MALLOC((size_t)(rmax * dv) * sizeof *od);
  double *l = DKB_MALLOC((size_t)rmax * sizeof *l), *ld = DKB_MALLOC((size_t)rmax * sizeof *ld);
  unsigned char *col = DKB_MALLOC((size_t)nmax), *dummy = DKB_CALLOC(1, 1);
  long long tiles = 0, unsafe = 0, arith_mismatch = 0, conservative = 0, columns = 0, gate_fail = 0, unrep = 0;
  double err = 0;
  for (long long t = 0; t < trials; t++) {
    int64_t rows = 1 + (int64_t)dkb_rng_below(&g, (uint64_t)rmax), cols = 1 + (int64_t)dkb_rng_below(&g, (uint64_t)cmax);
    int64_t ci[2] = {0, cols}, si[2], blk = 1 + (int64_t)dkb_rng_below(&g, 4), n_rows = rows > cols ? rows : cols;
    struct mask_program m = {.kind = (enum mask_kind)(t % MASK_KIND_COUNT), .window = 1 + (int64_t)dkb_rng_below(&g, 6),
                             .sink = (int64_t)dkb_rng_below(&g, 3), .col_indptr = ci};
    if (m.kind == MASK_FLASHMASK) {
      flashmask_random(&g, cols, 0, n_rows, 0.3, vec, vec + cmax, vec + 2 * cmax, vec + 3 * cmax);
      m.uts = vec; m.ute = vec + cmax; m.lts = vec + 2 * cmax; m.lte = vec + 3 * cmax;
      flashmask_summary_rows(ci, 1, blk, si);
      flashmask_summarize(m.uts, m.ute, m.lts, m.lte, cols, blk, sum);
      if (t & 4) { m.summary_block = blk; m.summary_indptr = si; m.summaries = sum; }
    }
    for (int64_t q0 = 0; q0 < rows; q0++)
      for (int64_t q1 = q0 + 1; q1 <= rows; q1++)
        for (int64_t k0 = 0; k0 < cols; k0++)
          for (int64_t k1 = k0 + 1; k1 <= cols; k1++) {
            enum tile_class c = mask_tile_class(&m, 0, q0, q1, k0, k1), x = mask_tile_class_exact(&m, 0, q0, q1, k0, k1);
            tiles++;
            unsafe += (c == TILE_FULL || c == TILE_SKIP) && c != x;
            arith_mismatch += m.kind != MASK_FLASHMASK && c != x;
            conservative += c == TILE_PARTIAL && x != TILE_PARTIAL;
          }
    struct mask_exec ex = {1 + (int64_t)dkb_rng_below(&g, 4), 1 + (int64_t)dkb_rng_below(&g, 4), MASK_CLASSIFY_PROGRAM,
                           MASK_PARTIAL_BEFORE_UPDATE};
    make_scores(&g, 0, 6, dummy, rows, cols, dv, s, v);
    mask_attention_tiled(&m, 0, 0, rows, cols, s, v, dv, &ex, o, l, NULL);
    mask_attention_dense(&m, 0, 0, rows, cols, s, v, dv, od, ld);
    struct dkb_cmp a, b;
    dkb_compare_f64(o, od, (size_t)(rows * dv), 0, 0, &a);
    dkb_compare_f64(l, ld, (size_t)rows, 0, 0, &b);
    if (a.nan_got || b.nan_got || a.inf_got || b.inf_got) err = NAN;
    err = fmax(err, fmax(a.max_abs, b.max_abs));
    /* The gate: a random column with 0..5 runs; representable iff it round-trips exactly. */
    int64_t n = n_rows, diag = (int64_t)dkb_rng_below(&g, (uint64_t)n);
    for (int64_t q = 0; q < n; q++) col[q] = dkb_rng_unit(&g) < 0.35;
    int32_t iv[4];
    int ok = flashmask_from_column(col, n, diag, iv) == 0;
    int64_t runs = mask_column_runs(col, n);
    char rs[64], dt[256];
    columns++;
    unrep += !ok;
    if (ok) {
      int64_t c2[2] = {0, 1};
      struct mask_program one = {.kind = MASK_FLASHMASK, .col_indptr = c2, .uts = &iv[0], .ute = &iv[1], .lts = &iv[2], .lte = &iv[3]};
      for (int64_t q = 0; q < n; q++) gate_fail += mask_visible(&one, 0, q, 0) == col[q];
      gate_fail += flashmask_check(&iv[0], &iv[1], &iv[2], &iv[3], 1, diag, n, rs, dt) != 0;
    } else {
      gate_fail += runs <= 1;   /* zero or one run always fits */
    }
  }
  *report = json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I}", "trials", (json_int_t)trials, "tiles_checked", (json_int_t)tiles,
                      "unsafe_decisions", (json_int_t)unsafe, "interval_arithmetic_mismatches", (json_int_t)arith_mismatch,
                      "conservative_partials", (json_int_t)conservative, "tiled_max_abs_err", oracle_num(err),
                      "columns_checked", (json_int_t)columns, "unrepresentable_columns", (json_int_t)unrep,
                      "gate_failures", (json_int_t)gate_fail);
  free(vec); free(sum); free(s); free(v); free(o); free(od); free(l); free(ld); free(col); free(dummy);
  return 0;
}
