/* prefill_inst.cuh - FlashInfer's tensor-core decode for one dtype, head dim and window flag: the FA2
 * batch-prefill kernel over a paged K/V cache with one query row per request, planned with PrefillPlan
 * and launched with BatchPrefillWithPagedKVCacheDispatched exactly as BatchDecodeWithPagedKVCacheWrapper
 * (use_tensor_cores=True, backend "fa2") has csrc/batch_prefill.cu and batch_prefill_paged.cuh do it:
 * qo_indptr = 0..B, total_num_rows = B, MaskMode::kNone (decode.py passes causal only for several
 * query rows per request), the Params of csrc/batch_prefill_customize_config.jinja with the fa2 module's
 * extras (jit/attention/modules.py _gen_batch_prefill_module). Only CTA_TILE_Q = 16 is built: what
 * FA2DetermineCtaTileQ picks on sm_80+ for one query row and a GQA group of at most 16 (packed rows
 * <= 16), for every head dim built here; plan() checks the planner agrees. Included by
 * one prefill file of inst/ each. */
#ifndef DKB_PLUGIN_FLASHINFER_PREFILL_INST_CUH
#define DKB_PLUGIN_FLASHINFER_PREFILL_INST_CUH

#include <flashinfer/attention/mask.cuh>
#include <flashinfer/attention/prefill.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <flashinfer/fastdiv.cuh>
#include <flashinfer/page.cuh>

#include "plugins/flashinfer/fi.h"

namespace dkbfi {

constexpr uint32_t kTcCtaTileQ = 16;

/* The jinja's `struct PagedParams`, field for field (a template for the reason DecodeParams is one). */
template <typename DTypeQ_, typename DTypeKV_, typename DTypeO_, typename IdType_>
struct PrefillPagedParams {
  using DTypeQ = DTypeQ_;
  using DTypeKV = DTypeKV_;
  using DTypeO = DTypeO_;
  using IdType = IdType_;

  DTypeQ *q;
  flashinfer::paged_kv_t<DTypeKV, IdType> paged_kv;
  IdType *q_indptr;
  DTypeO *o;
  float *lse;
  flashinfer::uint_fastdiv group_size;

  /* additional_params_decl of the fa2 module */
  uint8_t *maybe_custom_mask;
  int32_t *maybe_mask_indptr;
  float *maybe_alibi_slopes;
  uint32_t *maybe_prefix_len_ptr;
  uint16_t *maybe_token_pos_in_items_ptr;
  uint16_t *maybe_max_item_len_ptr;
  uint8_t *maybe_k_cache_sf;
  uint8_t *maybe_v_cache_sf;
  double logits_soft_cap;
  double sm_scale;
  double rope_rcp_scale;
  double rope_rcp_theta;
  int64_t token_pos_in_items_len;

  uint32_t num_qo_heads;
  IdType q_stride_n;
  IdType q_stride_h;
  uint32_t k_sf_stride_page;
  uint32_t k_sf_stride_n;
  uint32_t k_sf_stride_h;
  uint32_t v_sf_stride_page;
  uint32_t v_sf_stride_n;
  uint32_t v_sf_stride_h;
  int32_t window_left;

  IdType *request_indices;
  IdType *qo_tile_indices;
  IdType *kv_tile_indices;
  IdType *merge_indptr;
  IdType *o_indptr;
  bool *block_valid_mask;
  IdType *kv_chunk_size_ptr;
  uint32_t max_total_num_rows;
  uint32_t *total_num_rows;
  uint32_t padded_batch_size;
  bool partition_kv;

  __host__ __device__ __forceinline__ uint32_t get_qo_len(uint32_t batch_idx) const {
    return q_indptr[batch_idx + 1] - q_indptr[batch_idx];
  }

  __host__ __device__ __forceinline__ uint32_t get_kv_len(uint32_t batch_idx) const {
    return paged_kv.get_length(batch_idx);
  }
};

/* qo_indptr of one query row per request: 0..B */
inline std::vector<int32_t> prefill_qo_indptr(uint32_t batch) {
  std::vector<int32_t> v(batch + 1);
  for (uint32_t i = 0; i <= batch; i++) v[i] = (int32_t)i;
  return v;
}

/* Instance::plan: PrefillPlanImpl in counting mode */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t prefill_plan(const Problem &p, Plan &out) {
  std::vector<int32_t> qo = prefill_qo_indptr(p.batch), kv(p.indptr);
  flashinfer::PrefillPlanInfo info;
  size_t float_bytes = 0, int_bytes = 0;
  cudaError_t st = flashinfer::PrefillPlanImpl<false, int32_t>(
      float_bytes, int_bytes, nullptr, 0, nullptr, nullptr, 0, info, qo.data(), kv.data(), p.batch, p.batch,
      p.num_qo_heads, p.num_kv_heads, HEAD_DIM, HEAD_DIM, p.page_size, p.cuda_graph, /*sizeof_dtype_o=*/2,
      p.window_left, p.fixed_split_pages > 0 ? p.fixed_split_pages : -1, p.disable_split_kv,
      /*num_colocated_ctas=*/0, /*uniform_q_len=*/0, nullptr, /*kv_dtype_bytes=*/sizeof(DT));
  if (st != cudaSuccess) return st;
  /* the split itself, for the figures PrefillPlanInfo does not keep: PrefillSplitQOKVIndptr with the
   * arguments PrefillPlanImpl gives it (2 CTAs per SM over the K/V heads) */
  int dev = 0, sms = 0;
  FLASHINFER_CUDA_CALL(cudaGetDevice(&dev));
  FLASHINFER_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const uint32_t max_batch_size_if_split = (uint32_t)(2 * sms) / p.num_kv_heads;
  auto [split_kv, new_batch_size, padded_batch_size, cta_tile_q, kv_chunk_size, req, qo_tiles, kv_tiles, merge,
        o_indptr] =
      flashinfer::PrefillSplitQOKVIndptr(qo.data(), kv.data(), p.batch, p.batch, p.num_qo_heads, p.num_kv_heads,
                                         HEAD_DIM, p.page_size, max_batch_size_if_split, p.cuda_graph,
                                         p.window_left, p.fixed_split_pages > 0 ? p.fixed_split_pages : -1,
                                         p.disable_split_kv, /*uniform_q_len=*/0, HEAD_DIM, sizeof(DT));
  (void)qo_tiles;
  (void)kv_tiles;
  (void)merge;
  if (split_kv != info.split_kv || (int64_t)padded_batch_size != info.padded_batch_size ||
      (int64_t)cta_tile_q != info.cta_tile_q) {
    FLASHINFER_ERROR("PrefillSplitQOKVIndptr disagrees with PrefillPlanImpl on the split");
  }
  out.info = info.ToVector();
  out.float_bytes = float_bytes;
  out.int_bytes = int_bytes;
  out.split_kv = info.split_kv;
  out.padded_batch_size = info.padded_batch_size;
  out.work_items = new_batch_size;
  out.kv_chunk_tokens = kv_chunk_size;
  out.max_grid_size = 0;
  out.cta_tile_q = (int32_t)info.cta_tile_q;
  out.chunks.assign(p.batch, 0);
  for (int32_t r : req) out.chunks[r]++;
  (void)o_indptr;
  /* BatchPrefillWithPagedKVCacheDispatched: nthrs(32, NUM_WARPS_Q, NUM_WARPS_KV) */
  out.block[0] = 32;
  out.block[1] = flashinfer::get_num_warps_q(kTcCtaTileQ);
  out.block[2] = flashinfer::get_num_warps_kv(kTcCtaTileQ);
  return cudaSuccess;
}

/* Instance::setup: PrefillPlan into the workspaces */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t prefill_setup(const Problem &p, const Plan &plan, void *float_ws, void *int_ws, void *pinned,
                          cudaStream_t stream, std::vector<int64_t> &info_out) {
  std::vector<int32_t> qo = prefill_qo_indptr(p.batch), kv(p.indptr);
  flashinfer::PrefillPlanInfo info;
  cudaError_t st = flashinfer::PrefillPlan<int32_t>(
      float_ws, plan.float_bytes, int_ws, pinned, plan.int_bytes, info, qo.data(), kv.data(), p.batch, p.batch,
      p.num_qo_heads, p.num_kv_heads, HEAD_DIM, HEAD_DIM, p.page_size, p.cuda_graph, /*sizeof_dtype_o=*/2,
      p.window_left, p.fixed_split_pages > 0 ? p.fixed_split_pages : -1, p.disable_split_kv,
      /*num_colocated_ctas=*/0, /*uniform_q_len=*/0, stream, /*kv_dtype_bytes=*/sizeof(DT));
  info_out = info.ToVector();
  return st;
}

/* Instance::run: batch_prefill_paged.cuh BatchPrefillWithPagedKVCacheRun, from `PagedParams params;`
 * to the dispatch (PAGED_KV_STRIDE_MODE_EQUAL: dkb's K and V share their strides) */
template <typename DT, uint32_t HEAD_DIM, bool SWA>
cudaError_t prefill_run(const Problem &p, const Plan &plan, const Buffers &b, cudaStream_t stream) {
  using Params = PrefillPagedParams<DT, DT, DT, int32_t>;
  using Variant = flashinfer::DefaultAttention<false, SWA, false, false>;
  flashinfer::PrefillPlanInfo info;
  info.FromVector(plan.info);
  if (info.cta_tile_q != kTcCtaTileQ) {
    FLASHINFER_ERROR("the plan's cta_tile_q is not the one built (16)");
  }
  Params params;
  params.q = static_cast<DT *>(const_cast<void *>(b.q));
  params.paged_kv = flashinfer::paged_kv_t<DT, int32_t>(
      p.num_kv_heads, p.page_size, HEAD_DIM, p.batch, static_cast<flashinfer::QKVLayout>(p.kv_layout),
      static_cast<DT *>(b.k), static_cast<DT *>(b.v), b.indices, b.indptr, b.last_page_len);
  params.q_indptr = b.q_indptr;
  params.o = static_cast<DT *>(b.o);
  params.lse = b.lse;
  params.num_qo_heads = p.num_qo_heads;
  params.group_size = flashinfer::uint_fastdiv(p.num_qo_heads / p.num_kv_heads);
  params.maybe_custom_mask = nullptr;
  params.maybe_mask_indptr = nullptr;
  params.maybe_alibi_slopes = nullptr;
  params.maybe_prefix_len_ptr = nullptr;
  params.maybe_token_pos_in_items_ptr = nullptr;
  params.maybe_max_item_len_ptr = nullptr;
  params.maybe_k_cache_sf = nullptr;
  params.maybe_v_cache_sf = nullptr;
  params.logits_soft_cap = 0.0;
  params.sm_scale = p.sm_scale;
  params.rope_rcp_scale = 1.0;
  params.rope_rcp_theta = 1e-4;
  params.token_pos_in_items_len = 0;
  params.q_stride_n = (int32_t)(p.num_qo_heads * HEAD_DIM); /* q [B][H_q][d] */
  params.q_stride_h = HEAD_DIM;
  params.window_left = p.window_left;
  params.request_indices = nullptr;
  params.qo_tile_indices = nullptr;
  params.kv_tile_indices = nullptr;
  params.merge_indptr = nullptr;
  params.o_indptr = nullptr;
  params.kv_chunk_size_ptr = nullptr;
  params.block_valid_mask = nullptr;
  params.total_num_rows = nullptr;
  params.max_total_num_rows = 0;
  params.padded_batch_size = 0;
  params.partition_kv = false;
  params.k_sf_stride_page = 0;
  params.k_sf_stride_n = 0;
  params.k_sf_stride_h = 0;
  params.v_sf_stride_page = 0;
  params.v_sf_stride_n = 0;
  params.v_sf_stride_h = 0;

  DT *tmp_v = nullptr;
  float *tmp_s = nullptr;
  params.request_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.request_indices_offset);
  params.qo_tile_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.qo_tile_indices_offset);
  params.kv_tile_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.kv_tile_indices_offset);
  params.o_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.o_indptr_offset);
  params.kv_chunk_size_ptr = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.kv_chunk_size_ptr_offset);
  if (info.split_kv) {
    params.merge_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(b.int_ws, info.merge_indptr_offset);
    tmp_v = flashinfer::GetPtrFromBaseOffset<DT>(b.float_ws, info.v_offset);
    tmp_s = flashinfer::GetPtrFromBaseOffset<float>(b.float_ws, info.s_offset);
  }
  params.padded_batch_size = info.padded_batch_size;
  params.max_total_num_rows = info.total_num_rows;
  if (info.enable_cuda_graph) {
    params.block_valid_mask = flashinfer::GetPtrFromBaseOffset<bool>(b.int_ws, info.block_valid_mask_offset);
    params.total_num_rows = flashinfer::GetPtrFromBaseOffset<uint32_t>(b.int_ws, info.total_num_rows_offset);
  }
  return flashinfer::BatchPrefillWithPagedKVCacheDispatched<
      /*SAME_KV_STRIDES=*/true, kTcCtaTileQ, HEAD_DIM, HEAD_DIM, flashinfer::PosEncodingMode::kNone,
      /*USE_FP16_QK_REDUCTION=*/false, flashinfer::MaskMode::kNone, Variant, Params>(params, tmp_v, tmp_s,
                                                                                       /*enable_pdl=*/false, stream);
}

}  // namespace dkbfi

#define DKBFI_PREFILL_INSTANCE(NAME, DT, DTYPE, HEAD_DIM, SWA) \
  namespace dkbfi {                                           \
  extern const Instance NAME;                                 \
  const Instance NAME = {kTensorCore, DTYPE, HEAD_DIM, SWA, &prefill_plan<DT, HEAD_DIM, SWA>,  \
                         &prefill_setup<DT, HEAD_DIM, SWA>, &prefill_run<DT, HEAD_DIM, SWA>}; \
  }

#endif
