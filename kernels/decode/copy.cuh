// copy.cuh - global->shared copies: 16-byte cp.async and the TMA boxes of the tensor-core
// producer, completing on mbarriers.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include <cuda.h>
#include "kernels/decode/base.cuh"

namespace {

// ---- async copies ---------------------------------------------------------------------------------
// 16-byte global->shared copy that bypasses L1; src_bytes 0 writes zeros (tails, padded lanes), so a
// poisoned (NaN) row past the context is never even read.
// These copies carry no L2 cache hint. ptxas (CUDA 13) compiles cp.async with an L2::cache_hint policy
// into code that names a memory descriptor in a uniform register it never writes (cuobjdump -sass:
// desc[UR1], no write of UR1): "illegal instruction" on the GPU, in whichever instances a code change
// happens to tip over (docs/kernels.md, "Copies"). The evict-first hint rides on the TMA boxes instead
// (tma_box); tools/sass-check.py finds such descriptors in a build.
__device__ __forceinline__ uint64_t evict_first() {
  uint64_t pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ---- tensor-memory-accelerator (TMA) tile copies --------------------------------------------------
// The tensor-core producer loads a whole tile of an NHD cache with a few bulk tensor copies issued by
// one thread ([d, H_kv, rows] maps, boxes of 64 dims x 1 head x box_rows keys, 128-byte swizzle) that
// complete on an mbarrier of the stage. Edge tiles keep cp.async: they zero-fill keys outside the item,
// which a box cannot. on = 0: no maps (other layouts, or the encoder refused): every tile takes cp.async.
// Faster than 16-byte cp.async per thread on most shapes, paged ones most, partly because a stage's next
// tile is in flight while the current one is awaited; the boxes' evict-first hint and 128-byte L2
// promotion each measured faster than without (docs/kernels.md, "TMA boxes").
struct KvMaps {
  CUtensorMap k, v;
  int on, box_rows, box_shift;  // box_shift: log2 box_rows (8-64 rows, a power of two)
};
__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t *bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
  } while (!done);
}
// Box (x, h, row) of map m into shared memory at dst, completing on bar.
// Evict-first: K/V are read once per call, so streaming hundreds of MB does not push the plan, the page
// table, Q and the split workspace out of L2 between calls.
__device__ __forceinline__ void tma_box(void *dst, const CUtensorMap *m, int x, int h, int row, uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
               " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(smem_u32(dst)), "l"(m), "r"(x), "r"(h), "r"(row),
               "r"(smem_u32(bar)), "l"(evict_first()) : "memory");
}
constexpr int kTmaTile = 0x100;  // ring_c flag: the stage's tile arrives on its mbarrier
// Threads 0 .. LANES - 1 (this one: lane; LANES 1 or a multiple of 32): the K and V boxes of one whole
// tile (NTOK keys x CH 16-byte chunks) into the stage at ks (V tile_bytes further), completing on bar;
// row(j) is the map row of the tile's key j, j a multiple of the box rows. Every warp issues for small
// pages: a tile of 16-key pages has 8 boxes at d = 64 and 32 at d = 256, whose page ids one thread would
// read and issue in turn while the tile waits (docs/kernels.md, "Every warp issues the boxes of small
// pages"). Pair i comes from thread (i % warps) * 32 + i / warps: a warp's boxes go out as a loop over
// its lanes (a box's coordinates sit in uniform registers), and one warp issuing them all held the other
// warps at the next barrier.
// HP > 1: the tile holds NTOK keys of each of HP K/V heads h, h + 1, ..., head k's rows after head k - 1's
// in every 64-dim block (HP * NTOK rows a block), the boxes of a page's heads issued together.
template <int NTOK, int CH, int LANES = 1, int HP = 1, class Row>
__device__ __forceinline__ void tma_tile(const KvMaps *m, unsigned char *ks, int tile_bytes, int h, Row row, uint64_t *bar,
                                         int lane = 0) {
  // Shifts, not NTOK / br: a runtime division every tile cost the paged loop (ncu: IABS among its stalls).
  constexpr int BLK = NTOK * HP;  // rows of a 64-dim block
  const int br = m->box_rows, halves = CH / 8, pairs = (NTOK >> m->box_shift) * halves * HP;
  const int first = (lane & 31) * (LANES / 32) + (lane >> 5);  // LANES > 1: this thread's first pair
  if constexpr (LANES > 1)
    if (first >= pairs) return;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic accesses of the stage come first
  if (lane == 0) mbar_expect(bar, 2 * halves * BLK * 128);  // a box done first leaves tx-count below 0 a while
  if constexpr (LANES == 1) {
    for (int j = 0; j < NTOK; j += br) {
      const int r = row(j);
#pragma unroll
      for (int hd = 0; hd < HP; hd++)
#pragma unroll
        for (int hf = 0; hf < halves; hf++) {
          tma_box(ks + (hf * BLK + hd * NTOK + j) * 128, &m->k, hf * 64, h + hd, r, bar);
          tma_box(ks + tile_bytes + (hf * BLK + hd * NTOK + j) * 128, &m->v, hf * 64, h + hd, r, bar);
        }
    }
  } else {
    for (int i = first; i < pairs; i += LANES) {  // K and V box pairs
      const int hd = i % HP, ii = i / HP, j = ii / halves * br, hf = ii % halves, r = row(j);
      tma_box(ks + (hf * BLK + hd * NTOK + j) * 128, &m->k, hf * 64, h + hd, r, bar);
      tma_box(ks + tile_bytes + (hf * BLK + hd * NTOK + j) * 128, &m->v, hf * 64, h + hd, r, bar);
    }
  }
}
// The stages' mbarriers, initialized by thread 0 (a __syncthreads publishes them to the other threads).
__device__ __forceinline__ void mbar_init_stages(uint64_t *bars, int nst) {
  for (int s = 0; s < nst; s++) mbar_init(bars + s, 1);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

}  // namespace
