// decode.cu - dkb's split-KV decode kernels (article 0x02-0x06), the subject under test dkb ships.
//
// Kernel versions that exist (STYLE 9):
//   decode_split_kv_producer<T, D_PAD, R_MAX, NT>  one CTA per (work item, K/V head): all g*C query rows
//       of the K/V head group share every K/V tile it loads (GQA read once per group); a cp.async
//       pipeline of kStages tiles; scores on CUDA cores in fp32; online softmax in base 2; writes the
//       split state (m,l,u) or (LSE,O) of its slot, or the final O directly when the plan has one item
//       per request. Empty items and items past a request's keys write the empty identity.
//   decode_split_kv_producer_mma<T, D_PAD, EARLY>  the same contract on tensor cores (mma.sync) for
//       fp16/bf16, d <= 128 and up to 16 query rows per K/V head; two stages, two CTAs per SM; whole tiles
//       of NHD caches arrive as TMA boxes on an mbarrier (KvMaps), the rest by cp.async. EARLY (contiguous
//       and ragged NHD caches): the item's first whole tile is sent at CTA entry, before the prologue.
//   decode_split_kv_fused_mma<T, D_PAD, EARLY>  that producer whose last CTA per (request, K/V head) also merges
//       the group's slots (fused combine, 0x03C): one launch when the plan has few slots per request; with
//       2 slots in every request, launched as one thread-block cluster per group that merges in
//       distributed shared memory (cluster_merge).
//   decode_split_kv_combine<T, WS, NT, LPS>  one CTA per (request, query row, query head), or per 32 dims of
//       it when requests hold many slots: exact merge of the request's slots, branching on validity before
//       any exponential (0x02C); all-masked -> O=0, LSE=-inf.
//   decode_naive_reference<T>        one CTA per output row, three passes over all keys, no split: the
//       broad-support GPU reference backend.
//   decode_append_kv<T>              writes the C new K/V rows into the cache before attention.
// Float64 oracles with the same contracts: oracles/split_state.c (state algebra), oracles/kv_address.c
// (addresses), oracles/mask.c (visibility), harness/decode_ref.c (the whole call).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda.h>  // CUtensorMap: types only; the encoder comes through cudart (never -lcuda)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <type_traits>

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

// ---- async copies ---------------------------------------------------------------------------------
// 16-byte global->shared copy that bypasses L1; src_bytes 0 writes zeros (tails, padded lanes), so a
// poisoned (NaN) row past the context is never even read.
// These copies carry no L2 cache hint. ptxas (CUDA 13) compiles cp.async with an L2::cache_hint policy
// into code that names a memory descriptor in a uniform register it never writes (cuobjdump -sass:
// desc[UR1], no write of UR1): "illegal instruction" on the GPU, in whichever instances a code change
// happens to tip over (a build with every producer hinted: 37 of 43 functions; small changes to the copy
// loop moved it onto the d = 128 tensor-core producers). The evict-first hint now rides on the TMA boxes
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
// Against 16-byte cp.async per thread (H200, same machine, alternating, two rounds): paged B16 T8192
// 135.2 -> 129.1 us, B8 T16384 506.5 -> 486.0, B1 T32768 44.3 -> 41.7, B4 T4096 graph 27.2 -> 25.0;
// window 1024 25.7 -> 23.9; contiguous B16 128.1 -> 126.9, B1 T131072 27.7 -> 26.7, B8 480.4 -> 485.2,
// ragged 312.3 -> 314.6. Part of it is that a stage's next tile is now in flight while the current one
// is awaited. Boxes without the evict-first hint: 1-5 % slower; L2 promotion 256 B: 8 % slower at B16.
// A page's boxes as K, K, V, V instead of K, V, K, V (both halves of a row back to back): no change
// (H200, three rounds: paged B16 126.5-126.9 vs 126.7-127.2 us, T131072, B8 and T32768 paged the same).
struct KvMaps {
  CUtensorMap k, v;
  int on, box_rows;
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
// One thread: the K and V boxes of one whole tile (NTOK keys x CH 16-byte chunks) into the stage at ks (V
// tile_bytes further), completing on bar; row(j) is the map row of the tile's key j, j a multiple of
// the box rows.
template <int NTOK, int CH, class Row>
__device__ __forceinline__ void tma_tile(const KvMaps *m, unsigned char *ks, int tile_bytes, int h, Row row, uint64_t *bar) {
  const int br = m->box_rows, halves = CH / 8;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic accesses of the stage come first
  mbar_expect(bar, 2 * halves * NTOK * 128);
  for (int j = 0; j < NTOK; j += br) {
    const int r = row(j);
#pragma unroll
    for (int hf = 0; hf < halves; hf++) {
      tma_box(ks + (hf * NTOK + j) * 128, &m->k, hf * 64, h, r, bar);
      tma_box(ks + tile_bytes + (hf * NTOK + j) * 128, &m->v, hf * 64, h, r, bar);
    }
  }
}
// The stages' mbarriers, initialized by thread 0 (a __syncthreads publishes them to the other threads).
__device__ __forceinline__ void mbar_init_stages(uint64_t *bars, int nst) {
  for (int s = 0; s < nst; s++) mbar_init(bars + s, 1);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// 2^x on the MUFU unit, flushing denormal results to zero (they are below any tolerance: the weights
// are relative to the running maximum). ex2(-inf) = 0.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

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

// ---- mask program (oracles/mask.c mask_visible / mask_tile_class) --------------------------------
__device__ __forceinline__ bool visible(const dkb_decode_params &p, int b, int64_t q, int64_t k) {
  switch (p.mask_kind) {
  case M_NONE: return true;
  case M_CAUSAL: return k <= q;
  case M_WINDOW: return k <= q && (k > q - p.window || k < p.sink);
  default: {
    int64_t c = p.col_indptr[b] + k;
    bool masked = (q >= p.uts[c] && q < p.ute[c]) || (q >= p.lts[c] && q < p.lte[c]);
    return !masked;
  }
  }
}

// Class of query rows [q0, q1) x keys [k0, k1): exact for the coordinate masks, conservative from the
// block summary for FlashMask (0x06D: PARTIAL when unsure, never a wrong FULL or SKIP).
__device__ __forceinline__ int tile_class(const dkb_decode_params &p, int b, int64_t q0, int64_t q1, int64_t k0,
                                          int64_t k1, int64_t tile) {
  switch (p.mask_kind) {
  case M_NONE: return T_FULL;
  case M_CAUSAL:
    if (k1 - 1 <= q0) return T_FULL;
    if (k0 > q1 - 1) return T_SKIP;
    return T_PARTIAL;
  case M_WINDOW: {
    // visible(q, k) = k <= q && (k > q - w || k < sink)
    bool all_causal = k1 - 1 <= q0, none_causal = k0 > q1 - 1;
    if (none_causal) return T_SKIP;
    bool all_win = (k0 > q1 - 1 - p.window) || (k1 <= p.sink);
    bool none_win = (k1 - 1 <= q0 - p.window) && (k0 >= p.sink);
    if (none_win) return T_SKIP;
    return (all_causal && all_win) ? T_FULL : T_PARTIAL;
  }
  default: {
    const int32_t *s = p.fm_summary + 8 * (p.fm_sum_indptr[b] + tile);
    // s = UTS_min, UTS_max, UTE_min, UTE_max, LTS_min, LTS_max, LTE_min, LTE_max
    bool up_cover = q0 >= s[1] && q1 <= s[2], lo_cover = q0 >= s[5] && q1 <= s[6];
    if (up_cover || lo_cover) return T_SKIP;
    bool up_disj = !(q1 > s[0] && q0 < s[3]), lo_disj = !(q1 > s[4] && q0 < s[7]);
    return (up_disj && lo_disj) ? T_FULL : T_PARTIAL;
  }
  }
}

// ---- the tile pipeline -------------------------------------------------------------------------
// One CTA streams the K/V tiles of its item [lo, hi) of request b, head h, through the kernel's shared-memory
// stages with cp.async, or with TMA boxes (TMA, use_tma) for whole tiles of NHD caches. Tiles are aligned
// blocks of NTOK keys; SKIP tiles (0x05C) are neither loaded nor computed. Address constants are hoisted out of
// the copy loop (a copy must not wait on a dependent load): an item's page ids (up to kPageSmem) sit in shared
// memory before the first copy, and the FlashMask summary of the next tile is loaded one tile ahead, while the
// current tile is computed. Tiles wholly inside the item take a short path (byte addresses, power-of-two page
// shift); edge tiles, other page sizes and longer page lists take the general, not unrolled path, which reads
// the page table directly. A ring in shared memory tells the consumer which tile and class each stage holds
// (-1: none), and whether it arrives on the stage's mbarrier (kTmaTile).
template <typename T, int NTOK, int CH, int NT, bool TMA = false>
struct TilePipe {
  static constexpr int EPC = 16 / (int)sizeof(T);
  static constexpr int KPT = NTOK * CH / NT > 0 ? NTOK * CH / NT : 1;  // keys each thread copies per tile
  const dkb_decode_params *pp;
  int tid, b;
  int64_t lo, hi, N, q_first, t_end, t_pend;
  bool paged, kch, vch;
  int64_t kbase, vbase, kstride, vstride, kpage, vpage;
  const int32_t *tbl;
  int P, cc, ct0;
  int4 sm0, sm1;
  int64_t *ring_t;
  int *ring_c;
  const int32_t *pgs;  // the item's page ids in shared memory (index key / P - j0), or null
  int64_t j0;
  // cp.async fast path for tiles wholly inside [lo, hi) (the CUDA-core producers, HND caches): per-thread
  // byte addresses and strides, so a copy costs an add (contiguous, ragged) or a shared-memory page id and
  // a multiply-add (paged, P a power of two). Measured before the TMA path, with the tensor-core producer:
  // paged ran 1.80 -> 1.88 us per tile at B16 T8192 (H200). Part is the page order: with the pool in
  // logical order paged is +2.6 % over contiguous at B16 T8192, shuffled +5.3 %, shuffled 64- or 256-key
  // pages +3.1-3.4 % (same machine). Tried and not kept, each measured against this code on the same
  // machine: the next tile's pool rows computed while the current one is in flight (no change), an L2
  // prefetch of the next tile's pages to warm the TLB (0.5 % slower), and both stages in flight with a
  // second barrier per tile (0.3-1.7 % faster paged, 1.3-3 % slower contiguous, and it made 20 of the 31
  // decode fixtures fail with "illegal instruction" at a copy; that build predates tools/sass-check.py and
  // was never checked with it, but it is the symptom of the copy-descriptor miscompile noted at cp_async16).
  // One thread per KPT consecutive keys (one page id per tile): contiguous 4 % slower (the copy loop's
  // extra arithmetic or request order), paged no faster. TMA tiles dealt round-robin over a request's
  // splits (split r taking tiles r, r + S, ...: one sequential stream per request, not S): no faster at
  // B1 T131072 (splits 128, 256) or T32768 (H200, three rounds).
  const unsigned char *kthr, *vthr;
  int64_t kstep, vstep, kpage_b, vpage_b;
  int ksz, vsz, pshift;
  bool fast;
  const KvMaps *maps;  // TMA: the caches' maps (kernel parameter space) and the stages' barriers
  uint64_t *bars;
  int64_t row0;        // TMA, contiguous and ragged: map row of key 0
  int hh;

  // Call __syncthreads() between init and the first issue_next: init fills the shared page list.
  // base: the item's p.item_base (its request's cache row, packed row or page-table entry, resolved by the plan).
  __device__ __forceinline__ void init(const dkb_decode_params &p, int tid_, int b_, int h, int64_t lo_, int64_t hi_, int64_t N_,
                                       int64_t base, int64_t q_first_, int64_t *rt, int *rc, int32_t *pg_smem) {
    pp = &p; tid = tid_; b = b_; lo = lo_; hi = hi_; N = N_; q_first = q_first_; ring_t = rt; ring_c = rc;
    pgs = nullptr;
    t_pend = lo / NTOK;
    t_end = hi > lo ? (hi + NTOK - 1) / NTOK : t_pend;
    paged = p.layout == L_PAGED_NHD || p.layout == L_PAGED_HND;
    P = p.page_size > 0 ? p.page_size : 1;
    const int64_t Hk = p.H_kv, dk = p.dk, dv = p.dv;
    kpage = vpage = 0;
    tbl = nullptr;
    /* offset of key t: base + t * stride (contiguous, ragged) or page * page_stride + base + (t % P) * stride */
    switch (p.layout) {
    case L_CONTIG_NHD:  // base = cache_row * T_cap
    case L_RAGGED_NHD:  // base = indptr[b]
      kbase = (base * Hk + h) * dk; vbase = (base * Hk + h) * dv;
      kstride = Hk * dk; vstride = Hk * dv; break;
    case L_CONTIG_HND: kbase = (base * Hk + h) * p.T_cap * dk; vbase = (base * Hk + h) * p.T_cap * dv;  // base = cache_row
      kstride = dk; vstride = dv; break;
    case L_PAGED_NHD: kbase = h * dk; vbase = h * dv; kstride = Hk * dk; vstride = Hk * dv;
      kpage = (int64_t)P * Hk * dk; vpage = (int64_t)P * Hk * dv; break;
    default: kbase = h * (int64_t)P * dk; vbase = h * (int64_t)P * dv; kstride = dk; vstride = dv;
      kpage = Hk * (int64_t)P * dk; vpage = Hk * (int64_t)P * dv; break;
    }
    if (paged) {
      tbl = (p.table == TBL_DENSE ? p.block_table : p.page_indices) + base;
      /* An item's page list usually fits in shared memory: load it once, coalesced, so no copy ever
       * waits on the page table. */
      j0 = lo / P;
      const int64_t nj = hi > lo ? (hi - 1) / P - j0 + 1 : 0;
      if (nj <= kPageSmem) {
#pragma unroll 8
        for (int j = tid; j < (int)nj; j += NT) pg_smem[j] = __ldg(tbl + j0 + j);  // 8 loads in flight, not 8 round trips
        pgs = pg_smem;
      }
    }
    cc = tid % CH;          // every thread copies chunk cc of keys ct0 + i * (NT / CH)
    ct0 = tid / CH;
    kch = cc * EPC < p.dk;  // padded lanes are zero-filled
    vch = cc * EPC < p.dv;
    {
      const int ES = (int)sizeof(T);
      ksz = kch ? 16 : 0;
      vsz = vch ? 16 : 0;
      /* a padded lane keeps a valid source address (chunk 0 of its row) and copies 0 bytes */
      kthr = reinterpret_cast<const unsigned char *>(p.k) + (kbase + (kch ? cc * EPC : 0)) * ES;
      vthr = reinterpret_cast<const unsigned char *>(p.v) + (vbase + (vch ? cc * EPC : 0)) * ES;
      kstep = kstride * ES; vstep = vstride * ES; kpage_b = kpage * ES; vpage_b = vpage * ES;
      pshift = -1;
      if (paged && (P & (P - 1)) == 0) pshift = __ffs(P) - 1;
      if (!paged) { kthr += ct0 * kstep; vthr += ct0 * vstep; }
      fast = hi < (int64_t(1) << 30) && (!paged || (pgs && pshift >= 0));
    }
    maps = nullptr; bars = nullptr; row0 = base; hh = h;
    prefetch(t_pend);
  }
  // TMA producers: the maps and one mbarrier per stage (initialized here by thread 0 unless the producer
  // did, inited; the caller's __syncthreads after init publishes them). encode_maps turned the maps on only
  // for caches they cover.
  // Tried and not kept: prefetch.tensormap of both maps at CTA entry (no change, H200, two rounds).
  __device__ __forceinline__ void use_tma(const KvMaps *m, uint64_t *b, int nst, bool inited) {
    if (!m->on) return;
    maps = m; bars = b;
    if (tid == 0 && !inited) mbar_init_stages(bars, nst);
  }
  // Stage s holds tile t of class cls, which the producer sent before init (its first tile): recorded as
  // issue_next records what it sends.
  __device__ __forceinline__ void issued(int s, int64_t t, int cls) {
    if (tid == 0) { ring_t[s] = t; ring_c[s] = cls | kTmaTile; }
    t_pend = t + 1;
    prefetch(t_pend);
    cp_async_commit();
  }
  __device__ __forceinline__ void prefetch(int64_t t) {
    if (t >= t_end) return;
    if (pp->mask_kind == M_FLASHMASK) {
      const int4 *sp = reinterpret_cast<const int4 *>(pp->fm_summary + 8 * (pp->fm_sum_indptr[b] + t));
      sm0 = __ldg(sp);
      sm1 = __ldg(sp + 1);
    }
  }
  __device__ __forceinline__ int classify(int64_t t) const {
    int64_t k0 = t * NTOK, k1 = k0 + NTOK < N ? k0 + NTOK : N;
    int c;
    if (pp->mask_kind == M_FLASHMASK) {
      // summary = UTS_min, UTS_max, UTE_min, UTE_max, LTS_min, LTS_max, LTE_min, LTE_max (0x06C/D)
      const int64_t q0 = q_first, q1 = N;
      bool up_cover = q0 >= sm0.y && q1 <= sm0.z, lo_cover = q0 >= sm1.y && q1 <= sm1.z;
      bool up_disj = !(q1 > sm0.x && q0 < sm0.w), lo_disj = !(q1 > sm1.x && q0 < sm1.w);
      c = (up_cover || lo_cover) ? T_SKIP : (up_disj && lo_disj) ? T_FULL : T_PARTIAL;
    } else {
      c = tile_class(*pp, b, q_first, N, k0, k1, t);
    }
    if (c == T_FULL && (k0 < lo || k0 + NTOK > hi)) c = T_PARTIAL;  // range edges need the predicate
    return c;
  }
  // Copies the next non-SKIP tile into stage s (K at ks, V at ks + tile_bytes; kpos/vpos place chunk c
  // of tile row tt, in 16-byte units), records it in the ring and starts the next tile's prefetch.
  template <class KPos, class VPos>
  __device__ __forceinline__ void issue_next(int s, unsigned char *ks, int tile_bytes, KPos kpos, VPos vpos) {
    int64_t t = t_pend;
    int cls = T_SKIP;
    while (t < t_end && (cls = classify(t)) == T_SKIP) prefetch(++t);  // rare: the planner left out SKIP runs
    bool tma = false;
    if constexpr (TMA) tma = maps && t < t_end && fast && t * NTOK >= lo && (t + 1) * NTOK <= hi;
    if (tma) {
      // Whole tile: K and V boxes of box_rows keys x 64 dims each; the stage's layout is the swizzled
      // [dims / 64][NTOK][64] of MmaCfg. Issued by one thread; rows must fit the maps' int32 coordinates.
      if (tid == 0)
        tma_tile<NTOK, CH>(maps, ks, tile_bytes, hh, [&](int j) {
          const int64_t key = t * NTOK + j;
          return paged ? (int)(pgs[(key >> pshift) - j0] * P + (key & (P - 1))) : (int)(row0 + key);
        }, bars + s);
    } else if (t < t_end && fast && t * NTOK >= lo && (t + 1) * NTOK <= hi) {
      unsigned char *vs = ks + tile_bytes;
      if (!paged) {
        const unsigned char *kr = kthr + t * NTOK * kstep, *vr = vthr + t * NTOK * vstep;
#pragma unroll
        for (int i = 0; i < KPT; i++) {
          const int tt = ct0 + i * (NT / CH);
          cp_async16(ks + kpos(tt, cc) * 16, kr + i * (NT / CH) * kstep, ksz);
          cp_async16(vs + vpos(tt, cc) * 16, vr + i * (NT / CH) * vstep, vsz);
        }
      } else {
        const int key0 = (int)(t * NTOK) + ct0, jb = (int)j0, pm = P - 1;
#pragma unroll
        for (int i = 0; i < KPT; i++) {
          const int tt = ct0 + i * (NT / CH), key = key0 + i * (NT / CH), r = key & pm;
          const int64_t page = pgs[(key >> pshift) - jb];
          cp_async16(ks + kpos(tt, cc) * 16, kthr + page * kpage_b + r * kstep, ksz);
          cp_async16(vs + vpos(tt, cc) * 16, vthr + page * vpage_b + r * vstep, vsz);
        }
      }
    } else if (t < t_end) {  // edge tiles and the general layouts: rare, kept out of line of the hot loop
      unsigned char *vs = ks + tile_bytes;
      const T *kp = reinterpret_cast<const T *>(pp->k) + cc * EPC, *vp = reinterpret_cast<const T *>(pp->v) + cc * EPC;
#pragma unroll 1
      for (int i = 0; i < KPT; i++) {
        const int tt = ct0 + i * (NT / CH);
        const int64_t key = t * NTOK + tt;
        const bool in = key >= lo && key < hi;
        int64_t ko, vo;
        if (paged) {
          const int64_t j = key / P, r = key - j * P;
          const int64_t page = in ? (pgs ? pgs[j - j0] : __ldg(tbl + j)) : 0;
          ko = page * kpage + kbase + r * kstride;
          vo = page * vpage + vbase + r * vstride;
        } else {
          ko = kbase + key * kstride;
          vo = vbase + key * vstride;
        }
        cp_async16(ks + kpos(tt, cc) * 16, in && kch ? kp + ko : kp, in && kch ? 16 : 0);
        cp_async16(vs + vpos(tt, cc) * 16, in && vch ? vp + vo : vp, in && vch ? 16 : 0);
      }
    }
    if (tid == 0) { ring_t[s] = t < t_end ? t : -1; ring_c[s] = cls | (tma ? kTmaTile : 0); }
    t_pend = t + 1;
    prefetch(t_pend);  // in flight while this thread computes the current tile
    cp_async_commit();
  }
};

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

// ---- producer configuration -------------------------------------------------------------------------
template <typename T, int D_PAD, int R_MAX, int NT>
struct Cfg {
  static constexpr int ES = (int)sizeof(T);
  static constexpr int EPC = 16 / ES;                // elements per 16-byte chunk
  static constexpr int CH = D_PAD / EPC;             // chunks per padded row
  static constexpr int ROW_BYTES = D_PAD * ES;
  static constexpr int NTOK = ROW_BYTES <= 256 ? 64 : (ROW_BYTES <= 512 ? 32 : 16);  // keys per tile
  // QK: TPT threads share one key; each keeps CPT chunks of q for RB rows in registers (<= 64 floats).
  static constexpr int RB = R_MAX < 8 ? R_MAX : 8;
  static constexpr int TPT0 = RB * D_PAD / 64 > NT / NTOK ? RB * D_PAD / 64 : NT / NTOK;
  static constexpr int TPT = TPT0 < 1 ? 1 : (TPT0 > 32 ? 32 : (TPT0 > CH ? CH : TPT0));
  static constexpr int CPT = CH / TPT;
  static constexpr int TP = NT / TPT;                 // keys per QK pass
  // PV: a thread owns one chunk of RPT rows for the keys t = ts (mod TS).
  static constexpr int RPT = R_MAX < 8 ? R_MAX : 8;
  static constexpr int RG = R_MAX / RPT;
  static constexpr int TS = NT / (CH * RG);
  static constexpr int NW = NT / 32;
  // shared memory, in bytes
  static constexpr int TILE_BYTES = NTOK * ROW_BYTES;
  static constexpr int STAGE_BYTES = 2 * TILE_BYTES;
  static constexpr int Q_BYTES = R_MAX * D_PAD * ES;
  static constexpr int P_BYTES = NTOK * R_MAX * 4;
  static constexpr int RED_BYTES = R_MAX * D_PAD * 4;  // PV reduction buffer, aliases the stages
  static constexpr int SMEM = kStages * STAGE_BYTES + Q_BYTES + P_BYTES + 3 * R_MAX * 4;
  static_assert(CH % 8 == 0, "swizzle needs multiples of 8 chunks");
  static_assert(CH % TPT == 0 && TS >= 1 && NTOK % TS == 0 && TP >= 1, "thread mapping");
  static_assert(TS == 1 || RED_BYTES <= kStages * STAGE_BYTES, "reduction buffer must fit in the stages");
};

// K tiles are read by TPT lanes per key: an XOR of the low three chunk bits keeps each quarter warp on
// distinct banks. V tiles are read one row per CH consecutive lanes and need none.
template <int TPT> __device__ __forceinline__ int kswz(int t, int c) { return c ^ ((t * TPT) & 7); }

template <typename T, int D_PAD, int R_MAX, int NT>
__global__ void __launch_bounds__(NT) decode_split_kv_producer(const dkb_decode_params p, const KvMaps) {
  using K = Cfg<T, D_PAD, R_MAX, NT>;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char *stages = smem;
  T *q_s = reinterpret_cast<T *>(smem + kStages * K::STAGE_BYTES);                // [R_MAX][D_PAD]
  float *p_s = reinterpret_cast<float *>(smem + kStages * K::STAGE_BYTES + K::Q_BYTES);  // [NTOK][R_MAX]
  float *m_s = p_s + K::NTOK * R_MAX, *l_s = m_s + R_MAX, *a_s = l_s + R_MAX;    // per row: m (log2), l, alpha

  const int tid = threadIdx.x, item = blockIdx.y + blockIdx.z * gridDim.y, h = blockIdx.x;  // item-major grid
  if (item >= p.n_items) return;  // the last z slice of a plan with more than 65535 items
  const int b = p.item_b[item];
  const int64_t lo = p.item_lo[item], hi = p.item_hi[item];
  const int g = p.H_q / p.H_kv, C = p.C, R = g * C;
  const int64_t N = p.item_n[item];
  const int64_t q_first = N - C;               // absolute position of query row i is q_first + i
  const float scale2 = p.scale * kLog2e;

  // Rows r = j * C + i: query head h * g + j, query i. Stage q (zero-padded lanes) in shared memory.
  for (int idx = tid; idx < R_MAX * D_PAD; idx += NT) {
    int r = idx / D_PAD, x = idx % D_PAD;
    T v = from_f<T>(0.f);
    if (r < R && x < p.dk) {
      int j = r / C, i = r % C;
      v = reinterpret_cast<const T *>(p.q)[(((int64_t)b * C + i) * p.H_q + h * g + j) * p.dk + x];
    }
    q_s[idx] = v;
  }
  for (int r = tid; r < R_MAX; r += NT) { m_s[r] = -INFINITY; l_s[r] = 0.f; a_s[r] = 1.f; }

  // The tile pipeline (addresses, prefetch, SKIP tiles, ring): shared with the tensor-core producer.
  __shared__ int64_t ring_t[kStages];
  __shared__ int ring_c[kStages];
  __shared__ int32_t pg_smem[kPageSmem];
  TilePipe<T, K::NTOK, K::CH, NT> pipe;
  pipe.init(p, tid, b, h, lo, hi, N, p.item_base[item], q_first, ring_t, ring_c, pg_smem);
  __syncthreads();
  auto kpos = [](int tt, int c) { return tt * K::CH + kswz<K::TPT>(tt, c); };
  auto vpos = [](int tt, int c) { return tt * K::CH + c; };
#pragma unroll
  for (int s = 0; s < kStages - 1; s++) pipe.issue_next(s, stages + s * K::STAGE_BYTES, K::TILE_BYTES, kpos, vpos);

  // PV accumulators: chunk pc of rows [prg*RPT, prg*RPT+RPT), keys t = pts (mod TS).
  const int pc = tid % K::CH, prg = (tid / K::CH) % K::RG, pts = tid / (K::CH * K::RG);
  float acc[K::RPT][K::EPC];
#pragma unroll
  for (int r = 0; r < K::RPT; r++)
#pragma unroll
    for (int e = 0; e < K::EPC; e++) acc[r][e] = 0.f;

  const int qslot = tid / K::TPT, qpart = tid % K::TPT;
  int stage = 0;
  for (;;) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // `stage` holds its tile; every thread is done with the stage refilled below
    const int64_t t = ring_t[stage];
    if (t < 0) break;
    const bool partial = ring_c[stage] == T_PARTIAL;
    {
      const int sf = (stage + kStages - 1) % kStages;
      pipe.issue_next(sf, stages + sf * K::STAGE_BYTES, K::TILE_BYTES, kpos, vpos);
    }
    const unsigned char *ks = stages + stage * K::STAGE_BYTES, *vs = ks + K::TILE_BYTES;
    const int64_t k0 = t * K::NTOK;

    // ---- scores: p_s[key][row] = log2-domain q.k, -inf where not visible ----
    for (int rb = 0; rb < R_MAX; rb += K::RB) {
      float qr[K::RB][K::CPT][K::EPC];
#pragma unroll
      for (int r = 0; r < K::RB; r++)
#pragma unroll
        for (int j = 0; j < K::CPT; j++)
#pragma unroll
          for (int e = 0; e < K::EPC; e++)
            qr[r][j][e] = to_f<T>(q_s[(rb + r) * D_PAD + (qpart + j * K::TPT) * K::EPC + e]) * scale2;
      for (int tt = qslot; tt < K::NTOK; tt += K::TP) {
        float dot[K::RB];
#pragma unroll
        for (int r = 0; r < K::RB; r++) dot[r] = 0.f;
#pragma unroll
        for (int j = 0; j < K::CPT; j++) {
          float kf[K::EPC];
          Chunk<T>::load(ks + (tt * K::CH + kswz<K::TPT>(tt, qpart + j * K::TPT)) * 16, kf);
#pragma unroll
          for (int r = 0; r < K::RB; r++)
#pragma unroll
            for (int e = 0; e < K::EPC; e++) dot[r] = fmaf(qr[r][j][e], kf[e], dot[r]);
        }
#pragma unroll
        for (int off = K::TPT / 2; off > 0; off /= 2)
#pragma unroll
          for (int r = 0; r < K::RB; r++) dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], off, K::TPT);
        if (qpart == 0) {
          int64_t key = k0 + tt;
          bool in = key >= lo && key < hi;
#pragma unroll
          for (int r = 0; r < K::RB; r++) {
            int row = rb + r;
            bool ok = in && row < R;
            if (ok && partial) ok = visible(p, b, q_first + row % C, key);
            p_s[tt * R_MAX + row] = ok ? dot[r] : -INFINITY;
          }
        }
      }
    }
    __syncthreads();

    // ---- online softmax per row (base 2): m, l, alpha; p_s becomes probabilities ----
    for (int row = tid / 32; row < R_MAX; row += K::NW) {
      int lane = tid % 32;
      float mx = -INFINITY;
      for (int tt = lane; tt < K::NTOK; tt += 32) mx = fmaxf(mx, p_s[tt * R_MAX + row]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      float m_old = m_s[row], m_new = fmaxf(m_old, mx);
      // No visible key yet: keep the empty state; never form -inf - -inf (0x02C).
      float alpha = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
      float sum = 0.f;
      for (int tt = lane; tt < K::NTOK; tt += 32) {
        float s = p_s[tt * R_MAX + row];
        float pr = m_new == -INFINITY ? 0.f : exp2f(s - m_new);
        p_s[tt * R_MAX + row] = pr;
        sum += pr;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();  // every lane has read m_s[row] before lane 0 replaces it
      if (lane == 0) { l_s[row] = l_s[row] * alpha + sum; m_s[row] = m_new; a_s[row] = alpha; }
    }
    __syncthreads();

    // ---- u = alpha * u + sum_t p_t v_t ----
#pragma unroll
    for (int r = 0; r < K::RPT; r++) {
      float a = a_s[prg * K::RPT + r];
#pragma unroll
      for (int e = 0; e < K::EPC; e++) acc[r][e] *= a;
    }
    for (int tt = pts; tt < K::NTOK; tt += K::TS) {
      float vf[K::EPC];
      Chunk<T>::load(vs + (tt * K::CH + pc) * 16, vf);
      const float *pr = p_s + tt * R_MAX + prg * K::RPT;
#pragma unroll
      for (int r = 0; r < K::RPT; r++) {
        float w = pr[r];
#pragma unroll
        for (int e = 0; e < K::EPC; e++) acc[r][e] = fmaf(w, vf[e], acc[r][e]);
      }
    }
    stage = (stage + 1) % kStages;
  }
  cp_async_wait<0>();
  __syncthreads();  // stages are free: reuse them to sum the TS key subsets in a fixed order

  // Dependent combine launch may start its prologue now (it waits for our writes before reading).
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif

  // Sum the TS key subsets into the pts == 0 owners, in a fixed order (deterministic).
  if constexpr (K::TS > 1) {
    float *red = reinterpret_cast<float *>(stages);  // [R_MAX][D_PAD]
    for (int round = 1; round < K::TS; round++) {
      if (pts == round) {
#pragma unroll
        for (int r = 0; r < K::RPT; r++)
#pragma unroll
          for (int e = 0; e < K::EPC; e++) {
            float *dst = red + (prg * K::RPT + r) * D_PAD + pc * K::EPC + e;
            *dst = round == 1 ? acc[r][e] : *dst + acc[r][e];
          }
      }
      __syncthreads();
    }
    if (pts == 0)
#pragma unroll
      for (int r = 0; r < K::RPT; r++)
#pragma unroll
        for (int e = 0; e < K::EPC; e++) acc[r][e] += red[(prg * K::RPT + r) * D_PAD + pc * K::EPC + e];
  }
  if (pts != 0) return;

  // ---- epilogue: this slot's state, or the final output when the plan is direct ----
  const int slot = p.item_slot[item];
#pragma unroll
  for (int r = 0; r < K::RPT; r++) {
    const int row = prg * K::RPT + r;
    if (row >= R) break;
    const int j = row / C, i = row % C, hq = h * g + j;
    const float m2 = m_s[row], l = l_s[row];
    const bool valid = m2 != -INFINITY;  // the empty identity: O = 0, LSE = -inf, valid = 0
    const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq, srow = ((int64_t)slot * p.H_q + hq) * C + i;
#pragma unroll
    for (int e = 0; e < K::EPC; e++) {
      const int x = pc * K::EPC + e;
      if (x >= p.dv) break;
      store_elem<T>(p, orow, srow, x, acc[r][e], l, valid);
    }
    if (pc == 0) store_scalars(p, orow, srow, m2, l, valid);
  }
}

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
// One launch instead of two, for at most kFusedSlots slots per request: one L2 round trip of payloads. Measured
// on the H200 against the PDL-launched combine kernel: equal within noise at 2-29 slots per request, 1.5-2 us
// faster on the split-2 sliding-window call; a first version that re-read the slot scalars per pass and fenced
// every thread was 2 us slower at 7-29 slots. Measured again with the TMA producer (same machine, two rounds):
// at 32 slots the kernel wins (B1 T32768 40.0 -> 38.5 us, window 4096 14.9 -> 13.2): one SM reading 64 KB of
// slots took 3.5 us in the last CTA (two round trips of 1.1-1.3 us each, %globaltimer), after a 1 us arrival
// atomic; at 8 and 6 slots fused stays ahead or even (B4 T4096 graph 23.9 vs 23.5, ragged 307 vs 311). Every
// producer CTA publishes its slot (stores, barrier, one release) and then counts itself in; the CTA whose count
// completes the request's slots reads them back from L2 (ld.cg: L1 is not coherent across SMs), writes O and
// LSE and resets the counter for the next call (graph replay needs no memset). One warp per query row, four
// dims per lane (d_v <= 128), slots summed in slot order whichever CTA is last: deterministic. Tried and not
// kept: staging every payload (up to 64 KB) into the free pipeline stages with cp.async in one round trip and
// summing from shared memory (H200, two rounds: B1 T32768 40.9 -> 44.1 us, window 4096 14.3 -> 18.1 us, ragged
// and B16 unchanged).
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
    // last CTA (H200 timeline: scalars then payload took 0.5-1 us and 0.8-4.4 us there).
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
// costs more than the global merge it saves beyond 2 (H200, same machine, two rounds against the global
// fused merge: 2 CTAs B16 T8192 -0.5 %, paged -0.4 %, window 1024 -3.1 %, 4 documents -2.1 %; 3 CTAs
// B16 T8192 +38 %, window 1024 +45 %; 4 CTAs B16 -0.6 %, B4 T4096 graph -1.6 %, window 1024 +3 %; 8 CTAs
// B4 T4096 +1.2 %, paged graph +3.7 %). Nor do clusters of 2 or 4 K/V heads x 2 slots, which would put
// the heads that share a paged page on one GPC: B16 T8192 contiguous 124.2 -> 137.4-138.2 us, paged
// 126.8 -> 135.0-135.7, window 1024 23.9 -> 25.1 (H200, three rounds; 35 of 35 fixtures correct).
// Nor clusters as a launch shape alone: at 2 CTAs per SM the H200 holds 264 CTAs in clusters of 1 or 2 but
// 248, 240 and 224 in clusters of 4, 8 and 16 (cudaOccupancyMaxActiveClusters of a kernel held to 2 CTAs
// per SM), so a plan of 256 CTAs takes two waves. The unfused producer launched in clusters of 4-16 items,
// no merge: B1 T131072 25.6 -> 33.0-33.9 us, T32768 38.7 -> 51.7-54.0, B4 T4096 graph 24.0 -> 33.1-34.0,
// window 4096 12.8 -> 18.4-18.6, ragged in clusters of 4 307 -> 353; in clusters of 2 +0.0-0.4 us, ragged
// +0.5-0.6 % (H200, two rounds).
constexpr int kClusterMax = 2;

// ---- cluster merge: a request's S CTAs of one K/V head merge their states in distributed shared memory --
// A plan with S <= kClusterMax slots in every request launches each (request, K/V head) group as one
// thread-block cluster (ranks = the request's slots in order). Each CTA leaves its state in shared memory in the
// workspace ABI's fields (cl_u: u or O [16][D_PAD], then m or LSE, l, validity [16]); after one cluster
// barrier the S CTAs split the group's rows x 4-dim units and read the S states through DSMEM, then wait
// at a second barrier so no CTA's shared memory is released while another reads it. No global
// workspace, no arrival counter, no L2 round trip on the call's tail (the fused merge's atomic, scalar
// and payload round trips were 2.3-5 us of the last CTA, H200 timeline). The weights are those of
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

// ---- tensor-core producer: up to 16 query rows per K/V head on mma.sync m16n8k16 ---------------
// The query rows of one K/V head group (g * C <= 16, zero-padded to 16) are the M side of the MMA; each
// of the 4 warps owns 16 keys of every 64-key tile and keeps its own online-softmax state (m, l in base
// 2, O in fp32 fragments), so a tile costs one barrier; the warps' states are merged exactly at the end
// (0x02B). P is rounded to the storage dtype for the P.V product, as FlashAttention-2 does; scores,
// max, sum and O accumulate in fp32. K/V rows are 16-byte-chunk swizzled (chunk ^ row % 8) so ldmatrix
// reads are free of bank conflicts.
// Occupancy beat pipeline depth here when the loads were cp.async (measured on the H200, B16 T8192: 0.73 ->
// 0.83 of the roofline): two stages of 32 KB, Q fragments re-read from shared memory each tile and at most 168
// registers gave 3 CTAs (12 warps) per SM, where three stages and Q in registers gave 2. With TMA tiles the
// kernels are now built for 2 CTAs per SM (__launch_bounds__(128, 2), at the kernels below), still two
// stages. Measured again with the final planner (at most 2 CTAs per SM filled): three stages at 2 CTAs per
// SM lose on every shape (B16 T8192 0.73 vs 0.86, B4 T4096 0.38
// vs 0.44, ragged 0.67 vs 0.76). Measured a third time with TMA tiles (three stages, 2 CTAs per SM, built with
// the tensormap prefetch that alone changed nothing; H200, same machine, two rounds): no faster even where at
// most 2 CTAs per SM run (B16 T8192 124.1 -> 124.5 us, paged 126.7 -> 127.2, B8 T16384 473.5 -> 476.2, B1
// T131072 25.8 -> 26.3; ragged 308.8 -> 307.8): the loop already streams at the roofline (B16: 537 MB in 118 us
// after the prologue, %globaltimer), so more bytes in flight per CTA buy nothing.
template <int D_PAD>
struct MmaCfg {
  static constexpr int NT = 128, NW = 4, NTOK = 64, ROWS = 16, CH = D_PAD / 8, ST = 2;
  static constexpr int TILE_BYTES = NTOK * D_PAD * 2, STAGE_BYTES = 2 * TILE_BYTES;
  static constexpr int Q_BYTES = ROWS * D_PAD * 2;
  // The warps' O rows for the merge, padded so a warp's float2 stores (8 rows x 4 lanes) hit distinct
  // banks: unpadded, the 8-way conflicts made the merge 0.7 us of a 2.9 us epilogue (H200 timeline).
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

template <typename T, int D_PAD, bool FUSED, bool EARLY>
__device__ __forceinline__ void producer_mma(const dkb_decode_params &p, const KvMaps &maps) {
  using K = MmaCfg<D_PAD>;
  constexpr int KS = D_PAD / 16;  // 16-wide k steps of q.k and 16-wide n steps of p.V
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // The 128-byte swizzle of the TMA boxes follows shared-memory address bits: stages start 1 KiB aligned
  // (MmaCfg::SMEM has the slack).
  unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  unsigned char *stages = smem, *q_s = smem + K::ST * K::STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, item = blockIdx.y + blockIdx.z * gridDim.y, h = blockIdx.x;
  if (item >= p.n_items) return;  // the last z slice of a plan with more than 65535 items
  // Tried and not kept: for plans whose items follow item = b * S + r (equal lengths and splits), S, the
  // chunk and the base stride as parameters and a (H_kv, S, B) grid, the item's fields taken from the block
  // indices instead of these loads: B1 T131072 25.86-25.98 -> 26.18-26.27 us, and B16 paged, a cluster plan
  // that never took that path, 128.7-128.9 -> 131.9-132.6 (H200, same machine, three rounds).
  const int b = p.item_b[item];
  const int64_t lo = p.item_lo[item], hi = p.item_hi[item];
  const int g = p.H_q / p.H_kv, C = p.C, R = g * C;
  const int64_t N = p.item_n[item], q_first = N - C, base = p.item_base[item];
  // EARLY: the item's slot index is loaded here, with its other fields, not in the epilogue, where the
  // last CTA waited on it (0.13-0.80 us, median 0.19, in the timeline below). H200, same machine, three
  // rounds, 36 of 36 fixtures correct: B1 T131072 24.42-24.51 -> 24.26-24.35 us, T32768 37.89-37.98 ->
  // 37.73-37.86, B16 contiguous 123.78-123.84 -> 123.52-123.58, B4 graph within noise (23.55-23.81 ->
  // 23.58-23.78). In the one kernel of all layouts it had cost ragged (paged) 0.1 % (the trial below).
  const int slot_early = EARLY ? p.item_slot[item] : 0;
  const float scale2 = p.scale * kLog2e;
  // EARLY (contiguous and ragged NHD caches, producer_for): the item's first whole tile goes out on TMA
  // as soon as the item's fields arrive, before Q's loads, the pipe's set-up and the first barrier (about
  // 860 instructions of prologue to the first UTMALDG before); pipe.issued() records it. Not SKIP, not
  // FlashMask (its summary would need a load first). Measured on the H200 (s26, same machine, alternating,
  // two rounds, 35 of 35 fixtures correct): B16 contiguous 124.03-124.06 -> 123.49-123.52 us, T32768
  // 38.40-38.53 -> 37.98, T131072 24.83-25.25 -> 24.48-24.61, B4 graph 24.10-24.29 -> 23.90-23.97. In the
  // same kernel as the paged calls it cost them 0.4-0.8 us though they never took it (B16 paged 128.6-128.7
  // -> 129.1-129.5, ragged 310.7 -> 311.9-312.8), and so did issuing the paged first tile from four page
  // ids read by thread 0 (B16 paged 129.25): hence its own instantiation, with which paged moved by
  // +0.2 us (B16 paged 125.98-126.02 -> 126.21-126.24, ragged and window 4096 within noise).
  // Tried on top of it and not kept: the CTAs among the first three quarters to issue their last tile
  // prefetching into L2 (cp.async.bulk.prefetch.tensor) the last 2 (or 4) tiles of 32 others that their
  // owners had not yet requested (progress in a global array, rank by atomicInc), so DRAM would not idle
  // while the last splits finish: every contiguous shape slower (H200, same machine, three rounds, 35 of
  // 35 fixtures correct): B16 126.18-126.21 -> 136.77-136.99 us (4 tiles: 144.54-144.61), T32768
  // 38.59-38.66 -> 40.42-40.58, T131072 24.80-24.83 -> 25.38-25.44, B4 graph 23.97-24.29 -> 24.67-24.74.
  __shared__ uint64_t bars[K::ST];
  int64_t t_early = -1;
  int c_early = T_SKIP;
  if constexpr (EARLY) {
    if (maps.on && p.mask_kind != M_FLASHMASK && hi < (int64_t(1) << 30)) {
      const int64_t t0 = lo / K::NTOK, k0 = t0 * K::NTOK;
      if (k0 >= lo && k0 + K::NTOK <= hi) {
        c_early = tile_class(p, b, q_first, N, k0, k0 + K::NTOK < N ? k0 + K::NTOK : N, t0);
        if (c_early != T_SKIP) t_early = t0;
      }
    }
    if (t_early >= 0 && tid == 0) {
      mbar_init_stages(bars, K::ST);
      tma_tile<K::NTOK, K::CH>(&maps, stages, K::TILE_BYTES, h, [&](int j) { return (int)(base + t_early * K::NTOK + j); }, bars);
    }
  }
  // Q's loads go out before the prologue and the first TMA tiles, not after them (ncu, B1 T131072: 6 % of
  // the stall samples were Q's shared-memory store waiting on its load). H200, same machine, three rounds:
  // B16 split 1 138.0-138.1 -> 134.9-135.5 us, window 4096 12.51-12.61 -> 12.19-12.22, ragged 311.4-311.5
  // -> 309.4-309.6, B16 paged 128.7-128.8 -> 128.4-128.6; B1 T131072 25.44-25.47 -> 25.31-25.44 and B16
  // contiguous within noise; T32768 39.23-39.30 -> 39.26-39.42, B4 graph 24.19-24.26 -> 24.38-24.51 and
  // the forced 512-CTA split 29.50-29.60 -> 29.95-30.05 slower; 35 of 35 fixtures correct.
  // Rows r = j * C + i (query head h * g + j, query i), zero beyond R and beyond dk.
  constexpr int QN = K::ROWS * K::CH / K::NT;
  static_assert(K::ROWS * K::CH % K::NT == 0, "whole Q chunks per thread");
  uint4 qv[QN];
#pragma unroll
  for (int k = 0; k < QN; k++) {
    const int idx = tid + k * K::NT, r = idx / K::CH, c = idx % K::CH;
    qv[k] = make_uint4(0, 0, 0, 0);
    if (r < R && c * 8 < p.dk)
      qv[k] = *reinterpret_cast<const uint4 *>(reinterpret_cast<const T *>(p.q) +
                                               (((int64_t)b * C + r % C) * p.H_q + h * g + r / C) * p.dk + c * 8);
  }

  __shared__ int64_t ring_t[K::ST];
  __shared__ int ring_c[K::ST];
  __shared__ int32_t pg_smem[kPageSmem];
  __shared__ int row_flag;  // fused: this CTA is its group's last
  TilePipe<T, K::NTOK, K::CH, K::NT, true> pipe;
  pipe.init(p, tid, b, h, lo, hi, N, base, q_first, ring_t, ring_c, pg_smem);
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
  const int r0 = lane >> 2, r1 = r0 + 8, kw = warp * 16;
  const bool rv0 = r0 < R, rv1 = r1 < R;
  int stage = 0;
  unsigned parity = 0;  // bit s: the phase of stage s's mbarrier the next TMA tile there completes
  for (;;) {
    cp_async_wait<K::ST - 2>();
    __syncthreads();
    const int64_t t = ring_t[stage];
    if (t < 0) break;
    const int rc = ring_c[stage];
    const bool partial = (rc & ~kTmaTile) == T_PARTIAL;
    {
      const int sf = (stage + K::ST - 1) % K::ST;
      pipe.issue_next(sf, stages + sf * K::STAGE_BYTES, K::TILE_BYTES, pos, pos);
    }
    // A TMA tile is waited for only now: the next one is already in flight (two tiles, where cp.async
    // tiles have one: its wait_group above also waits for the copies just issued).
    if (rc & kTmaTile) {
      mbar_wait(bars + stage, (parity >> stage) & 1);
      parity ^= 1u << stage;
    }
    const unsigned char *ks = stages + stage * K::STAGE_BYTES, *vs = ks + K::TILE_BYTES;
    // ---- s = q.k for this warp's 16 keys: two 16x8 fragments ----
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int k = 0; k < KS; k++) {
      uint32_t bf[4], qk[4];
      const int mi = lane >> 3, key = kw + (mi >> 1) * 8 + (lane & 7);
      ldsm_x4(bf, ks + pos(key, k * 2 + (mi & 1)) * 16);
      ldsm_x4(qk, q_s + qpos((mi & 1) * 8 + (lane & 7), k * 2 + (mi >> 1)) * 16);  // Q re-read: 32 registers fewer
      mma16816<T>(sc[0], qk, bf[0], bf[1]);
      mma16816<T>(sc[1], qk, bf[2], bf[3]);
    }
    // ---- mask (range, padded rows, mask program) and scale into base 2 ----
    if (partial) {
      const int64_t kb = t * K::NTOK + kw + (lane & 3) * 2;
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
  __syncthreads();  // stages are free: they hold the warps' states for the merge
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
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
  float *red_f = red_l + K::NW * K::ROWS, *row_m = red_f + K::NW * K::ROWS, *row_l = row_m + K::ROWS;
  if (tid < K::ROWS) {
    float M = -INFINITY, L = 0.f;
#pragma unroll
    for (int w = 0; w < K::NW; w++) M = fmaxf(M, red_m[w * K::ROWS + tid]);
#pragma unroll
    for (int w = 0; w < K::NW; w++) {
      const float mw = red_m[w * K::ROWS + tid];
      /* an empty warp (or row) weighs 0; never form -inf - -inf (0x02C) */
      const float f = mw == -INFINITY ? 0.f : exp2f(mw - M);
      red_f[w * K::ROWS + tid] = f;
      L += red_l[w * K::ROWS + tid] * f;
    }
    row_m[tid] = M;
    row_l[tid] = L;
  }
  __syncthreads();
  // D_PAD / 4 lanes per row, four dims each, every row of a pass at once: a row per pass of the CTA made
  // the stores 1.7 us at 4 rows and 3.5 us at 8 (H200 timeline), now 0.6 and 1.1. A pass costs 0.35-0.5
  // us; the slot index load 0.13-0.80 us (median 0.19, B1 T131072). ncu's stall samples put most of this
  // epilogue on instruction fetch (stall_no_inst: each unrolled pass was fresh code to the SM), so the pass
  // loop is not unrolled: the second pass runs from the i-cache (H200, two instances, three rounds each:
  // B1 T131072 25.8-26.1 -> 25.6-25.8 us, T32768 and window4096 0.1-0.2 us faster, the rest within noise).
  // And each store kind has its own copy of the passes (SK_*), so a pass no longer jumps over the other
  // kinds' stores (H200, same machine, three rounds: B1 T131072 25.50-25.57 -> 25.28-25.38 us, window 4096
  // 12.70-12.86 -> 12.51-12.61, B4 graph 23.97-24.13 -> 23.90-23.97, ragged 306.7-307.0 -> 306.5-306.6; B16
  // paged 126.4-126.7 -> 126.7-126.9, T32768 and B16 contiguous within noise; 35 of 35 fixtures correct;
  // measured before kTwoPerSmSmem: with it, window 4096 12.67-12.74 -> 12.51-12.54 and B16 split 1
  // 139.5-140.5 -> 138.9, the rest within noise, two rounds).
  // Tried and not kept (H200, same machine, three rounds each):
  // - the slot index loaded before the first barrier of the epilogue: as fast on T131072, ragged 0.1 %
  //   slower; and the row's scalars stored by the row-merge threads, not in the passes: 0.1-0.4 % slower;
  // - every pass's sums before any store, so passes overlap: no faster (B1 T131072 25.6 vs 25.1-25.7 us,
  //   B16 0.1-0.2 % and ragged 0.3 % slower);
  // - eight dims per lane, so 8 rows (g = 8) take one pass: that epilogue 1.50 -> 1.25 us (median CTA),
  //   T131072 paged 26.3-26.6 -> 26.1-26.3 us, contiguous within noise, but B16 0.3 % and B4 graph
  //   0.3-0.9 % slower;
  // - the slot index read in the prologue into shared memory, alone or with the epilogue's parameters
  //   touched there too: 0.3-1.6 % slower on all five shapes timed; O = u / l as __fdividef: within noise
  //   on all ten cases timed; with the slot index also loaded with the item's fields at entry (a register
  //   through the loop): B16 and T32768 0.1-0.2 us faster, ragged 0.1 % and B4 graph 0.1 us slower (two
  //   rounds);
  // - this epilogue's instruction misses taken ahead of time: the merge and passes out of line
  //   (__noinline__, one copy of the code) and run once dry (no shared-memory writes) while the first tiles
  //   were in flight, then for real: every shape 1.1-2.0 us slower (B1 T131072 25.34-25.38 -> 27.26-27.36
  //   us, B16 126.8 -> 128.4, window 4096 12.2-12.4 -> 14.0-14.1); the dry run by a fifth warp that never
  //   joins the 4 compute warps' barriers (named barrier 1 of 128 threads; 168 registers at 160 threads)
  //   so no compute warp waits for it: still slower (T131072 25.0-25.2 -> 25.7-25.8, B16 paged 125.6-125.7
  //   -> 131.8-132.1, B16 split 1 134.5-135.1 -> 149.0-149.7; 35 of 35 fixtures correct for both).
  // Any change to this producer moves the code of the whole kernel: these and the uniform-plan trial at the
  // start of this producer were slower on shapes whose path they never changed.
  // Where B1 T131072 (256 CTAs of 8 tiles) spends its 25 us (H200, per-CTA %globaltimer from the first
  // entry): prologue 0.8-1.0 us; first tile at 2.9-5.0; then 1.57-1.88 us per tile (the CTAs' shares of
  // the DRAM differ by up to 20 %), loops ending at 14.2-17.4; epilogue 1.4-2.5; the combine's wait returns
  // at 19.8, 0.7 us after the last producer exits, and its CTAs exit at 21.8-22.1. The remaining 3.3 us
  // are the two launches and the timing (an empty kernel measures 2.9).
  const int slot = EARLY ? slot_early : p.item_slot[item];
  constexpr int LPR = D_PAD / 4, RPP = K::NT / LPR;
  const int x = (tid % LPR) * 4;
  // The passes, once per store kind (SK): each call runs only its own kind's stores, straight through.
  auto passes = [&](auto sk) {
    constexpr int SK = decltype(sk)::value;
#pragma unroll 1
    for (int rp = 0; rp < K::ROWS; rp += RPP) {
      const int row = rp + tid / LPR;
      if (row >= R) break;
      const int j = row / C, i = row % C, hq = h * g + j;
      const float M = row_m[row], L = row_l[row];
      const bool valid = M != -INFINITY;  // the empty identity: O = 0, LSE = -inf, valid = 0
      const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq, srow = ((int64_t)slot * p.H_q + hq) * C + i;
      float u[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int w = 0; w < K::NW; w++) {
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

// __launch_bounds__(128, 2): up to 255 registers (159-186 used), and 2 CTAs per SM, which is all the
// plan fills (harness/plan.c), held by the launch, not by the register count: the d = 128 producers ask
// for kTwoPerSmSmem of shared memory (make_mma). At 168 registers (the store-kind passes) 3 fitted, and
// forced splits of 512 CTAs ran as 1.3 waves: T32768 split 64 40.5 -> 43.2 us, T131072 split 512 28.9 ->
// 30.4 (H200, same machine, four rounds); with the padding 40.9-41.6 -> 41.5, 29.1-29.7 -> 29.2-29.3 (two
// rounds, another machine). Against (128, 3) (at most 168 registers, 3 CTAs per SM; H200, four
// instances, three or four rounds each, 35 of 35 fixtures correct): ragged 315.0 -> 307.4 us, 308.4 -> 306.8,
// 312.7 -> 311.5 and 308.9 -> 307.3, its noise 0.63-0.95 -> 0.24-0.29 % rel stdev; B4 graph 0.1-1.1 % and B16
// paged 0-0.4 % faster; B1 T131072 both ways (24.86-25.38 -> 25.44-25.70, 25.54-25.57 -> 25.34-25.38,
// 25.28-25.70 -> 25.38-25.60, 25.09-25.54 -> 25.44-25.60);
// forced splits of 512 CTAs run as two even waves instead of 1.3 (bench, B8 split 2: 0.831 -> 0.969 of the
// roofline). The (128, 3) code held to 2 CTAs per SM by padding its shared memory to 80 KiB was as steady on
// ragged but no faster (308.2-308.3).
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, 2) decode_split_kv_producer_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, false, EARLY>(p, maps);
}
// The same producer whose last CTA per (request, K/V head) also merges that group's slots: one launch.
template <typename T, int D_PAD, bool EARLY>
__global__ void __launch_bounds__(128, 2) decode_split_kv_fused_mma(const dkb_decode_params p, const __grid_constant__ KvMaps maps) {
  producer_mma<T, D_PAD, true, EARLY>(p, maps);
}

// ---- combine: exact merge of one request's slots for one (query row, query head) -------------------
// The slots of a long request are many (hundreds at B = 1): they are read in parallel, warp w taking the
// slots w, w + NW, ... of each chunk of NT, four dims per lane. Every load after the producer's completion
// is issued at once where it can be: the scalars of the first NT slots and each warp's first PB payloads
// together, before the frame and the weights are known (a slot with weight 0, empty or negligible, is
// then skipped by a select, so an empty slot's payload is read but never added). The old chain (validity,
// then m and l, then weights and a compacted list, then payloads) was four dependent L2 round trips,
// 7.3 us at B1 T131072 (8 rows x 256 slots, H200, ncu with warm caches); the call went 29.2 -> 28.5 us
// with this one (and the fused merge's one round trip fewer, same machine). With many slots one CTA per
// row still read the row's whole payload (256 slots x 512 bytes at B1 T131072) through one SM: 7.2 us in
// ncu (cold caches) against 24 us for the producer; CTAs of 32 dims spread it over d_v / 32 SMs, each
// lane group of a warp taking every fourth slot. The order of every sum is fixed (slot order within a
// lane, then a fixed shuffle tree, warps in order): the result is deterministic. Where the time goes
// (H200, per-CTA %globaltimer, B1 T131072, 8 rows x 256 slots in 32 CTAs): the wait returns 0.67 us after
// the last producer CTA exits; then loads and frame 0.96 us, weights and sums 0.54, the cross-warp
// reduction 0.26, stores 0.29 (a second pass over the same slots: 0.74, 0.58, 0.16, 0.22). Tried and not
// kept: each lane merging its own slots in a frame of its own, with no CTA-wide maximum first (scalars
// and payloads of a lane's slots in one batch, then a tree that rescales to the larger frame): 2.2 us
// slower at B1 T131072, 1.2 at T32768 (same machine, three rounds). Nor waiting on an arrival count
// instead of griddepcontrol.wait (each producer CTA a barrier and a red.release.gpu after its stores,
// the combine's thread 0 spinning on ld.acquire.gpu, the last reader zeroing the count): 0.5 us slower
// at T131072 (25.1 -> 25.6 us), 0.5 at 128 and 512 slots (H200, three rounds, 35 of 35 fixtures correct).
// Nor a dry pass to warm the instruction cache (the whole merge run once before griddepcontrol.wait on
// whatever the workspace held, storing nothing, then for real): B1 T131072 24.42-24.45 -> 25.95-26.14 us,
// T32768 37.95-37.98 -> 39.36-39.49, window 4096 12.29-12.35 -> 13.79; with the producer triggering its
// dependents at entry, so that pass ran while it streamed: 25.57-25.60, 39.01-39.07 and 13.73-13.89; the
// other shapes within noise (H200, same machine, two rounds, 35 of 35 fixtures correct).
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

// ---- instance selection ------------------------------------------------------------------------------
// Every producer takes the maps, so one pointer type fits all; the CUDA-core producers ignore them.
typedef void (*producer_fn)(const dkb_decode_params, const KvMaps);
struct Instance {
  producer_fn fn;
  int nt, smem, ntok;
  producer_fn fused;  // the same producer merging the slots in its last CTA, or null
  bool tma;           // the tensor-core producer: whole tiles of NHD caches through KvMaps
};

template <typename T, int D, int R, int NT>
Instance make() {
  using K = Cfg<T, D, R, NT>;
  return Instance{decode_split_kv_producer<T, D, R, NT>, NT, K::SMEM, K::NTOK, nullptr, false};
}

int pad_dim(int d) { return d <= 64 ? 64 : d <= 128 ? 128 : d <= 256 ? 256 : 0; }
int row_bucket(int rows) { return rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : rows <= 8 ? 8 : rows <= 128 ? 128 : 0; }

template <typename T, int D>
bool pick_rows(int rb, Instance *out) {
  switch (rb) {
  case 1: *out = make<T, D, 1, 128>(); return true;
  case 2: *out = make<T, D, 2, 128>(); return true;
  case 4: *out = make<T, D, 4, 128>(); return true;
  case 8: *out = make<T, D, 8, 128>(); return true;
  case 128: *out = make<T, D, 128, 512>(); return true;
  }
  return false;
}

// fp32 is the reference-run dtype: instances for up to 8 rows and for 128 rows (not with d = 256).
template <int D>
bool pick_rows_f32(int rb, Instance *out) {
  if (rb <= 8) { *out = make<float, D, 8, 128>(); return true; }
  if constexpr (D <= 128)
    if (rb == 128) { *out = make<float, D, 128, 512>(); return true; }
  return false;
}

// Shared memory a d = 128 tensor-core producer asks for: 3 x (80 + 4 static + 1 reserved) KiB exceed an
// H100/H200 SM's 228 KiB, 2 fit, so the planner's 2 CTAs per SM hold whatever registers the code needs.
constexpr int kTwoPerSmSmem = 80 * 1024;
template <typename T, int D, bool EARLY>
Instance make_mma() {
  using K = MmaCfg<D>;
  constexpr int smem = D == 128 && K::SMEM < kTwoPerSmSmem ? kTwoPerSmSmem : K::SMEM;
  return Instance{decode_split_kv_producer_mma<T, D, EARLY>, K::NT, smem, K::NTOK, decode_split_kv_fused_mma<T, D, EARLY>, true};
}
template <typename T, int D>
Instance make_mma(bool early) { return early ? make_mma<T, D, true>() : make_mma<T, D, false>(); }

bool pick(int dtype, int dk, int dv, int rows, Instance *out, bool early = false) {
  int D = pad_dim(dk > dv ? dk : dv), rb = row_bucket(rows);
  if (!D || !rb) return false;
  /* tensor cores for half types, head dims up to 128 and up to 16 query rows per K/V head */
  if (dtype != DKB_KDT_F32 && D <= 128 && rows <= 16) {
    if (dtype == DKB_KDT_BF16) *out = D == 64 ? make_mma<__nv_bfloat16, 64>(early) : make_mma<__nv_bfloat16, 128>(early);
    else *out = D == 64 ? make_mma<__half, 64>(early) : make_mma<__half, 128>(early);
    return true;
  }
  switch (dtype) {
  case DKB_KDT_BF16:
    return D == 64 ? pick_rows<__nv_bfloat16, 64>(rb, out) : D == 128 ? pick_rows<__nv_bfloat16, 128>(rb, out)
                                                                       : pick_rows<__nv_bfloat16, 256>(rb, out);
  case DKB_KDT_F16:
    return D == 64 ? pick_rows<__half, 64>(rb, out) : D == 128 ? pick_rows<__half, 128>(rb, out)
                                                               : pick_rows<__half, 256>(rb, out);
  case DKB_KDT_F32:
    return D == 64 ? pick_rows_f32<64>(rb, out) : D == 128 ? pick_rows_f32<128>(rb, out) : pick_rows_f32<256>(rb, out);
  }
  return false;
}

typedef void (*combine_fn)(const dkb_decode_params);
struct Combine {
  combine_fn fn;
  int nt, dsplit;  // threads; CTAs per output row (32 dims each when more than one)
};
template <typename T, typename WS>
Combine combine_for(int nt, int dsplit) {
  return dsplit > 1 ? Combine{decode_split_kv_combine<T, WS, 256, 8>, 256, dsplit}
         : nt == 1024 ? Combine{decode_split_kv_combine<T, WS, 1024, 32>, 1024, 1}
                      : Combine{decode_split_kv_combine<T, WS, 256, 32>, 256, 1};
}
// With many slots per request (a long request split hundreds of ways: few rows, so each row's slots must
// be read in parallel) each row is split into CTAs of 32 dims, so the payloads (slots x d_v x 4 bytes)
// are read by d_v / 32 SMs, not one; 8 warps each (32 warps per CTA measured 0.9 us slower at B1
// T131072, 26.1 vs 25.2 us, H200, two rounds). Else one CTA of 8 warps per row (32 warps where d_v is
// no multiple of 32). Tried and not kept (H200, three rounds): narrower CTAs (16 or 8 dims: 64 or 128
// CTAs at B1 T131072) and CTAs of 32 dims from 16 slots per request on (B1 T32768, 32 slots); none was
// faster (8 dims: T131072 paged 1.4 % slower). The merge is latency, not the bytes one SM reads.
Combine pick_combine(const dkb_decode_params &p) {
  const bool ws_bf16 = p.abi == DKB_ABI_LSE_O && p.ws_o_dtype == DKB_KDT_BF16;
  const int nt = p.B > 0 && p.total_slots / p.B >= 64 ? 1024 : 256;
  const int ds = nt == 1024 && p.dv % 32 == 0 ? p.dv / 32 : 1;
  switch (p.dtype) {
  case DKB_KDT_BF16:
    return ws_bf16 ? combine_for<__nv_bfloat16, __nv_bfloat16>(nt, ds) : combine_for<__nv_bfloat16, float>(nt, ds);
  case DKB_KDT_F16: return ws_bf16 ? combine_for<__half, __nv_bfloat16>(nt, ds) : combine_for<__half, float>(nt, ds);
  default: return ws_bf16 ? combine_for<float, __nv_bfloat16>(nt, ds) : combine_for<float, float>(nt, ds);
  }
}

typedef void (*naive_fn)(const dkb_decode_params, float *, int64_t);
naive_fn pick_naive(int dtype) {
  return dtype == DKB_KDT_BF16 ? decode_naive_reference<__nv_bfloat16>
         : dtype == DKB_KDT_F16 ? decode_naive_reference<__half> : decode_naive_reference<float>;
}
typedef void (*append_fn)(const dkb_decode_params);
append_fn pick_append(int dtype) {
  return dtype == DKB_KDT_BF16 ? decode_append_kv<__nv_bfloat16>
         : dtype == DKB_KDT_F16 ? decode_append_kv<__half> : decode_append_kv<float>;
}

int64_t max_len_host(const dkb_decode_params &p, cudaError_t *e) {
  // kv_len lives on the device; the naive launcher needs its maximum for the scratch stride.
  int64_t mx = 0;
  for (int b = 0; b < p.B && *e == cudaSuccess; b++) {
    int64_t n = 0;
    *e = cudaMemcpy(&n, p.kv_len + b, sizeof n, cudaMemcpyDeviceToHost);
    if (n > mx) mx = n;
  }
  return mx;
}

}  // namespace

extern "C" int dkb_split_kv_supported(int dtype, int dk, int dv, int rows, char *why, size_t whyn) {
  Instance in;
  if (dk % 8 || dv % 8 || dk <= 0 || dv <= 0) {
    if (why) snprintf(why, whyn, "head_dim_qk=%d head_dim_vo=%d: not multiples of 8", dk, dv);
    return 0;
  }
  if (!pick(dtype, dk, dv, rows, &in)) {
    if (why) snprintf(why, whyn, "no instance for dtype %d, head dims %d/%d, %d query rows per K/V head", dtype, dk, dv, rows);
    return 0;
  }
  return 1;
}

extern "C" int dkb_decode_tile_tokens(int dtype, int dk, int dv, int rows) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) ? in.ntok : 0;
}

extern "C" int dkb_decode_fused_ok(int dtype, int dk, int dv, int rows, int max_slots) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) && in.fused && max_slots > 1 && max_slots <= kFusedSlots &&
         (int64_t)rows * max_slots <= kFusedRowSlots;
}

extern "C" int dkb_decode_cluster_ok(int dtype, int dk, int dv, int rows, int slots, int abi, int ws_o_dtype) {
  return dkb_decode_fused_ok(dtype, dk, dv, rows, slots) && slots <= kClusterMax &&
         (abi == DKB_ABI_MLU || (abi == DKB_ABI_LSE_O && ws_o_dtype == DKB_KDT_F32));
}

// CTAs per SM the producer holds; both instantiations (with and without the early first tile,
// producer_for) are asked, and the smaller count is the answer: the caller knows no layout.
extern "C" int dkb_decode_occupancy(int dtype, int dk, int dv, int rows) {
  int best = 0;
  for (int early = 0; early < 2; early++) {
    Instance in;
    if (!pick(dtype, dk, dv, rows, &in, early)) return 0;
    if (cudaFuncSetAttribute((const void *)in.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, in.smem) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)in.fn, in.nt, in.smem) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    if (early == 0 || n < best) best = n;
  }
  return best;
}

// The producer a launch with these parameters runs (the fused one when the plan merges in the producer),
// or null when there is none.
static producer_fn producer_for(const dkb_decode_params &p, Instance *in) {
  if (!pick(p.dtype, p.dk, p.dv, (p.H_q / p.H_kv) * p.C, in, p.layout == L_CONTIG_NHD || p.layout == L_RAGGED_NHD)) return nullptr;
  if (!p.fused) return in->fn;
  return p.direct ? nullptr : in->fused;
}

// The tensor maps of an NHD cache for the TMA path ([d, H_kv, rows], boxes of 64 dims x 1 head x
// box_rows keys, 128-byte swizzle; rows bounded by what device memory can hold, so a row index fits the
// copies' int32 coordinates). Through the runtime's driver entry point: dkb links no libcuda. Any
// refusal leaves on = 0 and the producer copies every tile with cp.async.
static void encode_maps(const dkb_decode_params &p, KvMaps *m) {
  memset(m, 0, sizeof *m);
  const bool paged = p.layout == L_PAGED_NHD;
  if (!(p.layout == L_CONTIG_NHD || p.layout == L_RAGGED_NHD || paged) || p.dtype == DKB_KDT_F32) return;
  if (paged && (p.page_size < 8 || (p.page_size & (p.page_size - 1)))) return;
  static PFN_cuTensorMapEncodeTiled_v12000 enc = nullptr;
  static size_t mem = 0;  // device memory: no cache has more rows than it holds
  static int tried = 0;
  if (!tried) {
    tried = 1;
    cudaDriverEntryPointQueryResult q;
    size_t free_b = 0;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&enc, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || cudaMemGetInfo(&free_b, &mem) != cudaSuccess)
      enc = nullptr;
    cudaGetLastError();
  }
  if (!enc) return;
  const int br = paged && p.page_size < 64 ? p.page_size : 64;
  const CUtensorMapDataType dt = p.dtype == DKB_KDT_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  for (int kv = 0; kv < 2; kv++) {
    const int d = kv ? p.dv : p.dk;
    const uint64_t row_bytes = (uint64_t)p.H_kv * d * 2, rows = mem / row_bytes + 1;
    if (rows >= (1ull << 31)) return;
    const cuuint64_t dims[3] = {(cuuint64_t)d, (cuuint64_t)p.H_kv, (cuuint64_t)rows};
    const cuuint64_t strides[2] = {(cuuint64_t)d * 2, row_bytes};
    const cuuint32_t box[3] = {64, 1, (cuuint32_t)br}, es[3] = {1, 1, 1};
    if (enc(kv ? &m->v : &m->k, dt, 3, const_cast<void *>(kv ? p.v : p.k), dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return;
  }
  m->box_rows = br;
  m->on = 1;
}

extern "C" int dkb_decode_launch(const struct dkb_decode_params *p, void *stream) {
  Instance in;
  const producer_fn fn = producer_for(*p, &in);
  if (!fn || (p->fused && p->cluster <= 1 && !p->combine_count)) return (int)cudaErrorInvalidValue;
  cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e = cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, in.smem);
  if (e != cudaSuccess) return (int)e;
  KvMaps maps;
  if (in.tma) encode_maps(*p, &maps);
  else memset(&maps, 0, sizeof maps);
  if (p->n_items > 0) {
    // One CTA per (K/V head, item): x the head, y (and z past 65535 items) the item, so CTAs start
    // item-major, in the plan's order (longest item first); block indices need no division, which
    // cost the tensor-core producer 16 bytes of spill.
    const unsigned ny = p->n_items < 65535 ? (unsigned)p->n_items : 65535u;
    dim3 grid((unsigned)p->H_kv, ny, (unsigned)((p->n_items + 65534) / 65535));
    if (p->cluster > 1) {
      // a cluster = the S consecutive items (grid y) of one request for one K/V head
      if (!p->fused || p->cluster > kClusterMax || grid.z != 1 || p->n_items % p->cluster) return (int)cudaErrorInvalidValue;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = grid;
      cfg.blockDim = dim3((unsigned)in.nt);
      cfg.dynamicSmemBytes = (size_t)in.smem;
      cfg.stream = st;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = 1;
      attr[0].val.clusterDim.y = (unsigned)p->cluster;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      if ((e = cudaLaunchKernelEx(&cfg, fn, *p, maps)) != cudaSuccess) return (int)e;
    } else {
      fn<<<grid, in.nt, in.smem, st>>>(*p, maps);
    }
    if ((e = cudaGetLastError()) != cudaSuccess) return (int)e;
  }
  if (p->direct || p->fused) return 0;
  // Combine with programmatic dependent launch: its launch overlaps the producer's tail.
  cudaLaunchConfig_t cfg = {};
  const Combine cb = pick_combine(*p);
  cfg.gridDim = dim3((unsigned)(p->B * p->C * p->H_q), (unsigned)cb.dsplit);
  cfg.blockDim = dim3((unsigned)cb.nt);
  cfg.stream = st;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  e = cudaLaunchKernelEx(&cfg, cb.fn, *p);
  return (int)e;
}

extern "C" int dkb_naive_launch(const struct dkb_decode_params *p, float *scratch, void *stream) {
  cudaError_t e = cudaSuccess;
  int64_t n_max = max_len_host(*p, &e);
  if (e != cudaSuccess) return (int)e;
  pick_naive(p->dtype)<<<p->B * p->C * p->H_q, 128, 0, (cudaStream_t)stream>>>(*p, scratch, n_max > 0 ? n_max : 1);
  return (int)cudaGetLastError();
}

extern "C" int dkb_append_launch(const struct dkb_decode_params *p, void *stream) {
  pick_append(p->dtype)<<<p->B * p->C, 128, 0, (cudaStream_t)stream>>>(*p);
  return (int)cudaGetLastError();
}

static int kernel_info(const void *fn, int role, size_t dyn, struct dkb_kernel_info *out) {
  cudaFuncAttributes a;
  cudaError_t e = cudaFuncGetAttributes(&a, fn);
  if (e != cudaSuccess) return -(int)e;
  const char *name = NULL;
  e = cudaFuncGetName(&name, fn);
  if (e != cudaSuccess) return -(int)e;
  out->symbol = name;
  out->binary_version = a.binaryVersion;
  out->ptx_version = a.ptxVersion;
  out->num_regs = a.numRegs;
  out->static_smem = a.sharedSizeBytes;
  out->dynamic_smem = dyn;
  out->role = role;
  return 0;
}

extern "C" int dkb_decode_kernels(const struct dkb_decode_params *p, int family, struct dkb_kernel_info *out, int cap) {
  int n = 0, rc;
  if (p->k_new && n < cap) {
    if ((rc = kernel_info((const void *)pick_append(p->dtype), 3, 0, &out[n]))) return rc;
    n++;
  }
  if (family == DKB_FAMILY_NAIVE) {
    if (n < cap && (rc = kernel_info((const void *)pick_naive(p->dtype), 2, 0, &out[n]))) return rc;
    return n + 1;
  }
  Instance in;
  const producer_fn fn = producer_for(*p, &in);
  if (!fn) return -(int)cudaErrorInvalidValue;
  if (n < cap && (rc = kernel_info((const void *)fn, p->fused ? 4 : 0, (size_t)in.smem, &out[n]))) return rc;
  n++;
  if (!p->direct && !p->fused && n < cap) {
    if ((rc = kernel_info((const void *)pick_combine(*p).fn, 1, 0, &out[n]))) return rc;
    n++;
  }
  return n;
}
