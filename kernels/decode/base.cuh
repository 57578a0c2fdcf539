// base.cuh - what every decode kernel shares: the oracle enums' mirrors, the pipeline and
// softmax constants, element conversions and the MUFU exponential.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include "kernels/decode.h"

// Mirrors of the oracle enums (oracles/kv_address.h, oracles/mask.h); checked on the host side.
enum { L_CONTIG_NHD, L_CONTIG_HND, L_RAGGED_NHD, L_PAGED_NHD, L_PAGED_HND };
enum { TBL_NONE, TBL_DENSE, TBL_CSR };
enum { M_NONE, M_CAUSAL, M_WINDOW, M_FLASHMASK };
enum { T_SKIP, T_FULL, T_PARTIAL };

namespace {

constexpr int kStages = 3;
constexpr int kPageSmem = 1024;  // page ids of an item kept in shared memory (4 KiB); more: read per copy
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---- element conversions ------------------------------------------------------------------------
template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// One 16-byte chunk of T widened to floats.
template <typename T> struct Chunk;
template <> struct Chunk<float> {
  __device__ __forceinline__ static void load(const void *p, float *f) {
    float4 v = *reinterpret_cast<const float4 *>(p);
    f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
  }
};
template <> struct Chunk<__half> {
  __device__ __forceinline__ static void load(const void *p, float *f) {
    uint4 v = *reinterpret_cast<const uint4 *>(p);
    const __half2 *h = reinterpret_cast<const __half2 *>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 t = __half22float2(h[i]); f[2 * i] = t.x; f[2 * i + 1] = t.y; }
  }
};
template <> struct Chunk<__nv_bfloat16> {
  __device__ __forceinline__ static void load(const void *p, float *f) {
    uint4 v = *reinterpret_cast<const uint4 *>(p);
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 t = __bfloat1622float2(h[i]); f[2 * i] = t.x; f[2 * i + 1] = t.y; }
  }
};

// 2^x on the MUFU unit, flushing denormal results to zero (they are below any tolerance: the weights
// are relative to the running maximum). ex2(-inf) = 0.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace
