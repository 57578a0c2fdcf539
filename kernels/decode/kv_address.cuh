// kv_address.cuh - element offset of a key in every cache layout (oracles/kv_address.c).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/base.cuh"

namespace {

// ---- address translation: element offset of (request b, key t, kv head h, lane 0) ----------------
// The same formulas as oracles/kv_address.c kv_offset(); d is the tensor's own head width.
__device__ __forceinline__ int64_t kv_row_offset(const dkb_decode_params &p, int b, int64_t t, int h, int d) {
  switch (p.layout) {
  case L_CONTIG_NHD: {
    int64_t row = p.cache_batch_idx ? p.cache_batch_idx[b] : b;
    return ((row * p.T_cap + t) * p.H_kv + h) * d;
  }
  case L_CONTIG_HND: {
    int64_t row = p.cache_batch_idx ? p.cache_batch_idx[b] : b;
    return ((row * p.H_kv + h) * p.T_cap + t) * d;
  }
  case L_RAGGED_NHD: return ((p.indptr[b] + t) * p.H_kv + h) * d;
  default: {
    int64_t P = p.page_size, j = t / P, r = t - j * P, page;
    if (p.table == TBL_DENSE) {
      int64_t row = p.cache_batch_idx ? p.cache_batch_idx[b] : b;
      page = __ldg(p.block_table + row * p.table_width + j);
    } else {
      page = __ldg(p.page_indices + p.page_indptr[b] + j);
    }
    return p.layout == L_PAGED_NHD ? ((page * P + r) * p.H_kv + h) * d : ((page * p.H_kv + h) * P + r) * d;
  }
  }
}

}  // namespace
