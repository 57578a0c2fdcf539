/* inputs.c - seeded, poisoned host tensors of one decode call (see inputs.h). */
#include "harness/inputs.h"
#include "lib/parallel.h"
#include "oracles/dtype.h"
#include "oracles/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double inputs_value(uint64_t seed, int tensor, int64_t b, int64_t pos, int64_t head, int64_t x) {
  /* splitmix64 over a mix of the coordinates: independent of layout, order and thread count */
  struct dkb_rng g;
  uint64_t k = seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)tensor << 60) ^ ((uint64_t)b << 40) ^ ((uint64_t)pos << 12) ^
               ((uint64_t)head << 52) ^ (uint64_t)x;
  dkb_rng_seed(&g, k);
  dkb_rng_u64(&g);
  return dkb_rng_uniform(&g, -1.0, 1.0);
}

void inputs_release(struct decode_inputs *in) {
  free(in->cache_batch_idx); free(in->indptr); free(in->block_table); free(in->page_indptr);
  free(in->page_indices); free(in->last_page_len); free(in->q); free(in->k); free(in->v);
  free(in->k_new); free(in->v_new); free(in->col_indptr); free(in->uts); free(in->ute); free(in->lts);
  free(in->lte); free(in->fm_summary); free(in->fm_sum_indptr);
  memset(in, 0, sizeof *in);
}

static int build_pages(const struct decode_call *c, struct decode_inputs *in, struct dkb_err *err) {
  const int64_t P = c->page_size;
  int64_t used = 0, width = 0;
  for (int b = 0; b < c->B; b++) {
    int64_t n = (c->kv_len[b] + P - 1) / P;
    used += n;
    if (n > width) width = n;
  }
  int64_t pool = used + c->pool_extra_pages;
  if (pool > INT32_MAX) return dkb_err_set(err, DKB_INPUT, c->file, "/cache", "needs %lld pages, more than int32 page ids hold", (long long)pool);
  int32_t *perm = DKB_MALLOC((size_t)pool * sizeof *perm);
  for (int64_t i = 0; i < pool; i++) perm[i] = (int32_t)i;
  if (c->shuffle_pages) {  /* Fisher-Yates from the call's seed: logical and physical order differ */
    struct dkb_rng g;
    dkb_rng_seed(&g, c->seed ^ 0x7061676573ull);
    const int64_t G = c->shuffle_group;  /* within each group of G pool pages; 0: the whole pool */
    for (int64_t i = pool - 1; i > 0; i--) {
      const int64_t g0 = G > 0 ? i / G * G : 0;
      int64_t j = g0 + (int64_t)dkb_rng_below(&g, (uint64_t)(i - g0) + 1);
      int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
  }
  in->L.num_pages = pool;
  in->L.page_size = P;
  int64_t next = 0;
  if (c->table == KV_TABLE_DENSE) {
    in->block_table = DKB_MALLOC((size_t)(c->cache_rows * width) * sizeof *in->block_table);
    for (int64_t i = 0; i < c->cache_rows * width; i++) in->block_table[i] = -1;  /* sentinel: no page */
    for (int b = 0; b < c->B; b++)
      for (int64_t j = 0; j < (c->kv_len[b] + P - 1) / P; j++) in->block_table[c->cache_row[b] * width + j] = perm[next++];
    in->L.block_table = in->block_table;
    in->L.table_width = width;
  } else {
    in->page_indptr = DKB_MALLOC((size_t)(c->B + 1) * sizeof *in->page_indptr);
    in->page_indices = DKB_MALLOC((size_t)used * sizeof *in->page_indices);
    in->last_page_len = DKB_MALLOC((size_t)c->B * sizeof *in->last_page_len);
    in->page_indptr[0] = 0;
    for (int b = 0; b < c->B; b++) {
      int64_t n = (c->kv_len[b] + P - 1) / P;
      for (int64_t j = 0; j < n; j++, next++) in->page_indices[next] = perm[next];
      in->page_indptr[b + 1] = (int32_t)next;
      in->last_page_len[b] = (int32_t)(c->kv_len[b] - P * (n - 1));
    }
    in->n_page_indices = used;
    in->L.page_indptr = in->page_indptr;
    in->L.page_indices = in->page_indices;
    in->L.last_page_len = in->last_page_len;
    in->L.page_indices_len = used;
  }
  free(perm);
  return 0;
}

/* Per-request FlashMask vectors: a document program or the fixture's explicit columns. */
static void build_flashmask(const struct decode_call *c, struct decode_inputs *in) {
  in->col_indptr = DKB_MALLOC((size_t)(c->B + 1) * sizeof *in->col_indptr);
  in->col_indptr[0] = 0;
  for (int b = 0; b < c->B; b++) in->col_indptr[b + 1] = in->col_indptr[b] + c->kv_len[b];
  int64_t n = in->col_indptr[c->B];
  in->uts = DKB_MALLOC((size_t)n * sizeof(int32_t)); in->ute = DKB_MALLOC((size_t)n * sizeof(int32_t));
  in->lts = DKB_MALLOC((size_t)n * sizeof(int32_t)); in->lte = DKB_MALLOC((size_t)n * sizeof(int32_t));
  for (int b = 0; b < c->B; b++) {
    int64_t o = in->col_indptr[b], N = c->kv_len[b];
    if (c->mask_program == MASKGEN_DOCUMENTS) {
      int64_t *lens = DKB_MALLOC((size_t)c->documents * sizeof *lens);
      for (int d = 0; d < c->documents; d++) lens[d] = N / c->documents + (d < N % c->documents ? 1 : 0);
      flashmask_documents(lens, c->documents, N, in->uts + o, in->ute + o, in->lts + o, in->lte + o);
      free(lens);
    } else {
      const json_t *list = json_array_get(c->mask_columns, (size_t)b);
      for (int64_t j = 0; j < N; j++) {
        const json_t *iv = json_array_get(list, (size_t)j);
        in->uts[o + j] = (int32_t)json_integer_value(json_array_get(iv, 0));
        in->ute[o + j] = (int32_t)json_integer_value(json_array_get(iv, 1));
        in->lts[o + j] = (int32_t)json_integer_value(json_array_get(iv, 2));
        in->lte[o + j] = (int32_t)json_integer_value(json_array_get(iv, 3));
      }
    }
  }
  in->fm_sum_indptr = DKB_MALLOC((size_t)(c->B + 1) * sizeof *in->fm_sum_indptr);
  in->fm_sum_indptr[0] = 0;
  for (int b = 0; b < c->B; b++) in->fm_sum_indptr[b + 1] = in->fm_sum_indptr[b] + (c->kv_len[b] + in->fm_block - 1) / in->fm_block;
  in->fm_summary = DKB_MALLOC((size_t)(in->fm_sum_indptr[c->B] * 8 + 8) * sizeof(int32_t));
  for (int b = 0; b < c->B; b++) {
    int64_t o = in->col_indptr[b];
    flashmask_summarize(in->uts + o, in->ute + o, in->lts + o, in->lte + o, c->kv_len[b], in->fm_block,
                        in->fm_summary + 8 * in->fm_sum_indptr[b]);
  }
  in->mask.col_indptr = in->col_indptr;
  in->mask.uts = in->uts; in->mask.ute = in->ute; in->mask.lts = in->lts; in->mask.lte = in->lte;
  in->mask.summary_block = in->fm_block;  /* the planner classifies each tile in O(1) */
  in->mask.summary_indptr = in->fm_sum_indptr;
  in->mask.summaries = in->fm_summary;
}

struct fill_ctx {
  const struct decode_call *c;
  struct decode_inputs *in;
};

/* One (request, K/V head) per task: every committed key's row of K and V. */
static void fill_kv(void *vctx, int64_t task) {
  struct fill_ctx *f = vctx;
  const struct decode_call *c = f->c;
  struct decode_inputs *in = f->in;
  int64_t b = task / c->H_kv, h = task % c->H_kv;
  int64_t committed = c->kv_len[b] - (c->phase == PHASE_APPEND ? c->C : 0);
  for (int64_t t = 0; t < committed; t++) {
    int64_t ok = kv_offset(&in->L, c->dk, b, t, h, 0), ov = kv_offset(&in->L, c->dv, b, t, h, 0);
    for (int64_t x = 0; x < c->dk; x++) dkb_store((enum dkb_dtype)c->dtype, in->k, (size_t)(ok + x), inputs_value(c->seed, 1, b, t, h, x));
    for (int64_t x = 0; x < c->dv; x++) dkb_store((enum dkb_dtype)c->dtype, in->v, (size_t)(ov + x), inputs_value(c->seed, 2, b, t, h, x));
  }
}

/* Elements of the K (d = dk) or V (d = dv) tensor of c's layout, as kv_tensor_elems gives them once built. */
static long long kv_elems(const struct decode_call *c, long long d) {
  long long keys = 0, pages = 0;
  for (int b = 0; b < c->B; b++) {
    keys += c->kv_len[b];
    if (c->page_size > 0) pages += (c->kv_len[b] + c->page_size - 1) / c->page_size;
  }
  switch (c->layout) {
  case KV_CONTIG_NHD:
  case KV_CONTIG_HND: return (long long)c->cache_rows * c->T_cap * c->H_kv * d;
  case KV_RAGGED_NHD: return keys * c->H_kv * d;
  default: return (pages + c->pool_extra_pages) * c->page_size * c->H_kv * d;
  }
}

void inputs_footprint(const struct decode_call *c, struct inputs_footprint *f) {
  const long long es = (long long)dkb_dtype_bytes((enum dkb_dtype)c->dtype);
  const long long rows = (long long)c->B * c->C * c->H_q;
  const long long kv = (kv_elems(c, c->dk) + kv_elems(c, c->dv)) * es;
  const long long q = rows * c->dk * es, o = rows * c->dv * es, lse = rows * 4;
  const long long news = c->phase == PHASE_APPEND ? (long long)c->B * c->C * c->H_kv * (c->dk + c->dv) * es : 0;
  const long long meta = (long long)(c->B + 1) * 64;
  f->kv_bytes = kv;
  /* inputs; the oracle's O and LSE in float64; O and LSE downloaded twice (the check and the repeat);
   * an append's caches after the call and the expected caches */
  f->host_bytes = kv + q + news + meta + rows * (c->dv + 1) * 8 + 2 * (o + lse) + (c->phase == PHASE_APPEND ? 2 * kv : 0);
  f->device_bytes = kv + q + o + lse + news + meta;
}

int inputs_check_host_memory(const struct decode_call *c, const struct inputs_footprint *f, struct dkb_err *err) {
  FILE *m = fopen("/proc/meminfo", "r");
  if (!m) return 0;  /* not Linux's /proc: the allocations themselves will say */
  char line[256];
  long long kb = -1;
  while (fgets(line, sizeof line, m))
    if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
  fclose(m);
  if (kb < 0 || f->host_bytes <= kb * 1024) return 0;
  return dkb_err_set(err, DKB_ENV, c->file, NULL,
                     "the call needs %lld bytes of host memory, %lld available (MemAvailable): %lld of them its K/V",
                     f->host_bytes, kb * 1024, f->kv_bytes);
}

int inputs_build(const struct decode_call *c, int64_t fm_block, struct decode_inputs *in, struct dkb_err *err) {
  memset(in, 0, sizeof *in);
  in->esize = (int)dkb_dtype_bytes((enum dkb_dtype)c->dtype);
  struct kv_layout *L = &in->L;
  L->kind = (enum kv_layout_kind)c->layout;
  L->table = (enum kv_table_kind)c->table;
  L->B = c->B;
  L->H_q = c->H_q;
  L->H_kv = c->H_kv;
  L->len = c->kv_len;
  in->cache_batch_idx = DKB_MALLOC((size_t)c->B * sizeof *in->cache_batch_idx);
  memcpy(in->cache_batch_idx, c->cache_row, (size_t)c->B * sizeof *in->cache_batch_idx);
  L->cache_batch_idx = in->cache_batch_idx;
  L->cache_rows = c->cache_rows;
  L->T_cap = c->T_cap;
  if (c->layout == KV_RAGGED_NHD) {
    in->indptr = DKB_MALLOC((size_t)(c->B + 1) * sizeof *in->indptr);
    in->indptr[0] = 0;
    for (int b = 0; b < c->B; b++) in->indptr[b + 1] = in->indptr[b] + c->kv_len[b];
    L->indptr = in->indptr;
  }
  if (kv_layout_paged(c->layout) && build_pages(c, in, err)) goto fail;
  {
    char reason[64], detail[256];
    if (kv_layout_check(L, reason, detail)) {
      dkb_err_set(err, DKB_INPUT, c->file, "/cache", "layout metadata fails closed: %s: %s", reason, detail);
      goto fail;
    }
  }
  /* K and V: poison everything, then write every committed key through the translator. */
  in->k_bytes = (size_t)kv_tensor_elems(L, c->dk) * (size_t)in->esize;
  in->v_bytes = (size_t)kv_tensor_elems(L, c->dv) * (size_t)in->esize;
  in->k = malloc(in->k_bytes ? in->k_bytes : 1);
  in->v = malloc(in->v_bytes ? in->v_bytes : 1);
  if (!in->k || !in->v) { dkb_err_set(err, DKB_ENV, c->file, NULL, "out of memory: cannot allocate %zu bytes of host K/V", in->k_bytes + in->v_bytes); goto fail; }
  memset(in->k, 0xFF, in->k_bytes);  /* 0xFF.. is NaN in fp16, bf16 and fp32 */
  memset(in->v, 0xFF, in->v_bytes);
  struct fill_ctx f = {c, in};
  dkb_parallel_for((int64_t)c->B * c->H_kv, fill_kv, &f);
  int64_t written = 0;
  for (int b = 0; b < c->B; b++) written += (c->kv_len[b] - (c->phase == PHASE_APPEND ? c->C : 0)) * c->H_kv;
  in->poisoned_elems = (int64_t)(in->k_bytes + in->v_bytes) / in->esize - written * (c->dk + c->dv);

  in->q_bytes = (size_t)c->B * c->C * c->H_q * c->dk * (size_t)in->esize;
  in->q = DKB_MALLOC(in->q_bytes);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t i = 0; i < c->C; i++)
      for (int64_t h = 0; h < c->H_q; h++)
        for (int64_t x = 0; x < c->dk; x++)
          dkb_store((enum dkb_dtype)c->dtype, in->q, (size_t)(((b * c->C + i) * c->H_q + h) * c->dk + x),
                    inputs_value(c->seed, 0, b, c->kv_len[b] - c->C + i, h, x));
  if (c->phase == PHASE_APPEND) {
    in->new_k_bytes = (size_t)c->B * c->C * c->H_kv * c->dk * (size_t)in->esize;
    in->new_v_bytes = (size_t)c->B * c->C * c->H_kv * c->dv * (size_t)in->esize;
    in->k_new = DKB_MALLOC(in->new_k_bytes);
    in->v_new = DKB_MALLOC(in->new_v_bytes);
    for (int64_t b = 0; b < c->B; b++)
      for (int64_t i = 0; i < c->C; i++) {
        int64_t t = c->kv_len[b] - c->C + i;
        for (int64_t h = 0; h < c->H_kv; h++) {
          for (int64_t x = 0; x < c->dk; x++)
            dkb_store((enum dkb_dtype)c->dtype, in->k_new, (size_t)(((b * c->C + i) * c->H_kv + h) * c->dk + x), inputs_value(c->seed, 1, b, t, h, x));
          for (int64_t x = 0; x < c->dv; x++)
            dkb_store((enum dkb_dtype)c->dtype, in->v_new, (size_t)(((b * c->C + i) * c->H_kv + h) * c->dv + x), inputs_value(c->seed, 2, b, t, h, x));
        }
      }
  }
  in->mask.kind = (enum mask_kind)c->mask_kind;
  in->mask.window = c->window;
  in->mask.sink = c->sink;
  in->fm_block = fm_block > 0 ? fm_block : 64;
  if (c->mask_kind == MASK_FLASHMASK) build_flashmask(c, in);
  return 0;
fail:
  inputs_release(in);
  return -1;
}

void inputs_kv_row(const struct decode_call *c, const struct decode_inputs *in, int which, int64_t b, int64_t t,
                   int64_t h, double *out) {
  const int64_t d = which ? c->dv : c->dk;
  const enum dkb_dtype dt = (enum dkb_dtype)c->dtype;
  const void *base;
  int64_t off;
  if (c->phase == PHASE_APPEND && t >= c->kv_len[b] - c->C) {
    int64_t i = t - (c->kv_len[b] - c->C);
    base = which ? in->v_new : in->k_new;
    off = ((b * c->C + i) * c->H_kv + h) * d;
  } else {
    base = which ? in->v : in->k;
    off = kv_offset(&in->L, d, b, t, h, 0);
  }
  for (int64_t x = 0; x < d; x++) out[x] = dkb_load(dt, base, (size_t)(off + x));
}

void *inputs_expected_cache(const struct decode_call *c, const struct decode_inputs *in, int which) {
  size_t n = which ? in->v_bytes : in->k_bytes;
  int64_t d = which ? c->dv : c->dk;
  void *out = DKB_MALLOC(n);
  memcpy(out, which ? in->v : in->k, n);
  const void *src = which ? in->v_new : in->k_new;
  for (int64_t b = 0; b < c->B && src; b++)
    for (int64_t i = 0; i < c->C; i++)
      for (int64_t h = 0; h < c->H_kv; h++) {
        int64_t o = kv_offset(&in->L, d, b, c->kv_len[b] - c->C + i, h, 0);
        memcpy((char *)out + (size_t)o * (size_t)in->esize,
               (const char *)src + (size_t)(((b * c->C + i) * c->H_kv + h) * d) * (size_t)in->esize, (size_t)d * (size_t)in->esize);
      }
  return out;
}
