/* kv_address_contract.c - contract kind "kv_address" (article 0x04): fixture input -> kv_address.h
 * calls -> report. The store-and-recover check of 0x04J writes a unique payload id for every visible
 * (request, t, h_kv, x) of K and V into each declared store through the translator, then gathers every
 * visible coordinate for every query head back through the reader under test. A fixture may declare
 * how that reader deviates from the contract (the failure rows of 0x04J); the deviation is executed
 * and the input is rejected, with its reason, only when the gather really goes wrong. */
#include "contracts/claims.h"
#include "contracts/contract.h"
#include "oracles/kv_address.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ 64
#define MAX_STORES 16
#define POISON INT64_MIN   /* an element no visible coordinate wrote: page tail, spare capacity, free page */

struct kvin {
  long long Bc, Tc, Hq, Hkv, dk, dv, eb, P, npages, B;
  const char *name[MAX_REQ];
  int64_t len[MAX_REQ], indptr[MAX_REQ + 1];
  int32_t cbi[MAX_REQ];
  int have_dense, have_csr;
  int32_t *bt;                 /* [Bc][W] */
  long long W;
  int32_t pip[MAX_REQ + 1], *pidx, lpl[MAX_REQ];
  long long nidx;
  size_t nstores;
  int store_kind[MAX_STORES], store_table[MAX_STORES];
};

/* The reader under test: each field is one row of the 0x04J failure table (0 = the contract). */
enum { RD_ACTIVE_INDEX, RD_QUERY_HEAD, RD_NHD_ON_HND, RD_INDPTR_AS_PAGES, RD_LOGICAL_PAGE, RD_PAGE_CAPACITY, RD_COUNT };
static const char *const RD_REASON[RD_COUNT] = {"active_b_as_cache_row", "query_head_as_kv_head", "nhd_strides_on_hnd",
                                                "indptr_as_page_table", "logical_block_as_page",
                                                "tail_rounded_to_page_capacity"};
static const char *const RD_WHAT[RD_COUNT] = {
    "the reader uses the active index b as the cache row instead of cache_batch_idx[b]",
    "the reader uses the query head h_q as the K/V head instead of h_q / (H_q / H_kv)",
    "the reader applies NHD strides to HND data",
    "the reader takes the ragged row pointer indptr as the CSR page-list pointer",
    "the reader uses the logical block j as the physical page id",
    "the reader's loop bound is the allocated page capacity, not the context length"};

static void kvin_release(struct kvin *in) {
  free(in->bt);
  free(in->pidx);
}

static struct kv_layout make_layout(const struct kvin *in, int kind, int table) {
  struct kv_layout L = {.kind = kind, .table = table, .B = in->B, .H_q = in->Hq, .H_kv = in->Hkv, .len = in->len,
                        .cache_rows = in->Bc, .T_cap = in->Tc, .cache_batch_idx = in->cbi, .indptr = in->indptr,
                        .page_size = in->P, .num_pages = in->npages, .block_table = in->bt, .table_width = in->W,
                        .page_indptr = in->pip, .page_indices = in->pidx, .last_page_len = in->lpl,
                        .page_indices_len = in->nidx};
  if (!kv_layout_paged(kind)) L.table = KV_TABLE_NONE;
  return L;
}

static void store_name(const struct kv_layout *L, char out[48]) {
  if (L->table == KV_TABLE_NONE) snprintf(out, 48, "%s", kv_layout_name(L->kind));
  else snprintf(out, 48, "%s_%s", kv_layout_name(L->kind), kv_table_name(L->table));
}

static int req_index(const struct kvin *in, struct jr *r, const json_t *o, const char *ptr, long long *b) {
  const char *name = NULL;
  if (jr_str(r, o, ptr, "request", 1, &name)) return -1;
  for (long long i = 0; i < in->B; i++)
    if (!strcmp(in->name[i], name)) { *b = i; return 0; }
  return jr_fail(r, ptr, "request", "names no request (got '%s')", name);
}

static int read_i32_array(struct jr *r, const json_t *o, const char *ptr, const char *key, long long lo, long long hi,
                          long len, int32_t *out, size_t *n) {
  long long *v = NULL;
  size_t k = 0;
  if (jr_int_array(r, o, ptr, key, 1, lo, hi, len, &v, &k)) return -1;
  for (size_t i = 0; i < k; i++) out[i] = (int32_t)v[i];
  free(v);
  if (n) *n = k;
  return 0;
}

static int read_input(struct jr *r, const json_t *in, const char *ptr, struct kvin *k) {
  static const char *const req[] = {"B_c", "T_c", "H_q", "H_kv", "d_h", "elem_bytes", "page_size", "num_pages",
                                    "requests", "ragged_indptr", "stores", NULL};
  static const char *const opt[] = {"d_v", "block_table", "csr", "queries", "splits", "reader", "traffic_claim", NULL};
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "B_c", 1, 1, 1 << 20, &k->Bc) ||
      jr_int(r, in, ptr, "T_c", 1, 1, 1 << 24, &k->Tc) || jr_int(r, in, ptr, "H_q", 1, 1, 1024, &k->Hq) ||
      jr_int(r, in, ptr, "H_kv", 1, 1, 1024, &k->Hkv) || jr_int(r, in, ptr, "d_h", 1, 1, 1024, &k->dk) ||
      jr_int(r, in, ptr, "elem_bytes", 1, 1, 16, &k->eb) || jr_int(r, in, ptr, "page_size", 1, 1, 1 << 16, &k->P) ||
      jr_int(r, in, ptr, "num_pages", 1, 1, INT32_MAX, &k->npages))
    return -1;
  k->dv = k->dk;
  if (jr_int(r, in, ptr, "d_v", 0, 1, 1024, &k->dv)) return -1;
  if (k->Bc * k->Tc * k->Hkv * (k->dk > k->dv ? k->dk : k->dv) > (1 << 26) || k->npages * k->P * k->Hkv * 1024 > (1LL << 36))
    return jr_fail(r, ptr, NULL, "the stores would be too large for a contract fixture");
  char p[DKB_PTR_MAX], e[DKB_PTR_MAX];
  const json_t *reqs = jr_get(r, in, ptr, "requests", 1, JSON_ARRAY);
  if (!reqs) return -1;
  k->B = (long long)json_array_size(reqs);
  jr_ptr_key(p, ptr, "requests");
  if (k->B < 1 || k->B > MAX_REQ) return jr_fail(r, ptr, "requests", "must have 1 to %d requests", MAX_REQ);
  for (long long b = 0; b < k->B; b++) {
    const json_t *o = json_array_get(reqs, (size_t)b);
    jr_ptr_idx(e, p, (size_t)b);
    static const char *const rq[] = {"name", "len", "cache_row", NULL};
    long long len = 0, row = 0;
    if (jr_keys(r, o, e, rq, NULL) || jr_str(r, o, e, "name", 1, &k->name[b]) ||
        jr_int(r, o, e, "len", 1, 0, 1 << 24, &len) || jr_int(r, o, e, "cache_row", 1, -1, INT32_MAX, &row))
      return -1;
    k->len[b] = len;
    k->cbi[b] = (int32_t)row;
  }
  long long *ip = NULL;
  size_t n = 0;
  if (jr_int_array(r, in, ptr, "ragged_indptr", 1, 0, 1LL << 40, k->B + 1, &ip, &n)) return -1;
  for (size_t i = 0; i < n; i++) k->indptr[i] = ip[i];
  free(ip);
  for (long long b = 0; b < k->B; b++)
    if (k->indptr[b + 1] < k->indptr[b]) {
      jr_ptr_key(p, ptr, "ragged_indptr");
      jr_ptr_idx(e, p, (size_t)b + 1);
      return jr_fail(r, e, NULL, "must not decrease (got %lld after %lld)", (long long)k->indptr[b + 1], (long long)k->indptr[b]);
    }
  const json_t *bt = jr_get(r, in, ptr, "block_table", 0, JSON_ARRAY);
  if (!bt && json_object_get(in, "block_table")) return -1;
  if (bt) {
    jr_ptr_key(p, ptr, "block_table");
    if ((long long)json_array_size(bt) != k->Bc) return jr_fail(r, ptr, "block_table", "must have one row per cache row (%lld)", k->Bc);
    k->W = json_is_array(json_array_get(bt, 0)) ? (long long)json_array_size(json_array_get(bt, 0)) : 0;
    if (k->W < 1) return jr_fail(r, p, "0", "must be a non-empty array of page ids");
    k->bt = DKB_CALLOC((size_t)(k->Bc * k->W), sizeof *k->bt);
    for (long long c = 0; c < k->Bc; c++) {
      const json_t *row = json_array_get(bt, (size_t)c);
      jr_ptr_idx(e, p, (size_t)c);
      if (!json_is_array(row) || (long long)json_array_size(row) != k->W)
        return jr_fail(r, e, NULL, "must be an array of %lld page ids", k->W);
      for (long long j = 0; j < k->W; j++) {
        char q[DKB_PTR_MAX];
        jr_ptr_idx(q, e, (size_t)j);
        const json_t *v = json_array_get(row, (size_t)j);
        if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) > INT32_MAX)
          return jr_fail(r, q, NULL, "must be a page id or -1 (got %s)", jr_type_name(v));
        k->bt[c * k->W + j] = (int32_t)json_integer_value(v);
      }
    }
    k->have_dense = 1;
  }
  const json_t *csr = jr_get(r, in, ptr, "csr", 0, JSON_OBJECT);
  if (!csr && json_object_get(in, "csr")) return -1;
  if (csr) {
    jr_ptr_key(p, ptr, "csr");
    static const char *const cq[] = {"page_indptr", "page_indices", "last_page_len", NULL};
    if (jr_keys(r, csr, p, cq, NULL) || read_i32_array(r, csr, p, "page_indptr", 0, INT32_MAX, k->B + 1, k->pip, NULL) ||
        read_i32_array(r, csr, p, "last_page_len", 0, INT32_MAX, k->B, k->lpl, NULL))
      return -1;
    const json_t *pi = jr_get(r, csr, p, "page_indices", 1, JSON_ARRAY);
    if (!pi) return -1;
    k->nidx = (long long)json_array_size(pi);
    k->pidx = DKB_CALLOC((size_t)k->nidx, sizeof *k->pidx);
    if (read_i32_array(r, csr, p, "page_indices", -1, INT32_MAX, -1, k->pidx, NULL)) return -1;
    k->have_csr = 1;
  }
  const json_t *st = jr_get(r, in, ptr, "stores", 1, JSON_ARRAY);
  if (!st) return -1;
  jr_ptr_key(p, ptr, "stores");
  k->nstores = json_array_size(st);
  if (k->nstores < 1 || k->nstores > MAX_STORES) return jr_fail(r, ptr, "stores", "must have 1 to %d stores", MAX_STORES);
  static const char *const LAYOUTS[] = {"contiguous_nhd", "contiguous_hnd", "ragged_nhd", "paged_nhd", "paged_hnd", NULL};
  static const char *const TABLES[] = {"none", "dense", "csr", NULL};
  for (size_t s = 0; s < k->nstores; s++) {
    const json_t *o = json_array_get(st, s);
    jr_ptr_idx(e, p, s);
    static const char *const sq[] = {"layout", NULL}, *const so[] = {"table", NULL};
    int table = 0;
    if (jr_keys(r, o, e, sq, so) || jr_enum(r, o, e, "layout", 1, LAYOUTS, &k->store_kind[s]) ||
        jr_enum(r, o, e, "table", 0, TABLES, &table))
      return -1;
    int paged = k->store_kind[s] >= KV_PAGED_NHD;
    if (paged != (table != 0)) return jr_fail(r, e, "table", "paged stores need \"dense\" or \"csr\", the others none");
    if ((table == 1 && !k->have_dense) || (table == 2 && !k->have_csr))
      return jr_fail(r, e, "table", "the %s table is not given", TABLES[table]);
    k->store_table[s] = table;
  }
  return 0;
}

/* Unique payload id of (z, b, t, h, x): 1 + its rank in logical order; 0 is never an id. */
struct ids {
  const struct kvin *in;
  int64_t pre[MAX_REQ + 1];   /* tokens before request b */
};
static int64_t payload_id(const struct ids *I, int z, int64_t d, int64_t b, int64_t t, int64_t h, int64_t x) {
  int64_t zbase = z ? I->pre[I->in->B] * I->in->Hkv * I->in->dk : 0;
  return 1 + zbase + ((I->pre[b] + t) * I->in->Hkv + h) * d + x;
}
static void describe_id(const struct ids *I, int64_t id, char *out, size_t n) {
  if (id == POISON) { snprintf(out, n, "a poisoned element"); return; }
  int64_t v = id - 1, kk = I->pre[I->in->B] * I->in->Hkv * I->in->dk;
  int z = v >= kk;
  int64_t d = z ? I->in->dv : I->in->dk;
  if (z) v -= kk;
  int64_t x = v % d, h = (v / d) % I->in->Hkv, tok = v / d / I->in->Hkv, b = 0;
  while (b + 1 < I->in->B && I->pre[b + 1] <= tok) b++;
  snprintf(out, n, "the %s payload of %s t=%lld h_kv=%lld x=%lld", z ? "V" : "K", I->in->name[b],
           (long long)(tok - I->pre[b]), (long long)h, (long long)x);
}

struct sr {                  /* store-and-recover counts of one store, K and V together */
  long long written, collisions, unmapped_writes;
  long long gathers, mismatches, unmapped_reads, poison_reads, tail_reads;
  long long tail_poison, tail_expected;
  char first[240];
};

static long long sr_failures(const struct sr *s) {
  return s->collisions + s->unmapped_writes + s->mismatches + s->unmapped_reads + s->poison_reads + s->tail_reads;
}

/* Writes through W, gathers through R (the reader under test; R == W for the contract reader). */
static void store_recover(const struct ids *I, const struct kv_layout *W, const struct kv_layout *R, int query_head,
                          struct sr *o) {
  const struct kvin *in = I->in;
  memset(o, 0, sizeof *o);
  int64_t alloc_len[MAX_REQ];
  struct kv_layout A = *W;   /* the same layout with every allocated row visible: finds the tails */
  for (int64_t b = 0; b < in->B; b++)
    alloc_len[b] = W->kind >= KV_PAGED_NHD ? kv_blocks(W, b) * W->page_size
                   : W->kind == KV_RAGGED_NHD ? W->len[b] : W->T_cap;
  A.len = alloc_len;
  for (int z = 0; z < 2; z++) {
    int64_t d = z ? in->dv : in->dk, n = kv_tensor_elems(W, d);
    int64_t *store = DKB_MALLOC((size_t)n * sizeof *store);
    for (int64_t i = 0; i < n; i++) store[i] = POISON;
    for (int64_t b = 0; b < in->B; b++)
      for (int64_t t = 0; t < W->len[b]; t++)
        for (int64_t h = 0; h < in->Hkv; h++)
          for (int64_t x = 0; x < d; x++) {
            int64_t off = kv_offset(W, d, b, t, h, x);
            if (off < 0 || off >= n) { o->unmapped_writes++; continue; }
            o->written++;
            if (store[off] != POISON) o->collisions++;
            store[off] = payload_id(I, z, d, b, t, h, x);
          }
    for (int64_t b = 0; b < in->B; b++)
      for (int64_t t = W->len[b]; t < alloc_len[b]; t++)
        for (int64_t h = 0; h < in->Hkv; h++)
          for (int64_t x = 0; x < d; x++) {
            int64_t off = kv_offset(&A, d, b, t, h, x);
            o->tail_poison += off >= 0 && off < n && store[off] == POISON;
          }
    o->tail_expected += kv_tail_elems(W, d);
    for (int64_t b = 0; b < in->B; b++)
      for (int64_t t = 0; t < R->len[b]; t++)
        for (int64_t hq = 0; hq < in->Hq; hq++)
          for (int64_t x = 0; x < d; x++) {
            int64_t h = query_head ? hq : kv_head_of(R, hq), want_h = kv_head_of(W, hq);
            int64_t off = kv_offset(R, d, b, t, h, x);
            const char *bad = NULL;
            char got[120] = "";
            if (off < 0 || off >= n) {
              if (t < W->len[b]) { o->unmapped_reads++; bad = "maps to no element"; }
            } else {
              o->gathers++;
              int64_t v = store[off];
              if (v == POISON) o->poison_reads++;
              if (t >= W->len[b]) { o->tail_reads++; bad = "is past the context length but was read"; }
              else if (v == POISON) bad = "read";
              else if (v != payload_id(I, z, d, b, t, want_h, x)) { o->mismatches++; bad = "read"; }
              if (bad) describe_id(I, v, got, sizeof got);
            }
            if (bad && !o->first[0])
              snprintf(o->first, sizeof o->first, "%s %s t=%lld h_q=%lld x=%lld %s%s%s", z ? "V" : "K", in->name[b],
                       (long long)t, (long long)hq, (long long)x, bad, *got ? " " : "", got);
          }
    free(store);
  }
}

/* Reader buffers for the deviations that replace metadata. */
struct rdbuf {
  int64_t len_round[MAX_REQ];
  int32_t indptr32[MAX_REQ + 1];
  int32_t *ident_table, *ident_csr;
};

static void reader_layout(const struct kvin *in, const struct kv_layout *W, int dev, struct rdbuf *rb, struct kv_layout *R) {
  *R = *W;
  switch (dev) {
  case RD_ACTIVE_INDEX: R->cache_batch_idx = NULL; break;
  case RD_NHD_ON_HND:
    if (W->kind == KV_CONTIG_HND) R->kind = KV_CONTIG_NHD;
    if (W->kind == KV_PAGED_HND) R->kind = KV_PAGED_NHD;
    break;
  case RD_INDPTR_AS_PAGES:
    if (W->table == KV_TABLE_CSR) {
      for (int64_t b = 0; b <= in->B; b++) rb->indptr32[b] = (int32_t)in->indptr[b];
      R->page_indptr = rb->indptr32;
    }
    break;
  case RD_LOGICAL_PAGE:
    if (W->table == KV_TABLE_DENSE) R->block_table = rb->ident_table;
    if (W->table == KV_TABLE_CSR) R->page_indices = rb->ident_csr;
    break;
  case RD_PAGE_CAPACITY:
    for (int64_t b = 0; b < in->B; b++) rb->len_round[b] = (W->len[b] + in->P - 1) / in->P * in->P;
    R->len = rb->len_round;
    break;
  default: break;
  }
}

static json_t *sr_json(const char *name, const struct sr *s) {
  return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "store", name, "elements_written", (json_int_t)s->written,
                   "collisions", (json_int_t)s->collisions, "gathers", (json_int_t)s->gathers, "mismatches",
                   (json_int_t)s->mismatches, "unmapped_reads", (json_int_t)(s->unmapped_reads + s->unmapped_writes),
                   "poison_reads", (json_int_t)s->poison_reads, "tail_reads", (json_int_t)s->tail_reads,
                   "tail_poison_elements", (json_int_t)s->tail_poison);
}

static json_t *ll_array(const int64_t *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

int oracle_eval_kv_address(struct jr *r, const json_t *input, const char *ptr, json_t **report, struct oracle_reject *rej) {
  struct kvin in;
  memset(&in, 0, sizeof in);
  struct rdbuf rb = {0};
  json_t *rep = NULL, *measured = NULL;
  int rc = -1;
  if (read_input(r, input, ptr, &in)) goto cleanup;

  /* The reader under test. */
  int dev[RD_COUNT] = {0};
  const json_t *rd = jr_get(r, input, ptr, "reader", 0, JSON_OBJECT);
  if (!rd && json_object_get(input, "reader")) goto cleanup;
  if (rd) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, "reader");
    static const char *const ro[] = {"cache_row", "kv_head", "hnd_address", "page_lookup", "visible_bound", NULL};
    static const char *const CR[] = {"cache_batch_idx", "active_index", NULL}, *const KH[] = {"gqa_group", "query_head", NULL},
                             *const HA[] = {"hnd_strides", "nhd_strides", NULL},
                             *const PL[] = {"page_table", "ragged_indptr", "logical_block", NULL},
                             *const VB[] = {"context_length", "page_capacity", NULL};
    int pl = 0;
    if (jr_keys(r, rd, p, NULL, ro) || jr_enum(r, rd, p, "cache_row", 0, CR, &dev[RD_ACTIVE_INDEX]) ||
        jr_enum(r, rd, p, "kv_head", 0, KH, &dev[RD_QUERY_HEAD]) || jr_enum(r, rd, p, "hnd_address", 0, HA, &dev[RD_NHD_ON_HND]) ||
        jr_enum(r, rd, p, "page_lookup", 0, PL, &pl) || jr_enum(r, rd, p, "visible_bound", 0, VB, &dev[RD_PAGE_CAPACITY]))
      goto cleanup;
    dev[RD_INDPTR_AS_PAGES] = pl == 1;
    dev[RD_LOGICAL_PAGE] = pl == 2;
  }

  /* 1. Metadata checks of every store's layout, then dense versus CSR on every visible block. */
  struct kv_layout L[MAX_STORES];
  char names[MAX_STORES][48], reason[64], detail[256];
  for (size_t s = 0; s < in.nstores; s++) {
    L[s] = make_layout(&in, in.store_kind[s], in.store_table[s]);
    store_name(&L[s], names[s]);
    if (kv_layout_check(&L[s], reason, detail)) {
      rc = oracle_reject(rej, reason, "%s: %s", names[s], detail);
      goto cleanup;
    }
  }
  long long disagreements = 0;
  if (in.have_dense && in.have_csr) {
    struct kv_layout D = make_layout(&in, KV_PAGED_NHD, KV_TABLE_DENSE), C = make_layout(&in, KV_PAGED_NHD, KV_TABLE_CSR);
    const char *which = kv_layout_check(&D, reason, detail) ? "dense" : kv_layout_check(&C, reason, detail) ? "csr" : NULL;
    if (which) {
      rc = oracle_reject(rej, reason, "%s table: %s", which, detail);
      goto cleanup;
    }
    int64_t fb = 0, fj = 0;
    disagreements = kv_page_disagreements(&D, &C, &fb, &fj);
    if (disagreements) {
      rc = oracle_reject(rej, "dense_csr_disagree",
                         "%lld visible logical blocks map to different physical pages; first: %s block %lld is page %lld "
                         "in the dense table (cache row %lld) and page %lld in the CSR list", disagreements, in.name[fb],
                         (long long)fj, (long long)kv_page_of(&D, fb, fj), (long long)kv_cache_row(&D, fb),
                         (long long)kv_page_of(&C, fb, fj));
      goto cleanup;
    }
  }

  /* 2. Store and recover with the contract reader. */
  struct ids I = {.in = &in};
  for (long long b = 0; b < in.B; b++) I.pre[b + 1] = I.pre[b] + in.len[b];
  struct sr res[MAX_STORES], tot = {0};
  rep = json_object();
  json_t *stores = json_array(), *reader = json_object();
  json_object_set_new(rep, "reader_deviations", reader);
  long long tail_poison = -1, per_tensor = 0;
  for (size_t s = 0; s < in.nstores; s++) {
    store_recover(&I, &L[s], &L[s], 0, &res[s]);
    json_array_append_new(stores, sr_json(names[s], &res[s]));
    tot.collisions += res[s].collisions;
    tot.mismatches += res[s].mismatches;
    tot.unmapped_reads += res[s].unmapped_reads + res[s].unmapped_writes;
    tot.poison_reads += res[s].poison_reads;
    tot.gathers += res[s].gathers;
    if (L[s].table != KV_TABLE_NONE && tail_poison < 0) tail_poison = res[s].tail_poison;
    if (res[s].tail_poison != res[s].tail_expected || sr_failures(&res[s])) {
      rc = oracle_reject(rej, res[s].collisions ? "address_collision" : "recovery_mismatch",
                         "%s with the contract reader: %lld collisions, %lld mismatches, %lld unmapped, %lld poisoned, "
                         "%lld of %lld tail elements poisoned; first: %s", names[s], res[s].collisions, res[s].mismatches,
                         res[s].unmapped_reads + res[s].unmapped_writes, res[s].poison_reads, res[s].tail_poison,
                         res[s].tail_expected, res[s].first[0] ? res[s].first : "none");
      json_decref(stores);
      goto cleanup;
    }
  }
  json_t *sr_tot = json_object();
  json_object_set_new(rep, "store_recover", sr_tot);
  json_object_set_new(sr_tot, "stores", stores);
  per_tensor = I.pre[in.B] * in.Hkv * in.dk;

  /* 3. The declared deviations, one at a time, through the same check. */
  rb.ident_table = DKB_CALLOC(in.bt ? (size_t)(in.Bc * in.W) : 1, sizeof(int32_t));
  rb.ident_csr = DKB_CALLOC((size_t)in.nidx, sizeof(int32_t));
  for (long long c = 0; in.bt && c < in.Bc; c++)
    for (long long j = 0; j < in.W; j++) rb.ident_table[c * in.W + j] = (int32_t)j;
  for (long long b = 0; in.have_csr && b < in.B; b++)
    for (int32_t i = in.pip[b]; i < in.pip[b + 1] && i < in.nidx; i++) rb.ident_csr[i] = i - in.pip[b];
  for (int d = 0; d < RD_COUNT; d++) {
    if (!dev[d]) continue;
    long long fails = 0;
    struct sr worst = {0};
    char where[48] = "";
    for (size_t s = 0; s < in.nstores; s++) {
      struct kv_layout R;
      struct sr o;
      reader_layout(&in, &L[s], d, &rb, &R);
      store_recover(&I, &L[s], &R, d == RD_QUERY_HEAD, &o);
      if (sr_failures(&o) && !fails) { worst = o; memcpy(where, names[s], sizeof where); }
      fails += sr_failures(&o);
    }
    json_object_set_new(reader, RD_REASON[d], json_integer(fails));
    if (fails) {
      rc = oracle_reject(rej, RD_REASON[d],
                         "%s: %lld bad gathers over the stores; in %s %lld of %lld gathers read the wrong payload, %lld "
                         "poisoned, %lld past the context, %lld unmapped; first: %s", RD_WHAT[d], fails, where,
                         worst.mismatches, worst.gathers, worst.poison_reads, worst.tail_reads, worst.unmapped_reads,
                         worst.first);
      goto cleanup;
    }
  }

  /* 4. Ledgers: resident metadata, logical lookups, and a measured row only from a profiler counter. */
  long long dense_bytes = -1, csr_bytes = -1, ragged_bytes = -1, lookups = 0;
  struct kv_layout D = make_layout(&in, KV_PAGED_NHD, KV_TABLE_DENSE), C = make_layout(&in, KV_PAGED_NHD, KV_TABLE_CSR),
                   G = make_layout(&in, KV_RAGGED_NHD, KV_TABLE_NONE);
  const struct kv_layout *PG = in.have_dense ? &D : in.have_csr ? &C : NULL;
  if (in.have_dense) dense_bytes = kv_metadata_bytes(&D);
  if (in.have_csr) csr_bytes = kv_metadata_bytes(&C);
  ragged_bytes = kv_metadata_bytes(&G);
  for (long long b = 0; PG && b < in.B; b++) lookups += kv_segments(PG, b, 0, in.len[b], NULL, 0);
  long long resident = (dense_bytes > 0 ? dense_bytes : 0) + (csr_bytes > 0 ? csr_bytes : 0);
  rc = oracle_traffic_claim(r, input, ptr, "traffic_claim", resident, &measured, rej);
  if (rc) goto cleanup;
  rc = -1;

  /* 5. Report: identities, offsets of the queries, page tables, split segments. */
  json_t *ident = json_array(), *heads = json_array(), *pages = json_object();
  for (long long b = 0; b < in.B; b++) {
    json_array_append_new(ident, json_pack("{s:s,s:I,s:I,s:I}", "request", in.name[b], "b", (json_int_t)b, "cache_row",
                                           (json_int_t)kv_cache_row(&L[0], b), "len", (json_int_t)in.len[b]));
    if (!PG) continue;
    json_t *pl = json_array();
    for (int64_t j = 0; j < kv_blocks(PG, b); j++) json_array_append_new(pl, json_integer(kv_page_of(PG, b, j)));
    json_object_set_new(pages, in.name[b], pl);
  }
  struct kv_layout H = make_layout(&in, KV_CONTIG_NHD, KV_TABLE_NONE);
  for (long long h = 0; h < in.Hq; h++) json_array_append_new(heads, json_integer(kv_head_of(&H, h)));
  json_object_set_new(rep, "identity", ident);
  json_object_set_new(rep, "kv_head_of", heads);
  json_object_set_new(rep, "pages", pages);

  char p[DKB_PTR_MAX], e[DKB_PTR_MAX];
  const json_t *qs = jr_get(r, input, ptr, "queries", 0, JSON_ARRAY);
  if (!qs && json_object_get(input, "queries")) goto cleanup;
  json_t *qout = json_array();
  json_object_set_new(rep, "queries", qout);
  jr_ptr_key(p, ptr, "queries");
  for (size_t i = 0; qs && i < json_array_size(qs); i++) {
    const json_t *q = json_array_get(qs, i);
    jr_ptr_idx(e, p, i);
    static const char *const qq[] = {"request", "t", "h_q", "x", NULL};
    long long b = 0, t = 0, hq = 0, x = 0;
    if (jr_keys(r, q, e, qq, NULL) || req_index(&in, r, q, e, &b) || jr_int(r, q, e, "t", 1, 0, in.len[b] - 1, &t) ||
        jr_int(r, q, e, "h_q", 1, 0, in.Hq - 1, &hq) || jr_int(r, q, e, "x", 1, 0, in.dk - 1, &x)) goto cleanup;
    int64_t h = kv_head_of(&L[0], hq);
    json_t *lay = json_object();
    for (size_t s = 0; s < in.nstores; s++) {
      int64_t co[4], stv[4];
      int nd = kv_coord(&L[s], in.dk, b, t, h, x, co);
      kv_strides(&L[s], in.dk, stv);
      int64_t off = kv_offset(&L[s], in.dk, b, t, h, x);
      json_object_set_new(lay, names[s], json_pack("{s:o,s:o,s:I,s:I}", "coordinate", ll_array(co, nd), "strides",
                                                   ll_array(stv, nd), "elements", (json_int_t)off, "bytes",
                                                   (json_int_t)(off * in.eb)));
    }
    json_array_append_new(qout, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o}", "request", in.name[b], "t", (json_int_t)t, "h_q",
                                          (json_int_t)hq, "x", (json_int_t)x, "cache_row", (json_int_t)kv_cache_row(&L[0], b),
                                          "h_kv", (json_int_t)h, "offsets", lay));
  }
  const json_t *sp = jr_get(r, input, ptr, "splits", 0, JSON_ARRAY);
  if (!sp && json_object_get(input, "splits")) goto cleanup;
  json_t *sout = json_array();
  json_object_set_new(rep, "splits", sout);
  jr_ptr_key(p, ptr, "splits");
  for (size_t i = 0; sp && i < json_array_size(sp); i++) {
    const json_t *q = json_array_get(sp, i);
    jr_ptr_idx(e, p, i);
    static const char *const sq[] = {"request", "start", "end", NULL};
    long long b = 0, a = 0, en = 0;
    if (jr_keys(r, q, e, sq, NULL) || req_index(&in, r, q, e, &b) || jr_int(r, q, e, "start", 1, 0, in.len[b], &a) ||
        jr_int(r, q, e, "end", 1, a, in.len[b], &en)) goto cleanup;
    if (!PG) { jr_fail(r, e, NULL, "splits need a dense or CSR page table"); goto cleanup; }
    struct kv_segment seg[64], other[64];
    int64_t ns = kv_segments(PG, b, a, en, seg, 64);
    int agree = 1;
    if (in.have_dense && in.have_csr) {
      int64_t no = kv_segments(&C, b, a, en, other, 64);
      agree = no == ns && !memcmp(seg, other, (size_t)(ns < 64 ? ns : 64) * sizeof *seg);
    }
    json_t *sj = json_array();
    for (int64_t k = 0; k < ns && k < 64; k++)
      json_array_append_new(sj, json_pack("{s:[I,I],s:I,s:I,s:I,s:I}", "logical", (json_int_t)seg[k].logical_start,
                                          (json_int_t)(seg[k].logical_start + seg[k].rows), "block",
                                          (json_int_t)(seg[k].logical_start / in.P), "page", (json_int_t)seg[k].page,
                                          "page_row", (json_int_t)seg[k].page_row, "rows", (json_int_t)seg[k].rows));
    long long formula = en > a ? 1 + (en - 1) / in.P - a / in.P : 0;
    json_array_append_new(sout, json_pack("{s:s,s:I,s:I,s:I,s:I,s:b,s:o}", "request", in.name[b], "start", (json_int_t)a,
                                          "end", (json_int_t)en, "n_seg", (json_int_t)ns, "n_seg_formula",
                                          (json_int_t)formula, "dense_csr_agree", agree, "segments", sj));
  }
  json_t *add = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "elements_per_tensor", (json_int_t)per_tensor,
                          "elements_k_and_v", (json_int_t)(I.pre[in.B] * in.Hkv * (in.dk + in.dv)), "gathers",
                          (json_int_t)tot.gathers, "collisions", (json_int_t)tot.collisions, "mismatches",
                          (json_int_t)tot.mismatches, "unmapped_reads", (json_int_t)tot.unmapped_reads,
                          "dense_csr_disagreements", (json_int_t)disagreements, "poisoned_tail_elements",
                          (json_int_t)(tail_poison < 0 ? 0 : tail_poison), "poison_reached", (json_int_t)tot.poison_reads);
  json_object_update(sr_tot, add);
  json_decref(add);
  json_object_set_new(rep, "ledger", json_pack("{s:{s:o,s:o,s:I},s:I,s:o}", "resident_metadata_bytes", "dense_block_table",
                                               dense_bytes < 0 ? json_null() : json_integer(dense_bytes), "csr",
                                               csr_bytes < 0 ? json_null() : json_integer(csr_bytes), "ragged_indptr",
                                               (json_int_t)ragged_bytes, "logical_page_lookups", (json_int_t)lookups,
                                               "measured_traffic", measured));
  measured = NULL;
  *report = rep;
  rep = NULL;
  rc = 0;

cleanup:
  json_decref(rep);
  json_decref(measured);
  free(rb.ident_table);
  free(rb.ident_csr);
  kvin_release(&in);
  return rc;
}
