/* gpu_call.c - device buffers and launches of one decode call (see gpu_call.h). */
#include "harness/gpu_call.h"
#include "harness/gpucheck.h"
#include "oracles/dtype.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

/* kernels/decode.h numbers its dtypes as enum dkb_dtype does, so a call's dtype passes through. */
_Static_assert(DKB_KDT_F16 == DKB_F16 && DKB_KDT_BF16 == DKB_BF16 && DKB_KDT_F32 == DKB_F32, "dtype numbering");

/* Allocates n bytes (at least 16) and copies src (when given) into them. */
static int upload(struct gpu_call *g, const void *src, size_t n, void **dst, struct dkb_err *err) {
  void *d = NULL;
  *dst = NULL;
  DKB_CUDA_CHECK(err, cudaMalloc(&d, n ? n : 16));
  g->allocs[g->nallocs++] = d;
  g->device_bytes += n;
  if (src && n) DKB_CUDA_CHECK(err, cudaMemcpy(d, src, n, cudaMemcpyHostToDevice));
  *dst = d;
  return 0;
cleanup:
  return -1;
}

int gpu_call_setup(const struct decode_call *c, const struct decode_inputs *in, const struct decode_plan *pl,
                   int family, struct gpu_call *g, struct dkb_err *err) {
  memset(g, 0, sizeof *g);
  g->family = family;
  struct dkb_decode_params *p = &g->p;
  p->B = c->B;
  p->C = c->C;
  p->H_q = c->H_q;
  p->H_kv = c->H_kv;
  p->dk = c->dk;
  p->dv = c->dv;
  p->dtype = c->dtype;
  p->scale = (float)c->scale;
  p->layout = c->layout;
  p->table = c->table;
  p->T_cap = c->T_cap;
  p->page_size = (int)c->page_size;
  p->table_width = (int)in->L.table_width;
  p->mask_kind = c->mask_kind;
  p->window = c->window;
  p->sink = c->sink;
  p->fm_block = (int)in->fm_block;
  p->n_items = pl->n_items;
  p->total_slots = pl->total_slots;
  p->direct = pl->direct;
  p->fused = pl->fused;
  p->cluster = pl->cluster;
  p->abi = c->abi;
  p->ws_o_dtype = c->ws_o_dtype;
  void *d;
  const size_t rows = (size_t)c->B * c->C * c->H_q, es = (size_t)in->esize;
#define UP(field, src, n) do { if (upload(g, (src), (n), &d, err)) return -1; p->field = d; } while (0)
  UP(q, in->q, in->q_bytes);
  UP(k, in->k, in->k_bytes);
  UP(v, in->v, in->v_bytes);
  g->o_bytes = rows * (size_t)c->dv * es;
  UP(o, NULL, g->o_bytes);
  if (c->return_lse) { g->lse_bytes = rows * sizeof(float); UP(lse, NULL, g->lse_bytes); }
  UP(kv_len, c->kv_len, (size_t)c->B * sizeof(int64_t));
  UP(cache_batch_idx, in->cache_batch_idx, (size_t)c->B * sizeof(int32_t));
  if (in->indptr) UP(indptr, in->indptr, (size_t)(c->B + 1) * sizeof(int64_t));
  if (in->block_table) UP(block_table, in->block_table, (size_t)(c->cache_rows * in->L.table_width) * sizeof(int32_t));
  if (in->page_indptr) {
    UP(page_indptr, in->page_indptr, (size_t)(c->B + 1) * sizeof(int32_t));
    UP(page_indices, in->page_indices, (size_t)in->n_page_indices * sizeof(int32_t));
  }
  if (in->col_indptr) {
    size_t ncol = (size_t)in->col_indptr[c->B] * sizeof(int32_t);
    UP(col_indptr, in->col_indptr, (size_t)(c->B + 1) * sizeof(int64_t));
    UP(uts, in->uts, ncol);
    UP(ute, in->ute, ncol);
    UP(lts, in->lts, ncol);
    UP(lte, in->lte, ncol);
    UP(fm_summary, in->fm_summary, (size_t)(in->fm_sum_indptr[c->B] * 8) * sizeof(int32_t));
    UP(fm_sum_indptr, in->fm_sum_indptr, (size_t)(c->B + 1) * sizeof(int64_t));
  }
  UP(item_b, pl->item_b, (size_t)pl->n_items * sizeof(int32_t));
  UP(item_lo, pl->item_lo, (size_t)pl->n_items * sizeof(int64_t));
  UP(item_hi, pl->item_hi, (size_t)pl->n_items * sizeof(int64_t));
  UP(item_slot, pl->item_slot, (size_t)pl->n_items * sizeof(int32_t));
  UP(item_n, pl->item_n, (size_t)pl->n_items * sizeof(int64_t));
  UP(item_base, pl->item_base, (size_t)pl->n_items * sizeof(int64_t));
  UP(slot_indptr, pl->slot_indptr, (size_t)(c->B + 1) * sizeof(int32_t));
  if (!pl->direct && !pl->cluster) { /* a cluster plan's states stay in shared memory */
    size_t srows = (size_t)pl->total_slots * c->H_q * c->C;
    size_t ue = c->abi == DKB_ABI_MLU ? 4 : dkb_dtype_bytes((enum dkb_dtype)c->ws_o_dtype);
    g->ws_bytes[0] = srows * (size_t)c->dv * ue;
    g->ws_bytes[1] = srows * sizeof(float);
    g->ws_bytes[2] = c->abi == DKB_ABI_MLU ? srows * sizeof(float) : 0;
    g->ws_bytes[3] = srows;
    UP(ws_u, NULL, g->ws_bytes[0]);
    UP(ws_m, NULL, g->ws_bytes[1]);
    if (g->ws_bytes[2]) UP(ws_l, NULL, g->ws_bytes[2]);
    UP(ws_valid, NULL, g->ws_bytes[3]);
    if (pl->fused) {
      /* arrival counters start at zero; the kernel's last CTA of each group resets its own */
      const size_t nc = (size_t)c->B * c->H_kv;
      int *zeros = DKB_CALLOC(nc, sizeof *zeros);
      int urc = upload(g, zeros, nc * sizeof *zeros, &d, err);
      free(zeros);
      if (urc) return -1;
      p->combine_count = d;
    }
  }
  if (c->phase == PHASE_APPEND) {
    UP(k_new, in->k_new, in->new_k_bytes);
    UP(v_new, in->v_new, in->new_v_bytes);
  }
  if (family == DKB_FAMILY_NAIVE) {
    int64_t mx = 0;
    for (int b = 0; b < c->B; b++) mx = c->kv_len[b] > mx ? c->kv_len[b] : mx;
    if (upload(g, NULL, rows * (size_t)mx * sizeof(float), &d, err)) return -1;
    g->scratch = d;
  }
#undef UP
  return 0;
}

void gpu_call_release(struct gpu_call *g) {
  for (int i = 0; i < g->nallocs; i++) cudaFree(g->allocs[i]);
  cudaGetLastError();
  memset(g, 0, sizeof *g);
}

int gpu_call_poison(struct gpu_call *g, struct dkb_err *err) {
  cudaStream_t s = (cudaStream_t)g->stream;
  DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.o, 0xFF, g->o_bytes, s));
  if (g->p.lse) DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.lse, 0xFF, g->lse_bytes, s));
  if (g->p.ws_u) DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.ws_u, 0xFF, g->ws_bytes[0], s));
  if (g->p.ws_m) DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.ws_m, 0xFF, g->ws_bytes[1], s));
  if (g->p.ws_l) DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.ws_l, 0xFF, g->ws_bytes[2], s));
  /* validity bytes get 0xFF too: a slot the producer forgot reads as "valid" with NaN payload */
  if (g->p.ws_valid) DKB_CUDA_CHECK(err, cudaMemsetAsync(g->p.ws_valid, 0xFF, g->ws_bytes[3], s));
  return 0;
cleanup:
  return -1;
}

int gpu_call_launch(void *arg, void *stream) {
  struct gpu_call *g = arg;
  int rc = 0;
  if (g->p.k_new && (rc = dkb_append_launch(&g->p, stream))) return rc;
  if (g->family == DKB_FAMILY_NAIVE) return dkb_naive_launch(&g->p, g->scratch, stream);
  return dkb_decode_launch(&g->p, stream);
}

int gpu_call_download(struct gpu_call *g, const struct decode_inputs *in, void *o, float *lse, void *k, void *v,
                      struct dkb_err *err) {
  DKB_CUDA_CHECK(err, cudaStreamSynchronize((cudaStream_t)g->stream));
  DKB_CUDA_CHECK(err, cudaMemcpy(o, g->p.o, g->o_bytes, cudaMemcpyDeviceToHost));
  if (lse && g->p.lse) DKB_CUDA_CHECK(err, cudaMemcpy(lse, g->p.lse, g->lse_bytes, cudaMemcpyDeviceToHost));
  if (k) DKB_CUDA_CHECK(err, cudaMemcpy(k, g->p.k, in->k_bytes, cudaMemcpyDeviceToHost));
  if (v) DKB_CUDA_CHECK(err, cudaMemcpy(v, g->p.v, in->v_bytes, cudaMemcpyDeviceToHost));
  return 0;
cleanup:
  return -1;
}
