/* device_call.c - device buffers of one decode call (see device_call.h). */
#include "harness/device_call.h"
#include "harness/gpucheck.h"
#include "oracles/dtype.h"

#include <string.h>

#include <cuda_runtime_api.h>

/* Allocates n bytes (at least 16, aligned to 256 by cudaMalloc) and copies src (when given) into them. */
static int upload(struct device_call *d, const void *src, size_t n, void **dst, struct dkb_err *err) {
  void *p = NULL;
  *dst = NULL;
  if (d->nallocs >= (int)(sizeof d->allocs / sizeof d->allocs[0])) DKB_BUG("device_call: too many allocations");
  DKB_CUDA_CHECK(err, cudaMalloc(&p, n ? n : 16));
  d->allocs[d->nallocs++] = p;
  d->device_bytes += n;
  if (src && n) DKB_CUDA_CHECK(err, cudaMemcpy(p, src, n, cudaMemcpyHostToDevice));
  *dst = p;
  return 0;
cleanup:
  return -1;
}

int device_call_setup(const struct dkb_call *call, const struct decode_inputs *in, struct device_call *d,
                      struct dkb_err *err) {
  memset(d, 0, sizeof *d);
  d->call = *call;
  struct dkb_call *c = &d->call;
  const size_t rows = (size_t)c->B * c->q_len * c->H_q, es = (size_t)in->esize;
  void *p;
#define UP(field, src, n) do { if (upload(d, (src), (n), &p, err)) return -1; c->field = p; } while (0)
  UP(q, in->q, in->q_bytes);
  UP(k, in->k, in->k_bytes);
  UP(v, in->v, in->v_bytes);
  d->k_bytes = in->k_bytes;
  d->v_bytes = in->v_bytes;
  d->o_bytes = rows * (size_t)c->d_v * es;
  UP(o, NULL, d->o_bytes);
  if (c->return_lse) { d->lse_bytes = rows * sizeof(float); UP(lse, NULL, d->lse_bytes); }
  UP(d_kv_len, c->kv_len, (size_t)c->B * sizeof(int64_t));
  UP(d_cache_batch_idx, in->cache_batch_idx, (size_t)c->B * sizeof(int32_t));
  if (in->indptr) UP(d_indptr, in->indptr, (size_t)(c->B + 1) * sizeof(int64_t));
  if (in->block_table) UP(d_block_table, in->block_table, (size_t)(c->cache_rows * in->L.table_width) * sizeof(int32_t));
  if (in->page_indptr) {
    UP(d_page_indptr, in->page_indptr, (size_t)(c->B + 1) * sizeof(int32_t));
    UP(d_page_indices, in->page_indices, (size_t)in->n_page_indices * sizeof(int32_t));
    if (in->last_page_len) UP(d_last_page_len, in->last_page_len, (size_t)c->B * sizeof(int32_t));
  }
  if (c->phase == DKB_ABI_APPEND) {
    UP(k_new, in->k_new, in->new_k_bytes);
    UP(v_new, in->v_new, in->new_v_bytes);
  }
#undef UP
  return 0;
}

int device_call_workspaces(struct device_call *d, const struct dkb_plan *plan, struct dkb_err *err) {
  d->nws = plan->n_workspaces;
  for (int i = 0; i < plan->n_workspaces; i++) {
    d->wsdecl[i] = plan->ws[i];
    if (upload(d, NULL, plan->ws[i].bytes, &d->ws[i], err)) return -1;
    if (plan->ws[i].kind == DKB_WS_ZERO_FIRST) DKB_CUDA_CHECK(err, cudaMemset(d->ws[i], 0, plan->ws[i].bytes));
  }
  return 0;
cleanup:
  return -1;
}

void device_call_release(struct device_call *d) {
  for (int i = 0; i < d->nallocs; i++) cudaFree(d->allocs[i]);
  cudaGetLastError();
  memset(d, 0, sizeof *d);
}

int device_call_poison(struct device_call *d, struct dkb_err *err) {
  cudaStream_t s = (cudaStream_t)d->stream;
  DKB_CUDA_CHECK(err, cudaMemsetAsync(d->call.o, 0xFF, d->o_bytes, s));
  if (d->call.lse) DKB_CUDA_CHECK(err, cudaMemsetAsync(d->call.lse, 0xFF, d->lse_bytes, s));
  for (int i = 0; i < d->nws; i++)
    if (d->wsdecl[i].kind == DKB_WS_SCRATCH && d->wsdecl[i].bytes)
      DKB_CUDA_CHECK(err, cudaMemsetAsync(d->ws[i], 0xFF, d->wsdecl[i].bytes, s));
  return 0;
cleanup:
  return -1;
}

int device_call_download(struct device_call *d, void *o, float *lse, void *k, void *v, struct dkb_err *err) {
  DKB_CUDA_CHECK(err, cudaStreamSynchronize((cudaStream_t)d->stream));
  DKB_CUDA_CHECK(err, cudaMemcpy(o, d->call.o, d->o_bytes, cudaMemcpyDeviceToHost));
  if (lse && d->call.lse) DKB_CUDA_CHECK(err, cudaMemcpy(lse, d->call.lse, d->lse_bytes, cudaMemcpyDeviceToHost));
  if (k) DKB_CUDA_CHECK(err, cudaMemcpy(k, d->call.k, d->k_bytes, cudaMemcpyDeviceToHost));
  if (v) DKB_CUDA_CHECK(err, cudaMemcpy(v, d->call.v, d->v_bytes, cudaMemcpyDeviceToHost));
  return 0;
cleanup:
  return -1;
}
