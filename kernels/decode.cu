// decode.cu - dkb's split-KV decode kernels (article 0x02-0x06), the subject under test dkb ships: the
// instances and their selection, and the launchers behind kernels/decode.h. The kernels live in
// kernels/decode/*.cuh, included below in dependency order into this one translation unit (the code of
// every kernel and the reasons for it; what was measured and tried: docs/kernels.md).
//
// Kernel versions that exist (STYLE 9):
//   decode_split_kv_producer<T, D_PAD, R_MAX, NT>  (decode/producer.cuh) one CTA per (work item, K/V
//       head): all g*C query rows of the K/V head group share every K/V tile it loads (GQA read once per
//       group); a cp.async pipeline of kStages tiles; scores on CUDA cores in fp32; online softmax in base
//       2; writes the split state (m,l,u) or (LSE,O) of its slot, or the final O directly when the plan
//       has one item per request. Empty items and items past a request's keys write the empty identity.
//   decode_split_kv_producer_mma<T, D_PAD, EARLY>  (decode/producer_mma.cuh) the same contract on tensor
//       cores (mma.sync) for fp16/bf16, d <= 256 and up to 16 query rows per K/V head; two stages, two
//       CTAs per SM (one at d = 256: its stages are twice as large); whole tiles of NHD caches arrive as TMA boxes on an mbarrier (KvMaps), the rest by
//       cp.async. EARLY (contiguous and ragged NHD caches): the item's first whole tile is sent at CTA
//       entry, before the prologue.
//   decode_split_kv_producer2_mma, _producer4_mma, _producer3sm_mma, _producer8w_mma  (decode/producer_mma.cuh) the
//       same producer over two or four K/V heads a CTA, held to three CTAs an SM, or of eight warps on 128-key
//       tiles, one CTA an SM (the plan's kv_heads_per_cta, three, eight).
//   decode_split_kv_fused_mma<T, D_PAD, EARLY>  (decode/producer_mma.cuh) that producer whose last CTA per
//       (request, K/V head) also merges the group's slots (fused combine, 0x03C): one launch when the plan
//       has few slots per request; with 2 slots in every request, launched as one thread-block cluster per
//       group that merges in distributed shared memory (cluster_merge, decode/merge.cuh).
//   decode_split_kv_combine<T, WS, NT, LPS>  (decode/combine.cuh) one CTA per (request, query row, query
//       head), or per 32 dims of it when requests hold many slots: exact merge of the request's slots,
//       branching on validity before any exponential (0x02C); all-masked -> O=0, LSE=-inf.
//   decode_naive_reference<T>  (decode/naive.cuh) one CTA per output row, three passes over all keys, no
//       split: the broad-support GPU reference backend.
//   decode_append_kv<T>  (decode/append.cuh) writes the C new K/V rows into the cache before attention.
// What they share: decode/base.cuh (enums, constants, conversions), decode/copy.cuh (cp.async, TMA),
// decode/kv_address.cuh, decode/mask.cuh, decode/tile_pipe.cuh (the producers' K/V pipeline),
// decode/split_state.cuh (the producers' state stores), decode/merge.cuh (slot merging).
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

#include <algorithm>
#include <type_traits>

#include "kernels/decode.h"

#include "kernels/decode/base.cuh"
#include "kernels/decode/copy.cuh"
#include "kernels/decode/kv_address.cuh"
#include "kernels/decode/mask.cuh"
#include "kernels/decode/tile_pipe.cuh"
#include "kernels/decode/split_state.cuh"
#include "kernels/decode/producer.cuh"
#include "kernels/decode/merge.cuh"
#include "kernels/decode/producer_mma.cuh"
#include "kernels/decode/combine.cuh"
#include "kernels/decode/naive.cuh"
#include "kernels/decode/append.cuh"

namespace {

// ---- instance selection ------------------------------------------------------------------------------
// Every producer takes the maps, so one pointer type fits all; the CUDA-core producers ignore them.
typedef void (*producer_fn)(const dkb_decode_params, const KvMaps);
// The producer over HP = 2 or 4 K/V heads a CTA (the tensor-core ones), or fn null: smem with the other heads'
// Q on top, so the page list keeps its room; room: the page ids it has at the one-head size, where
// producer_for keeps that size (negative: never).
struct Heads {
  producer_fn fn;
  int smem, room, nt;  // nt: its threads a CTA
};
struct Instance {
  producer_fn fn;
  int nt, smem, ntok;
  producer_fn fused;  // the same producer merging the slots in its last CTA, or null
  bool tma;           // the tensor-core producer: whole tiles of NHD caches through KvMaps
  int wave;           // CTAs per SM the planner's wave counts: its __launch_bounds__ minimum, or fewer where
                      // its shared memory lets fewer share an SM (smem_ctas), as the device's occupancy says
  Heads heads[2];     // [0]: 2 K/V heads a CTA, [1]: 4
  Heads three;        // one head a CTA, built for three CTAs an SM (d = 128), or fn null; room: its page ids
  Heads eight;        // one head a CTA of eight warps on 128-key tiles, one CTA an SM (d = 128), or fn null; room: its
                      // page ids
};

// CTAs of `smem` bytes of dynamic shared memory an H100/H200 SM holds: 228 KiB, 1 KiB of each CTA's
// reserved. A plan made without a device (no occupancy to ask) counts no more than this.
constexpr int smem_ctas(int smem) { return 228 / ((smem + 1023) / 1024 + 1); }

template <typename T, int D, int R, int NT>
Instance make() {
  using K = Cfg<T, D, R, NT>;
  // Built for no count (__launch_bounds__(NT)): the wave counts 2, as it did for every producer before
  // the d = 64 tensor-core ones were built for 4.
  return Instance{decode_split_kv_producer<T, D, R, NT>, NT, K::SMEM, K::NTOK, nullptr, false,
                  std::min(2, smem_ctas(K::SMEM)), {}, {}, {}};
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

// Shared memory a d = 128 tensor-core producer asks for: 3 x (80 + 1 reserved) KiB exceed an
// H100/H200 SM's 228 KiB, 2 fit, so the planner's 2 CTAs per SM hold whatever registers the code needs.
constexpr int kTwoPerSmSmem = 80 * 1024;
// Room past Q every tensor-core producer asks for: an item's page list goes there (at least 2816 ids; 1-key
// pages of a 2048-key request), not in per-tile register loads (producer_mma). At d = 64 4 CTAs of 46 KiB
// still share an SM, at d = 256 one of 148 KiB; at d = 128 kTwoPerSmSmem already has it.
constexpr int kPageSpare = 11 * 1024;
static_assert(MmaCfg<128>::SMEM + kPageSpare <= kTwoPerSmSmem, "d = 128 keeps its page room");
// Two heads a CTA add a second head's Q, 2 KiB (d = 64) to 8 KiB (d = 256), taken from the page list's room:
// asked for on top (as many CTAs share an SM: 4 of 48 KiB, 2 of 84, 1 of 156) only when an item's list
// needs it (producer_for). At d = 128 84 KiB (past the 164 KiB carveout step that 2 x 81 fit) cost 16-key
// pages at B64 +0.8 / +0.9 %; 80 KiB without room for 2048 ids cost 1-key pages +11.9 % (docs/kernels.md).
// Four heads a CTA (d = 128 only) add three heads' Q, 12 KiB: 92 KiB always, two CTAs an SM still. The
// producer built for three CTAs an SM (d = 128 only) asks for 74 KiB, 5 KiB of page room.
template <typename T, int D, bool EARLY>
Instance make_mma() {
  using K = MmaCfg<D>;
  constexpr int smem = D == 128 ? kTwoPerSmSmem : K::SMEM + kPageSpare;
  static_assert(smem_ctas(smem) == smem_ctas(smem + K::Q_BYTES), "two heads keep the CTAs per SM");
  Instance in{decode_split_kv_producer_mma<T, D, EARLY>, K::NT, smem, K::NTOK, decode_split_kv_fused_mma<T, D, EARLY>, true,
              std::min(K::MIN_CTAS, smem_ctas(smem)), {}, {}, {}};
  in.heads[0] = Heads{decode_split_kv_producer2_mma<T, D, EARLY>, smem + K::Q_BYTES, (smem - K::SMEM - K::Q_BYTES) / 4, K::NT};
  if constexpr (D == 128) {
    constexpr int smem4 = K::SMEM + 3 * K::Q_BYTES + kPageSpare;
    static_assert(smem_ctas(smem4) == K::MIN_CTAS, "four heads keep the CTAs per SM");
    in.heads[1] = Heads{decode_split_kv_producer4_mma<T, D, EARLY>, smem4, -1, K::NT};
    // Three CTAs an SM: 3 x (74 + 1 reserved) KiB and the producer's static shared memory (its barriers and
    // item ring, under 1 KiB); 75 KiB left the static bytes no room, and the device held two (an H100).
    constexpr int smem3 = 74 * 1024;
    static_assert(smem_ctas(smem3) == 3, "three CTAs an SM");
    in.three = Heads{decode_split_kv_producer3sm_mma<T, D, EARLY>, smem3, (smem3 - K::SMEM) / 4, K::NT};
    // Eight warps: two stages of 64 KiB (128-key tiles) and the same page room, one CTA an SM.
    using K8 = MmaCfg<D, 8>;
    constexpr int smem8 = K8::SMEM + kPageSpare;
    static_assert(smem_ctas(smem8) == 1, "one CTA of eight warps an SM");
    in.eight = Heads{decode_split_kv_producer8w_mma<T, D, EARLY>, smem8, kPageSpare / 4, K8::NT};
  }
  return in;
}
template <typename T, int D>
Instance make_mma(bool early) { return early ? make_mma<T, D, true>() : make_mma<T, D, false>(); }

bool pick(int dtype, int dk, int dv, int rows, Instance *out, bool early = false) {
  int D = pad_dim(dk > dv ? dk : dv), rb = row_bucket(rows);
  if (!D || !rb) return false;
  /* tensor cores for half types and up to 16 query rows per K/V head */
  if (dtype != DKB_KDT_F32 && rows <= 16) {
    if (dtype == DKB_KDT_BF16)
      *out = D == 64 ? make_mma<__nv_bfloat16, 64>(early) : D == 128 ? make_mma<__nv_bfloat16, 128>(early) : make_mma<__nv_bfloat16, 256>(early);
    else *out = D == 64 ? make_mma<__half, 64>(early) : D == 128 ? make_mma<__half, 128>(early) : make_mma<__half, 256>(early);
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
// are read by d_v / 32 SMs, not one; 8 warps each, which measured faster than 32. Else one CTA of 8 warps
// per row (32 warps where d_v is no multiple of 32). Narrower CTAs, or CTAs of 32 dims from fewer slots
// on, were no faster: the merge is latency, not the bytes one SM reads (docs/kernels.md, "Combine kernel").
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

extern "C" int dkb_decode_wave_ctas(int dtype, int dk, int dv, int rows) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) ? in.wave : 0;
}

// fused_combine gives each of a warp's 32 lanes four of a row's dims: d_v <= 128. The cluster merge,
// which has no such limit, shares this test (a d = 256 call's slots merge in the combine kernel).
extern "C" int dkb_decode_fused_ok(int dtype, int dk, int dv, int rows, int max_slots) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) && in.fused && dv <= 128 && max_slots > 1 && max_slots <= kFusedSlots &&
         (int64_t)rows * max_slots <= kFusedRowSlots;
}

extern "C" int dkb_decode_cluster_ok(int dtype, int dk, int dv, int rows, int slots, int abi, int ws_o_dtype) {
  return dkb_decode_fused_ok(dtype, dk, dv, rows, slots) && slots <= kClusterMax &&
         (abi == DKB_ABI_MLU || (abi == DKB_ABI_LSE_O && ws_o_dtype == DKB_KDT_F32));
}

// NHD caches whose pages, if any, are a power of two: their whole tiles take the fast copy paths.
static bool nhd_pow2(int layout, int page_size) {
  return layout == L_CONTIG_NHD || layout == L_RAGGED_NHD ||
         (layout == L_PAGED_NHD && page_size > 0 && !(page_size & (page_size - 1)));
}

// Caches whose whole tiles the maps cover: those, fp16/bf16, pages of 8 keys or more.
static bool tma_layout(int layout, int page_size, int dtype) {
  return nhd_pow2(layout, page_size) && dtype != DKB_KDT_F32 && (layout != L_PAGED_NHD || page_size >= 8);
}

// The producer over hp = 2 or 4 K/V heads a CTA, or null: what it needs of any call is whole groups of hp
// heads and no FlashMask (its summaries are of whole 64-key tiles); the planner (dkb_decode_hp_max) and the
// launcher (producer_for) both ask it.
static const Heads *heads_for(const Instance &in, int hp, int H_kv, int mask_kind) {
  const Heads *h = hp == 2 ? &in.heads[0] : hp == 4 ? &in.heads[1] : nullptr;
  return h && h->fn && H_kv % hp == 0 && mask_kind != M_FLASHMASK ? h : nullptr;
}

// Whole tiles of every head take TMA boxes or the cp.async fast path (1-key pages too); HND caches, whose fast
// path would serve several heads as well, were never timed so.
extern "C" int dkb_decode_hp_max(int dtype, int dk, int dv, int rows, int H_kv, int mask_kind, int layout, int page_size) {
  Instance in;
  if (!pick(dtype, dk, dv, rows, &in) || !nhd_pow2(layout, page_size)) return 1;
  return heads_for(in, 4, H_kv, mask_kind) ? 4 : heads_for(in, 2, H_kv, mask_kind) ? 2 : 1;
}

extern "C" int dkb_decode_three_room(int dtype, int dk, int dv, int rows) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) && in.three.fn ? in.three.room : 0;
}

extern "C" int dkb_decode_eight_room(int dtype, int dk, int dv, int rows) {
  Instance in;
  return pick(dtype, dk, dv, rows, &in) && in.eight.fn ? in.eight.room : 0;
}

// CTAs per SM the producer holds (the one built for three CTAs an SM where `three`); both instantiations (with
// and without the early first tile, producer_for) are asked, and the smaller count is the answer: the caller
// knows no layout. 0 where there is no such producer or the device cannot be asked.
static int occupancy(int dtype, int dk, int dv, int rows, bool three) {
  int best = 0;
  for (int early = 0; early < 2; early++) {
    Instance in;
    if (!pick(dtype, dk, dv, rows, &in, early)) return 0;
    const producer_fn fn = three ? in.three.fn : in.fn;
    const int smem = three ? in.three.smem : in.smem;
    if (!fn || cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)fn, in.nt, smem) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    if (early == 0 || n < best) best = n;
  }
  return best;
}
extern "C" int dkb_decode_occupancy(int dtype, int dk, int dv, int rows) { return occupancy(dtype, dk, dv, rows, false); }
extern "C" int dkb_decode_three_occupancy(int dtype, int dk, int dv, int rows) { return occupancy(dtype, dk, dv, rows, true); }

// The producer a launch with these parameters runs (the fused one when the plan merges in the producer),
// or null when there is none; in->smem is then what it asks for.
static producer_fn producer_for(const dkb_decode_params &p, Instance *in) {
  if (!pick(p.dtype, p.dk, p.dv, (p.H_q / p.H_kv) * p.C, in, p.layout == L_CONTIG_NHD || p.layout == L_RAGGED_NHD)) return nullptr;
  if (p.three) {
    if (!in->three.fn || p.hp > 1 || !p.direct || p.fused) return nullptr;
    in->smem = in->three.smem;
    return in->three.fn;
  }
  if (p.eight) {
    if (!in->eight.fn || p.hp > 1 || p.fused || p.mask_kind == M_FLASHMASK) return nullptr;
    in->smem = in->eight.smem;
    in->nt = in->eight.nt;
    return in->eight.fn;
  }
  if (p.hp > 1) {
    const Heads *h = heads_for(*in, p.hp, p.H_kv, p.mask_kind);
    if (!h || !p.direct || p.fused) return nullptr;
    if (p.max_item_pages > h->room) in->smem = h->smem;
    return h->fn;
  }
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
  if (!tma_layout(p.layout, p.page_size, p.dtype)) return;
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
  int br = paged && p.page_size < 64 ? p.page_size : 64;
  if (p.hp > 1 && br > 64 / p.hp) br = 64 / p.hp;  // a tile is 64 / hp keys of each head
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
  m->box_shift = __builtin_ctz((unsigned)br);
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
    dim3 grid((unsigned)(p->H_kv / (p->hp > 1 ? p->hp : 1)), ny, (unsigned)((p->n_items + 65534) / 65535));
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
