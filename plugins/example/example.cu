// example.cu - the smallest backend plugin worth copying (include/dkb/backend.h): one CUDA kernel,
// decode_example_kernel, one CTA per (request, query head), no split, for contiguous and paged NHD caches
// (the K/V row of key t of request b is found the way dkb lays them out, oracles/kv_address.h). Start a
// new kernel here: change the kernel, keep admit honest about what it does, and dkb's ladder, oracle and
// timing apply unchanged (`dkb run FIXTURE --plugin build/plugins/libdkb_example.so --backend example_decode`).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "include/dkb/backend.h"

namespace {

constexpr int kThreads = 128;
constexpr int kMaxDim = 256;

template <typename T> __device__ float to_f(T x);
template <> __device__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ T from_f(float x);
template <> __device__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

struct Args {
  const void *q;
  void *o;
  float *lse;
  const void *k, *v;
  const int64_t *kv_len;
  const int32_t *cache_row;       // contiguous: cache row of each request
  const int32_t *page_indptr;     // paged CSR
  const int32_t *page_indices;
  int layout, H_q, H_kv, d;
  int64_t T_cap, page_size, window;  // window <= 0: every key
  float scale;
};

// Element offset of key t's row for K/V head h of request b (NHD layouts only: what admit allows).
__device__ int64_t row(const Args &a, int b, int64_t t, int h) {
  if (a.layout == DKB_ABI_CONTIGUOUS_NHD) return ((a.cache_row[b] * a.T_cap + t) * a.H_kv + h) * (int64_t)a.d;
  const int64_t page = a.page_indices[a.page_indptr[b] + t / a.page_size];
  return ((page * a.page_size + t % a.page_size) * a.H_kv + h) * (int64_t)a.d;
}

// Two passes over the visible keys: the max score, then exp-weighted sums; thread x owns dims x, x+128.
template <typename T> __global__ void __launch_bounds__(kThreads) decode_example_kernel(Args a) {
  const int b = blockIdx.y, hq = blockIdx.x, h = hq / (a.H_q / a.H_kv), x = threadIdx.x;
  const int64_t n = a.kv_len[b], lo = a.window > 0 && n > a.window ? n - a.window : 0;
  const T *q = (const T *)a.q + ((int64_t)b * a.H_q + hq) * a.d;
  __shared__ float red[kThreads / 32];
  __shared__ float score;
  float m = -INFINITY, l = 0, acc[2] = {0, 0};
  for (int64_t t = lo; t < n; t++) {
    const T *k = (const T *)a.k + row(a, b, t, h);
    float part = 0;
    for (int i = x; i < a.d; i += kThreads) part += to_f(q[i]) * to_f(k[i]);
    for (int off = 16; off; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
    if (x % 32 == 0) red[x / 32] = part;
    __syncthreads();
    if (x == 0) score = (red[0] + red[1] + red[2] + red[3]) * a.scale;
    __syncthreads();
    const float s = score, mn = fmaxf(m, s), alpha = expf(m - mn), p = expf(s - mn);
    const T *v = (const T *)a.v + row(a, b, t, h);
    for (int j = 0; j < 2; j++) {
      const int i = x + j * kThreads;
      acc[j] = acc[j] * alpha + (i < a.d ? p * to_f(v[i]) : 0.f);
    }
    l = l * alpha + p;
    m = mn;
    __syncthreads();
  }
  T *o = (T *)a.o + ((int64_t)b * a.H_q + hq) * a.d;
  for (int j = 0; j < 2; j++) {
    const int i = x + j * kThreads;
    if (i < a.d) o[i] = from_f<T>(l > 0 ? acc[j] / l : 0.f);
  }
  if (a.lse && x == 0) a.lse[(int64_t)b * a.H_q + hq] = l > 0 ? m + logf(l) : -INFINITY;
}

thread_local char g_error[256];

int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return DKB_BACKEND_ERROR;
}

int admit(const struct dkb_backend *, const struct dkb_call *c, struct dkb_reason *r, int cap, int *n) {
  *n = 0;
  if (c->phase != DKB_ABI_DECODE) dkb_reason_add(r, cap, n, 'P', "phase=append unsupported");
  /* H: plugin.mk builds sm_90 SASS and compute_90 PTX (dkb's GENCODE): 9.0 and later run it, nothing before */
  if (c->compute_capability < 0) dkb_reason_add(r, cap, n, 'H', "compute_capability unknown: no CUDA device");
  else if (c->compute_capability < 90)
    dkb_reason_add(r, cap, n, 'H', "compute_capability=%d unsupported (built for sm_90)", c->compute_capability);
  if (c->dtype != DKB_ABI_F16 && c->dtype != DKB_ABI_BF16) dkb_reason_add(r, cap, n, 'D', "dtype other than fp16/bf16 unsupported");
  if (c->kv_dtype != c->dtype) dkb_reason_add(r, cap, n, 'K', "kv_dtype unlike dtype unsupported");
  if (c->q_len != 1) dkb_reason_add(r, cap, n, 'Q', "q_len=%d unsupported", c->q_len);
  if (c->d_qk != c->d_v || c->d_qk > kMaxDim) dkb_reason_add(r, cap, n, 'Q', "head dims %d/%d unsupported (equal, at most %d)", c->d_qk, c->d_v, kMaxDim);
  if (c->layout != DKB_ABI_CONTIGUOUS_NHD && !(c->layout == DKB_ABI_PAGED_NHD && c->table == DKB_ABI_TABLE_CSR))
    dkb_reason_add(r, cap, n, 'L', "layout unsupported (contiguous NHD or paged NHD with a CSR table)");
  if (c->mask_kind == DKB_ABI_MASK_FLASHMASK || (c->mask_kind == DKB_ABI_MASK_SLIDING_WINDOW && c->sink > 0))
    dkb_reason_add(r, cap, n, 'M', "mask unsupported (none, causal, or a sliding window without sinks)");
  if (c->split_policy != DKB_ABI_SPLIT_AUTO) dkb_reason_add(r, cap, n, 'C', "split policy other than auto unsupported (it never splits)");
  return 0;
}

const char PLAN_JSON[] = "{\"kernel\":\"decode_example_kernel\",\"split\":1,\"grid\":\"(H_q, B)\",\"block\":128}";

int plan(const struct dkb_backend *, const struct dkb_call *c, struct dkb_plan *p, void **state) {
  p->splits = 1;
  p->work_items = c->B * c->H_q;
  p->n_workspaces = 0;
  p->n_kernels = 1;
  snprintf(p->kernels[0].name, sizeof p->kernels[0].name, "decode_example_kernel");
  p->kernels[0].role = DKB_KERNEL_FUSED;
  p->kernels[0].match = DKB_MATCH_FUNCTION;
  p->kernels[0].required = 1;
  p->lse_base = DKB_LSE_NATURAL;
  p->empty_row = DKB_EMPTY_ZERO_NEGINF;
  p->launch_flags = 0;
  p->plan_json = PLAN_JSON;
  *state = nullptr;
  return 0;
}

int setup(void *, const struct dkb_call *, void *const *, void *) { return 0; }

int launch(void *, const struct dkb_call *c, void *const *, void *stream) {
  Args a{c->q, c->o, c->lse, c->k, c->v, c->d_kv_len, c->d_cache_batch_idx, c->d_page_indptr, c->d_page_indices,
         c->layout, c->H_q, c->H_kv, c->d_qk, c->T_cap, c->page_size,
         c->mask_kind == DKB_ABI_MASK_SLIDING_WINDOW ? c->window : 0, (float)c->scale};
  dim3 grid(c->H_q, c->B);
  if (c->dtype == DKB_ABI_F16) decode_example_kernel<__half><<<grid, kThreads, 0, (cudaStream_t)stream>>>(a);
  else decode_example_kernel<__nv_bfloat16><<<grid, kThreads, 0, (cudaStream_t)stream>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail("launch: %s", cudaGetErrorString(e));
  return (int)e;
}

void release(void *) {}
const char *last_error(void *) { return g_error; }

const struct dkb_backend BACKENDS[] = {
    {"example_decode", "1.0", 90, "the example plugin: one CTA per (request, query head), no split (plugins/example)",
     nullptr, admit, plan, setup, launch, release, last_error,
     "fp16/bf16, q_len 1, equal head dims <= 256, contiguous NHD or paged NHD (CSR), no mask, causal or a window, auto split"},
};

}  // namespace

extern "C" const char dkb_example_source_manifest_json[], dkb_example_build_report_json[];

extern "C" __attribute__((visibility("default"))) const struct dkb_plugin *dkb_plugin_entry_v1(void) {
  static const struct dkb_plugin p = {DKB_BACKEND_ABI_VERSION, sizeof(struct dkb_plugin), "example", "1.0", 1, BACKENDS,
                                      dkb_example_source_manifest_json, dkb_example_build_report_json};
  return &p;
}
