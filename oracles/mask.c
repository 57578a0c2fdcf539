/* mask.c - mask programs of article 0x05-0x06 (see mask.h): the visibility predicate, exact and
 * interval-arithmetic tile classes, FlashMask vectors, block summaries and the conservative classifier,
 * and tiled execution over the split-state algebra (split_state.h owns every softmax number). */
#include "oracles/mask.h"
#include "oracles/rng.h"
#include "oracles/split_state.h"
#include "lib/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KIND_NAMES[MASK_KIND_COUNT] = {"none", "causal", "sliding_window", "flashmask"};
static const char *const POLARITY_NAMES[] = {"true_means_visible", "true_means_masked"};
static const char *const CLASS_NAMES[] = {"SKIP", "FULL", "PARTIAL"};

const char *mask_kind_name(enum mask_kind k) { return (unsigned)k < MASK_KIND_COUNT ? KIND_NAMES[k] : "?"; }

int mask_kind_parse(const char *name) {
  for (int k = 0; k < MASK_KIND_COUNT; k++)
    if (!strcmp(name, KIND_NAMES[k])) return k;
  return -1;
}

const char *tile_class_name(enum tile_class c) { return (unsigned)c <= TILE_PARTIAL ? CLASS_NAMES[c] : "?"; }

const char *mask_polarity_name(enum mask_polarity p) { return (unsigned)p <= MASK_TRUE_MEANS_MASKED ? POLARITY_NAMES[p] : "?"; }

int mask_polarity_parse(const char *name) {
  for (int p = 0; p <= MASK_TRUE_MEANS_MASKED; p++)
    if (!strcmp(name, POLARITY_NAMES[p])) return p;
  return -1;
}

void mask_to_visible(const unsigned char *cells, int64_t n, enum mask_polarity p, unsigned char *visible) {
  for (int64_t i = 0; i < n; i++) visible[i] = (cells[i] != 0) == (p == MASK_TRUE_MEANS_VISIBLE);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t n_cols_of(const struct mask_program *m, int64_t b) { return m->col_indptr[b + 1] - m->col_indptr[b]; }

int mask_visible(const struct mask_program *m, int64_t b, int64_t q, int64_t k) {
  if (k < 0) return 0;
  switch (m->kind) {
  case MASK_NONE: return 1;
  case MASK_CAUSAL: return k <= q;
  case MASK_SLIDING_WINDOW: return k <= q && (k > q - m->window || k < m->sink);
  case MASK_FLASHMASK: {
    if (k >= n_cols_of(m, b)) return 0;
    int64_t c = m->col_indptr[b] + k;   /* masked iff q in [UTS, UTE) or q in [LTS, LTE), half-open */
    return !((q >= m->uts[c] && q < m->ute[c]) || (q >= m->lts[c] && q < m->lte[c]));
  }
  default: return 0;
  }
}

enum tile_class mask_tile_class_exact(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1, int64_t k0,
                                      int64_t k1) {
  int64_t vis = 0, cells = 0;
  for (int64_t q = q0; q < q1; q++)
    for (int64_t k = k0; k < k1; k++) {
      vis += mask_visible(m, b, q, k);
      cells++;
    }
  return vis == 0 ? TILE_SKIP : vis == cells ? TILE_FULL : TILE_PARTIAL;
}

void flashmask_summarize(const int32_t *uts, const int32_t *ute, const int32_t *lts, const int32_t *lte, int64_t n,
                         int64_t block, int32_t *out) {
  const int32_t *v[4] = {uts, ute, lts, lte};
  for (int64_t j0 = 0, r = 0; j0 < n; j0 += block, r++)
    for (int f = 0; f < 4; f++) {
      int32_t lo = v[f][j0], hi = v[f][j0];
      for (int64_t j = j0 + 1; j < j0 + block && j < n; j++) {
        if (v[f][j] < lo) lo = v[f][j];
        if (v[f][j] > hi) hi = v[f][j];
      }
      out[r * 8 + 2 * f] = lo;
      out[r * 8 + 2 * f + 1] = hi;
    }
}

/* One interval family against rows [q0, q1) (0x06D): every column's interval covers the rows, none
 * meets them, or undecided. */
enum family { COVERS, DISJOINT, MAY_OVERLAP };
static enum family family_relation(int64_t q0, int64_t q1, int32_t s_min, int32_t s_max, int32_t e_min, int32_t e_max) {
  if (q0 >= s_max && q1 <= e_min) return COVERS;
  if (q1 > s_min && q0 < e_max) return MAY_OVERLAP;
  return DISJOINT;
}

enum tile_class flashmask_classify(const int32_t s[8], int64_t q0, int64_t q1) {
  if (q0 >= q1) return TILE_SKIP;
  enum family up = family_relation(q0, q1, s[0], s[1], s[2], s[3]), lo = family_relation(q0, q1, s[4], s[5], s[6], s[7]);
  if (up == COVERS || lo == COVERS) return TILE_SKIP;
  if (up == DISJOINT && lo == DISJOINT) return TILE_FULL;
  return TILE_PARTIAL;
}

/* The invalid classifier of 0x06J: an undecided summary is taken as exact membership. */
static enum tile_class classify_summary_as_membership(const int32_t s[8], int64_t q0, int64_t q1) {
  if (q0 >= q1) return TILE_SKIP;
  enum family up = family_relation(q0, q1, s[0], s[1], s[2], s[3]), lo = family_relation(q0, q1, s[4], s[5], s[6], s[7]);
  return up != DISJOINT || lo != DISJOINT ? TILE_SKIP : TILE_FULL;
}

static void summary_init(int32_t out[8]) {
  for (int f = 0; f < 4; f++) { out[2 * f] = INT32_MAX; out[2 * f + 1] = INT32_MIN; }
}
static void summary_fold(int32_t out[8], const int32_t s[8]) {
  for (int f = 0; f < 4; f++) {
    if (s[2 * f] < out[2 * f]) out[2 * f] = s[2 * f];
    if (s[2 * f + 1] > out[2 * f + 1]) out[2 * f + 1] = s[2 * f + 1];
  }
}

void flashmask_range_summary(const struct mask_program *m, int64_t b, int64_t k0, int64_t k1, int32_t out[8]) {
  int64_t n = n_cols_of(m, b), blk = m->summaries ? m->summary_block : 0;
  summary_init(out);
  for (int64_t k = k0; k < k1;) {
    if (blk > 0 && k % blk == 0 && min64(k + blk, n) <= k1) {   /* a whole block: one precomputed row */
      summary_fold(out, m->summaries + (m->summary_indptr[b] + k / blk) * 8);
      k = min64(k + blk, n);
      continue;
    }
    int64_t c = m->col_indptr[b] + k;
    int32_t col[8] = {m->uts[c], m->uts[c], m->ute[c], m->ute[c], m->lts[c], m->lts[c], m->lte[c], m->lte[c]};
    summary_fold(out, col);
    k++;
  }
}

/* Exact classes by interval arithmetic, O(1): CAUSAL and SLIDING_WINDOW. */
static enum tile_class sliding_class(int64_t q0, int64_t q1, int64_t k0, int64_t k1, int64_t window, int64_t sink) {
  /* FULL: every key is causal (k1 - 1 <= q0) and no cell has sink <= k <= q - window. */
  int64_t ks = max64(k0, sink);
  int full = k1 - 1 <= q0 && !(ks < k1 && ks <= q1 - 1 - window);
  if (full) return TILE_FULL;
  /* Some visible cell: a sink key k0 < min(k1, sink) with k0 <= q1 - 1, or a row q in
   * [max(q0, k0), min(q1 - 1, k1 + window - 2)] whose window (q - window, q] meets [k0, k1). */
  int sink_vis = k0 < min64(k1, sink) && k0 <= q1 - 1;
  int win_vis = max64(q0, k0) <= min64(q1 - 1, k1 + window - 2);
  return sink_vis || win_vis ? TILE_PARTIAL : TILE_SKIP;
}

enum tile_class mask_tile_class(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  if (k0 < 0) k0 = 0;
  if (q0 >= q1 || k0 >= k1) return TILE_SKIP;
  switch (m->kind) {
  case MASK_NONE: return TILE_FULL;
  case MASK_CAUSAL: return k1 - 1 <= q0 ? TILE_FULL : k0 > q1 - 1 ? TILE_SKIP : TILE_PARTIAL;
  case MASK_SLIDING_WINDOW: return sliding_class(q0, q1, k0, k1, m->window, m->sink);
  case MASK_FLASHMASK: {
    int64_t n = n_cols_of(m, b), kin = min64(k1, n);
    if (k0 >= kin) return TILE_SKIP;   /* no column of the request: every key hidden */
    int32_t s[8];
    flashmask_range_summary(m, b, k0, kin, s);
    enum tile_class c = flashmask_classify(s, q0, q1);
    return c == TILE_FULL && kin < k1 ? TILE_PARTIAL : c;
  }
  default: return TILE_PARTIAL;
  }
}

int64_t mask_column_runs(const unsigned char *masked, int64_t n) {
  int64_t runs = 0;
  for (int64_t q = 0; q < n; q++) runs += masked[q] && (q == 0 || !masked[q - 1]);
  return runs;
}

int flashmask_from_column(const unsigned char *masked, int64_t n_rows, int64_t diag, int32_t iv[4]) {
  int64_t s[2] = {0, 0}, e[2] = {0, 0}, runs = 0;
  for (int64_t q = 0; q < n_rows; q++) {
    if (!masked[q] || (q > 0 && masked[q - 1])) continue;
    if (runs == 2) return -1;   /* a third run: two intervals cannot hold it */
    int64_t end = q;
    while (end < n_rows && masked[end]) end++;
    s[runs] = q;
    e[runs++] = end;
  }
  iv[0] = iv[1] = 0;
  iv[2] = iv[3] = (int32_t)n_rows;
  if (runs == 2) {
    if (diag >= 0 && (e[0] > diag + 1 || s[1] < diag)) return -1;   /* both runs on one side */
    iv[0] = (int32_t)s[0]; iv[1] = (int32_t)e[0]; iv[2] = (int32_t)s[1]; iv[3] = (int32_t)e[1];
  } else if (runs == 1) {
    if (diag < 0 || e[0] <= diag + 1) { iv[0] = (int32_t)s[0]; iv[1] = (int32_t)e[0]; }
    else if (s[0] >= diag) { iv[2] = (int32_t)s[0]; iv[3] = (int32_t)e[0]; }
    else { iv[0] = (int32_t)s[0]; iv[1] = (int32_t)(diag + 1); iv[2] = (int32_t)(diag + 1); iv[3] = (int32_t)e[0]; }
  }
  return 0;
}

#define FAIL(r, ...) (snprintf(reason, 64, "%s", r), snprintf(detail, 256, __VA_ARGS__), -1)

int flashmask_check(const int32_t *uts, const int32_t *ute, const int32_t *lts, const int32_t *lte, int64_t n_cols,
                    int64_t first_col, int64_t n_rows, char reason[64], char detail[256]) {
  for (int64_t j = 0; j < n_cols; j++) {
    int64_t d = first_col + j;
    const char *why = NULL;
    if (uts[j] < 0 || uts[j] > ute[j] || ute[j] > n_rows) why = "the upper interval is reversed or outside the rows";
    else if (lts[j] < 0 || lts[j] > lte[j] || lte[j] > n_rows) why = "the lower interval is reversed or outside the rows";
    else if (uts[j] < ute[j] && ute[j] > d + 1) why = "the upper interval reaches below the diagonal";
    else if (lts[j] < lte[j] && lts[j] < d) why = "the lower interval starts above the diagonal";
    else if (uts[j] < ute[j] && lts[j] < lte[j] && ute[j] > lts[j]) why = "the two intervals overlap";
    if (why)
      return FAIL("malformed_triangle_intervals", "column %lld (diagonal row %lld): UT [%d, %d), LT [%d, %d) over %lld rows: %s",
                  (long long)j, (long long)d, uts[j], ute[j], lts[j], lte[j], (long long)n_rows, why);
  }
  return 0;
}

int mask_program_check(const struct mask_program *m, int64_t B, char reason[64], char detail[256]) {
  if ((unsigned)m->kind >= MASK_KIND_COUNT) return FAIL("bad_kind", "unknown mask kind %d", (int)m->kind);
  if (m->kind == MASK_SLIDING_WINDOW && (m->window < 1 || m->sink < 0))
    return FAIL("bad_window", "a sliding window needs window >= 1 and sink >= 0 (got %lld, %lld)", (long long)m->window,
                (long long)m->sink);
  if (m->kind != MASK_FLASHMASK) return 0;
  if (!m->col_indptr || !m->uts || !m->ute || !m->lts || !m->lte || m->col_indptr[0] != 0)
    return FAIL("col_indptr_malformed", "a FlashMask program needs col_indptr from 0 and four vectors");
  for (int64_t b = 0; b < B; b++) {
    int64_t c0 = m->col_indptr[b], n = m->col_indptr[b + 1] - c0;
    if (n < 0) return FAIL("col_indptr_malformed", "col_indptr decreases at request %lld", (long long)b);
    if (flashmask_check(m->uts + c0, m->ute + c0, m->lts + c0, m->lte + c0, n, 0, INT32_MAX, reason, detail)) {
      char d2[256];
      snprintf(d2, sizeof d2, "request %lld: %s", (long long)b, detail);
      memcpy(detail, d2, 256);
      return -1;
    }
    if (!m->summaries || m->summary_block <= 0) continue;
    int64_t rows = (n + m->summary_block - 1) / m->summary_block;
    if (m->summary_indptr[b + 1] - m->summary_indptr[b] != rows)
      return FAIL("stale_summaries", "request %lld has %lld summary rows for %lld columns in blocks of %lld", (long long)b,
                  (long long)(m->summary_indptr[b + 1] - m->summary_indptr[b]), (long long)n, (long long)m->summary_block);
    int32_t *fresh = DKB_MALLOC((size_t)rows * 8 * sizeof *fresh);
    flashmask_summarize(m->uts + c0, m->ute + c0, m->lts + c0, m->lte + c0, n, m->summary_block, fresh);
    int same = !memcmp(fresh, m->summaries + m->summary_indptr[b] * 8, (size_t)rows * 8 * sizeof *fresh);
    free(fresh);
    if (!same) return FAIL("stale_summaries", "request %lld: the block summaries differ from its vectors", (long long)b);
  }
  return 0;
}

int flashmask_documents(const int64_t *doc_len, int64_t n_docs, int64_t N, int32_t *uts, int32_t *ute, int32_t *lts,
                        int32_t *lte) {
  int64_t total = 0;
  for (int64_t i = 0; i < n_docs; i++) {
    if (doc_len[i] < 0) return -1;
    total += doc_len[i];
  }
  if (total != N || N > INT32_MAX) return -1;
  for (int64_t i = 0, s = 0; i < n_docs; s += doc_len[i++])
    for (int64_t j = s; j < s + doc_len[i]; j++) {
      uts[j] = 0;                      /* rows before the key: causal, and all earlier documents */
      ute[j] = (int32_t)j;
      lts[j] = (int32_t)(s + doc_len[i]);   /* rows of every later document */
      lte[j] = (int32_t)N;
    }
  return 0;
}

int64_t flashmask_summary_rows(const int64_t *col_indptr, int64_t B, int64_t block, int64_t *summary_indptr) {
  summary_indptr[0] = 0;
  for (int64_t b = 0; b < B; b++)
    summary_indptr[b + 1] = summary_indptr[b] + (col_indptr[b + 1] - col_indptr[b] + block - 1) / block;
  return summary_indptr[B];
}

void mask_payload_ledger(int64_t n_rows, int64_t n_cols, int64_t block, struct mask_payload *out) {
  out->dense_bytes = n_rows * n_cols;
  out->interval_bytes = 4 * n_cols * 4;
  out->summary_bytes = 8 * ((n_cols + block - 1) / block) * 4;
}

static enum tile_class choose_class(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
                                    enum mask_classifier cl) {
  if (cl == MASK_CLASSIFY_EXACT) return mask_tile_class_exact(m, b, q0, q1, k0, k1);
  if (cl == MASK_CLASSIFY_SUMMARY_AS_MEMBERSHIP && m->kind == MASK_FLASHMASK) {
    int32_t s[8];
    flashmask_range_summary(m, b, k0, min64(k1, n_cols_of(m, b)), s);
    return classify_summary_as_membership(s, q0, q1);
  }
  return mask_tile_class(m, b, q0, q1, k0, k1);
}

/* Classifies tile (ti, tj), audits it and counts it; returns the chosen class. */
static enum tile_class audit_tile(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                                  const struct mask_exec *ex, int64_t ti, int64_t tj, struct mask_tile_counts *c) {
  int64_t r0 = ti * ex->tile_rows, r1 = min64(r0 + ex->tile_rows, n_rows);
  int64_t k0 = tj * ex->tile_cols, k1 = min64(k0 + ex->tile_cols, n_keys);
  enum tile_class got = choose_class(m, b, q_pos0 + r0, q_pos0 + r1, k0, k1, ex->classifier);
  enum tile_class exact = mask_tile_class_exact(m, b, q_pos0 + r0, q_pos0 + r1, k0, k1);
  if (c) {
    c->tiles[got]++;
    c->exact[exact]++;
    if (got == TILE_SKIP) c->skipped_cells += (r1 - r0) * (k1 - k0);
    c->unsafe_full += got == TILE_FULL && exact != TILE_FULL;
    c->unsafe_skip += got == TILE_SKIP && exact != TILE_SKIP;
    c->conservative += got == TILE_PARTIAL && exact != TILE_PARTIAL;
    if (c->map) c->map[ti * ((n_keys + ex->tile_cols - 1) / ex->tile_cols) + tj] = (unsigned char)got;
  }
  return got;
}

static void counts_reset(struct mask_tile_counts *c) {
  unsigned char *map = c->map;
  memset(c, 0, sizeof *c);
  c->map = map;
}

void mask_classify_tiles(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                         const struct mask_exec *ex, struct mask_tile_counts *counts) {
  counts_reset(counts);
  for (int64_t ti = 0; ti * ex->tile_rows < n_rows; ti++)
    for (int64_t tj = 0; tj * ex->tile_cols < n_keys; tj++) audit_tile(m, b, q_pos0, n_rows, n_keys, ex, ti, tj, counts);
}

/* The invalid PARTIAL update of 0x06J: the tile's max and denominator over every cell, hidden ones
 * included, and a numerator with the hidden weights zeroed afterwards. */
static void partial_after_update(const double *s, const double *v, const unsigned char *vis, size_t k0, size_t k1,
                                 size_t d, struct ss_state *all, struct ss_state *seen) {
  ss_summarize(s, v, NULL, k0, k1, d, SS_F64, all);
  ss_summarize(s, v, vis, k0, k1, d, SS_F64, seen);
  double w = seen->valid ? exp(seen->m - all->m) : 0.0;
  for (size_t x = 0; x < d; x++) all->u[x] = seen->u[x] * w;
}

int mask_attention_tiled(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                         const double *scores, const double *values, int64_t d, const struct mask_exec *ex, double *o,
                         double *lse, struct mask_tile_counts *counts) {
  if (n_rows < 0 || n_keys < 0 || d < 1 || ex->tile_rows < 1 || ex->tile_cols < 1) return -1;
  size_t D = (size_t)d;
  struct ss_state *row = DKB_CALLOC((size_t)n_rows + 2, sizeof *row);
  double *ubuf = DKB_CALLOC(((size_t)n_rows + 2) * D, sizeof *ubuf);
  unsigned char *vis = DKB_CALLOC((size_t)n_keys + 1, 1);
  for (int64_t i = 0; i < n_rows + 2; i++) row[i].u = ubuf + (size_t)i * D;
  struct ss_state *tile = &row[n_rows], *aux = &row[n_rows + 1];
  for (int64_t i = 0; i < n_rows; i++) ss_empty(&row[i], D);
  if (counts) counts_reset(counts);
  for (int64_t ti = 0; ti * ex->tile_rows < n_rows; ti++)
    for (int64_t tj = 0; tj * ex->tile_cols < n_keys; tj++) {
      enum tile_class c = audit_tile(m, b, q_pos0, n_rows, n_keys, ex, ti, tj, counts);
      int64_t r0 = ti * ex->tile_rows, r1 = min64(r0 + ex->tile_rows, n_rows);
      size_t k0 = (size_t)(tj * ex->tile_cols), k1 = (size_t)min64((int64_t)k0 + ex->tile_cols, n_keys);
      for (int64_t i = r0; i < r1; i++) {
        const double *s = scores + (size_t)i * (size_t)n_keys;
        if (c == TILE_SKIP) ss_empty(tile, D);                 /* the empty identity: no K/V, no scores */
        else if (c == TILE_FULL) ss_summarize(s, values, NULL, k0, k1, D, SS_F64, tile);
        else {
          for (size_t k = k0; k < k1; k++) vis[k] = (unsigned char)mask_visible(m, b, q_pos0 + i, (int64_t)k);
          if (ex->partial == MASK_PARTIAL_AFTER_UPDATE) partial_after_update(s, values, vis, k0, k1, D, tile, aux);
          else ss_summarize(s, values, vis, k0, k1, D, SS_F64, tile);   /* hidden = -inf before max and sum */
        }
        ss_merge(&row[i], tile, D, SS_F64, &row[i]);
      }
    }
  for (int64_t i = 0; i < n_rows; i++) ss_finalize(&row[i], D, o + (size_t)i * D, &lse[i]);
  free(row);
  free(ubuf);
  free(vis);
  return 0;
}

void mask_attention_dense(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                          const double *scores, const double *values, int64_t d, double *o, double *lse) {
  size_t D = (size_t)d;
  unsigned char *vis = DKB_CALLOC((size_t)n_keys + 1, 1);
  double *u = DKB_CALLOC(D, sizeof *u);
  struct ss_state st = {.u = u};
  for (int64_t i = 0; i < n_rows; i++) {
    for (int64_t k = 0; k < n_keys; k++) vis[k] = (unsigned char)mask_visible(m, b, q_pos0 + i, k);
    ss_summarize(scores + (size_t)i * (size_t)n_keys, values, vis, 0, (size_t)n_keys, D, SS_F64, &st);
    ss_finalize(&st, D, o + (size_t)i * D, &lse[i]);
  }
  free(vis);
  free(u);
}

void flashmask_random(struct dkb_rng *g, int64_t n_cols, int64_t first_col, int64_t n_rows, double p_empty, int32_t *uts,
                      int32_t *ute, int32_t *lts, int32_t *lte) {
  for (int64_t j = 0; j < n_cols; j++) {
    int64_t d = first_col + j, top = min64(d + 1, n_rows);   /* the upper side is rows [0, top) */
    uts[j] = ute[j] = 0;
    lts[j] = lte[j] = (int32_t)n_rows;
    if (top > 0 && dkb_rng_unit(g) >= p_empty) {
      int64_t a = (int64_t)dkb_rng_below(g, (uint64_t)top), e = a + 1 + (int64_t)dkb_rng_below(g, (uint64_t)(top - a));
      uts[j] = (int32_t)a;
      ute[j] = (int32_t)e;
    }
    int64_t lo = max64(max64(d, 0), uts[j] < ute[j] ? ute[j] : 0);   /* the lower side starts on or after both */
    if (lo < n_rows && dkb_rng_unit(g) >= p_empty) {
      int64_t a = lo + (int64_t)dkb_rng_below(g, (uint64_t)(n_rows - lo)), e = a + 1 + (int64_t)dkb_rng_below(g, (uint64_t)(n_rows - a));
      lts[j] = (int32_t)a;
      lte[j] = (int32_t)e;
    }
  }
}
