// append.cuh - decode_append_kv, which writes the new K/V rows into the cache.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/kv_address.cuh"

namespace {

// ---- append: new rows [N_b - C, N_b) of every request into the cache -------------------------------
template <typename T>
__global__ void decode_append_kv(const dkb_decode_params p) {
  const int bi = blockIdx.x;  // b * C + i
  const int b = bi / p.C, i = bi % p.C;
  const int64_t t = p.kv_len[b] - p.C + i;
  T *kc = reinterpret_cast<T *>(const_cast<void *>(p.k)), *vc = reinterpret_cast<T *>(const_cast<void *>(p.v));
  const T *kn = reinterpret_cast<const T *>(p.k_new), *vn = reinterpret_cast<const T *>(p.v_new);
  for (int idx = threadIdx.x; idx < p.H_kv * p.dk; idx += blockDim.x) {
    int h = idx / p.dk, x = idx % p.dk;
    kc[kv_row_offset(p, b, t, h, p.dk) + x] = kn[((int64_t)bi * p.H_kv + h) * p.dk + x];
  }
  for (int idx = threadIdx.x; idx < p.H_kv * p.dv; idx += blockDim.x) {
    int h = idx / p.dv, x = idx % p.dv;
    vc[kv_row_offset(p, b, t, h, p.dv) + x] = vn[((int64_t)bi * p.H_kv + h) * p.dv + x];
  }
}

}  // namespace
