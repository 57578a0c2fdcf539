/* mask.h - mask programs of article 0x05-0x06 in plain C.
 * Polarity and position space are fixed here, once: a predicate answers "visible" (true = the key
 * may contribute), query rows and key columns are request-local absolute positions, and a query row
 * of a call with N keys and C query rows sits at position N - C + i (bottom-right alignment, 0x08B).
 * FlashMask vectors use the article's polarity: row q is MASKED for key column j iff
 * q in [UTS_j, UTE_j) or q in [LTS_j, LTE_j) (half-open, int32).
 * A FlashMask column j has its diagonal at row j; its upper interval lies on or above it and its lower
 * interval on or below it (flashmask_check): 0 <= UTS <= UTE <= j + 1 when non-empty, j <= LTS <= LTE,
 * UTE <= LTS when both are non-empty; the canonical empty intervals are [0, 0) and [n_rows, n_rows).
 * The decode reference, the GPU input builder, the split planner (SKIP tiles) and the 0x05/0x06
 * contract fixtures all use these functions. */
#ifndef DKB_MASK_H
#define DKB_MASK_H

#include <stdint.h>

struct dkb_rng;   /* oracles/rng.h */

enum mask_kind { MASK_NONE, MASK_CAUSAL, MASK_SLIDING_WINDOW, MASK_FLASHMASK, MASK_KIND_COUNT };
/* "none", "causal", "sliding_window", "flashmask"; parse gives -1 if unknown. */
const char *mask_kind_name(enum mask_kind k);
int mask_kind_parse(const char *name);

struct mask_program {
  enum mask_kind kind;
  int64_t window;             /* SLIDING_WINDOW: visible iff q - window < k <= q (window >= 1) */
  int64_t sink;               /* SLIDING_WINDOW: keys k < sink are visible too (k <= q) */
  /* FLASHMASK: request b's key columns are [col_indptr[b], col_indptr[b+1]) of the four vectors */
  const int64_t *col_indptr;  /* [B+1] */
  const int32_t *uts, *ute, *lts, *lte;
  /* FLASHMASK, optional: precomputed block summaries so mask_tile_class is O(1) per aligned tile.
   * Request b's summary rows start at summary_indptr[b] and cover its columns from 0 in blocks of
   * summary_block (flashmask_summary_rows lays them out; flashmask_summarize fills each request's). */
  int64_t summary_block;           /* 0 = no summaries: tiles are summarized from the vectors */
  const int64_t *summary_indptr;   /* [B+1] */
  const int32_t *summaries;        /* rows of 8 int32 in flashmask_summarize order */
};

/* 1 when query row at absolute position q of request b may see key k (0 <= k < N_b).
 * NONE: every key; CAUSAL: k <= q; SLIDING_WINDOW and FLASHMASK as above (FLASHMASK is not
 * implicitly causal: its intervals say everything; a key outside request b's columns is not visible).
 * O(1). */
int mask_visible(const struct mask_program *m, int64_t b, int64_t q, int64_t k);

enum tile_class { TILE_SKIP, TILE_FULL, TILE_PARTIAL };
const char *tile_class_name(enum tile_class c);   /* "SKIP", "FULL", "PARTIAL" */
/* Exact class of rows [q0, q1) x keys [k0, k1) of request b, evaluating every cell (0x05C). */
enum tile_class mask_tile_class_exact(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1,
                                      int64_t k0, int64_t k1);

/* FlashMask block summaries (0x06C): for columns [c0, c0 + n) in blocks of `block` columns, writes
 * ceil(n / block) rows of 8 int32: UTS_min, UTS_max, UTE_min, UTE_max, LTS_min, LTS_max, LTE_min,
 * LTE_max. */
void flashmask_summarize(const int32_t *uts, const int32_t *ute, const int32_t *lts, const int32_t *lte,
                         int64_t n, int64_t block, int32_t *out);
/* Conservative class of rows [q0, q1) against one block summary (0x06D): may say PARTIAL when the
 * exact class is FULL or SKIP, never FULL or SKIP wrongly. */
enum tile_class flashmask_classify(const int32_t summary[8], int64_t q0, int64_t q1);
/* Class of rows [q0, q1) x keys [k0, k1) of request b for any kind: exact interval arithmetic for
 * NONE/CAUSAL/SLIDING_WINDOW (O(1)), block summaries (conservative) for FLASHMASK: O(1) for a tile of
 * whole summary blocks when the program carries summaries, else O(k1 - k0). An empty tile is SKIP;
 * FLASHMASK keys past request b's columns count as hidden. */
enum tile_class mask_tile_class(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1);

/* Representability gate (0x06H): the masked rows of one column as at most one upper and one lower
 * half-open interval. Returns 0 and iv = {UTS, UTE, LTS, LTE}, or -1 when the column has more than two
 * masked runs. diag is the column's diagonal row, or -1 for no triangle contract: one run goes to the
 * side of the diagonal it lies on, a run across the diagonal is split into [s, diag + 1) and
 * [diag + 1, e), two runs must lie one on each side (else -1 too); empty sides are [0, 0) and
 * [n_rows, n_rows). */
int flashmask_from_column(const unsigned char *masked, int64_t n_rows, int64_t diag, int32_t iv[4]);

/* ---- additions beyond the first declaration ---- */

/* Polarity of a boolean mask a caller supplies (0x05B). The C API answers "visible"; a
 * true_means_masked input (FlashMask, many framework masks) is converted here, explicitly. */
enum mask_polarity { MASK_TRUE_MEANS_VISIBLE, MASK_TRUE_MEANS_MASKED };
/* "true_means_visible", "true_means_masked"; parse gives -1 if unknown. */
const char *mask_polarity_name(enum mask_polarity p);
int mask_polarity_parse(const char *name);
/* visible[i] = cells[i] read in polarity p (0 or 1). */
void mask_to_visible(const unsigned char *cells, int64_t n, enum mask_polarity p, unsigned char *visible);

/* Number of maximal runs of masked rows in one column. */
int64_t mask_column_runs(const unsigned char *masked, int64_t n_rows);

/* Well-formedness of FlashMask vectors for columns [0, n_cols) whose diagonal rows are first_col + j,
 * rows [0, n_rows): each interval ordered and inside [0, n_rows], the upper one on or above the
 * diagonal, the lower one on or below, the two disjoint (0x06J "malformed triangle intervals").
 * Returns 0, or -1 with reason "malformed_triangle_intervals" and the first bad column in detail. */
int flashmask_check(const int32_t *uts, const int32_t *ute, const int32_t *lts, const int32_t *lte, int64_t n_cols,
                    int64_t first_col, int64_t n_rows, char reason[64], char detail[256]);
/* Checks a whole program of B requests: window >= 1 and sink >= 0 (bad_window), col_indptr from 0 and
 * monotone (col_indptr_malformed), every request's vectors (flashmask_check with the diagonal in the
 * request's own positions; the program does not know how many query positions a call has, so rows
 * are bounded by INT32_MAX only), and precomputed summaries equal to a fresh summary (stale_summaries). */
int mask_program_check(const struct mask_program *m, int64_t B, char reason[64], char detail[256]);

/* Document masks (causal within each document, nothing across documents) for one request of N keys
 * whose documents have lengths doc_len[0..n_docs) in order (sum = N, each >= 0): column j of document
 * [s, e) gets UT = [0, j) (rows before it: causal, and every earlier document) and LT = [e, N) (every
 * later document). A query row at position q in document [s, e) then sees exactly keys [s, q]; a decode
 * query (q = N - 1) sees the causal keys of the last document only. Writes N entries of each vector;
 * returns 0, or -1 when the lengths do not sum to N or N > INT32_MAX. For a batch, call it once per
 * request at that request's col_indptr offset. */
int flashmask_documents(const int64_t *doc_len, int64_t n_docs, int64_t N, int32_t *uts, int32_t *ute, int32_t *lts,
                        int32_t *lte);

/* Random well-formed vectors for columns [0, n_cols) with diagonal rows first_col + j over rows
 * [0, n_rows): each side empty with probability p_empty, else a random interval on its side of the
 * diagonal (tests and random-mask fixtures; the GPU tests can use it for random masks). */
void flashmask_random(struct dkb_rng *g, int64_t n_cols, int64_t first_col, int64_t n_rows, double p_empty, int32_t *uts,
                      int32_t *ute, int32_t *lts, int32_t *lte);

/* Lays out per-request summary rows: summary_indptr[b + 1] = summary_indptr[b] + ceil(N_b / block).
 * Returns the total number of rows (8 int32 each). */
int64_t flashmask_summary_rows(const int64_t *col_indptr, int64_t B, int64_t block, int64_t *summary_indptr);
/* Summary (flashmask_summarize order) of request b's columns [k0, k1), from precomputed block rows
 * where whole blocks allow, from the vectors elsewhere. k0 < k1 <= N_b. */
void flashmask_range_summary(const struct mask_program *m, int64_t b, int64_t k0, int64_t k1, int32_t out[8]);

/* Resident payload ledger of 0x06G for an n_rows x n_cols mask (stored-object sizes, not traffic):
 * one-byte dense mask, four int32 vectors per key column, eight int32 summaries per column block. */
struct mask_payload {
  int64_t dense_bytes;      /* n_rows * n_cols */
  int64_t interval_bytes;   /* 4 * n_cols * 4 */
  int64_t summary_bytes;    /* 8 * ceil(n_cols / block) * 4 */
};
void mask_payload_ledger(int64_t n_rows, int64_t n_cols, int64_t block, struct mask_payload *out);

/* ---- tiled execution (0x05C, 0x06E-0x06F) over the split-state algebra of split_state.h ---- */

enum mask_classifier {
  MASK_CLASSIFY_EXACT,                  /* mask_tile_class_exact */
  MASK_CLASSIFY_PROGRAM,                /* mask_tile_class: interval arithmetic or FlashMask summaries */
  MASK_CLASSIFY_SUMMARY_AS_MEMBERSHIP   /* INVALID (0x06J): "may overlap" read as "covered" -> SKIP, else
                                           FULL; exists only so fixtures can show the failure */
};
enum mask_partial {
  MASK_PARTIAL_BEFORE_UPDATE,   /* hidden scores become -inf before the tile's max and sum (0x05C) */
  MASK_PARTIAL_AFTER_UPDATE     /* INVALID (0x06J): hidden scores enter the max and denominator and
                                   only their numerator weight is zeroed; for fixtures only */
};
struct mask_exec {
  int64_t tile_rows, tile_cols;     /* score tile shape, >= 1 */
  enum mask_classifier classifier;
  enum mask_partial partial;
};
struct mask_tile_counts {
  int64_t tiles[3];        /* tiles by the class the classifier chose, indexed by enum tile_class */
  int64_t exact[3];        /* tiles by exact class */
  int64_t skipped_cells;   /* score cells in SKIP tiles: never formed */
  int64_t unsafe_full;     /* chose FULL, but a cell is hidden */
  int64_t unsafe_skip;     /* chose SKIP, but a cell is visible */
  int64_t conservative;    /* chose PARTIAL where the exact class is FULL or SKIP */
  unsigned char *map;      /* optional, caller-owned [row tiles][col tiles]: chosen classes; kept by the calls */
};
/* Classifies every tile of rows at positions [q_pos0, q_pos0 + n_rows) x keys [0, n_keys) of request b
 * and audits the choice against the exact class. */
void mask_classify_tiles(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                         const struct mask_exec *ex, struct mask_tile_counts *counts);
/* Tiled online softmax over scores [n_rows][n_keys] and values [n_keys][d]: SKIP merges the empty
 * identity, FULL is an ordinary update, PARTIAL excludes hidden scores before the max and sum; o is
 * [n_rows][d], lse [n_rows], all-masked rows give O = 0 and LSE = -inf (0x02C). counts may be NULL.
 * Every tile is also audited against its exact class (O(cells) extra: an oracle, not a fast path).
 * Returns 0, or -1 on a bad shape. */
int mask_attention_tiled(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                         const double *scores, const double *values, int64_t d, const struct mask_exec *ex, double *o,
                         double *lse, struct mask_tile_counts *counts);
/* The dense float64 reference: each row's visible keys through one ss_summarize. */
void mask_attention_dense(const struct mask_program *m, int64_t b, int64_t q_pos0, int64_t n_rows, int64_t n_keys,
                          const double *scores, const double *values, int64_t d, double *o, double *lse);

#endif
