// naive.cuh - decode_naive_reference, the unsplit GPU reference kernel.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/kv_address.cuh"
#include "kernels/decode/mask.cuh"

namespace {

// ---- naive reference: one CTA per output row, scores materialized in scratch ----------------------
template <typename T>
__global__ void __launch_bounds__(128) decode_naive_reference(const dkb_decode_params p, float *scratch, int64_t n_max) {
  __shared__ float red[128];
  const int row = blockIdx.x;  // (b * C + i) * H_q + hq
  const int hq = row % p.H_q, bi = row / p.H_q, i = bi % p.C, b = bi / p.C;
  const int g = p.H_q / p.H_kv, h = hq / g;
  const int64_t N = p.kv_len[b], qpos = N - p.C + i;
  const T *q = reinterpret_cast<const T *>(p.q) + (int64_t)row * p.dk;
  const T *kp = reinterpret_cast<const T *>(p.k), *vp = reinterpret_cast<const T *>(p.v);
  float *s = scratch + (int64_t)row * n_max;
  float mx = -INFINITY;
  for (int64_t t = threadIdx.x; t < N; t += blockDim.x) {
    float v = -INFINITY;
    if (visible(p, b, qpos, t)) {
      const T *kr = kp + kv_row_offset(p, b, t, h, p.dk);
      float d = 0.f;
      for (int x = 0; x < p.dk; x++) d = fmaf(to_f<T>(q[x]), to_f<T>(kr[x]), d);
      v = d * p.scale;
    }
    s[t] = v;
    mx = fmaxf(mx, v);
  }
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int k = 64; k > 0; k /= 2) {
    if ((int)threadIdx.x < k) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int64_t t = threadIdx.x; t < N; t += blockDim.x) sum += mx == -INFINITY ? 0.f : expf(s[t] - mx);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int k = 64; k > 0; k /= 2) {
    if ((int)threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  sum = red[0];
  const bool any = mx != -INFINITY;
  for (int x = threadIdx.x; x < p.dv; x += blockDim.x) {
    float acc = 0.f;
    for (int64_t t = 0; t < N && any; t++) {
      float w = s[t];
      if (w == -INFINITY) continue;
      acc = fmaf(expf(w - mx), to_f<T>(vp[kv_row_offset(p, b, t, h, p.dv) + x]), acc);
    }
    reinterpret_cast<T *>(p.o)[(int64_t)row * p.dv + x] = from_f<T>(any ? acc / sum : 0.f);
  }
  if (threadIdx.x == 0 && p.lse) p.lse[row] = any ? mx + logf(sum) : -INFINITY;
}

}  // namespace
