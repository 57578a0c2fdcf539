/* test_kv_address.c - K/V address translation of article 0x04 through its C API: the worked offsets,
 * the page trace of [3,9), store-and-recover across six stores, metadata bytes, every layout-check
 * reason, random layouts, and the 0x04J invalid fixtures failing closed with their reasons. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/kv_address.h"
#include "oracles/rng.h"

/* The article's fixture (0x04A-0x04I); req-C's cache row and the B/C pages are this suite's choice,
 * the same as fixtures/contracts/kv_address.worked_three_requests.json. */
static const int64_t LEN[3] = {10, 7, 5}, INDPTR[4] = {0, 10, 17, 22};
static const int32_t CBI[3] = {2, 0, 3};
static int32_t TABLE[12] = {1, 10, -1, -1, -1, -1, 7, 3, 9, 4, 6, -1};
static int32_t PIP[4] = {0, 3, 5, 7}, PIDX[7] = {7, 3, 9, 1, 10, 4, 6}, LPL[3] = {2, 3, 1};

static struct kv_layout fixture(enum kv_layout_kind kind, enum kv_table_kind table) {
  return (struct kv_layout){.kind = kind, .table = table, .B = 3, .H_q = 4, .H_kv = 2, .len = LEN, .cache_rows = 4,
                            .T_cap = 12, .cache_batch_idx = CBI, .indptr = INDPTR, .page_size = 4, .num_pages = 12,
                            .block_table = TABLE, .table_width = 3, .page_indptr = PIP, .page_indices = PIDX,
                            .last_page_len = LPL, .page_indices_len = 7};
}

static void identities_follow_cache_batch_idx_and_gqa_groups(void **s) {
  (void)s;
  struct kv_layout L = fixture(KV_CONTIG_NHD, KV_TABLE_NONE);
  assert_int_equal(kv_cache_row(&L, 0), 2);   /* req-A: active b = 0, cache row 2 */
  assert_int_equal(kv_cache_row(&L, 1), 0);
  assert_int_equal(kv_cache_row(&L, 2), 3);
  assert_int_equal(kv_cache_row(&L, 3), -1);
  assert_int_equal(kv_head_of(&L, 3), 1);     /* g = 2: h_q = 3 -> h_kv = 1 */
  assert_int_equal(kv_head_of(&L, 1), 0);
  assert_int_equal(kv_head_of(&L, 4), -1);
  L.cache_batch_idx = NULL;
  assert_int_equal(kv_cache_row(&L, 2), 2);   /* NULL = identity */
  L.H_kv = 3;
  assert_int_equal(kv_head_of(&L, 0), -1);    /* 4 query heads cannot share 3 K/V heads evenly */
}

static void contiguous_offsets_reproduce_222_and_254(void **s) {
  (void)s;
  struct kv_layout N = fixture(KV_CONTIG_NHD, KV_TABLE_NONE), H = fixture(KV_CONTIG_HND, KV_TABLE_NONE);
  int64_t c[4], st[4];
  assert_int_equal(kv_coord(&N, 4, 0, 3, 1, 2, c), 4);
  assert_int_equal(kv_strides(&N, 4, st), 4);
  assert_true(c[0] == 2 && c[1] == 3 && c[2] == 1 && c[3] == 2);
  assert_true(st[0] == 96 && st[1] == 8 && st[2] == 4 && st[3] == 1);
  assert_int_equal(kv_offset(&N, 4, 0, 3, kv_head_of(&N, 3), 2), 222);
  assert_int_equal(2 * kv_offset(&N, 4, 0, 3, 1, 2), 444);
  assert_int_equal(kv_coord(&H, 4, 0, 3, 1, 2, c), 4);
  kv_strides(&H, 4, st);
  assert_true(c[0] == 2 && c[1] == 1 && c[2] == 3 && c[3] == 2);
  assert_true(st[0] == 96 && st[1] == 48 && st[2] == 4 && st[3] == 1);
  assert_int_equal(kv_offset(&H, 4, 0, 3, 1, 2), 254);
  assert_int_equal(kv_tensor_elems(&N, 4), 4 * 12 * 2 * 4);
}

static void ragged_row_of_req_b_t6_is_16(void **s) {
  (void)s;
  struct kv_layout R = fixture(KV_RAGGED_NHD, KV_TABLE_NONE);
  int64_t c[4];
  assert_int_equal(kv_coord(&R, 4, 1, 6, 0, 0, c), 3);
  assert_int_equal(c[0], 16);                 /* indptr[1] + 6, not cache row 0 */
  assert_int_equal(kv_offset(&R, 4, 1, 6, 0, 0), 16 * 2 * 4);
  assert_int_equal(kv_tensor_elems(&R, 4), 22 * 2 * 4);
  assert_int_equal(kv_offset(&R, 4, 1, 7, 0, 0), -1);   /* t = len: not visible */
}

static void paged_trace_of_req_a_split_3_9(void **s) {
  (void)s;
  struct kv_layout D = fixture(KV_PAGED_NHD, KV_TABLE_DENSE), C = fixture(KV_PAGED_NHD, KV_TABLE_CSR);
  for (int t = 0; t < 2; t++) {
    struct kv_layout *L = t ? &C : &D;
    assert_int_equal(kv_page_of(L, 0, 0), 7);
    assert_int_equal(kv_page_of(L, 0, 1), 3);
    assert_int_equal(kv_page_of(L, 0, 2), 9);
    assert_int_equal(kv_blocks(L, 0), 3);
    struct kv_segment seg[4];
    assert_int_equal(kv_segments(L, 0, 3, 9, seg, 4), 3);
    const struct kv_segment want[3] = {{3, 7, 3, 1}, {4, 3, 0, 4}, {8, 9, 0, 1}};
    assert_memory_equal(seg, want, sizeof want);
    assert_int_equal(kv_segments(L, 0, 3, 9, seg, 1), 3);   /* needs 3, wrote 1 */
    assert_int_equal(kv_segments(L, 0, 5, 5, seg, 4), 0);
    assert_int_equal(kv_segments(L, 0, 3, 11, seg, 4), -1);  /* past the context */
  }
  /* Page 9 holds tokens 8 and 9 at rows 0 and 1; rows 2 and 3 are tail. */
  assert_int_equal(kv_offset(&D, 4, 0, 9, 0, 0), ((9 * 4 + 1) * 2 + 0) * 4);
  assert_int_equal(kv_offset(&D, 4, 0, 10, 0, 0), -1);
  struct kv_layout H = fixture(KV_PAGED_HND, KV_TABLE_DENSE);
  assert_int_equal(kv_offset(&H, 4, 0, 5, 1, 3), ((3 * 2 + 1) * 4 + 1) * 4 + 3);
  struct kv_layout N = fixture(KV_CONTIG_NHD, KV_TABLE_NONE), R = fixture(KV_RAGGED_NHD, KV_TABLE_NONE);
  struct kv_segment one;
  assert_int_equal(kv_segments(&N, 0, 3, 9, &one, 1), 1);
  assert_true(one.page == 2 && one.page_row == 3 && one.rows == 6);
  assert_int_equal(kv_segments(&R, 1, 2, 6, &one, 1), 1);
  assert_true(one.page == 0 && one.page_row == 12 && one.rows == 4);
}

/* Store-and-recover of 0x04J: unique ids through the translator, every visible coordinate back. */
static void store_and_recover_six_stores_counts(void **s) {
  (void)s;
  const struct { enum kv_layout_kind k; enum kv_table_kind t; } stores[6] = {
      {KV_CONTIG_NHD, KV_TABLE_NONE}, {KV_CONTIG_HND, KV_TABLE_NONE}, {KV_RAGGED_NHD, KV_TABLE_NONE},
      {KV_PAGED_NHD, KV_TABLE_DENSE}, {KV_PAGED_HND, KV_TABLE_DENSE}, {KV_PAGED_NHD, KV_TABLE_CSR}};
  int64_t per_tensor = -1, collisions = 0, mismatches = 0, poison_reached = 0;
  for (int i = 0; i < 6; i++) {
    struct kv_layout L = fixture(stores[i].k, stores[i].t);
    int64_t elems = 0, id = 0;
    for (int z = 0; z < 2; z++) {             /* K, then V */
      int64_t n = kv_tensor_elems(&L, 4);
      int64_t *store = calloc((size_t)n, sizeof *store);  /* 0 = poison */
      int64_t written = 0, base = id;
      for (int64_t b = 0; b < 3; b++)
        for (int64_t t = 0; t < LEN[b]; t++)
          for (int64_t h = 0; h < 2; h++)
            for (int64_t x = 0; x < 4; x++) {
              int64_t off = kv_offset(&L, 4, b, t, h, x);
              assert_true(off >= 0 && off < n);
              collisions += store[off] != 0;
              store[off] = ++id;
              written++;
            }
      id = base;
      for (int64_t b = 0; b < 3; b++)
        for (int64_t t = 0; t < LEN[b]; t++)
          for (int64_t h = 0; h < 2; h++)
            for (int64_t x = 0; x < 4; x++) {
              int64_t got = store[kv_offset(&L, 4, b, t, h, x)];
              mismatches += got != ++id;
              poison_reached += got == 0;
            }
      if (stores[i].t != KV_TABLE_NONE) {     /* the allocated page tails stay poisoned */
        int64_t tail = 0;
        for (int64_t b = 0; b < 3; b++)
          for (int64_t j = 0; j < kv_blocks(&L, b); j++)
            for (int64_t e = 0; e < 4 * 2 * 4; e++) tail += store[kv_page_of(&L, b, j) * 32 + e] == 0;
        assert_int_equal(2 * tail, 96);       /* K and V: 6 tail rows x H_kv x d_h each */
        assert_int_equal(tail, kv_tail_elems(&L, 4));
      }
      free(store);
      elems += written;
      if (per_tensor < 0) per_tensor = written;
    }
    assert_int_equal(elems, 352);
  }
  assert_int_equal(per_tensor, 176);
  assert_int_equal(collisions, 0);
  assert_int_equal(mismatches, 0);
  assert_int_equal(poison_reached, 0);
  struct kv_layout D = fixture(KV_PAGED_NHD, KV_TABLE_DENSE), C = fixture(KV_PAGED_NHD, KV_TABLE_CSR);
  assert_int_equal(kv_page_disagreements(&D, &C, NULL, NULL), 0);
}

static void metadata_bytes_are_48_and_56(void **s) {
  (void)s;
  struct kv_layout D = fixture(KV_PAGED_NHD, KV_TABLE_DENSE), C = fixture(KV_PAGED_HND, KV_TABLE_CSR);
  struct kv_layout R = fixture(KV_RAGGED_NHD, KV_TABLE_NONE), N = fixture(KV_CONTIG_HND, KV_TABLE_NONE);
  assert_int_equal(kv_metadata_bytes(&D), 48);   /* 4 rows x 3 slots x int32 */
  assert_int_equal(kv_metadata_bytes(&C), 56);   /* (4 + 7 + 3) x int32 */
  assert_int_equal(kv_metadata_bytes(&R), 16);
  assert_int_equal(kv_metadata_bytes(&N), 0);
  assert_int_equal(kv_tail_elems(&N, 4), (2 + 5 + 7) * 2 * 4);
  assert_int_equal(kv_tail_elems(&R, 4), 0);
}

static void dense_csr_disagreement_is_counted(void **s) {
  (void)s;
  int32_t swapped[7] = {7, 3, 9, 1, 10, 6, 4};
  struct kv_layout D = fixture(KV_PAGED_NHD, KV_TABLE_DENSE), C = fixture(KV_PAGED_NHD, KV_TABLE_CSR);
  C.page_indices = swapped;
  int64_t fb = -1, fj = -1;
  assert_int_equal(kv_page_disagreements(&D, &C, &fb, &fj), 2);
  assert_true(fb == 2 && fj == 0);
  struct kv_layout N = fixture(KV_CONTIG_NHD, KV_TABLE_NONE);
  assert_int_equal(kv_page_disagreements(&D, &N, NULL, NULL), -1);
}

static void layout_check_names_every_reason(void **s) {
  (void)s;
  char reason[64], detail[256];
  for (int k = 0; k < KV_LAYOUT_COUNT; k++) {
    struct kv_layout L = fixture(k, k >= KV_PAGED_NHD ? KV_TABLE_DENSE : KV_TABLE_NONE);
    assert_int_equal(kv_layout_check(&L, reason, detail), 0);
    L.table = k >= KV_PAGED_NHD ? KV_TABLE_CSR : KV_TABLE_NONE;
    assert_int_equal(kv_layout_check(&L, reason, detail), 0);
  }
  int32_t dup[3] = {2, 2, 3}, far[3] = {2, 0, 4}, sentinel[12], pool[12], rounded[3] = {4, 3, 1}, short_last[3] = {1, 3, 1};
  int32_t bad_pip[4] = {0, 3, 2, 7};
  int64_t bad_indptr[4] = {0, 10, 16, 22}, big[3] = {13, 7, 5};
  memcpy(sentinel, TABLE, sizeof TABLE);
  sentinel[10] = -1;                          /* req-C block 1 (visible: 5 tokens, P = 4) */
  memcpy(pool, TABLE, sizeof TABLE);
  pool[7] = 12;                               /* req-A block 1 outside the 12-page pool */
  struct {
    enum kv_layout_kind k;
    enum kv_table_kind t;
    const char *reason;
  } rows[] = {{KV_CONTIG_NHD, KV_TABLE_NONE, "gqa_not_divisible"},
              {KV_CONTIG_NHD, KV_TABLE_NONE, "duplicate_cache_row"},
              {KV_PAGED_NHD, KV_TABLE_DENSE, "cache_row_out_of_range"},
              {KV_CONTIG_HND, KV_TABLE_NONE, "context_exceeds_capacity"},
              {KV_RAGGED_NHD, KV_TABLE_NONE, "indptr_length_mismatch"},
              {KV_PAGED_NHD, KV_TABLE_CSR, "page_indptr_malformed"},
              {KV_PAGED_NHD, KV_TABLE_DENSE, "visible_page_sentinel"},
              {KV_PAGED_HND, KV_TABLE_DENSE, "visible_page_sentinel"},
              {KV_PAGED_NHD, KV_TABLE_CSR, "tail_rounded_to_page_capacity"},
              {KV_PAGED_NHD, KV_TABLE_CSR, "last_page_len_mismatch"},
              {KV_PAGED_NHD, KV_TABLE_NONE, "table_kind_mismatch"},
              {KV_PAGED_NHD, KV_TABLE_DENSE, "visible_page_sentinel"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct kv_layout L = fixture(rows[i].k, rows[i].t);
    switch (i) {
    case 0: L.H_kv = 3; break;
    case 1: L.cache_batch_idx = dup; break;
    case 2: L.cache_batch_idx = far; break;
    case 3: L.len = big; break;
    case 4: L.indptr = bad_indptr; break;
    case 5: L.page_indptr = bad_pip; break;
    case 6: L.block_table = sentinel; break;
    case 7: L.block_table = pool; break;
    case 8: L.last_page_len = rounded; break;
    case 9: L.last_page_len = short_last; break;
    case 10: break;
    case 11: L.table_width = 1; L.block_table = TABLE; L.cache_rows = 4; break;
    }
    assert_int_equal(kv_layout_check(&L, reason, detail), -1);
    if (strcmp(reason, rows[i].reason)) fail_msg("row %zu: got %s (%s), want %s", i, reason, detail, rows[i].reason);
  }
  struct kv_layout L = fixture(KV_PAGED_NHD, KV_TABLE_DENSE);
  L.block_table = sentinel;
  kv_layout_check(&L, reason, detail);
  assert_string_equal(detail, "request 2: visible logical block 1 maps to page id -1, outside the pool [0, 12)");
  L = fixture(KV_PAGED_NHD, KV_TABLE_CSR);
  L.last_page_len = rounded;
  kv_layout_check(&L, reason, detail);
  assert_string_equal(detail, "request 0: 3 pages with last_page_len 4 represent 12 tokens, but its context is 10: "
                              "2 allocated tail rows would be read as history");
}

static void offsets_refuse_what_is_not_visible_or_not_mapped(void **s) {
  (void)s;
  struct kv_layout C = fixture(KV_PAGED_NHD, KV_TABLE_CSR), N = fixture(KV_CONTIG_NHD, KV_TABLE_NONE);
  assert_int_equal(kv_offset(&N, 4, 0, -1, 0, 0), -1);
  assert_int_equal(kv_offset(&N, 4, 0, 0, 2, 0), -1);    /* h_kv past H_kv */
  assert_int_equal(kv_offset(&N, 4, 0, 0, 0, 4), -1);    /* x past d */
  assert_int_equal(kv_offset(&N, 4, 3, 0, 0, 0), -1);    /* no request 3 */
  int32_t wide[4] = {0, 10, 17, 22};                       /* a packed-row pointer used as the page list */
  C.page_indptr = wide;
  assert_int_equal(kv_page_of(&C, 1, 0), -1);             /* index 10 is past the 7 page ids */
  assert_int_equal(kv_offset(&C, 4, 1, 0, 0, 0), -1);
  C = fixture(KV_PAGED_NHD, KV_TABLE_CSR);
  assert_int_equal(kv_page_of(&C, 1, 2), -1);             /* req-B has two pages */
}

/* The kernels' address formula (kernels/decode.cu kv_row_offset and TilePipe::init), started from the
 * plan's item_base = kv_request_base. */
static int64_t from_base(const struct kv_layout *L, int64_t d, int64_t b, int64_t t, int64_t h, int64_t x) {
  const int64_t base = kv_request_base(L, b), H = L->H_kv, P = L->page_size;
  switch (L->kind) {
  case KV_CONTIG_NHD:
  case KV_RAGGED_NHD: return ((base + t) * H + h) * d + x;
  case KV_CONTIG_HND: return ((base * H + h) * L->T_cap + t) * d + x;
  default: {
    const int32_t *flat = L->table == KV_TABLE_DENSE ? L->block_table : L->page_indices;
    const int64_t page = flat[base + t / P], r = t % P;
    return (L->kind == KV_PAGED_NHD ? (page * P + r) * H + h : (page * H + h) * P + r) * d + x;
  }
  }
}

/* Random layouts with awkward lengths: every visible coordinate has a distinct in-tensor offset in
 * every representation, equal to the kernels' formula from kv_request_base, and page segments tile
 * [a, e) with the 0x04E count. */
static void random_layouts_are_injective_match_the_kernel_formula_and_segment_exactly(void **s) {
  (void)s;
  static const int64_t awkward[] = {0, 1, 3, 9, 27, 81, 129, 257};
  struct dkb_rng g;
  dkb_rng_seed(&g, 404);
  for (int trial = 0; trial < 60; trial++) {
    int64_t B = 1 + (int64_t)dkb_rng_below(&g, 5), P = 1 + (int64_t)dkb_rng_below(&g, 16), Hkv = 1 + (int64_t)dkb_rng_below(&g, 3);
    int64_t Hq = Hkv * (1 + (int64_t)dkb_rng_below(&g, 4)), d = 1 + (int64_t)dkb_rng_below(&g, 5), len[5], indptr[6] = {0};
    int32_t cbi[5], pip[6] = {0}, lpl[5];
    int64_t rows = B + (int64_t)dkb_rng_below(&g, 3), Tcap = 0, pages = 0, W = 1;
    for (int64_t b = 0; b < B; b++) {
      len[b] = awkward[dkb_rng_below(&g, 8)];
      indptr[b + 1] = indptr[b] + len[b];
      Tcap = len[b] > Tcap ? len[b] : Tcap;
      int64_t nb = (len[b] + P - 1) / P;
      pip[b + 1] = pip[b] + (int32_t)nb;
      lpl[b] = (int32_t)(nb ? len[b] - (nb - 1) * P : 0);
      W = nb > W ? nb : W;
      pages += nb;
    }
    for (int64_t b = 0; b < B; b++) {   /* a random injective cache-row map */
      int again;
      do {
        cbi[b] = (int32_t)dkb_rng_below(&g, (uint64_t)rows);
        again = 0;
        for (int64_t a = 0; a < b; a++) again |= cbi[a] == cbi[b];
      } while (again);
    }
    int64_t pool = pages + (int64_t)dkb_rng_below(&g, 4) + 1;
    int32_t *perm = malloc((size_t)pool * sizeof *perm), *table = malloc((size_t)(rows * W) * sizeof *table);
    for (int64_t i = 0; i < pool; i++) perm[i] = (int32_t)i;
    for (int64_t i = pool - 1; i > 0; i--) {
      int64_t j = (int64_t)dkb_rng_below(&g, (uint64_t)i + 1);
      int32_t z = perm[i]; perm[i] = perm[j]; perm[j] = z;
    }
    for (int64_t i = 0; i < rows * W; i++) table[i] = -1;
    for (int64_t b = 0; b < B; b++)
      for (int64_t j = 0; j < pip[b + 1] - pip[b]; j++) table[cbi[b] * W + j] = perm[pip[b] + j];
    struct kv_layout base = {.B = B, .H_q = Hq, .H_kv = Hkv, .len = len, .cache_rows = rows, .T_cap = Tcap ? Tcap : 1,
                             .cache_batch_idx = cbi, .indptr = indptr, .page_size = P, .num_pages = pool,
                             .block_table = table, .table_width = W, .page_indptr = pip, .page_indices = perm,
                             .last_page_len = lpl, .page_indices_len = pages};
    char reason[64], detail[256];
    for (int k = 0; k < KV_LAYOUT_COUNT + 1; k++) {
      struct kv_layout L = base;
      L.kind = k < KV_LAYOUT_COUNT ? (enum kv_layout_kind)k : KV_PAGED_HND;
      L.table = k == KV_LAYOUT_COUNT ? KV_TABLE_CSR : k >= KV_PAGED_NHD ? KV_TABLE_DENSE : KV_TABLE_NONE;
      if (kv_layout_check(&L, reason, detail)) fail_msg("trial %d layout %d: %s: %s", trial, k, reason, detail);
      int64_t n = kv_tensor_elems(&L, d);
      unsigned char *seen = calloc((size_t)n + 1, 1);
      for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < len[b]; t++)
          for (int64_t h = 0; h < Hkv; h++)
            for (int64_t x = 0; x < d; x++) {
              int64_t off = kv_offset(&L, d, b, t, h, x);
              if (off < 0 || off >= n || seen[off]++) fail_msg("trial %d layout %d: offset %lld", trial, k, (long long)off);
              if (off != from_base(&L, d, b, t, h, x))
                fail_msg("trial %d layout %d: the kernel's formula from kv_request_base gives %lld, kv_offset %lld", trial,
                         k, (long long)from_base(&L, d, b, t, h, x), (long long)off);
            }
        int64_t a = len[b] ? (int64_t)dkb_rng_below(&g, (uint64_t)len[b] + 1) : 0;
        int64_t e = a + (int64_t)dkb_rng_below(&g, (uint64_t)(len[b] - a) + 1), covered = 0;
        struct kv_segment seg[300];
        int64_t ns = kv_segments(&L, b, a, e, seg, 300);
        if (L.kind >= KV_PAGED_NHD) assert_int_equal(ns, e > a ? 1 + (e - 1) / P - a / P : 0);
        for (int64_t i = 0; i < ns; i++) {
          assert_int_equal(seg[i].logical_start, a + covered);
          covered += seg[i].rows;
        }
        assert_int_equal(covered, e - a);
      }
      free(seen);
    }
    free(perm);
    free(table);
  }
}

static void invalid_fixtures_fail_closed_with_their_reasons(void **s) {
  (void)s;
  static const char *const reasons[] = {"active_b_as_cache_row", "query_head_as_kv_head", "nhd_strides_on_hnd",
                                        "indptr_as_page_table", "logical_block_as_page", "visible_page_sentinel",
                                        "tail_rounded_to_page_capacity", "dense_csr_disagree",
                                        "resident_metadata_as_traffic"};
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
    struct run_result r;
    run_sh(&r, "build/dkb oracle fixtures/contracts/kv_address.invalid.%s.json", reasons[i]);
    char want[128];
    snprintf(want, sizeof want, "rejected: %s: ", reasons[i]);
    if (r.rc != 0 || !strstr(r.out, want) || !strncmp(r.out, "FAIL", 4)) fail_msg("%s: rc %d: %s", reasons[i], r.rc, r.out);
    run_result_release(&r);
  }
}

static void malformed_store_is_an_input_error_with_its_pointer(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "sed 's/{\"layout\": \"paged_nhd\", \"table\": \"dense\"}/{\"layout\": \"paged_nhd\"}/' "
             "fixtures/contracts/kv_address.worked_three_requests.json > %s/kv_bad.json && build/dkb oracle %s/kv_bad.json",
         tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 3);
  char want[512];
  snprintf(want, sizeof want, "dkb: error: %s/kv_bad.json: /input/stores/3/table: paged stores need \"dense\" or \"csr\", "
           "the others none\n", tmp_dir());
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

/* The dense table's row bound, exactly at its edge: a row of W slots holds a request of W blocks, and one
 * block more has no slot, even when the slot after the row (the next row's first) holds a valid page. */
static void dense_row_holds_exactly_its_width(void **s) {
  (void)s;
  static int32_t full[4] = {0, 1, 2, 3};        /* two rows of W = 2, every slot a valid page */
  static const int64_t fits[2] = {8, 8}, over[2] = {9, 8};  /* P = 4: 2 blocks, then 3 */
  struct kv_layout L = {.kind = KV_PAGED_NHD, .table = KV_TABLE_DENSE, .B = 2, .H_q = 2, .H_kv = 2, .len = fits,
                        .cache_rows = 2, .page_size = 4, .num_pages = 4, .block_table = full, .table_width = 2};
  char reason[64], detail[256];
  int64_t c4[4];
  assert_int_equal(kv_layout_check(&L, reason, detail), 0);
  assert_int_equal(kv_page_of(&L, 0, 1), 1);    /* the row's last slot */
  assert_int_equal(kv_page_of(&L, 0, 2), -1);   /* past it: not the next row's page 2 */
  assert_int_equal(kv_coord(&L, 4, 0, 7, 0, 0, c4), 4);
  L.len = over;
  assert_int_equal(kv_layout_check(&L, reason, detail), -1);
  assert_string_equal(reason, "visible_page_sentinel");
  assert_string_equal(detail, "request 0: visible logical block 2 (tokens [8, 9)) has no table slot");
  assert_int_equal(kv_coord(&L, 4, 0, 8, 0, 0, c4), -1);
  assert_int_equal(kv_offset(&L, 4, 0, 8, 0, 0), -1);
}

DKB_TEST_GROUP(kv_address, cmocka_unit_test(malformed_store_is_an_input_error_with_its_pointer), cmocka_unit_test(identities_follow_cache_batch_idx_and_gqa_groups),
               cmocka_unit_test(contiguous_offsets_reproduce_222_and_254), cmocka_unit_test(ragged_row_of_req_b_t6_is_16),
               cmocka_unit_test(paged_trace_of_req_a_split_3_9), cmocka_unit_test(store_and_recover_six_stores_counts),
               cmocka_unit_test(metadata_bytes_are_48_and_56), cmocka_unit_test(dense_csr_disagreement_is_counted),
               cmocka_unit_test(layout_check_names_every_reason), cmocka_unit_test(dense_row_holds_exactly_its_width),
               cmocka_unit_test(offsets_refuse_what_is_not_visible_or_not_mapped),
               cmocka_unit_test(random_layouts_are_injective_match_the_kernel_formula_and_segment_exactly),
               cmocka_unit_test(invalid_fixtures_fail_closed_with_their_reasons))
