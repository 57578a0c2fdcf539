// producer_mma.cuh - decode_split_kv_producer_mma and decode_split_kv_fused_mma, the
// tensor-core split-KV producer (fp16/bf16, d <= 256, up to 16 query rows per K/V head).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include <type_traits>
#include "kernels/decode/tile_pipe.cuh"
#include "kernels/decode/split_state.cuh"
#include "kernels/decode/merge.cuh"

namespace {

// ---- tensor-core producer: up to 16 query rows per K/V head on mma.sync m16n8k16 ---------------
// The query rows of one K/V head group (g * C <= 16, zero-padded to 16) are the M side of the MMA; each
// of the NW warps (4, or 8 in decode_split_kv_producer8w_mma) owns 16 keys of every 16 * NW-key tile and
// keeps its own online-softmax state (m, l in base 2, O in fp32 fragments), so a tile costs one barrier; the warps' states are merged exactly at the end
// (0x02B). P is rounded to the storage dtype for the P.V product, as FlashAttention-2 does; scores,
// max, sum and O accumulate in fp32. K/V rows are 16-byte-chunk swizzled (chunk ^ row % 8) so ldmatrix
// reads are free of bank conflicts.
// Two stages of 32 KB at d = 128, Q fragments re-read from shared memory each tile, 2 CTAs per SM
// (__launch_bounds__(128, 2), at the kernels below; 4 at d = 64): three stages lose or gain nothing, because the loop
// already streams at the roofline, so more bytes in flight per CTA buy nothing (docs/kernels.md, "Two
// stages, two CTAs per SM"). At d = 256 the two stages of 64 KB leave room for one CTA per SM. Four
// stages at d = 64, whose stages hold half the bytes, changed nothing (B64 T2048 16-key pages: 176.86 us
// against 172.74; contiguous 133.47 against 132.32).
template <int D_PAD, int NW_ = 4>
struct MmaCfg {
  static constexpr int NW = NW_, NT = 32 * NW, NTOK = 16 * NW, ROWS = 16, CH = D_PAD / 8, ST = 2;
  // The kernels' __launch_bounds__ minimum of CTAs per SM (at the kernels below); the planner's wave
  // counts the same where shared memory holds that many (dkb_decode_wave_ctas; d = 256: 1).
  static constexpr int MIN_CTAS = NW == 8 ? 1 : D_PAD == 64 ? 4 : 2;
  static constexpr int TILE_BYTES = NTOK * D_PAD * 2, STAGE_BYTES = 2 * TILE_BYTES;
  static constexpr int Q_BYTES = ROWS * D_PAD * 2;
  // The warps' O rows for the merge, padded so a warp's float2 stores (8 rows x 4 lanes) hit distinct
  // banks: unpadded, they conflict 8 ways.
  static constexpr int RS = D_PAD + 8;
  static constexpr int RED_BYTES = NW * ROWS * RS * 4 + 3 * NW * ROWS * 4 + 2 * ROWS * 4;
  // A cluster plan's state of this CTA (the workspace ABI's fields, fp32) for the other CTAs to read:
  // u or O [ROWS][D_PAD], then m or LSE, l and validity [ROWS], behind the merge buffer.
  static constexpr int CL_BYTES = ROWS * D_PAD * 4 + 3 * ROWS * 4;
  static constexpr int SMEM = ST * STAGE_BYTES + Q_BYTES + 1024;  // + alignment slack (producer_mma)
  static_assert(RED_BYTES % 16 == 0 && RED_BYTES + CL_BYTES <= ST * STAGE_BYTES, "the merge buffers alias the stages");
};

__device__ __forceinline__ int rswz(int row, int chunk) { return chunk ^ (row & 7); }

template <typename T> __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
template <typename T> __device__ __forceinline__ uint32_t pack2(float x, float y);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float x, float y) {
  __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float x, float y) {
  __half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t *>(&v);
}

// A direct plan's row `row` of one warp's head (query heads hq0 ..) from the warp's MMA fragments: lane's dims
// n * 8 + (lane & 3) * 2 and + 1 of o[n][e0], o[n][e0 + 1] (e0 = 0: rows lane / 4, 2: lane / 4 + 8), max m2 (base
// 2) and sum l of the whole row; O = 0 and LSE = -inf for a row that saw no key (0x02C).
template <typename T, int KS>
__device__ __forceinline__ void direct_rows(const dkb_decode_params &p, int b, int hq0, int C, int R, int row, float m2, float l,
                                            int lane, const float (*o)[4], int e0) {
  if (row >= R) return;
  const bool valid = m2 != -INFINITY;
  const int64_t orow = ((int64_t)b * C + row % C) * p.H_q + hq0 + row / C;
  T *out = reinterpret_cast<T *>(p.o) + orow * p.dv;
#pragma unroll
  for (int n = 0; n < 2 * KS; n++) {
    const int x = n * 8 + (lane & 3) * 2;
    if (x < p.dv)
      *reinterpret_cast<uint32_t *>(out + x) = pack2<T>(valid ? o[n][e0] / l : 0.f, valid ? o[n][e0 + 1] / l : 0.f);
  }
  if ((lane & 3) == 0) store_scalars<SK_DIRECT>(p, orow, 0, m2, l, valid);
}

// HP > 1 (direct plans over NHD caches: dkb_decode_hp_max, plan_heads): a CTA takes HP K/V heads h, h + 1,
// ... of its item, a tile NTOK / HP keys of each, head k's rows after head k - 1's. Warp w works for head
// w / (NW / HP) on the stage's rows w * 16 .. + 16 as before, so the MMA code is the same; Q holds HP heads'
// rows and each head's rows merge its own warps (HP = 4: one warp a head). Fewer CTAs pay fewer ends, which
// cost a call about 0.9 us each contiguous and 2.2 us paged: two heads made 16-key paged calls 1.8-4.9 %
// faster, contiguous ones the same (docs/kernels.md, "Two K/V heads a CTA"); four heads (d = 128) put B128
// T1024's 1024 (request, K/V head) blocks in one wave (docs/kernels.md, "Four K/V heads a CTA").
template <typename T, int D_PAD, bool FUSED, bool EARLY, int HP = 1, int NW = 4>
__device__ __forceinline__ void producer_mma(const dkb_decode_params &p, const KvMaps &maps) {
  using K = MmaCfg<D_PAD, NW>;
  static_assert(K::NW % HP == 0, "every head has whole warps");
  constexpr int KT = K::NTOK / HP, WPH = K::NW / HP;  // keys of a head a tile; warps a head
  constexpr int KS = D_PAD / 16;  // 16-wide k steps of q.k and 16-wide n steps of p.V
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // The 128-byte swizzle of the TMA boxes follows shared-memory address bits: stages start 1 KiB aligned
  // (MmaCfg::SMEM has the slack).
  unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char *stages = smem, *q_s = smem + K::ST * K::STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, item = blockIdx.y + blockIdx.z * gridDim.y, h = blockIdx.x * HP;
  if (item >= p.n_items) return;  // the last z slice of a plan with more than 65535 items
  const int b = p.item_b[item];
  const int64_t lo = p.item_lo[item], hi = p.item_hi[item];
  const int g = p.H_q / p.H_kv, C = p.C, R = g * C;
  const int64_t N = p.item_n[item], q_first = N - C, base = p.item_base[item];
  // EARLY: the item's slot index is loaded here, with its other fields, not in the epilogue, where the
  // last CTA waited on it; only in the EARLY instances, as in the one kernel of all layouts it had cost
  // ragged (paged) calls (docs/kernels.md, "The prologue").
  const int slot_early = EARLY ? p.item_slot[item] : 0;
  const float scale2 = p.scale * kLog2e;
  // EARLY (contiguous and ragged NHD caches, producer_for): the item's first whole tile goes out on TMA
  // as soon as the item's fields arrive, before Q's loads, the pipe's set-up and the first barrier (about
  // 860 instructions of prologue to the first UTMALDG before); pipe.issued() records it. Not SKIP, not
  // FlashMask (its summary would need a load first). In the same kernel as the paged calls it slowed them
  // though they never took it, and so did issuing the paged first tile from four page ids read by thread
  // 0: hence its own instantiation (docs/kernels.md, "The prologue").
  __shared__ uint64_t bars[K::ST];
  int64_t t_early = -1;
  int c_early = T_SKIP;
  if constexpr (EARLY) {
    if (maps.on && p.mask_kind != M_FLASHMASK && hi < (int64_t(1) << 30)) {
      const int64_t t0 = lo / KT, k0 = t0 * KT;
      if (k0 >= lo && k0 + KT <= hi) {
        c_early = tile_class(p, b, q_first, N, k0, k0 + KT < N ? k0 + KT : N, t0);
        if (c_early != T_SKIP) t_early = t0;
      }
    }
    if (t_early >= 0 && tid == 0) {
      mbar_init_stages(bars, K::ST);
      tma_tile<KT, K::CH, 1, HP>(&maps, stages, K::TILE_BYTES, h, [&](int j) { return (int)(base + t_early * KT + j); }, bars);
    }
  }
  // Q's loads go out before the prologue and the first TMA tiles, not after them (ncu, B1 T131072: 6 % of
  // the stall samples were Q's shared-memory store waiting on its load): faster on four shapes timed,
  // slower on three (docs/kernels.md, "The prologue").
  // Rows r = j * C + i (query head h * g + j, query i), zero beyond R and beyond dk.
  constexpr int QN = HP * K::ROWS * K::CH / K::NT;
  static_assert(K::ROWS * K::CH % K::NT == 0, "whole Q chunks per thread");
  uint4 qv[QN];
#pragma unroll
  for (int k = 0; k < QN; k++) {
    const int idx = tid + k * K::NT, qr = idx / K::CH, c = idx % K::CH, r = qr % K::ROWS, hq0 = (h + qr / K::ROWS) * g;
    qv[k] = make_uint4(0, 0, 0, 0);
    if (r < R && c * 8 < p.dk)
      qv[k] = *reinterpret_cast<const uint4 *>(reinterpret_cast<const T *>(p.q) +
                                               (((int64_t)b * C + r % C) * p.H_q + hq0 + r / C) * p.dk + c * 8);
  }

  __shared__ int64_t ring_t[K::ST];
  __shared__ int ring_c[K::ST];
  __shared__ int row_flag;  // fused: this CTA is its group's last
  // TMA boxes from thread 0 in the EARLY instances (contiguous and ragged NHD caches: 2-8 boxes a tile),
  // from every warp in the others (paged: up to 32). Issue by more threads measured slower on contiguous
  // caches.
  TilePipe<T, KT, K::CH, K::NT, EARLY ? 1 : K::NT, HP> pipe;
  // The item's page list goes in the dynamic shared memory past Q: make_mma asks for at least 11 KiB there
  // (2816 page ids); its room is read here from the launch's size. A longer list has each tile's page ids
  // loaded from the table as the tile before is computed, and the copy issue waited on them: 1-key pages
  // at B64 T2048 spent 27 % of the stall samples there (docs/kernels.md).
  unsigned dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  const int pg_cap = (int)((smem_raw + dyn - (q_s + HP * K::Q_BYTES)) / 4);
  pipe.init(p, tid, b, h, lo, hi, N, base, q_first, ring_t, ring_c, reinterpret_cast<int32_t *>(q_s + HP * K::Q_BYTES), pg_cap);
  pipe.use_tma(&maps, bars, K::ST, t_early >= 0);
  __syncthreads();
  // K/V stages: [D_PAD / 64][NTOK][64], each 128-byte row's 16-byte chunks XOR-swizzled by row % 8 (the
  // TMA 128-byte swizzle; ldmatrix reads of 8 rows hit 8 distinct bank groups). Q: rows of D_PAD.
  auto pos = [](int tt, int c) { return (c >> 3) * (K::NTOK * 8) + tt * 8 + ((c & 7) ^ (tt & 7)); };
  auto qpos = [](int r, int c) { return r * K::CH + rswz(r, c); };
  if (t_early >= 0) pipe.issued(0, t_early, c_early);
#pragma unroll
  for (int s = t_early >= 0 ? 1 : 0; s < K::ST - 1; s++) pipe.issue_next(s, stages + s * K::STAGE_BYTES, K::TILE_BYTES, pos, pos);

#pragma unroll
  for (int k = 0; k < QN; k++) {
    const int idx = tid + k * K::NT;
    *reinterpret_cast<uint4 *>(q_s + qpos(idx / K::CH, idx % K::CH) * 16) = qv[k];
  }
  __syncthreads();

  float o[2 * KS][4];
#pragma unroll
  for (int n = 0; n < 2 * KS; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows lane/4 and lane/4 + 8
  const int r0 = lane >> 2, r1 = r0 + 8, kw = warp * 16, qh = warp / WPH * K::ROWS, kk = warp % WPH * 16;  // qh: the head's Q rows; kk: its keys
  const bool rv0 = r0 < R, rv1 = r1 < R;
  int stage = 0;
  unsigned parity = 0;  // bit s: the phase of stage s's mbarrier the next TMA tile there completes
  for (;;) {
    __syncthreads();  // the stage computed last is free, and the ring of this one is written
    const int64_t t = ring_t[stage];
    if (t < 0) break;
    const int rc = ring_c[stage];
    const bool partial = (rc & ~kTmaTile) == T_PARTIAL;
    {
      const int sf = (stage + K::ST - 1) % K::ST;
      pipe.issue_next(sf, stages + sf * K::STAGE_BYTES, K::TILE_BYTES, pos, pos);
    }
    // A tile is waited for only now, with the next one already in flight: two tiles in flight during
    // the wait, TMA or cp.async (whose copies every thread must see: a second barrier).
    if (rc & kTmaTile) {
      mbar_wait(bars + stage, (parity >> stage) & 1);
      parity ^= 1u << stage;
    } else {
      cp_async_wait<K::ST - 1>();
      __syncthreads();
    }
    const unsigned char *ks = stages + stage * K::STAGE_BYTES, *vs = ks + K::TILE_BYTES;
    // ---- s = q.k for this warp's 16 keys: two 16x8 fragments ----
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int k = 0; k < KS; k++) {
      uint32_t bf[4], qk[4];
      const int mi = lane >> 3, key = kw + (mi >> 1) * 8 + (lane & 7);
      ldsm_x4(bf, ks + pos(key, k * 2 + (mi & 1)) * 16);
      ldsm_x4(qk, q_s + qpos(qh + (mi & 1) * 8 + (lane & 7), k * 2 + (mi >> 1)) * 16);  // Q re-read: 32 registers fewer
      mma16816<T>(sc[0], qk, bf[0], bf[1]);
      mma16816<T>(sc[1], qk, bf[2], bf[3]);
    }
    // ---- mask (range, padded rows, mask program) and scale into base 2 ----
    if (partial) {
      const int64_t kb = t * KT + kk + (lane & 3) * 2;
#pragma unroll
      for (int j = 0; j < 2; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int row = e < 2 ? r0 : r1;
          const int64_t key = kb + j * 8 + (e & 1);
          const bool ok = key >= lo && key < hi && row < R && visible(p, b, q_first + row % C, key);
          sc[j][e] = ok ? sc[j][e] * scale2 : -INFINITY;
        }
    } else {  // FULL: every key of the tile is in range and visible; only padded rows are dropped
#pragma unroll
      for (int j = 0; j < 2; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) sc[j][e] = (e < 2 ? rv0 : rv1) ? sc[j][e] * scale2 : -INFINITY;
    }
    float mx0 = fmaxf(fmaxf(sc[0][0], sc[0][1]), fmaxf(sc[1][0], sc[1][1]));
    float mx1 = fmaxf(fmaxf(sc[0][2], sc[0][3]), fmaxf(sc[1][2], sc[1][3]));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    // No visible key yet: keep the empty state; never form -inf - -inf (0x02C).
    const float a0 = n0 == -INFINITY ? 1.f : ex2(m0 - n0), a1 = n1 == -INFINITY ? 1.f : ex2(m1 - n1);
    // Subtracting 0 instead of an empty row's -inf max gives exp2(-inf) = 0 for its masked scores.
    const float z0 = n0 == -INFINITY ? 0.f : n0, z1 = n1 == -INFINITY ? 0.f : n1;
    float pr[2][4];
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) pr[j][e] = ex2(sc[j][e] - (e < 2 ? z0 : z1));
    l0 = l0 * a0 + pr[0][0] + pr[0][1] + pr[1][0] + pr[1][1];
    l1 = l1 * a1 + pr[0][2] + pr[0][3] + pr[1][2] + pr[1][3];
    m0 = n0;
    m1 = n1;
    // Once the maxima settle, alpha is exactly 1 for the whole warp: skip the 4 * KS * 2 multiplies.
    if (__any_sync(0xffffffffu, a0 != 1.f || a1 != 1.f)) {
#pragma unroll
      for (int n = 0; n < 2 * KS; n++) { o[n][0] *= a0; o[n][1] *= a0; o[n][2] *= a1; o[n][3] *= a1; }
    }
    // ---- o += p . v ----
    const uint32_t pa[4] = {pack2<T>(pr[0][0], pr[0][1]), pack2<T>(pr[0][2], pr[0][3]), pack2<T>(pr[1][0], pr[1][1]),
                            pack2<T>(pr[1][2], pr[1][3])};
#pragma unroll
    for (int n = 0; n < KS; n++) {
      uint32_t vb[4];
      const int mi = lane >> 3, key = kw + (mi & 1) * 8 + (lane & 7);
      ldsm_x4_t(vb, vs + pos(key, n * 2 + (mi >> 1)) * 16);
      mma16816<T>(o[2 * n], pa, vb[0], vb[1]);
      mma16816<T>(o[2 * n + 1], pa, vb[2], vb[3]);
    }
    stage = (stage + 1) % K::ST;
  }
  cp_async_wait<0>();
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  if constexpr (WPH == 1 && !FUSED) {
    // One warp a head (HP = 4) holds its rows' whole state: a direct plan's O and LSE go out from the
    // registers, with no merge through shared memory and no barrier (O = u / l as the passes compute it,
    // bit for bit: their factor is exactly 1 for the one warp).
    if (p.direct) {
      direct_rows<T, KS>(p, b, (h + warp) * g, C, R, r0, m0, l0, lane, o, 0);
      direct_rows<T, KS>(p, b, (h + warp) * g, C, R, r1, m1, l1, lane, o, 2);
      return;
    }
  }
  __syncthreads();  // stages are free: they hold the warps' states for the merge
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
  float *red_o = reinterpret_cast<float *>(stages);          // [NW][16][RS]
  float *red_m = red_o + K::NW * K::ROWS * K::RS, *red_l = red_m + K::NW * K::ROWS;  // [NW][16]
#pragma unroll
  for (int n = 0; n < 2 * KS; n++) {
    const int x = n * 8 + (lane & 3) * 2;
    *reinterpret_cast<float2 *>(red_o + (warp * K::ROWS + r0) * K::RS + x) = make_float2(o[n][0], o[n][1]);
    *reinterpret_cast<float2 *>(red_o + (warp * K::ROWS + r1) * K::RS + x) = make_float2(o[n][2], o[n][3]);
  }
  if ((lane & 3) == 0) {
    red_m[warp * K::ROWS + r0] = m0; red_m[warp * K::ROWS + r1] = m1;
    red_l[warp * K::ROWS + r0] = l0; red_l[warp * K::ROWS + r1] = l1;
  }
  __syncthreads();
  // ---- merge the warps (0x02B) and write the slot, or the output when the plan is direct ----
  // Each row's frame M, sum L and per-warp factors exp2(m_w - M) once, then only multiply-adds per element.
  // HP > 1: row_m, row_l of head hd at hd * ROWS; a head's rows merge its own WPH warps.
  float *red_f = red_l + K::NW * K::ROWS, *row_m = red_f + K::NW * K::ROWS, *row_l = row_m + HP * K::ROWS;
  if (tid < HP * K::ROWS) {
    const int w0 = tid / K::ROWS * WPH, r = tid % K::ROWS;
    float M = -INFINITY, L = 0.f;
#pragma unroll
    for (int w = w0; w < w0 + WPH; w++) M = fmaxf(M, red_m[w * K::ROWS + r]);
#pragma unroll
    for (int w = w0; w < w0 + WPH; w++) {
      const float mw = red_m[w * K::ROWS + r];
      /* an empty warp (or row) weighs 0; never form -inf - -inf (0x02C) */
      const float f = mw == -INFINITY ? 0.f : exp2f(mw - M);
      red_f[w * K::ROWS + r] = f;
      L += red_l[w * K::ROWS + r] * f;
    }
    row_m[tid] = M;
    row_l[tid] = L;
  }
  __syncthreads();
  // D_PAD / 4 lanes per row, four dims each, every row of a pass at once, not a row per pass of the CTA,
  // whose stores took longer. ncu's stall samples put most of this epilogue on instruction
  // fetch (stall_no_inst: each unrolled pass was fresh code to the SM), so the pass loop is not unrolled:
  // the second pass runs from the i-cache. And each store kind has its own copy of the passes (SK_*), so a
  // pass does not jump over the other kinds' stores. What each measured, the epilogues tried and not kept
  // and a timeline of the whole call: docs/kernels.md, "The epilogue".
  // Any change to this producer moves the code of the whole kernel: trials here were slower on shapes
  // whose path they never changed, so time every shape.
  const int slot = EARLY ? slot_early : p.item_slot[item];
  constexpr int LPR = D_PAD / 4, RPP = K::NT / LPR;
  const int x = (tid % LPR) * 4;
  // The passes, once per store kind (SK): each call runs only its own kind's stores, straight through.
  auto passes = [&](auto sk) {
    constexpr int SK = decltype(sk)::value;
#pragma unroll 1
    for (int rp = 0; rp < HP * K::ROWS; rp += RPP) {
      const int lr = rp + tid / LPR;  // HP > 1: the rows of head h + hd follow head h + hd - 1's
      if (lr >= HP * R) break;
      const int hd = HP == 1 ? 0 : lr / R, row = HP == 1 ? lr : lr % R, w0 = hd * WPH;
      const int j = row / C, i = row % C, hq = (h + hd) * g + j;
      const float M = row_m[hd * K::ROWS + row], L = row_l[hd * K::ROWS + row];
      const bool valid = M != -INFINITY;  // the empty identity: O = 0, LSE = -inf, valid = 0
      const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq, srow = ((int64_t)slot * p.H_q + hq) * C + i;
      float u[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int w = w0; w < w0 + WPH; w++) {
        const float4 v = *reinterpret_cast<const float4 *>(red_o + (w * K::ROWS + row) * K::RS + x);
        const float f = red_f[w * K::ROWS + row];
        u[0] += v.x * f; u[1] += v.y * f; u[2] += v.z * f; u[3] += v.w * f;
      }
      if constexpr (FUSED) {
        if (p.cluster > 1) {  // the state stays in shared memory for the cluster merge
          float *cl_u = reinterpret_cast<float *>(stages + K::RED_BYTES), *cl_m = cl_u + K::ROWS * D_PAD;
          if (x < p.dv) *reinterpret_cast<float4 *>(cl_u + row * D_PAD + x) = abi_payload4<SK>(p, u, L, valid);
          if (x == 0) {
            cl_m[row] = abi_frame<SK>(p, M, L, valid);
            cl_m[K::ROWS + row] = valid ? L : 0.f;       // l
            cl_m[2 * K::ROWS + row] = valid ? 1.f : 0.f;  // validity
          }
          continue;
        }
      }
      if (x < p.dv) store4<T, SK>(p, orow, srow, x, u, L, valid);
      if (x == 0) store_scalars<SK>(p, orow, srow, M, L, valid);
    }
  };
  switch (store_kind(p)) {
  case SK_MLU: passes(std::integral_constant<int, SK_MLU>{}); break;
  case SK_LSE_F32: passes(std::integral_constant<int, SK_LSE_F32>{}); break;
  case SK_LSE_BF16: passes(std::integral_constant<int, SK_LSE_BF16>{}); break;
  default:  // a fused plan is never direct
    if constexpr (!FUSED) passes(std::integral_constant<int, SK_DIRECT>{});
  }
  if constexpr (FUSED) {
    if (p.cluster > 1) cluster_merge<T, D_PAD>(p, b, h, g, reinterpret_cast<float *>(stages + K::RED_BYTES));
    else fused_combine<T, K::NT>(p, b, h, g, &row_flag);
  }
}

// __launch_bounds__(128, 2) at d = 128 and 256: up to 255 registers (177-255 used), and at d = 128 2 CTAs
// per SM, which is all the plan fills (harness/plan.c), held by the launch, not by the register count: the
// d = 128 producers ask for kTwoPerSmSmem of shared memory (make_mma). At 3 CTAs per SM, forced splits of
// 512 CTAs ran as 1.3 waves; held to 2, they run as two even waves. Against (128, 3) (at most 168
// registers, 3 CTAs per SM) ragged calls are faster and steadier, B4 graph and B16 paged a little faster,
// B1 T131072 both ways (docs/kernels.md, "__launch_bounds__(128, 2)").
// (128, 4) at d = 64: 128 registers, no spills, 4 CTAs per SM (35 KB of shared memory each) where 155-172
// registers held 3 or 2; B64 T2048 d = 64 7.1-7.6 % faster contiguous and paged, DRAM 80.6 -> 87.0 % of
// peak under ncu (docs/kernels.md, "Four CTAs per SM at d = 64").
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, MmaCfg<D_PAD>::MIN_CTAS) decode_split_kv_producer_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY>(p, maps);
}
// The same producer over two K/V heads a CTA (producer_mma HP).
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, MmaCfg<D_PAD>::MIN_CTAS) decode_split_kv_producer2_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY, 2>(p, maps);
}
// The same producer over four K/V heads a CTA (d = 128: make_mma).
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, MmaCfg<D_PAD>::MIN_CTAS) decode_split_kv_producer4_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY, 4>(p, maps);
}
// The one-head producer held to 168 registers so three CTAs share an SM (d = 128: make_mma), for direct plans
// of many CTAs a slot (harness/plan.c, plan_three): three CTAs an SM overlap more of each CTA's ends with the
// others' copies, which at B512 T256 (4096 CTAs) paid more than four heads a CTA at two an SM (H100s: 1.8-2.9 %
// faster contiguous and in 16-key pages); at 1024 CTAs (B128 T1024, 2.6 waves of three) it cost 2.5-2.7 % more
// (docs/kernels.md, "Three CTAs an SM for many CTAs").
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, 3) decode_split_kv_producer3sm_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY>(p, maps);
}
// The one-head producer of eight warps on 128-key tiles, one CTA an SM (d = 128: make_mma), for one-head plans whose
// schedule its longest CTA sets (harness/plan.c, plan_eight): such a CTA streams with its SM to itself for much of
// its life, and four warps there issue too little to keep the copies flowing (one warp a scheduler, an instruction
// every 7 cycles); eight warps, each the same work as in the four-warp CTA, double what is in flight. The ragged
// serving batch forced to one split ran 35 % faster on an H100, a full two waves of one-head CTAs 0.9 % slower
// (docs/kernels.md, "Eight warps for a CTA that streams alone").
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(256, 1) decode_split_kv_producer8w_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY, 1, 8>(p, maps);
}
// The same producer whose last CTA per (request, K/V head) also merges that group's slots: one launch.
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, MmaCfg<D_PAD>::MIN_CTAS) decode_split_kv_fused_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, true, EARLY>(p, maps);
}

}  // namespace
