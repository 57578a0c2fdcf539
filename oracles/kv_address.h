/* kv_address.h - read-side K/V address translation of article 0x04, in plain C.
 * One logical coordinate (active request b, request-local token t, K/V head h, lane x) becomes an
 * element offset in a K or V tensor for each cache representation. The same functions lay out GPU
 * inputs (harness/inputs.c), compute expected outputs (decode reference), and run the 0x04 contract
 * fixtures, so a translation bug cannot hide in one of them only.
 * Shapes (elements, separate K and V tensors, each with its own head width d):
 *   contiguous NHD [cache_rows, T_cap, H_kv, d]   contiguous HND [cache_rows, H_kv, T_cap, d]
 *   ragged NHD     [sum_b len_b, H_kv, d]          (indptr replaces the batch stride)
 *   paged NHD      [num_pages, P, H_kv, d]         paged HND [num_pages, H_kv, P, d]  */
#ifndef DKB_KV_ADDRESS_H
#define DKB_KV_ADDRESS_H

#include <stddef.h>
#include <stdint.h>

enum kv_layout_kind { KV_CONTIG_NHD, KV_CONTIG_HND, KV_RAGGED_NHD, KV_PAGED_NHD, KV_PAGED_HND, KV_LAYOUT_COUNT };
enum kv_table_kind { KV_TABLE_NONE, KV_TABLE_DENSE, KV_TABLE_CSR };

/* "contiguous_nhd", "contiguous_hnd", "ragged_nhd", "paged_nhd", "paged_hnd"; parse gives -1 if unknown. */
const char *kv_layout_name(enum kv_layout_kind k);
int kv_layout_parse(const char *name);
/* 1 for the paged layouts (NHD and HND), whose keys live in pages of page_size. */
static inline int kv_layout_paged(int kind) { return kind == KV_PAGED_NHD || kind == KV_PAGED_HND; }
/* 1 for the contiguous layouts (NHD and HND), one cache row of capacity T_cap a request. */
static inline int kv_layout_contiguous(int kind) { return kind == KV_CONTIG_NHD || kind == KV_CONTIG_HND; }
/* "none", "dense", "csr"; parse gives -1 if unknown. */
const char *kv_table_name(enum kv_table_kind t);
int kv_table_parse(const char *name);

struct kv_layout {
  enum kv_layout_kind kind;
  enum kv_table_kind table;        /* paged layouts: DENSE or CSR; others: NONE */
  int64_t B;                       /* active requests */
  int64_t H_q, H_kv;               /* GQA: kv_head(h_q) = h_q / (H_q / H_kv) */
  const int64_t *len;              /* [B] exact visible context length per active request */
  /* contiguous */
  int64_t cache_rows, T_cap;       /* storage rows and token capacity per row */
  const int32_t *cache_batch_idx;  /* [B] active request -> cache row; NULL = identity */
  /* ragged */
  const int64_t *indptr;           /* [B+1] packed row pointer, indptr[b+1]-indptr[b] = len[b] */
  /* paged */
  int64_t page_size, num_pages;    /* P and the physical pool size */
  const int32_t *block_table;      /* DENSE: [cache_rows][table_width] physical page ids, row = cache row */
  int64_t table_width;             /* DENSE: slots per row */
  const int32_t *page_indptr;      /* CSR: [B+1] into page_indices, per active request */
  const int32_t *page_indices;     /* CSR: physical page ids */
  const int32_t *last_page_len;    /* CSR: [B] rows used in each request's last page, 1..P */
  int64_t page_indices_len;        /* CSR: entries in page_indices (bounds every lookup); 0 = page_indptr[B] */
};

/* Identity resolution (0x04A). */
int64_t kv_cache_row(const struct kv_layout *L, int64_t b);
int64_t kv_head_of(const struct kv_layout *L, int64_t h_q);
/* Physical page of request b's logical block j, or -1 when the table has no valid entry. */
int64_t kv_page_of(const struct kv_layout *L, int64_t b, int64_t j);
/* Element offset of (b, t, h_kv, x) in a tensor of head width d, or -1 when the coordinate is not
 * visible (t outside [0, len[b])) or the metadata does not map it inside the tensor. */
int64_t kv_offset(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h_kv, int64_t x);
/* Where request b starts in its layout, in the unit the kernels address from (the plan's item_base):
 * contiguous NHD its first key row (cache_row * T_cap), HND its cache row, ragged its first packed row,
 * paged the index of its first page-table entry (row * table_width dense, page_indptr[b] CSR). Then
 * kv_offset(b, t, h, x) = ((base + t) * H_kv + h) * d + x (NHD, ragged), ((base * H_kv + h) * T_cap + t)
 * * d + x (HND), and for paged the page id sits at entry base + t / P of the flat table. -1 when b or
 * its cache row does not resolve. */
int64_t kv_request_base(const struct kv_layout *L, int64_t b);
/* Elements the K (or V) tensor of head width d must hold for this layout. */
int64_t kv_tensor_elems(const struct kv_layout *L, int64_t d);

/* The same offset as a tensor coordinate and contiguous element strides, so kv_offset = coord . strides
 * (0x04B): NHD [c, t, h, x], HND [c, h, t, x], ragged [p, h, x], paged NHD [pi, r, h, x], paged HND
 * [pi, h, r, x]. Both return the number of axes (4, or 3 for ragged); kv_coord gives -1 where kv_offset
 * does. */
int kv_strides(const struct kv_layout *L, int64_t d, int64_t strides[4]);
int kv_coord(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h_kv, int64_t x, int64_t coord[4]);
/* Logical blocks request b's visible context spans: ceil(len[b] / P) (paged layouts; 0 otherwise). */
int64_t kv_blocks(const struct kv_layout *L, int64_t b);
/* Allocated but invisible elements of a tensor of head width d (0x04F): page tails of paged layouts
 * (sum_b (kv_blocks * P - len) * H_kv * d), unused token capacity of contiguous rows
 * (sum_b (T_cap - len) * H_kv * d), 0 for ragged. A reader must never consume them. */
int64_t kv_tail_elems(const struct kv_layout *L, int64_t d);
/* Compares the physical page of every visible (b, j) of two paged layouts of the same requests (a
 * dense and a CSR view, 0x04D); returns how many differ (a missing mapping counts) and the first one
 * in first_b/first_j (may be NULL), or -1 when the layouts are not both paged over the same B. */
int64_t kv_page_disagreements(const struct kv_layout *a, const struct kv_layout *b, int64_t *first_b, int64_t *first_j);

/* One bounded page segment of a logical split [a, e) (0x04E). */
struct kv_segment {
  int64_t logical_start;  /* first logical token of the segment */
  int64_t page;           /* physical page */
  int64_t page_row;       /* first row inside the page */
  int64_t rows;           /* rows in this segment */
};
/* Writes at most cap segments of [a, e) for request b; returns the number the range needs
 * (more than cap means out was truncated) or -1 when a block has no valid page or [a, e) is not
 * inside [0, len[b]). Paged: 1 + floor((e-1)/P) - floor(a/P) segments for a non-empty range. Contiguous
 * and ragged layouts store the range in one run: one segment with page = the storage row (cache row
 * for contiguous, 0 for ragged) and page_row = the first row in it (a, or indptr[b] + a). */
int64_t kv_segments(const struct kv_layout *L, int64_t b, int64_t a, int64_t e, struct kv_segment *out, int64_t cap);

/* Resident metadata bytes of the layout's tables (0x04I), int32 entries: dense block table
 * cache_rows * table_width * 4; CSR (B + 1 + page_indptr[B] + B) * 4; ragged indptr (B + 1) * 4;
 * contiguous 0. cache_batch_idx and len are per-call inputs every layout needs and are not counted.
 * These are stored-object sizes, never DRAM traffic. */
int64_t kv_metadata_bytes(const struct kv_layout *L);

/* Checks the metadata against the layout: monotone indptr, lengths, every visible block mapped to a
 * page inside the pool, last_page_len consistent with len, cache rows in range and distinct.
 * Returns 0, or -1 with a reason id and a detail written to reason/detail. Reasons:
 *   bad_shape                      B, H_q, H_kv, P, capacities or d not positive, len < 0
 *   gqa_not_divisible              H_q is not a multiple of H_kv
 *   table_kind_mismatch            paged without a DENSE/CSR table, or a table on another layout
 *   cache_row_out_of_range         cache_batch_idx[b] outside [0, cache_rows)
 *   duplicate_cache_row            two active requests share one cache row
 *   context_exceeds_capacity       contiguous len[b] > T_cap
 *   indptr_length_mismatch         ragged indptr[0] != 0 or indptr[b+1] - indptr[b] != len[b]
 *   page_indptr_malformed          CSR page_indptr not monotone from 0, or past page_indices_len
 *   visible_page_sentinel          a visible block maps to no page, a sentinel, or an id outside the pool
 *                                  (0x04J "accept a visible-page sentinel or out-of-pool id")
 *   tail_rounded_to_page_capacity  CSR pages and last_page_len describe more tokens than len (0x04J
 *                                  "round T to allocated page capacity")
 *   last_page_len_mismatch         CSR page count or last_page_len otherwise inconsistent with len
 * A physical page shared by two requests (prefix sharing) is not an error for a reader. */
int kv_layout_check(const struct kv_layout *L, char reason[64], char detail[256]);

#endif
