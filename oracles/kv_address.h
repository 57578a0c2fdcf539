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
};

/* Identity resolution (0x04A). */
int64_t kv_cache_row(const struct kv_layout *L, int64_t b);
int64_t kv_head_of(const struct kv_layout *L, int64_t h_q);
/* Physical page of request b's logical block j, or -1 when the table has no valid entry. */
int64_t kv_page_of(const struct kv_layout *L, int64_t b, int64_t j);
/* Element offset of (b, t, h_kv, x) in a tensor of head width d, or -1 when the coordinate is not
 * visible (t outside [0, len[b])) or the metadata does not map it inside the tensor. */
int64_t kv_offset(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h_kv, int64_t x);
/* Elements the K (or V) tensor of head width d must hold for this layout. */
int64_t kv_tensor_elems(const struct kv_layout *L, int64_t d);

/* One bounded page segment of a logical split [a, e) (0x04E). */
struct kv_segment {
  int64_t logical_start;  /* first logical token of the segment */
  int64_t page;           /* physical page */
  int64_t page_row;       /* first row inside the page */
  int64_t rows;           /* rows in this segment */
};
/* Writes at most cap segments of [a, e) for request b; returns the number the range needs
 * (more than cap means out was truncated) or -1 when a block has no valid page. */
int64_t kv_segments(const struct kv_layout *L, int64_t b, int64_t a, int64_t e, struct kv_segment *out, int64_t cap);

/* Resident metadata bytes of the layout's tables (0x04I), int32 entries. */
int64_t kv_metadata_bytes(const struct kv_layout *L);

/* Checks the metadata against the layout: monotone indptr, lengths, every visible block mapped to a
 * page inside the pool, last_page_len consistent with len, cache rows in range and distinct.
 * Returns 0, or -1 with a reason id (one of the 0x04J failure reasons, e.g. "visible_page_sentinel")
 * and a detail written to reason/detail. */
int kv_layout_check(const struct kv_layout *L, char reason[64], char detail[256]);

#endif
