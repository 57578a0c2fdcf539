/* kv_address.c - read-side K/V address translation of article 0x04 (see kv_address.h).
 * Every offset is a coordinate dotted with contiguous strides (0x04B); the coordinate is where the
 * identities (cache row, K/V head) and the page lookup are resolved, and where every bound is checked,
 * so no caller can reach an element outside the tensor or outside the visible context. */
#include "oracles/kv_address.h"

#include <stdio.h>
#include <string.h>

static const char *const LAYOUT_NAMES[KV_LAYOUT_COUNT] = {"contiguous_nhd", "contiguous_hnd", "ragged_nhd",
                                                          "paged_nhd", "paged_hnd"};
static const char *const TABLE_NAMES[] = {"none", "dense", "csr"};

const char *kv_layout_name(enum kv_layout_kind k) { return (unsigned)k < KV_LAYOUT_COUNT ? LAYOUT_NAMES[k] : "?"; }

int kv_layout_parse(const char *name) {
  for (int k = 0; k < KV_LAYOUT_COUNT; k++)
    if (!strcmp(name, LAYOUT_NAMES[k])) return k;
  return -1;
}

const char *kv_table_name(enum kv_table_kind t) { return (unsigned)t <= KV_TABLE_CSR ? TABLE_NAMES[t] : "?"; }

int kv_table_parse(const char *name) {
  for (int t = 0; t <= KV_TABLE_CSR; t++)
    if (!strcmp(name, TABLE_NAMES[t])) return t;
  return -1;
}

int64_t kv_cache_row(const struct kv_layout *L, int64_t b) {
  if (b < 0 || b >= L->B) return -1;
  int64_t c = L->cache_batch_idx ? L->cache_batch_idx[b] : b;
  return c >= 0 && c < L->cache_rows ? c : -1;
}

int64_t kv_request_base(const struct kv_layout *L, int64_t b) {
  if (b < 0 || b >= L->B) return -1;
  if (L->kind == KV_RAGGED_NHD) return L->indptr[b];
  if (kv_layout_paged(L->kind) && L->table == KV_TABLE_CSR) return L->page_indptr[b];
  const int64_t c = kv_cache_row(L, b);  /* contiguous, and a dense page table's row */
  if (c < 0) return -1;
  return L->kind == KV_CONTIG_NHD ? c * L->T_cap : kv_layout_paged(L->kind) ? c * L->table_width : c;
}

int64_t kv_head_of(const struct kv_layout *L, int64_t h_q) {
  if (L->H_kv <= 0 || L->H_q % L->H_kv || h_q < 0 || h_q >= L->H_q) return -1;
  return h_q / (L->H_q / L->H_kv);
}

static int64_t csr_len(const struct kv_layout *L) {
  return L->page_indices_len > 0 ? L->page_indices_len : L->page_indptr[L->B];
}

int64_t kv_page_of(const struct kv_layout *L, int64_t b, int64_t j) {
  if (!kv_layout_paged(L->kind) || b < 0 || b >= L->B || j < 0) return -1;
  int64_t page = -1;
  if (L->table == KV_TABLE_DENSE) {
    int64_t c = kv_cache_row(L, b);
    if (c < 0 || j >= L->table_width) return -1;
    page = L->block_table[c * L->table_width + j];
  } else if (L->table == KV_TABLE_CSR) {
    int64_t lo = L->page_indptr[b], hi = L->page_indptr[b + 1];
    if (lo < 0 || hi > csr_len(L) || j >= hi - lo) return -1;
    page = L->page_indices[lo + j];
  }
  return page >= 0 && page < L->num_pages ? page : -1;
}

int kv_strides(const struct kv_layout *L, int64_t d, int64_t s[4]) {
  int64_t H = L->H_kv, T = L->T_cap, P = L->page_size;
  switch (L->kind) {
  case KV_CONTIG_NHD: s[0] = T * H * d; s[1] = H * d; s[2] = d; s[3] = 1; return 4;
  case KV_CONTIG_HND: s[0] = H * T * d; s[1] = T * d; s[2] = d; s[3] = 1; return 4;
  case KV_RAGGED_NHD: s[0] = H * d; s[1] = d; s[2] = 1; s[3] = 0; return 3;
  case KV_PAGED_NHD: s[0] = P * H * d; s[1] = H * d; s[2] = d; s[3] = 1; return 4;
  case KV_PAGED_HND: s[0] = H * P * d; s[1] = P * d; s[2] = d; s[3] = 1; return 4;
  default: return -1;
  }
}

int kv_coord(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h, int64_t x, int64_t c4[4]) {
  if (b < 0 || b >= L->B || t < 0 || t >= L->len[b] || h < 0 || h >= L->H_kv || x < 0 || x >= d) return -1;
  switch (L->kind) {
  case KV_CONTIG_NHD:
  case KV_CONTIG_HND: {
    int64_t c = kv_cache_row(L, b);
    if (c < 0 || t >= L->T_cap) return -1;
    int nhd = L->kind == KV_CONTIG_NHD;
    c4[0] = c; c4[1] = nhd ? t : h; c4[2] = nhd ? h : t; c4[3] = x;
    return 4;
  }
  case KV_RAGGED_NHD: {
    int64_t p = L->indptr[b] + t;
    if (p < 0 || p >= L->indptr[L->B]) return -1;
    c4[0] = p; c4[1] = h; c4[2] = x;
    return 3;
  }
  case KV_PAGED_NHD:
  case KV_PAGED_HND: {
    if (L->page_size <= 0) return -1;
    int64_t page = kv_page_of(L, b, t / L->page_size), r = t % L->page_size;
    if (page < 0) return -1;
    int nhd = L->kind == KV_PAGED_NHD;
    c4[0] = page; c4[1] = nhd ? r : h; c4[2] = nhd ? h : r; c4[3] = x;
    return 4;
  }
  default: return -1;
  }
}

int64_t kv_offset(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h_kv, int64_t x) {
  int64_t c[4], s[4];
  int n = kv_coord(L, d, b, t, h_kv, x, c);
  if (n < 0 || kv_strides(L, d, s) != n) return -1;
  int64_t o = 0;
  for (int i = 0; i < n; i++) o += c[i] * s[i];
  return o;
}

int64_t kv_tensor_elems(const struct kv_layout *L, int64_t d) {
  switch (L->kind) {
  case KV_CONTIG_NHD:
  case KV_CONTIG_HND: return L->cache_rows * L->T_cap * L->H_kv * d;
  case KV_RAGGED_NHD: return L->indptr[L->B] * L->H_kv * d;
  case KV_PAGED_NHD:
  case KV_PAGED_HND: return L->num_pages * L->page_size * L->H_kv * d;
  default: return 0;
  }
}

int64_t kv_blocks(const struct kv_layout *L, int64_t b) {
  if (!kv_layout_paged(L->kind) || L->page_size <= 0 || b < 0 || b >= L->B) return 0;
  return (L->len[b] + L->page_size - 1) / L->page_size;
}

int64_t kv_tail_elems(const struct kv_layout *L, int64_t d) {
  int64_t rows = 0;
  for (int64_t b = 0; b < L->B; b++) {
    if (kv_layout_paged(L->kind)) rows += kv_blocks(L, b) * L->page_size - L->len[b];
    else if (kv_layout_contiguous(L->kind)) rows += L->T_cap - L->len[b];
  }
  return rows * L->H_kv * d;
}

int64_t kv_segments(const struct kv_layout *L, int64_t b, int64_t a, int64_t e, struct kv_segment *out, int64_t cap) {
  if (b < 0 || b >= L->B || a < 0 || e < a || e > L->len[b]) return -1;
  if (a == e) return 0;
  if (!kv_layout_paged(L->kind)) {
    int64_t row = L->kind == KV_RAGGED_NHD ? 0 : kv_cache_row(L, b);
    if (row < 0) return -1;
    if (cap > 0) out[0] = (struct kv_segment){a, row, L->kind == KV_RAGGED_NHD ? L->indptr[b] + a : a, e - a};
    return 1;
  }
  int64_t P = L->page_size, n = 0;
  for (int64_t pos = a; pos < e; n++) {   /* one page lookup per intersected block (0x04E) */
    int64_t j = pos / P, end = (j + 1) * P < e ? (j + 1) * P : e;
    int64_t page = kv_page_of(L, b, j);
    if (page < 0) return -1;
    if (n < cap) out[n] = (struct kv_segment){pos, page, pos % P, end - pos};
    pos = end;
  }
  return n;
}

int64_t kv_metadata_bytes(const struct kv_layout *L) {
  if (L->kind == KV_RAGGED_NHD) return (L->B + 1) * 4;
  if (!kv_layout_paged(L->kind)) return 0;
  if (L->table == KV_TABLE_DENSE) return L->cache_rows * L->table_width * 4;
  if (L->table == KV_TABLE_CSR) return (L->B + 1 + L->page_indptr[L->B] + L->B) * 4;
  return 0;
}

int64_t kv_page_disagreements(const struct kv_layout *a, const struct kv_layout *b, int64_t *first_b, int64_t *first_j) {
  if (!kv_layout_paged(a->kind) || !kv_layout_paged(b->kind) || a->B != b->B || a->page_size != b->page_size) return -1;
  int64_t n = 0;
  for (int64_t r = 0; r < a->B; r++) {
    int64_t nb = kv_blocks(a, r) > kv_blocks(b, r) ? kv_blocks(a, r) : kv_blocks(b, r);
    for (int64_t j = 0; j < nb; j++) {
      int64_t pa = kv_page_of(a, r, j), pb = kv_page_of(b, r, j);
      if (pa == pb && pa >= 0) continue;
      if (!n && first_b) *first_b = r;
      if (!n && first_j) *first_j = j;
      n++;
    }
  }
  return n;
}

#define FAIL(r, ...) (snprintf(reason, 64, "%s", r), snprintf(detail, 256, __VA_ARGS__), -1)

static int check_paged(const struct kv_layout *L, char reason[64], char detail[256]) {
  int64_t P = L->page_size;
  if (L->table == KV_TABLE_CSR) {
    if (!L->page_indptr || !L->page_indices || !L->last_page_len)
      return FAIL("table_kind_mismatch", "a CSR table needs page_indptr, page_indices and last_page_len");
    if (L->page_indptr[0] != 0) return FAIL("page_indptr_malformed", "page_indptr[0] is %d, not 0", L->page_indptr[0]);
    for (int64_t b = 0; b < L->B; b++)
      if (L->page_indptr[b + 1] < L->page_indptr[b])
        return FAIL("page_indptr_malformed", "page_indptr decreases at request %lld (%d after %d)", (long long)b,
                    L->page_indptr[b + 1], L->page_indptr[b]);
    if (L->page_indices_len > 0 && L->page_indptr[L->B] > L->page_indices_len)
      return FAIL("page_indptr_malformed", "page_indptr[%lld] = %d points past the %lld page ids", (long long)L->B,
                  L->page_indptr[L->B], (long long)L->page_indices_len);
    for (int64_t b = 0; b < L->B; b++) {
      int64_t n = L->page_indptr[b + 1] - L->page_indptr[b], last = L->last_page_len[b];
      int64_t blocks = kv_blocks(L, b), len = L->len[b];
      if (n == 0 && len == 0) continue;
      int64_t represented = n > 0 && last >= 1 && last <= P ? P * (n - 1) + last : -1;
      if (represented > len && n == blocks)
        return FAIL("tail_rounded_to_page_capacity",
                    "request %lld: %lld pages with last_page_len %lld represent %lld tokens, but its context is %lld: "
                    "%lld allocated tail rows would be read as history", (long long)b, (long long)n, (long long)last,
                    (long long)represented, (long long)len, (long long)(represented - len));
      if (represented != len)
        return FAIL("last_page_len_mismatch",
                    "request %lld: %lld pages with last_page_len %lld do not describe its %lld tokens (P = %lld)",
                    (long long)b, (long long)n, (long long)last, (long long)len, (long long)P);
    }
  } else if (L->table == KV_TABLE_DENSE) {
    if (!L->block_table || L->table_width < 0) return FAIL("table_kind_mismatch", "a dense table needs block_table rows");
  } else {
    return FAIL("table_kind_mismatch", "%s needs a dense or CSR page table", kv_layout_name(L->kind));
  }
  for (int64_t b = 0; b < L->B; b++)
    for (int64_t j = 0; j < kv_blocks(L, b); j++) {
      if (kv_page_of(L, b, j) >= 0) continue;
      int64_t raw = -1, slot = -1;
      if (L->table == KV_TABLE_DENSE && j < L->table_width) {
        slot = kv_cache_row(L, b) * L->table_width + j;
        raw = L->block_table[slot];
      } else if (L->table == KV_TABLE_CSR && L->page_indptr[b] + j < L->page_indptr[b + 1]) {
        slot = L->page_indptr[b] + j;
        raw = L->page_indices[slot];
      }
      if (slot < 0)
        return FAIL("visible_page_sentinel", "request %lld: visible logical block %lld (tokens [%lld, %lld)) has no table slot",
                    (long long)b, (long long)j, (long long)(j * P), (long long)((j + 1) * P < L->len[b] ? (j + 1) * P : L->len[b]));
      return FAIL("visible_page_sentinel", "request %lld: visible logical block %lld maps to page id %lld, outside the pool [0, %lld)",
                  (long long)b, (long long)j, (long long)raw, (long long)L->num_pages);
    }
  return 0;
}

int kv_layout_check(const struct kv_layout *L, char reason[64], char detail[256]) {
  if ((unsigned)L->kind >= KV_LAYOUT_COUNT || L->B < 1 || L->H_q < 1 || L->H_kv < 1 || !L->len)
    return FAIL("bad_shape", "layout needs a known kind, B >= 1, H_q >= 1, H_kv >= 1 and len");
  if (L->H_q % L->H_kv)
    return FAIL("gqa_not_divisible", "H_q = %lld is not a multiple of H_kv = %lld", (long long)L->H_q, (long long)L->H_kv);
  for (int64_t b = 0; b < L->B; b++)
    if (L->len[b] < 0) return FAIL("bad_shape", "len[%lld] = %lld is negative", (long long)b, (long long)L->len[b]);
  if (kv_layout_paged(L->kind) ? L->table == KV_TABLE_NONE : L->table != KV_TABLE_NONE)
    return FAIL("table_kind_mismatch", "%s with a %s table", kv_layout_name(L->kind), kv_table_name(L->table));
  int uses_rows = kv_layout_contiguous(L->kind) || (kv_layout_paged(L->kind) && L->table == KV_TABLE_DENSE);
  if (uses_rows) {
    if (L->cache_rows < 1) return FAIL("bad_shape", "cache_rows must be >= 1 (got %lld)", (long long)L->cache_rows);
    for (int64_t b = 0; b < L->B; b++) {
      int64_t c = L->cache_batch_idx ? L->cache_batch_idx[b] : b;
      if (c < 0 || c >= L->cache_rows)
        return FAIL("cache_row_out_of_range", "active request %lld maps to cache row %lld, outside [0, %lld)", (long long)b,
                    (long long)c, (long long)L->cache_rows);
      for (int64_t a = 0; a < b; a++)
        if (kv_cache_row(L, a) == c)
          return FAIL("duplicate_cache_row", "active requests %lld and %lld both map to cache row %lld", (long long)a,
                      (long long)b, (long long)c);
    }
  }
  if (kv_layout_contiguous(L->kind)) {
    if (L->T_cap < 1) return FAIL("bad_shape", "T_cap must be >= 1 (got %lld)", (long long)L->T_cap);
    for (int64_t b = 0; b < L->B; b++)
      if (L->len[b] > L->T_cap)
        return FAIL("context_exceeds_capacity", "request %lld has %lld tokens but a cache row holds %lld", (long long)b,
                    (long long)L->len[b], (long long)L->T_cap);
  } else if (L->kind == KV_RAGGED_NHD) {
    if (!L->indptr || L->indptr[0] != 0)
      return FAIL("indptr_length_mismatch", "ragged indptr must start at 0");
    for (int64_t b = 0; b < L->B; b++)
      if (L->indptr[b + 1] - L->indptr[b] != L->len[b])
        return FAIL("indptr_length_mismatch", "indptr[%lld] - indptr[%lld] = %lld, but request %lld has %lld tokens",
                    (long long)(b + 1), (long long)b, (long long)(L->indptr[b + 1] - L->indptr[b]), (long long)b,
                    (long long)L->len[b]);
  } else {
    if (L->page_size < 1 || L->num_pages < 1)
      return FAIL("bad_shape", "paged layout needs page_size >= 1 and num_pages >= 1");
    return check_paged(L, reason, detail);
  }
  return 0;
}
