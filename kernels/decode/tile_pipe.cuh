// tile_pipe.cuh - TilePipe, the K/V tile pipeline both split-KV producers stream through.
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/copy.cuh"
#include "kernels/decode/mask.cuh"

namespace {

// ---- the tile pipeline -------------------------------------------------------------------------
// One CTA streams the K/V tiles of its item [lo, hi) of request b, head h, through the kernel's shared-memory
// stages with cp.async, or with TMA boxes for whole tiles of NHD caches (use_tma; threads 0 .. TMA - 1 issue a
// tile's boxes: one thread, or every warp's lanes for paged caches, copy.cuh tma_tile; 0: no TMA). Tiles are aligned
// blocks of NTOK keys; SKIP tiles (0x05C) are neither loaded nor computed. Address constants are hoisted out of
// the copy loop (a copy must not wait on a dependent load): an item's page ids (up to kPageSmem) sit in shared
// memory before the first copy, and the FlashMask summary of the next tile is loaded one tile ahead, while the
// current tile is computed. A longer page list (small pages: 2048 keys of 1-key pages) has each thread's page
// ids of the next tile loaded into registers one tile ahead in the same way (pre). Tiles wholly inside the
// item take a short path (byte addresses, power-of-two page shift); edge tiles and other page sizes take the
// general, not unrolled path, which reads the page table directly. A ring in shared memory tells the consumer which tile and class each stage holds
// (-1: none), and whether it arrives on the stage's mbarrier (kTmaTile).
// HP > 1: a tile is NTOK keys of each of HP K/V heads h, h + 1, ... (tma_tile's layout: head k's rows after
// head k - 1's); whole tiles on TMA or the fast path (each head's rows at its byte offset), edges on the
// general path.
template <typename T, int NTOK, int CH, int NT, int TMA = 0, int HP = 1>
struct TilePipe {
  static constexpr int EPC = 16 / (int)sizeof(T);
  static constexpr int KPT = NTOK * HP * CH / NT > 0 ? NTOK * HP * CH / NT : 1;  // rows each thread copies per tile
  const dkb_decode_params *pp;
  int tid, b;
  int64_t lo, hi, N, q_first, t_end, t_pend;
  bool paged, kch, vch;
  int64_t kbase, vbase, kstride, vstride, kpage, vpage, khead, vhead;  // khead, vhead: HP > 1, the next head's offset
  const int32_t *tbl;
  int P, cc, ct0;
  int4 sm0, sm1;
  int64_t *ring_t;
  int *ring_c;
  const int32_t *pgs;  // the item's page ids in shared memory (index key / P - j0), or null
  int64_t j0;
  // cp.async fast path for tiles wholly inside [lo, hi) (the CUDA-core producers, HND caches): per-thread
  // byte addresses and strides, so a copy costs an add (contiguous, ragged) or a shared-memory page id and
  // a multiply-add (paged, P a power of two). Paged, the page strides are 32-bit (pages under 2 GiB, else
  // the general path), so the offset is one widening IMAD, not a 64 x 64-bit multiply of three. What it
  // measured, and the copy schemes tried against it: docs/kernels.md, "Tile pipeline".
  const unsigned char *kthr, *vthr;
  int64_t kstep, vstep;
  int kpage_b, vpage_b;  // paged and fast: byte strides of one page
  int khead_b, vhead_b;  // HP > 1, fast: byte offsets of the next head (below a page's or a row's stride)
  int ksz, vsz, pshift;
  bool fast, pre_on;  // pre_on: paged, the fast path, page ids from pre (the list is not in shared memory)
  // HP > 1: a thread's KPT rows are KPH keys of each head, the same keys (and pages) in every head.
  static constexpr int KPH = KPT / HP;
  static_assert(KPT % HP == 0 && KPH * (NT / CH) == NTOK, "a thread's rows cover each head's keys alike");
  int32_t pre[KPH];   // pre_on: the page of each key this thread copies in tile t_pend
  const KvMaps *maps;  // TMA: the caches' maps (kernel parameter space) and the stages' barriers
  uint64_t *bars;
  int64_t row0;        // TMA, contiguous and ragged: map row of key 0
  int hh;

  // Call __syncthreads() between init and the first issue_next: init fills the shared page list.
  // base: the item's p.item_base (its request's cache row, packed row or page-table entry, resolved by the plan).
  __device__ __forceinline__ void init(const dkb_decode_params &p, int tid_, int b_, int h, int64_t lo_, int64_t hi_, int64_t N_,
                                       int64_t base, int64_t q_first_, int64_t *rt, int *rc, int32_t *pg_smem, int pg_cap = kPageSmem) {
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
      kstride = Hk * dk; vstride = Hk * dv; khead = dk; vhead = dv; break;
    case L_CONTIG_HND: kbase = (base * Hk + h) * p.T_cap * dk; vbase = (base * Hk + h) * p.T_cap * dv;  // base = cache_row
      kstride = dk; vstride = dv; khead = p.T_cap * dk; vhead = p.T_cap * dv; break;
    case L_PAGED_NHD: kbase = h * dk; vbase = h * dv; kstride = Hk * dk; vstride = Hk * dv;
      kpage = (int64_t)P * Hk * dk; vpage = (int64_t)P * Hk * dv; khead = dk; vhead = dv; break;
    default: kbase = h * (int64_t)P * dk; vbase = h * (int64_t)P * dv; kstride = dk; vstride = dv;
      kpage = Hk * (int64_t)P * dk; vpage = Hk * (int64_t)P * dv; khead = (int64_t)P * dk; vhead = (int64_t)P * dv; break;
    }
    if (paged) {
      tbl = (p.table == TBL_DENSE ? p.block_table : p.page_indices) + base;
      /* An item's page list usually fits in shared memory: load it once, coalesced, so no copy ever
       * waits on the page table. */
      j0 = lo / P;
      const int64_t nj = hi > lo ? (hi - 1) / P - j0 + 1 : 0;
      if (nj <= pg_cap) {
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
      kstep = kstride * ES; vstep = vstride * ES;
      const int64_t kpb = kpage * ES, vpb = vpage * ES;  // a row's offset in its page is below these
      kpage_b = (int)kpb; vpage_b = (int)vpb;
      khead_b = (int)(khead * ES); vhead_b = (int)(vhead * ES);
      pshift = -1;
      if (paged && (P & (P - 1)) == 0) pshift = __ffs(P) - 1;
      if (!paged) { kthr += ct0 * kstep; vthr += ct0 * vstep; }
      fast = hi < (int64_t(1) << 30) && (!paged || (pshift >= 0 && kpb <= INT32_MAX && vpb <= INT32_MAX)) &&
             (HP == 1 || (khead * ES <= INT32_MAX && vhead * ES <= INT32_MAX));
      pre_on = fast && paged && !pgs;
    }
    maps = nullptr; bars = nullptr; row0 = base; hh = h;
    prefetch(t_pend);
  }
  // TMA producers: the maps and one mbarrier per stage (initialized here by thread 0 unless the producer
  // did, inited; the caller's __syncthreads after init publishes them). encode_maps turned the maps on only
  // for caches they cover.
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
    if (pre_on) {
#pragma unroll
      for (int i = 0; i < KPH; i++) {
        const int64_t key = t * NTOK + ct0 + i * (NT / CH);
        pre[i] = key >= lo && key < hi ? __ldg(tbl + (key >> pshift)) : 0;
      }
    }
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
    if constexpr (TMA > 0) tma = maps && t < t_end && fast && !pre_on && t * NTOK >= lo && (t + 1) * NTOK <= hi;
    if (tma) {
      // Whole tile: K and V boxes of box_rows keys x 64 dims each; the stage's layout is the swizzled
      // [dims / 64][NTOK][64] of MmaCfg. Issued by the first TMA threads; rows must fit the maps' int32
      // coordinates.
      if (tid < TMA)
        tma_tile<NTOK, CH, TMA, HP>(maps, ks, tile_bytes, hh, [&](int j) {
          const int key = (int)(t * NTOK) + j;  // fast: keys below 2^30
          return paged ? pgs[(key >> pshift) - (int)j0] * P + (key & (P - 1)) : (int)(row0 + key);
        }, bars + s, tid);
    } else if (t < t_end && fast && t * NTOK >= lo && (t + 1) * NTOK <= hi) {
      // Row tt = ct0 + i * (NT / CH) is key ki of head hd (both known at compile time: ct0 < NT / CH): the
      // same per-thread addresses as one head, plus the head's byte offset.
      unsigned char *vs = ks + tile_bytes;
      if (!paged) {
        const unsigned char *kr = kthr + t * NTOK * kstep, *vr = vthr + t * NTOK * vstep;
#pragma unroll
        for (int i = 0; i < KPT; i++) {
          const int tt = ct0 + i * (NT / CH), hd = i / KPH, ki = i % KPH;
          cp_async16(ks + kpos(tt, cc) * 16, kr + ki * (NT / CH) * kstep + hd * khead_b, ksz);
          cp_async16(vs + vpos(tt, cc) * 16, vr + ki * (NT / CH) * vstep + hd * vhead_b, vsz);
        }
      } else {
        const int key0 = (int)(t * NTOK) + ct0, jb = (int)j0, pm = P - 1;
#pragma unroll
        for (int i = 0; i < KPT; i++) {
          const int tt = ct0 + i * (NT / CH), hd = i / KPH, ki = i % KPH, key = key0 + ki * (NT / CH), r = key & pm;
          const int page = pre_on ? pre[ki] : pgs[(key >> pshift) - jb];
          cp_async16(ks + kpos(tt, cc) * 16, kthr + ((int64_t)page * kpage_b + r * (int)kstep + hd * khead_b), ksz);
          cp_async16(vs + vpos(tt, cc) * 16, vthr + ((int64_t)page * vpage_b + r * (int)vstep + hd * vhead_b), vsz);
        }
      }
    } else if (t < t_end) {  // edge tiles and the general layouts: rare, kept out of line of the hot loop
      unsigned char *vs = ks + tile_bytes;
      const T *kp = reinterpret_cast<const T *>(pp->k) + cc * EPC, *vp = reinterpret_cast<const T *>(pp->v) + cc * EPC;
#pragma unroll 1
      for (int i = 0; i < KPT; i++) {
        const int tt = ct0 + i * (NT / CH), hd = tt / NTOK;  // HP > 1: row tt is key tt % NTOK of head h + hd
        const int64_t key = t * NTOK + tt % NTOK;
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
        if constexpr (HP > 1) { ko += hd * khead; vo += hd * vhead; }
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

}  // namespace
