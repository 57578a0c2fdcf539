/* admit.cu - the admission rule of both FlashInfer backends (adapter.h): what the instances compiled
 * under inst/ and FlashInfer's 32-bit page arithmetic can run, each refusal a reason in backend.h's
 * factor order. Host code only. */
#include "plugins/flashinfer/adapter.h"

#include <cinttypes>
#include <string>

namespace dkbfi {

const char *dtype_name(int t) {
  return t == DKB_ABI_F16 ? "fp16" : t == DKB_ABI_BF16 ? "bf16" : t == DKB_ABI_F32 ? "fp32" : "unknown";
}

const Instance *find_instance(int path, int dtype, int head_dim, bool swa) {
  for (int i = 0; i < kNumInstances; i++) {
    const Instance *x = kInstances[i];
    if (x->path == path && x->dtype == dtype && x->head_dim == head_dim && x->sliding_window == swa) return x;
  }
  return nullptr;
}

namespace {

/* FlashInfer's page arithmetic is 32-bit: paged_kv_t's strides are uint32_t, and the decode kernel's
 * packed page iterator (indptr[b] * page_size + key, uint32_t, compared as int32 IdType with the last
 * indptr) runs up to a tile of prefetch past a request's last key. Calls are admitted only while that
 * stays below 2^31 with this much room to spare (more than any tile FlashInfer prefetches). */
constexpr int64_t kPageIterSlack = 1 << 16;
constexpr int64_t kInt31 = (int64_t)1 << 31;
constexpr int64_t kUint32 = (int64_t)1 << 32;

/* "64, 128, 256": the head dims built for a path and dtype */
std::string built_head_dims(int path, int dtype) {
  std::string s;
  for (int i = 0; i < kNumInstances; i++) {
    const Instance *x = kInstances[i];
    if (x->path != path || x->dtype != dtype || x->sliding_window) continue;
    if (!s.empty()) s += ", ";
    s += std::to_string(x->head_dim);
  }
  return s.empty() ? "none" : s;
}

/* The page size FlashInfer is given for a layout (csr_build): what its planner splits in. */
int64_t flashinfer_page_size(const struct dkb_call *c) {
  switch (c->layout) {
  case DKB_ABI_PAGED_NHD:
  case DKB_ABI_PAGED_HND: return c->page_size;
  case DKB_ABI_CONTIGUOUS_HND: return c->T_cap;
  default: return 1;
  }
}

/* The most K/V chunks FlashInfer's planners can cut a request into (scheduler.cuh). Both binary-search
 * a chunk of at least max(128 / page_size, 1) pages, and stop at the smallest chunk whose work items
 * fit their grid: the CUDA-core planner's occupancy x SMs over the K/V heads (its CTAs have at least
 * 128 threads, so at most 16 are resident per SM of 2048 threads), the tensor-core planner's 2 CTAs
 * per SM over the K/V heads. */
int64_t max_planner_splits(int path, const struct dkb_call *c) {
  const int64_t P = flashinfer_page_size(c);
  if (P < 1 || c->max_kv_len < 1) return 1;
  const int64_t pages = (c->max_kv_len + P - 1) / P;
  const int64_t lb = P >= 128 ? 1 : 128 / P;
  int64_t most = (pages + lb - 1) / lb;
  if (c->sm_count > 0 && c->H_kv > 0) {
    const int64_t grid = (path == kCudaCore ? 16 : 2) * (int64_t)c->sm_count / c->H_kv;
    const int64_t cap = grid > 1 ? grid : 1;
    most = most < cap ? most : cap;
  }
  return most;
}

bool cuda_core_group(int64_t g) { return g == 1 || g == 2 || g == 3 || g == 4 || g == 6 || g == 8 || g == 16; }

void admit_layout(const struct dkb_call *c, dkb_reasons &r) {
  const int64_t d = c->d_qk, H = c->H_kv;
  switch (c->layout) {
  case DKB_ABI_PAGED_NHD:
  case DKB_ABI_PAGED_HND:
    if (c->table != DKB_ABI_TABLE_DENSE && c->table != DKB_ABI_TABLE_CSR)
      r.add('L', "table=%d unsupported (dense or csr)", (int)c->table);
    if (c->page_size < 1) {
      r.add('L', "page_size=%" PRId64 " unsupported", c->page_size);
      break;
    }
    if (H * c->page_size * d >= kUint32)
      r.add('L', "page_size=%" PRId64 " unsupported: a page of %" PRId64 " elements exceeds uint32 strides",
            c->page_size, H * c->page_size * d);
    if (c->total_kv_len + (int64_t)c->B * c->page_size + kPageIterSlack >= kInt31)
      r.add('L', "total_kv_len=%" PRId64 " unsupported: flashinfer's page iterator is 32-bit", c->total_kv_len);
    if (c->num_pages >= kInt31) r.add('L', "num_pages=%" PRId64 " unsupported: page ids are int32", c->num_pages);
    break;
  case DKB_ABI_CONTIGUOUS_NHD: /* pages of one token */
    if (c->cache_rows * c->T_cap >= kInt31)
      r.add('L', "cache_rows*T_cap=%" PRId64 " unsupported: token page ids are int32", c->cache_rows * c->T_cap);
    if (c->total_kv_len + kPageIterSlack >= kInt31)
      r.add('L', "total_kv_len=%" PRId64 " unsupported: flashinfer's page iterator is 32-bit", c->total_kv_len);
    break;
  case DKB_ABI_CONTIGUOUS_HND: /* one page of T_cap tokens per request */
    if (H * c->T_cap * d >= kUint32)
      r.add('L', "T_cap=%" PRId64 " unsupported: a cache row of %" PRId64 " elements exceeds uint32 strides",
            c->T_cap, H * c->T_cap * d);
    if (((int64_t)c->B + 1) * c->T_cap + kPageIterSlack >= kInt31)
      r.add('L', "B*T_cap=%" PRId64 " unsupported: flashinfer's page iterator is 32-bit", (int64_t)c->B * c->T_cap);
    break;
  case DKB_ABI_RAGGED_NHD: /* pages of one token */
    if (c->total_kv_len + kPageIterSlack >= kInt31)
      r.add('L', "total_kv_len=%" PRId64 " unsupported: flashinfer's page iterator is 32-bit", c->total_kv_len);
    break;
  default: r.add('L', "layout=%d unsupported", (int)c->layout);
  }
}

void admit_split(int path, const struct dkb_call *c, dkb_reasons &r) {
  const int64_t P = flashinfer_page_size(c);
  switch (c->split_policy) {
  case DKB_ABI_SPLIT_AUTO: {
    const int64_t most = max_planner_splits(path, c);
    if (most > c->max_splits)
      r.add('C', "max_splits=%d unsupported: flashinfer's planner may cut a request into %" PRId64, (int)c->max_splits,
            most);
    break;
  }
  case DKB_ABI_SPLIT_FIXED:
    if (path == kCudaCore) r.add('C', "split=fixed unsupported (flashinfer's planner chooses the split)");
    else if (c->splits != 1)
      r.add('C', "split=fixed with splits=%d unsupported (flashinfer fixes a chunk, not a count)", (int)c->splits);
    break;
  case DKB_ABI_SPLIT_CHUNK:
    if (path == kCudaCore) r.add('C', "split=chunk unsupported (flashinfer's planner chooses the split)");
    else {
      if (P < 1 || c->chunk % P || c->chunk / P >= kInt31)
        r.add('C', "chunk=%" PRId64 " unsupported: not a multiple of flashinfer's page_size=%" PRId64, c->chunk, P);
      if (c->graph) r.add('C', "split=chunk unsupported with graph=true (flashinfer's padded grid)");
    }
    break;
  default: r.add('C', "split_policy=%d unsupported", (int)c->split_policy);
  }
}

}  // namespace

/* Every check in the factor order of backend.h; every reason is true of the instances compiled. */
void admit_call(int path, const struct dkb_call *c, dkb_reasons &r) {
  if (c->phase != DKB_ABI_DECODE) r.add('P', "phase=append unsupported");
  if (c->compute_capability < 0) r.add('H', "compute_capability unknown: no CUDA device");
  else if (c->compute_capability != 90)
    r.add('H', "compute_capability=%d unsupported (built for sm_90a only)", (int)c->compute_capability);
  const bool dtype_ok = c->dtype == DKB_ABI_F16 || c->dtype == DKB_ABI_BF16;
  if (!dtype_ok) r.add('D', "dtype=%s unsupported", dtype_name(c->dtype));
  if (c->kv_dtype != c->dtype)
    r.add('K', "kv_dtype=%s unsupported with dtype=%s (one storage dtype)", dtype_name(c->kv_dtype),
          dtype_name(c->dtype));
  if (c->q_len != 1) r.add('Q', "q_len=%d unsupported", (int)c->q_len);
  if (c->d_v != c->d_qk)
    r.add('Q', "head_dim_vo=%d unsupported with head_dim_qk=%d (equal head dims only)", (int)c->d_v, (int)c->d_qk);
  const bool built = dtype_ok && find_instance(path, c->dtype, c->d_qk, false);
  if (dtype_ok && !built)
    r.add('Q', "head_dim_qk=%d unsupported (built: %s)", (int)c->d_qk, built_head_dims(path, c->dtype).c_str());
  if (c->H_kv < 1 || c->H_q < 1 || c->H_q % c->H_kv) {
    r.add('G', "H_q=%d unsupported with H_kv=%d (not a multiple)", (int)c->H_q, (int)c->H_kv);
  } else {
    const int64_t g = c->H_q / c->H_kv;
    if (path == kCudaCore && !cuda_core_group(g))
      r.add('G', "group_size=%" PRId64 " unsupported (flashinfer dispatches 1, 2, 3, 4, 6, 8, 16)", g);
    if (path == kTensorCore && g > 16)
      r.add('G', "group_size=%" PRId64 " unsupported (built for cta_tile_q=16: groups up to 16)", g);
  }
  admit_layout(c, r);
  switch (c->mask_kind) {
  case DKB_ABI_MASK_NONE:
  case DKB_ABI_MASK_CAUSAL: break; /* one query row at the last key: causal hides nothing */
  case DKB_ABI_MASK_SLIDING_WINDOW:
    if (c->sink != 0) r.add('M', "sink=%" PRId64 " unsupported (window_left only)", c->sink);
    if (c->window < 1 || c->window > INT32_MAX)
      r.add('M', "window=%" PRId64 " unsupported (window_left is int32)", c->window);
    if (built && !find_instance(path, c->dtype, c->d_qk, true))
      r.add('M', "mask=sliding_window unsupported: not built for head_dim=%d", (int)c->d_qk);
    break;
  case DKB_ABI_MASK_FLASHMASK: r.add('M', "mask=flashmask unsupported"); break;
  default: r.add('M', "mask_kind=%d unsupported", (int)c->mask_kind);
  }
  admit_split(path, c, r);
}


}  // namespace dkbfi
