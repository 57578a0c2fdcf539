// mask.cuh - the mask program on the GPU: visibility of one key and the class of a tile
// (oracles/mask.c).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/base.cuh"

namespace {

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

}  // namespace
