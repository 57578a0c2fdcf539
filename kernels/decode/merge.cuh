// merge.cuh - merging split states: the slot loads the combine kernel shares, the fused
// combine of the last producer CTA, and the cluster merge in distributed shared memory.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include <cooperative_groups.h>
#include "kernels/decode/base.cuh"

namespace {

// ---- merging slots from the workspace (fused combine and combine kernel) ---------------------------
// Four workspace values widened to floats, read through L2 (ld.cg): other CTAs or the previous kernel
// wrote them, so L1 holds nothing useful (and is not coherent across SMs).
template <typename WS> __device__ __forceinline__ void load4(const WS *p, float v[4]);
template <> __device__ __forceinline__ void load4<float>(const float *p, float v[4]) {
  const float4 x = __ldcg(reinterpret_cast<const float4 *>(p));
  v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
}
template <> __device__ __forceinline__ void load4<__nv_bfloat16>(const __nv_bfloat16 *p, float v[4]) {
  const uint2 x = __ldcg(reinterpret_cast<const uint2 *>(p));
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&x.x));
  const float2 c = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&x.y));
  v[0] = a.x; v[1] = a.y; v[2] = c.x; v[3] = c.y;
}

// The payloads of slots first, first + step, ... below end (B of them at most), at u + slot * ustep: all
// loads issued before any is used, one L2 round trip. The fused merge and the combine kernel read their
// slots through this pair; the cluster merge sums through add_slots too.
template <typename WS, int B>
__device__ __forceinline__ void load_slots(const WS *u, int64_t ustep, int first, int step, int end, float pay[B][4]) {
#pragma unroll
  for (int k = 0; k < B; k++)
    if (first + k * step < end) load4<WS>(u + (first + k * step) * ustep, pay[k]);
}
// acc += weight(slot) * payload for the same slots, in slot order. A zero weight (an empty or negligible
// slot) adds nothing, by a select, so a payload read before its weight was known is never added unless
// it counts.
template <int B, class W>
__device__ __forceinline__ void add_slots(const float pay[B][4], int first, int step, int end, W weight, float acc[4]) {
#pragma unroll
  for (int k = 0; k < B; k++)
    if (first + k * step < end) {
      const float w = weight(first + k * step);
      if (w != 0.f)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[e] = fmaf(w, pay[k][e], acc[e]);
    }
}

// Most slot rows (query rows x slots of one request) one fused CTA merges, and most slots per request:
// a row's slots are read by one warp, sixteen in one round trip, so past these the separate combine
// kernel, which spreads the rows over CTAs, wins (fused_combine).
constexpr int kFusedRowSlots = 256, kFusedSlots = 16;

// One query row of the fused merge, one warp (lane k holds slot s0 + k's validity v and frame value ms;
// n <= kFusedSlots): every payload is loaded before the weights are known, in the same round trip as the
// scalars the caller loaded. Summed in slot order whichever CTA is last: deterministic.
template <typename WS>
__device__ __forceinline__ void merge_payload(const void *ws, int64_t u0, int64_t ustep, int s0, int n, bool v, float ms,
                                              float *M_out, float *w_out, float acc[4]) {
  const WS *u = reinterpret_cast<const WS *>(ws) + u0 + (int64_t)s0 * ustep;
  float pay[kFusedSlots][4];
  load_slots<WS, kFusedSlots>(u, ustep, 0, 1, n, pay);
  float M = v ? ms : -INFINITY;
#pragma unroll
  for (int off = 16; off > 0; off /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
  const float w = v && M != -INFINITY ? expf(ms - M) : 0.f;
  auto weight = [w](int k) { return __shfl_sync(0xffffffffu, w, k); };  // lane k holds slot k's weight
  add_slots<kFusedSlots>(pay, 0, 1, n, weight, acc);
  *M_out = M;
  *w_out = w;
}

// ---- fused combine: the last CTA of a (request, K/V head) group merges the group's slots (0x03C) -----
// One launch instead of two, for at most kFusedSlots slots per request: one L2 round trip of payloads. With
// more slots the combine kernel, which spreads the rows over CTAs, wins: here the last CTA alone reads every
// slot of its group (docs/kernels.md, "Fused combine"). Every producer CTA publishes its slot (stores,
// barrier, one release) and then counts itself in; the CTA whose count completes the request's slots reads
// them back from L2 (ld.cg: L1 is not coherent across SMs), writes O and LSE and resets the counter for the
// next call (graph replay needs no memset). One warp per query row, four dims per lane (d_v <= 128), slots
// summed in slot order whichever CTA is last: deterministic.
template <typename T, int NT>
__device__ void fused_combine(const dkb_decode_params &p, int b, int h, int g, int *last) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int s0 = p.slot_indptr[b], s1 = p.slot_indptr[b + 1];
  // The CTA's slot stores are ordered before thread 0's release by the barrier (PTX release is
  // cumulative); the last CTA's acquire orders its reads after every other CTA's stores. One acq_rel
  // atomic per CTA, not a sequentially consistent fence per thread.
  __syncthreads();
  if (tid == 0) {
    int *ctr = p.combine_count + (int64_t)b * p.H_kv + h, prev;
    asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;\n" : "=r"(prev) : "l"(ctr) : "memory");
    *last = prev == s1 - s0 - 1;
    if (*last) *ctr = 0;  // every CTA of the group has counted: nothing touches it again this call
  }
  __syncthreads();
  if (!*last) return;
  const int C = p.C, R = g * C, n = s1 - s0;
  const bool bf16 = p.abi == DKB_ABI_LSE_O && p.ws_o_dtype == DKB_KDT_BF16;
  const bool mlu = p.abi == DKB_ABI_MLU, lanes = lane * 4 < p.dv;
  const int x = lanes ? lane * 4 : 0;  // a lane past d_v reads lane 0's dims and stores nothing
  // slot s of row (hq, i) sits at ((s * H_q + hq) * C + i): the same row of consecutive slots is H_q * C apart
  const int64_t rs = (int64_t)p.H_q * C;
  for (int row = warp; row < R; row += NT / 32) {
    const int j = row / C, i = row % C, hq = h * g + j;
    const int64_t r0 = (int64_t)hq * C + i;
    // Lane k holds slot s0 + k's scalars (a fused plan has at most kFusedSlots per request); merge_payload
    // loads the payloads in the same round trip: one L2 round trip fewer on the call's critical path, the
    // last CTA.
    const int s = s0 + lane;
    bool v = false;
    float ms = -INFINITY, ls = 0.f;
    if (s < s1) {
      v = __ldcg(p.ws_valid + r0 + s * rs);
      ms = __ldcg(p.ws_m + r0 + s * rs);
      if (mlu) ls = __ldcg(p.ws_l + r0 + s * rs);
    }
    // The frame is the largest m (MLU) or LSE (LSE_O) among VALID slots only (0x02C); w is read after
    // the payload loads are issued.
    float acc[4] = {0.f, 0.f, 0.f, 0.f}, M, w;
    if (bf16) merge_payload<__nv_bfloat16>(p.ws_u, r0 * p.dv + x, rs * p.dv, s0, n, v, ms, &M, &w, acc);
    else merge_payload<float>(p.ws_u, r0 * p.dv + x, rs * p.dv, s0, n, v, ms, &M, &w, acc);
    const bool any = M != -INFINITY;
    float L = mlu ? ls * w : w;
#pragma unroll
    for (int off = 16; off > 0; off /= 2) L += __shfl_xor_sync(0xffffffffu, L, off);
    const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq;
    if (lanes) {
      T *o = reinterpret_cast<T *>(p.o) + orow * p.dv + x;
#pragma unroll
      for (int e = 0; e < 4; e++) o[e] = from_f<T>(any ? acc[e] / L : 0.f);
    }
    if (lane == 0 && p.lse) p.lse[orow] = any ? M + logf(L) : -INFINITY;
  }
}

// Largest cluster a plan runs (cluster_merge): a cluster's CTAs must be co-scheduled on one GPC, which
// costs more than the global merge it saves beyond 2. Larger clusters also hold fewer CTAs at once: at 2
// CTAs per SM the H200 holds 264 CTAs in clusters of 1 or 2 but 248, 240 and 224 in clusters of 4, 8 and
// 16 (cudaOccupancyMaxActiveClusters of a kernel held to 2 CTAs per SM), so a plan of 256 CTAs takes two
// waves. Measured, with clusters of K/V heads: docs/kernels.md, "Cluster merge".
constexpr int kClusterMax = 2;

// ---- cluster merge: a request's S CTAs of one K/V head merge their states in distributed shared memory --
// A plan with S <= kClusterMax slots in every request launches each (request, K/V head) group as one
// thread-block cluster (ranks = the request's slots in order). Each CTA leaves its state in shared memory in the
// workspace ABI's fields (cl_u: u or O [16][D_PAD], then m or LSE, l, validity [16]); after one cluster
// barrier the S CTAs split the group's rows x 4-dim units and read the S states through DSMEM, then wait
// at a second barrier so no CTA's shared memory is released while another reads it. No global
// workspace, no arrival counter, no L2 round trip on the call's tail (the fused merge's atomic, scalar
// and payload round trips). The weights are those of
// fused_combine, and add_slots sums them in rank (slot) order: deterministic.
template <typename T, int D_PAD>
__device__ void cluster_merge(const dkb_decode_params &p, int b, int h, int g, float *cl_u) {
  namespace cg = cooperative_groups;
  constexpr int NT = 128, ROWS = 16, LPR = D_PAD / 4, SMAX = kClusterMax;  // S <= SMAX: checked at launch
  cg::cluster_group cl = cg::this_cluster();
  cl.sync();  // release/acquire at cluster scope: every CTA's state is visible
  const int S = p.cluster, rank = (int)cl.block_rank(), C = p.C, R = g * C;
  const bool mlu = p.abi == DKB_ABI_MLU;
  for (int unit = rank * NT + (int)threadIdx.x; unit < R * LPR; unit += S * NT) {
    const int row = unit / LPR, x = (unit % LPR) * 4;
    if (x >= p.dv) continue;
    float ms[SMAX], ls[SMAX], vs[SMAX], pay[SMAX][4];
#pragma unroll
    for (int c = 0; c < SMAX; c++)
      if (c < S) {  // every remote load issued before any is used
        const float *r = cl.map_shared_rank(cl_u, c);
        const float4 v = *reinterpret_cast<const float4 *>(r + row * D_PAD + x);
        pay[c][0] = v.x; pay[c][1] = v.y; pay[c][2] = v.z; pay[c][3] = v.w;
        ms[c] = r[ROWS * D_PAD + row];
        ls[c] = r[ROWS * D_PAD + ROWS + row];
        vs[c] = r[ROWS * D_PAD + 2 * ROWS + row];
      }
    // The frame is the largest m (MLU) or LSE (LSE_O) among VALID states only (0x02C).
    float M = -INFINITY;
#pragma unroll
    for (int c = 0; c < SMAX; c++)
      if (c < S && vs[c] != 0.f) M = fmaxf(M, ms[c]);
    const bool any = M != -INFINITY;
    float L = 0.f, w[SMAX] = {}, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int c = 0; c < SMAX; c++)
      if (c < S) {
        w[c] = vs[c] != 0.f && any ? expf(ms[c] - M) : 0.f;  // an empty state weighs 0
        L += mlu ? ls[c] * w[c] : w[c];
      }
    add_slots<SMAX>(pay, 0, 1, S, [&w](int c) { return w[c]; }, acc);
    const int j = row / C, i = row % C, hq = h * g + j;
    const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq;
    T *o = reinterpret_cast<T *>(p.o) + orow * p.dv + x;
#pragma unroll
    for (int e = 0; e < 4; e++) o[e] = from_f<T>(any ? acc[e] / L : 0.f);
    if (x == 0 && p.lse) p.lse[orow] = any ? M + logf(L) : -INFINITY;
  }
  cl.sync();  // the other CTAs are done reading this CTA's shared memory
}

}  // namespace
