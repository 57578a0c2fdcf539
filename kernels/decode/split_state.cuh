// split_state.cuh - where a producer writes its split's state: the final O, or the workspace
// ABI's (m,l,u) or (LSE,O) (oracles/split_state.c).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/base.cuh"

namespace {

// ---- one split's state, written once for both producers --------------------------------------
// Where a state goes: SK_ANY reads it from the parameters at every store; the others fix it at compile
// time (store_kind(p) must then name it), so the tensor-core producer's epilogue passes run straight-line
// code instead of jumping over the other kinds' stores (ncu: instruction fetch, stall_no_inst, was most of
// that epilogue, its samples at the branch targets).
enum { SK_ANY, SK_DIRECT, SK_MLU, SK_LSE_F32, SK_LSE_BF16 };
__device__ __forceinline__ int store_kind(const dkb_decode_params &p) {
  return p.direct ? SK_DIRECT : p.abi == DKB_ABI_MLU ? SK_MLU : p.ws_o_dtype == DKB_KDT_BF16 ? SK_LSE_BF16 : SK_LSE_F32;
}
template <int SK> __device__ __forceinline__ bool sk_direct(const dkb_decode_params &p) { return SK == SK_ANY ? p.direct : SK == SK_DIRECT; }
template <int SK> __device__ __forceinline__ bool sk_mlu(const dkb_decode_params &p) { return SK == SK_ANY ? p.abi == DKB_ABI_MLU : SK == SK_MLU; }
template <int SK> __device__ __forceinline__ bool sk_bf16(const dkb_decode_params &p) {
  return SK == SK_ANY ? p.ws_o_dtype == DKB_KDT_BF16 : SK == SK_LSE_BF16;
}

// Element x of row (orow in the output, srow in the workspace) with numerator u = sum exp(s - m) v and
// denominator l: the final O when the plan is direct, else the slot's (m,l,u) or (LSE,O) state. An
// empty state (valid false) writes the identity: O = 0, u = 0 (0x02C).
template <typename T, int SK = SK_ANY>
__device__ __forceinline__ void store_elem(const dkb_decode_params &p, int64_t orow, int64_t srow, int x, float u, float l,
                                           bool valid) {
  if (sk_direct<SK>(p)) reinterpret_cast<T *>(p.o)[orow * p.dv + x] = from_f<T>(valid ? u / l : 0.f);
  else if (sk_mlu<SK>(p)) reinterpret_cast<float *>(p.ws_u)[srow * p.dv + x] = valid ? u : 0.f;
  else if (sk_bf16<SK>(p)) reinterpret_cast<__nv_bfloat16 *>(p.ws_u)[srow * p.dv + x] = __float2bfloat16_rn(valid ? u / l : 0.f);
  else reinterpret_cast<float *>(p.ws_u)[srow * p.dv + x] = valid ? u / l : 0.f;
}
// The workspace ABI's fp32 fields of one state (0x03D), wherever the state is kept (global workspace or a
// cluster's shared memory): the frame value, m in natural-log units (MLU) or LSE (LSE_O), -inf when empty;
// m2 is the max in base 2.
template <int SK = SK_ANY>
__device__ __forceinline__ float abi_frame(const dkb_decode_params &p, float m2, float l, bool valid) {
  return !valid ? -INFINITY : sk_mlu<SK>(p) ? m2 * kLn2 : m2 * kLn2 + logf(l);
}
// ... and four payload values: u (MLU) or O = u / l (LSE_O), zeros when empty.
template <int SK = SK_ANY>
__device__ __forceinline__ float4 abi_payload4(const dkb_decode_params &p, const float u[4], float l, bool valid) {
  if (!valid) return make_float4(0.f, 0.f, 0.f, 0.f);
  return sk_mlu<SK>(p) ? make_float4(u[0], u[1], u[2], u[3]) : make_float4(u[0] / l, u[1] / l, u[2] / l, u[3] / l);
}

// The row's scalars: LSE (direct), or validity and m, l (MLU) or LSE (LSE_O); m2 is the max in base 2.
template <int SK = SK_ANY>
__device__ __forceinline__ void store_scalars(const dkb_decode_params &p, int64_t orow, int64_t srow, float m2, float l, bool valid) {
  if (sk_direct<SK>(p)) {
    if (p.lse) p.lse[orow] = valid ? m2 * kLn2 + logf(l) : -INFINITY;
    return;
  }
  p.ws_valid[srow] = valid;
  p.ws_m[srow] = abi_frame<SK>(p, m2, l, valid);
  if (sk_mlu<SK>(p)) p.ws_l[srow] = valid ? l : 0.f;
}

// Elements x .. x+3 of a row (x % 4 == 0, x + 3 < d_v): store_elem four at a time, vector stores where
// the workspace is fp32.
template <typename T, int SK = SK_ANY>
__device__ __forceinline__ void store4(const dkb_decode_params &p, int64_t orow, int64_t srow, int x, const float u[4],
                                       float l, bool valid) {
  if (!sk_direct<SK>(p) && (sk_mlu<SK>(p) || !sk_bf16<SK>(p))) {
    *reinterpret_cast<float4 *>(reinterpret_cast<float *>(p.ws_u) + srow * p.dv + x) = abi_payload4<SK>(p, u, l, valid);
  } else {
#pragma unroll
    for (int e = 0; e < 4; e++) store_elem<T, SK>(p, orow, srow, x + e, u[e], l, valid);
  }
}

}  // namespace
