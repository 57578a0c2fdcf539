/* mask.h - mask programs of article 0x05-0x06 in plain C.
 * Polarity and position space are fixed here, once: a predicate answers "visible" (true = the key
 * may contribute), query rows and key columns are request-local absolute positions, and a query row
 * of a call with N keys and C query rows sits at position N - C + i (bottom-right alignment, 0x08B).
 * FlashMask vectors use the article's polarity: row q is MASKED for key column j iff
 * q in [UTS_j, UTE_j) or q in [LTS_j, LTE_j) (half-open, int32).
 * The decode reference, the GPU input builder, the split planner (SKIP tiles) and the 0x05/0x06
 * contract fixtures all use these functions. */
#ifndef DKB_MASK_H
#define DKB_MASK_H

#include <stdint.h>

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
};

/* 1 when query row at absolute position q of request b may see key k (0 <= k < N_b).
 * NONE: every key; CAUSAL: k <= q; SLIDING_WINDOW and FLASHMASK as above (FLASHMASK is not
 * implicitly causal: its intervals say everything). */
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
 * NONE/CAUSAL/SLIDING_WINDOW, block summaries (conservative) for FLASHMASK. */
enum tile_class mask_tile_class(const struct mask_program *m, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1);

/* Representability gate (0x06H): the masked rows of one column as at most one upper and one lower
 * half-open interval. Returns 0 and iv = {UTS, UTE, LTS, LTE}, or -1 when the column has more than two
 * masked runs. */
int flashmask_from_column(const unsigned char *masked, int64_t n_rows, int64_t diag, int32_t iv[4]);

#endif
