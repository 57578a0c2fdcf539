/* decode_inst.cuh - FlashInfer's CUDA-core batch decode with a paged K/V cache for one dtype, head dim
 * and window flag: the planner (DecodePlanImpl / DecodePlan with the work estimation its binding
 * picks inside DISPATCH_GQA_GROUP_SIZE) and the launch (BatchDecodeWithPagedKVCacheDispatched), called
 * as csrc/batch_decode.cu calls them, with the Params struct its JIT renders
 * (csrc/batch_decode_customize_config.jinja plus gen_batch_decode_module's extras). Included by
 * one decode file of inst/ each, which names the instance with DKBFI_DECODE_INSTANCE. */
#ifndef DKB_PLUGIN_FLASHINFER_DECODE_INST_CUH
#define DKB_PLUGIN_FLASHINFER_DECODE_INST_CUH

#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <flashinfer/page.cuh>

#include <algorithm>

#include "plugins/flashinfer/fi.h"

namespace dkbfi {

/* The JIT's `struct Params`, field for field, as a template: the JIT builds one module (one .so) per
 * dtype, so its one name is unique there; here every instance lives in one library, and a template
 * keeps each dtype's kernels distinct symbols (one `Params` per translation unit would collide). */
template <typename DTypeQ_, typename DTypeKV_, typename DTypeO_, typename IdType_>
struct DecodeParams {
  using DTypeQ = DTypeQ_;
  using DTypeKV = DTypeKV_;
  using DTypeO = DTypeO_;
  using IdType = IdType_;

  DTypeQ *q;
  flashinfer::paged_kv_t<DTypeKV, IdType> paged_kv;
  DTypeO *o;
  float *lse;

  /* additional_params_decl of the default module */
  float *maybe_alibi_slopes;
  double logits_soft_cap;
  double sm_scale;
  double rope_rcp_scale;
  double rope_rcp_theta;

  uint32_t padded_batch_size;
  uint32_t num_qo_heads;
  IdType q_stride_n;
  IdType q_stride_h;
  int32_t window_left;
  bool enable_pdl;

  IdType *request_indices;
  IdType *kv_tile_indices;
  IdType *o_indptr;
  IdType *kv_chunk_size_ptr;
  bool *block_valid_mask;
  bool partition_kv;

  __host__ __device__ __forceinline__ int32_t get_qo_len(int32_t batch_idx) const { return 1; }

  __host__ __device__ __forceinline__ int32_t get_kv_len(int32_t batch_idx) const {
    return paged_kv.get_length(batch_idx);
  }
};

template <typename DT, uint32_t HEAD_DIM, bool SWA>
struct DecodeTraits {
  using Params = DecodeParams<DT, DT, DT, int32_t>;
  /* gen_batch_decode_module: DefaultAttention<false, use_sliding_window, use_logits_soft_cap, alibi> */
  using Variant = flashinfer::DefaultAttention<false, SWA, false, false>;
  static constexpr flashinfer::PosEncodingMode kPos = flashinfer::PosEncodingMode::kNone;

  /* f(work_estimation_func) with the estimation of this group size, as the binding picks it. */
  template <typename F>
  static cudaError_t with_estimation(uint32_t group_size, F f) {
    DISPATCH_GQA_GROUP_SIZE(group_size, GROUP_SIZE, {
      return f(flashinfer::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<GROUP_SIZE, HEAD_DIM, kPos,
                                                                               Variant, Params>);
    });
    return cudaErrorInvalidValue; /* not reached: the macro throws for other group sizes */
  }

  static void block_of(uint32_t group_size, uint32_t block[3]) {
    /* BatchDecodeWithPagedKVCacheDispatched's vec_size, bdx, bdy, bdz */
    constexpr uint32_t vec_size = std::max(16UL / sizeof(DT), HEAD_DIM / 32UL);
    constexpr uint32_t bdx = HEAD_DIM / vec_size;
    const uint32_t bdy = group_size;
    const uint32_t threads = std::max(128U, bdx * bdy);
    block[0] = bdx;
    block[1] = bdy;
    block[2] = threads / (bdx * bdy);
  }
};

/* Instance::plan: DecodePlanImpl in counting mode */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t decode_plan(const Problem &p, Plan &out) {
  using T = DecodeTraits<DT, HEAD_DIM, SWA>;
  std::vector<int32_t> indptr(p.indptr); /* the planner takes a non-const pointer */
  const uint32_t group = p.num_qo_heads / p.num_kv_heads;
  flashinfer::DecodePlanInfo info;
  size_t float_bytes = 0, int_bytes = 0;
  uint32_t chunk_pages = 0, new_batch_size = 0, max_grid_size = 0;
  cudaError_t st = T::with_estimation(group, [&](auto est) -> cudaError_t {
    /* the estimation once more for the figures DecodePlanInfo does not keep (the same call
     * DecodePlanImpl makes first) */
    bool split = false;
    uint32_t gdy = 0;
    FLASHINFER_CUDA_CALL(est(split, max_grid_size, chunk_pages, new_batch_size, gdy, p.batch, indptr.data(),
                             p.num_qo_heads, p.page_size, p.cuda_graph, nullptr));
    return flashinfer::DecodePlanImpl<false, HEAD_DIM, T::kPos, typename T::Variant, typename T::Params>(
        float_bytes, int_bytes, nullptr, 0, nullptr, nullptr, 0, info, indptr.data(), p.batch, p.num_qo_heads,
        p.page_size, p.cuda_graph, nullptr, est);
  });
  if (st != cudaSuccess) return st;
  out.info = info.ToVector();
  out.float_bytes = float_bytes;
  out.int_bytes = int_bytes;
  out.split_kv = info.split_kv;
  out.padded_batch_size = info.padded_batch_size;
  out.work_items = new_batch_size;
  out.kv_chunk_tokens = (int64_t)chunk_pages * p.page_size;
  out.max_grid_size = max_grid_size;
  out.cta_tile_q = 0;
  auto [req, tiles, o_indptr] = flashinfer::DecodeSplitKVIndptr(indptr.data(), p.batch, chunk_pages);
  (void)req;
  (void)tiles;
  out.chunks.resize(p.batch);
  for (uint32_t b = 0; b < p.batch; b++) out.chunks[b] = o_indptr[b + 1] - o_indptr[b];
  T::block_of(group, out.block);
  return cudaSuccess;
}

/* Instance::setup: DecodePlan into the workspaces */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t decode_setup(const Problem &p, const Plan &plan, void *float_ws, void *int_ws, void *pinned,
                         cudaStream_t stream, std::vector<int64_t> &info_out) {
  using T = DecodeTraits<DT, HEAD_DIM, SWA>;
  std::vector<int32_t> indptr(p.indptr);
  flashinfer::DecodePlanInfo info;
  cudaError_t st = T::with_estimation(p.num_qo_heads / p.num_kv_heads, [&](auto est) -> cudaError_t {
    return flashinfer::DecodePlan<HEAD_DIM, T::kPos, typename T::Variant, typename T::Params>(
        float_ws, plan.float_bytes, int_ws, pinned, plan.int_bytes, info, indptr.data(), p.batch, p.num_qo_heads,
        p.page_size, p.cuda_graph, stream, est);
  });
  info_out = info.ToVector();
  return st;
}

/* Instance::run: csrc/batch_decode.cu BatchDecodeWithPagedKVCacheRun, from `Params params;` to the
 * dispatch */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t decode_run(const Problem &p, const Plan &plan, const Buffers &b, cudaStream_t stream) {
  using T = DecodeTraits<DT, HEAD_DIM, SWA>;
  flashinfer::DecodePlanInfo info;
  info.FromVector(plan.info);
  typename T::Params params;
  params.q = static_cast<DT *>(const_cast<void *>(b.q));
  params.paged_kv = flashinfer::paged_kv_t<DT, int32_t>(
      p.num_kv_heads, p.page_size, HEAD_DIM, p.batch, static_cast<flashinfer::QKVLayout>(p.kv_layout),
      static_cast<DT *>(b.k), static_cast<DT *>(b.v), b.indices, b.indptr, b.last_page_len);
  params.o = static_cast<DT *>(b.o);
  params.lse = b.lse;
  params.maybe_alibi_slopes = nullptr;
  params.logits_soft_cap = 0.0;
  params.sm_scale = p.sm_scale;
  params.rope_rcp_scale = 1.0;   /* 1 / rope_scale, unused with PosEncodingMode::kNone */
  params.rope_rcp_theta = 1e-4;  /* 1 / rope_theta, likewise */
  params.padded_batch_size = 0;
  params.num_qo_heads = p.num_qo_heads;
  params.q_stride_n = (int32_t)(p.num_qo_heads * HEAD_DIM); /* q [B][H_q][d] */
  params.q_stride_h = HEAD_DIM;
  params.window_left = p.window_left;
  params.enable_pdl = false;
  params.request_indices = nullptr;
  params.kv_tile_indices = nullptr;
  params.o_indptr = nullptr;
  params.kv_chunk_size_ptr = nullptr;
  params.block_valid_mask = nullptr;
  params.partition_kv = false;

  DT *tmp_v = nullptr;
  float *tmp_s = nullptr;
  params.request_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.request_indices_offset);
  params.kv_tile_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.kv_tile_indices_offset);
  params.o_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.o_indptr_offset);
  params.kv_chunk_size_ptr = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.kv_chunk_size_ptr_offset);
  if (info.split_kv) {
    tmp_v = flashinfer::GetPtrFromBaseOffset<DT>(b.float_ws, info.v_offset);
    tmp_s = flashinfer::GetPtrFromBaseOffset<float>(b.float_ws, info.s_offset);
    if (info.enable_cuda_graph)
      params.block_valid_mask = flashinfer::GetPtrFromBaseOffset<bool>(b.int_ws, info.block_valid_mask_offset);
  }
  params.padded_batch_size = info.padded_batch_size;
  /* enable_pdl false: dkb orders its launches on one stream and times them with events */
  return flashinfer::BatchDecodeWithPagedKVCacheDispatched<HEAD_DIM, T::kPos, typename T::Variant>(
      params, tmp_v, tmp_s, /*enable_pdl=*/false, stream);
}

}  // namespace dkbfi

/* One instance object, named NAME, of the CUDA-core decode for DT (half or nv_bfloat16, DTYPE its dkb
 * enum), HEAD_DIM and SWA. */
#define DKBFI_DECODE_INSTANCE(NAME, DT, DTYPE, HEAD_DIM, SWA) \
  namespace dkbfi {                                          \
  extern const Instance NAME;                                \
  const Instance NAME = {kCudaCore, DTYPE, HEAD_DIM, SWA, &decode_plan<DT, HEAD_DIM, SWA>,   \
                         &decode_setup<DT, HEAD_DIM, SWA>, &decode_run<DT, HEAD_DIM, SWA>};  \
  }

#endif
