/* fi.h - the adapter's inside: what adapter.cu (the C ABI of include/dkb/backend.h) hands to the
 * translation units that instantiate FlashInfer's templates, one per path, dtype and head dim
 * (inst/decode_*.cu, inst/prefill_*.cu), and what they hand back. No FlashInfer header is included
 * here, so the ABI side compiles without the upstream's templates; each instance calls FlashInfer's
 * own planner and dispatcher (decode.cuh, prefill.cuh, scheduler.cuh) as its JIT bindings do. */
#ifndef DKB_PLUGIN_FLASHINFER_FI_H
#define DKB_PLUGIN_FLASHINFER_FI_H

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace dkbfi {

/* The two backends: FlashInfer's CUDA-core batch decode (BatchDecodeWithPagedKVCacheDispatched) and
 * its tensor-core decode, the FA2 batch-prefill kernel with one query row per request (what
 * BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True) runs for fp16/bf16). */
enum Path { kCudaCore = 0, kTensorCore = 1 };
enum KvLayout { kNHD = 0, kHND = 1 };  /* flashinfer::QKVLayout's values */
/* DKB_ABI_F16 and DKB_ABI_BF16 (adapter.cu checks): the instances do not include dkb/backend.h, so a
 * change of the ABI header recompiles the adapter, not FlashInfer's templates. */
enum Dtype { kF16 = 0, kBF16 = 1 };

/* One call as FlashInfer sees it: a paged K/V cache with a CSR page table, its host copy built by
 * adapter.cu from whichever layout dkb's call has (page_table.cu, csr_build). */
struct Problem {
  int path;                    /* enum Path */
  int dtype;                   /* enum Dtype: Q, K, V and O */
  int head_dim;                /* d_qk == d_v */
  bool sliding_window;         /* the DefaultAttention<_, true, _, _> instantiation */
  int32_t window_left;         /* FlashInfer's: -1 none, else dkb's window - 1 */
  uint32_t batch, num_qo_heads, num_kv_heads;
  uint32_t page_size;
  int kv_layout;               /* enum KvLayout */
  bool cuda_graph;             /* FlashInfer's enable_cuda_graph: dkb's graph mode */
  double sm_scale;
  std::vector<int32_t> indptr;        /* [B+1] pages of request b: indices[indptr[b], indptr[b+1]) */
  std::vector<int32_t> indices;       /* [indptr[B]] page ids */
  std::vector<int32_t> last_page_len; /* [B] 1..page_size */
  /* tensor-core path: PrefillPlan's fixed_split_size (pages, > 0 to fix) and disable_split_kv */
  int32_t fixed_split_pages;
  bool disable_split_kv;
};

/* FlashInfer's plan of a Problem as its planner makes it, computed on the host (MATERIALIZE=false:
 * offsets and sizes only, no device memory written). */
struct Plan {
  std::vector<int64_t> info;   /* DecodePlanInfo::ToVector() (10) or PrefillPlanInfo::ToVector() (15) */
  uint64_t float_bytes;        /* tmp_v + tmp_s, only when split_kv */
  uint64_t int_bytes;          /* request/tile indices, o_indptr, chunk size, ... */
  bool split_kv;
  int64_t padded_batch_size;   /* the producer grid's x */
  int64_t work_items;          /* real (request, chunk) items: new_batch_size */
  int64_t kv_chunk_tokens;     /* keys per chunk (the planner's chunk in pages x page_size) */
  int64_t max_grid_size;       /* the CUDA-core planner's occupancy x SMs; 0 on the tensor-core path */
  int32_t cta_tile_q;          /* tensor-core path: the planner's CTA_TILE_Q */
  std::vector<int32_t> chunks; /* [B] K/V chunks of each request */
  uint32_t block[3];           /* the producer's block, as FlashInfer's dispatcher computes it */
};

/* Device pointers of one launch. */
struct Buffers {
  const void *q;
  void *o;
  float *lse;                  /* NULL: no LSE */
  void *k, *v;
  int32_t *indptr, *indices, *last_page_len;  /* the CSR table on the device */
  int32_t *q_indptr;           /* tensor-core path: [B+1] = 0..B */
  void *float_ws, *int_ws;
};

/* One compiled instantiation. Every function may throw flashinfer::Error (FLASHINFER_ERROR); adapter.cu
 * catches at the ABI boundary. */
struct Instance {
  int path, dtype, head_dim;
  bool sliding_window;
  /* FlashInfer's planner in counting mode: host only, may query occupancy */
  cudaError_t (*plan)(const Problem &p, Plan &out);
  /* FlashInfer's DecodePlan/PrefillPlan into the workspaces: fills pinned, copies it to int_ws on the
   * stream (asynchronously); info receives the plan info it computed */
  cudaError_t (*setup)(const Problem &p, const Plan &plan, void *float_ws, void *int_ws, void *pinned,
                       cudaStream_t stream, std::vector<int64_t> &info);
  /* BatchDecodeWithPagedKVCacheDispatched / BatchPrefillWithPagedKVCacheDispatched: enqueue only */
  cudaError_t (*run)(const Problem &p, const Plan &plan, const Buffers &b, cudaStream_t stream);
};

/* the instances of inst/, listed in adapter.cu */
extern const Instance *const kInstances[];
extern const int kNumInstances;

}  // namespace dkbfi

#endif
