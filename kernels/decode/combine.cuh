// combine.cuh - decode_split_kv_combine, the kernel that merges a request's slots after the
// producer (launched with programmatic dependent launch).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/merge.cuh"

namespace {

// ---- combine: exact merge of one request's slots for one (query row, query head) -------------------
// The slots of a long request are many (hundreds at B = 1): they are read in parallel, warp w taking the
// slots w, w + NW, ... of each chunk of NT, four dims per lane. Every load after the producer's completion
// is issued at once where it can be: the scalars of the first NT slots and each warp's first PB payloads
// together, before the frame and the weights are known (a slot with weight 0, empty or negligible, is
// then skipped by a select, so an empty slot's payload is read but never added), not as a chain of
// dependent L2 round trips. With many slots one CTA per row would read the row's whole payload through one
// SM; CTAs of 32 dims spread it over d_v / 32 SMs, each lane group of a warp taking every fourth slot. The
// order of every sum is fixed (slot order within a lane, then a fixed shuffle tree, warps in order): the
// result is deterministic. What this measured, a timeline, and the merges tried and not kept:
// docs/kernels.md, "Combine kernel".
template <typename T, typename WS, int NT, int LPS>
__global__ void __launch_bounds__(NT) decode_split_kv_combine(const dkb_decode_params p) {
  // LPS lanes share a slot (four dims each): 32 covers 128 dims per warp and pass; 8 covers the CTA's
  // 32 dims (blockIdx.y = which 32), four slots per warp and pass.
  constexpr int NW = NT / 32, PB = NT >= 1024 ? 5 : 8;  // PB payloads in flight per lane (6 spill at 1024 threads)
  // slots per warp and pass; dims per CTA (at most); passes over the dims (two of 128 at LPS = 32)
  constexpr int SPW = 32 / LPS, DX = LPS == 32 ? 256 : 4 * LPS, JN = LPS == 32 ? 2 : 1;
  __shared__ float red[NW], wt[NT], part[NW][DX];
  const int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;  // row = (b * C + i) * H_q + hq
  const int hq = row % p.H_q, bi = row / p.H_q, i = bi % p.C, b = bi / p.C;
  const int s0 = p.slot_indptr[b], n = p.slot_indptr[b + 1] - s0;  // the plan, not the producer: read before the wait
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the producer's writes are visible after this
#endif
  const bool mlu = p.abi == DKB_ABI_MLU;
  auto srow = [&](int s) { return ((int64_t)(s0 + s) * p.H_q + hq) * p.C + i; };
  const int64_t ustep = (int64_t)p.H_q * p.C * p.dv;  // one slot further in the workspace
  const WS *u = reinterpret_cast<const WS *>(p.ws_u) + srow(0) * p.dv;
  // The first chunk's scalars stay in registers for the weights below. Validity and m are independent
  // loads: the producer writes m for every slot (-inf when empty), and it is used only where valid.
  bool v0 = false;
  float m_0 = -INFINITY, l_0 = 0.f;
  if (tid < n) {
    v0 = __ldcg(p.ws_valid + srow(tid));
    m_0 = __ldcg(p.ws_m + srow(tid));
    if (mlu) l_0 = __ldcg(p.ws_l + srow(tid));
  }
  // This lane's slots: so, so + SPW, ... of its warp's share; its dims x0 .. x0 + 3 (+ 128 on a second pass).
  const int so = warp * SPW + lane / LPS, xlo = LPS == 32 ? 0 : (int)blockIdx.y * DX, x0 = xlo + (lane % LPS) * 4;
  constexpr int STEP = NW * SPW;
  float pay[PB][4];
  if (x0 < p.dv) load_slots<WS, PB>(u + x0, ustep, so, STEP, n < NT ? n : NT, pay);
  // The frame is the largest m (MLU) or LSE (LSE_O) among VALID slots only (0x02C).
  float M = v0 ? m_0 : -INFINITY;
  for (int s = NT + tid; s < n; s += NT) {
    const bool vs = __ldcg(p.ws_valid + srow(s));
    const float ms = __ldcg(p.ws_m + srow(s));
    if (vs) M = fmaxf(M, ms);
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
  if (lane == 0) red[warp] = M;
  __syncthreads();
  M = red[0];
#pragma unroll
  for (int w = 1; w < NW; w++) M = fmaxf(M, red[w]);
  __syncthreads();
  const bool any = M != -INFINITY;
  float L = 0.f, acc[JN][4] = {};
  for (int c0 = 0; c0 < n; c0 += NT) {
    /* weight of each slot of this chunk: exp(m - M) (times l for MLU); 0 for an invalid slot */
    float w = 0.f;
    if (c0 == 0) {
      if (v0 && any) {
        w = expf(m_0 - M);
        L += mlu ? l_0 * w : w;
      }
    } else if (c0 + tid < n && any && __ldcg(p.ws_valid + srow(c0 + tid))) {
      w = expf(__ldcg(p.ws_m + srow(c0 + tid)) - M);
      L += mlu ? __ldcg(p.ws_l + srow(c0 + tid)) * w : w;
    }
    wt[tid] = w;
    __syncthreads();
    const int end = n < c0 + NT ? n : c0 + NT;  // this chunk's slots
    auto weight = [&](int s) { return wt[s - c0]; };
#pragma unroll
    for (int j = 0; j < JN; j++) {
      const int x = j * 128 + x0;
      if (x >= p.dv) break;
      for (int first = c0 + so; first < end; first += STEP * PB) {
        if (first > so || j > 0) load_slots<WS, PB>(u + x, ustep, first, STEP, end, pay);  // else loaded above
        add_slots<PB>(pay, first, STEP, end, weight, acc[j]);
      }
    }
    __syncthreads();  // wt is refilled by the next chunk
  }
  // The SPW lanes of a warp holding the same dims, in a fixed order (deterministic).
#pragma unroll
  for (int off = LPS; off < 32; off *= 2)
#pragma unroll
    for (int j = 0; j < JN; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[j][e] += __shfl_xor_sync(0xffffffffu, acc[j][e], off);
#pragma unroll
  for (int j = 0; j < JN; j++) {
    const int x = j * 128 + x0 - xlo;  // < DX: lane < LPS
    if (lane < LPS && x + xlo < p.dv)
#pragma unroll
      for (int e = 0; e < 4; e++) part[warp][x + e] = acc[j][e];
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) L += __shfl_xor_sync(0xffffffffu, L, off);
  if (lane == 0) red[warp] = L;
  __syncthreads();
  L = 0.f;
#pragma unroll
  for (int w = 0; w < NW; w++) L += red[w];
  T *o = reinterpret_cast<T *>(p.o) + (int64_t)row * p.dv;
  const int xhi = xlo + DX < p.dv ? xlo + DX : p.dv;
  for (int x = xlo + tid; x < xhi; x += NT) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < NW; w++) v += part[w][x - xlo];
    o[x] = from_f<T>(any ? v / L : 0.f);
  }
  if (tid == 0 && blockIdx.y == 0 && p.lse) p.lse[row] = any ? M + logf(L) : -INFINITY;
}

}  // namespace
