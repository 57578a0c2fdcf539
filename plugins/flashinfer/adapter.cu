/* adapter.cu - the FlashInfer plugin's C ABI (include/dkb/backend.h): two backends, flashinfer_decode
 * (FlashInfer's CUDA-core batch decode) and flashinfer_decode_tc (its tensor-core decode, the FA2
 * batch-prefill kernel with one query row), over one admission rule (admit.cu), one page-table
 * normalisation (page_table.cu) and one plan record. FlashInfer's templates live in the inst/ files
 * behind fi.h; none is included here.
 * Every entry point catches every exception: FlashInfer's FLASHINFER_ERROR throws. */
#include "plugins/flashinfer/adapter.h"

#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#define DKBFI_EXPORT extern "C" __attribute__((visibility("default")))

/* tools/gen_provenance.py plugin, compiled into the library */
extern "C" const char dkb_plugin_source_manifest_json[];
extern "C" const char dkb_plugin_build_report_json[];

namespace dkbfi {

static_assert((int)kF16 == (int)DKB_ABI_F16 && (int)kBF16 == (int)DKB_ABI_BF16, "fi.h's dtypes are the ABI's");

#define DKBFI_DECLARE(NAME) extern const Instance NAME, NAME##_swa;
DKBFI_DECLARE(decode_f16_d64) DKBFI_DECLARE(decode_f16_d128) DKBFI_DECLARE(decode_f16_d256)
DKBFI_DECLARE(decode_bf16_d64) DKBFI_DECLARE(decode_bf16_d128) DKBFI_DECLARE(decode_bf16_d256)
DKBFI_DECLARE(prefill_f16_d64) DKBFI_DECLARE(prefill_f16_d128) DKBFI_DECLARE(prefill_f16_d256)
DKBFI_DECLARE(prefill_bf16_d64) DKBFI_DECLARE(prefill_bf16_d128) DKBFI_DECLARE(prefill_bf16_d256)
#undef DKBFI_DECLARE
#define DKBFI_BOTH(NAME) &NAME, &NAME##_swa
const Instance *const kInstances[] = {
    DKBFI_BOTH(decode_f16_d64),   DKBFI_BOTH(decode_f16_d128),   DKBFI_BOTH(decode_f16_d256),
    DKBFI_BOTH(decode_bf16_d64),  DKBFI_BOTH(decode_bf16_d128),  DKBFI_BOTH(decode_bf16_d256),
    DKBFI_BOTH(prefill_f16_d64),  DKBFI_BOTH(prefill_f16_d128),  DKBFI_BOTH(prefill_f16_d256),
    DKBFI_BOTH(prefill_bf16_d64), DKBFI_BOTH(prefill_bf16_d128), DKBFI_BOTH(prefill_bf16_d256),
};
#undef DKBFI_BOTH
const int kNumInstances = sizeof kInstances / sizeof kInstances[0];

int fail(std::string &where, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  where = buf;
  return DKB_BACKEND_ERROR;
}

namespace {

const char kVersion[] = "0.7.2.post1"; /* the flashinfer-python wheel built against (plugin.mk) */

struct Backend {
  int path;
};
const Backend kCudaCoreBackend = {kCudaCore};
const Backend kTensorCoreBackend = {kTensorCore};

thread_local std::string g_error; /* last_error(NULL): admit and plan, per thread */

/* A CUDA or FlashInfer failure as the ABI returns it: the positive cudaError_t, the message kept, the
 * sticky error cleared. */
int fail_cuda(std::string &where, const char *what, cudaError_t e) {
  (void)cudaGetLastError();
  where = std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  return (int)e;
}

int check_call(const struct dkb_call *c, std::string &err) {
  if (!c) return fail(err, "call is NULL");
  if (c->abi_version != DKB_BACKEND_ABI_VERSION)
    return fail(err, "call abi_version=%u, the plugin's is %u", c->abi_version, DKB_BACKEND_ABI_VERSION);
  if (c->size < sizeof(struct dkb_call))
    return fail(err, "call size=%u, smaller than the plugin's struct dkb_call (%zu)", c->size,
                sizeof(struct dkb_call));
  return 0;
}

/* ---- the per-call state --------------------------------------------------------------------------- */

struct State {
  int path;
  const Instance *inst;
  Problem problem;
  Plan plan;
  Csr csr;
  std::vector<int32_t> tables; /* the kv_tables workspace's contents: indptr | indices | last | q_indptr */
  size_t off_indptr, off_indices, off_last, off_q; /* in int32 elements */
  int ws_int, ws_float, ws_tables;                 /* indices into the plan's workspaces, -1 = none */
  void *pinned;                                    /* FlashInfer's page-locked int workspace */
  bool ready;                                      /* setup succeeded */
  std::string plan_json;
  std::string error;
};

size_t pad4(size_t n) { return (n + 3) & ~(size_t)3; } /* int32 arrays on 16-byte boundaries */

void tables_build(State &s) {
  const Problem &p = s.problem;
  const bool own_csr = !s.csr.direct, own_q = s.path == kTensorCore;
  size_t n = 0;
  s.off_indptr = n;
  if (own_csr) n += pad4(p.indptr.size());
  s.off_indices = n;
  if (own_csr) n += pad4(p.indices.size());
  s.off_last = n;
  if (own_csr) n += pad4(p.last_page_len.size());
  s.off_q = n;
  if (own_q) n += pad4(p.batch + 1);
  s.tables.assign(n, 0);
  if (own_csr) {
    std::copy(p.indptr.begin(), p.indptr.end(), s.tables.begin() + s.off_indptr);
    std::copy(p.indices.begin(), p.indices.end(), s.tables.begin() + s.off_indices);
    std::copy(p.last_page_len.begin(), p.last_page_len.end(), s.tables.begin() + s.off_last);
  }
  if (own_q)
    for (uint32_t i = 0; i <= p.batch; i++) s.tables[s.off_q + i] = (int32_t)i;
}

/* ---- the plan document ---------------------------------------------------------------------------- */

struct Json {
  std::string s = "{";
  void key(const char *k) {
    if (s.size() > 1) s += ',';
    s += '"';
    s += k;
    s += "\":";
  }
  void str(const char *k, const std::string &v) {
    key(k);
    s += '"' + v + '"'; /* plain ASCII names only */
  }
  void num(const char *k, int64_t v) {
    key(k);
    s += std::to_string(v);
  }
  void boolean(const char *k, bool v) {
    key(k);
    s += v ? "true" : "false";
  }
  template <typename T>
  void array(const char *k, const T *v, size_t n) {
    key(k);
    s += '[';
    for (size_t i = 0; i < n; i++) s += (i ? "," : "") + std::to_string(v[i]);
    s += ']';
  }
  void names(const char *k, const char *const *v, size_t n) {
    key(k);
    s += '[';
    for (size_t i = 0; i < n; i++) s += std::string(i ? "," : "") + '"' + v[i] + '"';
    s += ']';
  }
  std::string done() { return s + "}"; }
};

const char *const kDecodeInfoFields[] = {"padded_batch_size", "v_offset", "s_offset", "request_indices_offset",
                                         "kv_tile_indices_offset", "o_indptr_offset", "block_valid_mask_offset",
                                         "kv_chunk_size_ptr_offset", "enable_cuda_graph", "split_kv"};
const char *const kPrefillInfoFields[] = {"padded_batch_size", "total_num_rows", "total_num_rows_offset", "cta_tile_q",
                                          "request_indices_offset", "qo_tile_indices_offset", "kv_tile_indices_offset",
                                          "merge_indptr_offset", "o_indptr_offset", "kv_chunk_size_ptr_offset",
                                          "v_offset", "s_offset", "block_valid_mask_offset", "enable_cuda_graph",
                                          "split_kv"};

std::string plan_document(const State &s, const char *backend, const struct dkb_call *c) {
  const Problem &p = s.problem;
  const Plan &f = s.plan;
  Json j;
  j.str("backend", backend);
  j.str("flashinfer", kVersion);
  const std::string hd = std::to_string(p.head_dim), swa = p.sliding_window ? "true" : "false";
  if (s.path == kCudaCore)
    j.str("upstream_run", "BatchDecodeWithPagedKVCacheDispatched<" + hd + ", kNone, DefaultAttention<false, " + swa +
                              ", false, false>>");
  else
    j.str("upstream_run", "BatchPrefillWithPagedKVCacheDispatched<true, 16, " + hd + ", " + hd +
                              ", kNone, false, kNone, DefaultAttention<false, " + swa + ", false, false>>");
  j.str("upstream_plan", s.path == kCudaCore ? "DecodePlan" : "PrefillPlan");
  j.str("dtype", dtype_name(p.dtype));
  j.num("head_dim", p.head_dim);
  j.num("num_qo_heads", p.num_qo_heads);
  j.num("num_kv_heads", p.num_kv_heads);
  j.num("group_size", p.num_qo_heads / p.num_kv_heads);
  j.str("kv_layout", p.kv_layout == kHND ? "HND" : "NHD");
  j.str("page_table", kTableNames[s.csr.table]);
  j.num("page_size", p.page_size);
  j.num("pages", (int64_t)p.indices.size());
  j.num("window_left", p.window_left);
  j.boolean("enable_cuda_graph", p.cuda_graph);
  j.boolean("enable_pdl", false);
  j.boolean("split_kv", f.split_kv);
  j.num("padded_batch_size", f.padded_batch_size);
  j.num("work_items", f.work_items);
  j.num("kv_chunk_size_tokens", f.kv_chunk_tokens);
  if (s.path == kCudaCore) {
    j.num("kv_chunk_size_pages", p.page_size ? f.kv_chunk_tokens / p.page_size : 0);
    j.num("max_grid_size", f.max_grid_size);
    const int64_t grid[3] = {f.padded_batch_size, p.num_kv_heads, 1};
    j.array("grid", grid, 3);
  } else {
    j.num("cta_tile_q", f.cta_tile_q);
    j.num("fixed_split_size", p.fixed_split_pages > 0 ? p.fixed_split_pages : -1);
    j.boolean("disable_split_kv", p.disable_split_kv);
    const int64_t grid[3] = {f.padded_batch_size, 1, p.num_kv_heads};
    j.array("grid", grid, 3);
  }
  j.array("block", f.block, 3);
  const size_t shown = f.chunks.size() < 512 ? f.chunks.size() : 512; /* bounded, like dkb's item table */
  j.array("chunks_per_request", f.chunks.data(), shown);
  j.boolean("chunks_per_request_truncated", shown < f.chunks.size());
  j.array("plan_info", f.info.data(), f.info.size());
  if (s.path == kCudaCore) j.names("plan_info_fields", kDecodeInfoFields, 10);
  else j.names("plan_info_fields", kPrefillInfoFields, 15);
  j.num("float_workspace_bytes", (int64_t)f.float_bytes);
  j.num("int_workspace_bytes", (int64_t)f.int_bytes);
  (void)c;
  return j.done();
}

/* ---- the ABI functions ---------------------------------------------------------------------------- */

int fi_admit(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_reason *reasons, int cap,
             int *n) {
  try {
    if (n) *n = 0;
    if (!self || !self->user) return fail(g_error, "admit: backend is NULL");
    if (!n || (cap > 0 && !reasons) || cap < 0) return fail(g_error, "admit: reasons, cap or n invalid");
    if (check_call(call, g_error)) return DKB_BACKEND_ERROR;
    dkb_reasons r{reasons, cap, 0};
    admit_call(static_cast<const Backend *>(self->user)->path, call, r);
    *n = r.n;
    return 0;
  } catch (const std::exception &e) {
    return fail(g_error, "admit: %s", e.what());
  } catch (...) {
    return fail(g_error, "admit: unknown exception");
  }
}

int plan_into(const struct dkb_backend *self, const struct dkb_call *c, struct dkb_plan *out, State &s) {
  std::string &err = g_error;
  const int path = static_cast<const Backend *>(self->user)->path;
  struct dkb_reason rs[DKB_MAX_REASONS];
  dkb_reasons r{rs, DKB_MAX_REASONS, 0};
  admit_call(path, c, r);
  if (r.n) return fail(err, "plan: the call is not admitted: %s (%c)", rs[0].text, rs[0].factor);
  int dev = -1;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return fail_cuda(err, "plan: cudaGetDevice", e);
  if (dev != c->device) return fail(err, "plan: the current device is %d, the call's %d", dev, c->device);

  s.path = path;
  Problem &p = s.problem;
  p.path = path;
  p.dtype = c->dtype;
  p.head_dim = c->d_qk;
  p.sliding_window = c->mask_kind == DKB_ABI_MASK_SLIDING_WINDOW;
  p.window_left = p.sliding_window ? (int32_t)(c->window - 1) : -1; /* q - window < k  <=>  k >= q - window_left */
  p.batch = (uint32_t)c->B;
  p.num_qo_heads = (uint32_t)c->H_q;
  p.num_kv_heads = (uint32_t)c->H_kv;
  p.cuda_graph = c->graph != 0;
  p.sm_scale = c->scale;
  p.fixed_split_pages = 0;
  p.disable_split_kv = false;
  if (path == kTensorCore && c->split_policy == DKB_ABI_SPLIT_FIXED) p.disable_split_kv = true; /* splits == 1 */
  if (int rc = csr_build(c, p, s.csr, err)) return rc;
  if (path == kTensorCore && c->split_policy == DKB_ABI_SPLIT_CHUNK)
    p.fixed_split_pages = (int32_t)(c->chunk / p.page_size); /* admission: a whole number of pages */
  s.inst = find_instance(path, p.dtype, p.head_dim, p.sliding_window);
  if (!s.inst) return fail(err, "plan: no instance for the admitted call"); /* admission says otherwise: a bug */
  e = s.inst->plan(p, s.plan);
  if (e != cudaSuccess) return fail_cuda(err, path == kCudaCore ? "plan: DecodePlanImpl" : "plan: PrefillPlanImpl", e);
  if (path == kTensorCore && s.plan.cta_tile_q != 16)
    return fail(err, "plan: flashinfer's planner chose cta_tile_q=%d, built only for 16", s.plan.cta_tile_q);
  tables_build(s);

  const uint32_t size = out->size; /* dkb's, left as it is */
  memset(out, 0, sizeof *out);
  out->size = size;
  int32_t most = 1;
  for (int32_t k : s.plan.chunks) most = k > most ? k : most;
  out->splits = most;
  out->work_items = (int32_t)s.plan.work_items;
  int w = 0;
  auto ws = [&](const char *name, uint64_t bytes, int kind) {
    snprintf(out->ws[w].name, sizeof out->ws[w].name, "%s", name);
    out->ws[w].bytes = bytes;
    out->ws[w].kind = kind;
    out->ws[w].alignment = 256;
    return w++;
  };
  /* the int workspace DecodePlan/PrefillPlan fills in setup and the launches only read */
  s.ws_int = ws("flashinfer_int_workspace", s.plan.int_bytes, DKB_WS_PERSISTENT);
  /* tmp_v/tmp_s: every entry the merge reads, the producer wrote in the same launch */
  s.ws_float = s.plan.float_bytes ? ws("flashinfer_float_workspace", s.plan.float_bytes, DKB_WS_SCRATCH) : -1;
  /* the page table (and the tensor-core path's qo_indptr) FlashInfer is given, uploaded by setup */
  s.ws_tables =
      s.tables.empty() ? -1 : ws("flashinfer_page_table", s.tables.size() * sizeof(int32_t), DKB_WS_PERSISTENT);
  out->n_workspaces = w;

  int k = 0;
  auto kernel = [&](const char *name, int role) {
    snprintf(out->kernels[k].name, sizeof out->kernels[k].name, "%s", name);
    out->kernels[k].role = role;
    out->kernels[k].match = DKB_MATCH_FUNCTION;
    out->kernels[k].required = 1;
    k++;
  };
  kernel(path == kCudaCore ? "flashinfer::BatchDecodeWithPagedKVCacheKernel"
                           : "flashinfer::BatchPrefillWithPagedKVCacheKernel",
         DKB_KERNEL_PRODUCER);
  /* split_kv: the dispatcher always runs the merge after the producer (requests of one chunk are copied) */
  if (s.plan.split_kv) kernel("flashinfer::PersistentVariableLengthMergeStatesKernel", DKB_KERNEL_COMBINE);
  out->n_kernels = k;
  out->lse_base = DKB_LSE_BASE2;           /* state_t::get_lse() = m + log2(d), m in log2 units */
  out->empty_row = DKB_EMPTY_ZERO_NEGINF;  /* OutputTransform: d_rcp = 0 when m == -inf; lse -inf */
  out->launch_flags = 0;                   /* device pointers and plan offsets only; no sync */
  s.plan_json = plan_document(s, self->name, c);
  out->plan_json = s.plan_json.c_str();
  return 0;
}

int fi_plan(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_plan *plan, void **state) {
  State *s = nullptr;
  try {
    if (state) *state = nullptr;
    if (!self || !self->user || !plan || !state) return fail(g_error, "plan: backend, plan or state is NULL");
    if (check_call(call, g_error)) return DKB_BACKEND_ERROR;
    if (plan->size < sizeof(struct dkb_plan))
      return fail(g_error, "plan: plan size=%u, smaller than the plugin's struct dkb_plan (%zu)", plan->size,
                  sizeof(struct dkb_plan));
    s = new State();
    s->pinned = nullptr;
    s->ready = false;
    int rc = plan_into(self, call, plan, *s);
    if (rc) {
      delete s;
      return rc;
    }
    *state = s;
    return 0;
  } catch (const std::exception &e) {
    delete s;
    return fail(g_error, "plan: %s", e.what());
  } catch (...) {
    delete s;
    return fail(g_error, "plan: unknown exception");
  }
}

int setup_into(State &s, const struct dkb_call *c, void *const *ws, cudaStream_t stream) {
  std::string &err = s.error;
  s.ready = false;
  if (!ws) return fail(err, "setup: workspaces are NULL");
  cudaError_t e;
  if (s.ws_tables >= 0) {
    e = cudaMemcpyAsync(ws[s.ws_tables], s.tables.data(), s.tables.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                        stream);
    if (e != cudaSuccess) return fail_cuda(err, "setup: cudaMemcpyAsync of the page table", e);
  }
  if (!s.pinned) {
    e = cudaMallocHost(&s.pinned, s.plan.int_bytes);
    if (e != cudaSuccess) {
      s.pinned = nullptr;
      return fail_cuda(err, "setup: cudaMallocHost of the page-locked int workspace", e);
    }
  }
  std::vector<int64_t> info;
  e = s.inst->setup(s.problem, s.plan, s.ws_float >= 0 ? ws[s.ws_float] : nullptr, ws[s.ws_int], s.pinned, stream,
                    info);
  if (e != cudaSuccess) return fail_cuda(err, s.path == kCudaCore ? "setup: DecodePlan" : "setup: PrefillPlan", e);
  e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return fail_cuda(err, "setup: cudaStreamSynchronize", e);
  if (info != s.plan.info) {
    std::string a, b;
    for (int64_t v : info) a += (a.empty() ? "" : ",") + std::to_string(v);
    for (int64_t v : s.plan.info) b += (b.empty() ? "" : ",") + std::to_string(v);
    return fail(err, "setup: flashinfer's plan info [%s] differs from plan()'s [%s]", a.c_str(), b.c_str());
  }
  (void)c;
  s.ready = true;
  return 0;
}

int fi_setup(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  State *s = static_cast<State *>(state);
  if (!s) return fail(g_error, "setup: state is NULL");
  try {
    if (check_call(call, s->error)) return DKB_BACKEND_ERROR;
    return setup_into(*s, call, ws, static_cast<cudaStream_t>(stream));
  } catch (const std::exception &e) {
    return fail(s->error, "setup: %s", e.what());
  } catch (...) {
    return fail(s->error, "setup: unknown exception");
  }
}

int fi_launch(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  State *s = static_cast<State *>(state);
  if (!s) return fail(g_error, "launch: state is NULL");
  try {
    if (check_call(call, s->error)) return DKB_BACKEND_ERROR;
    if (!s->ready) return fail(s->error, "launch: setup has not succeeded");
    if (!ws) return fail(s->error, "launch: workspaces are NULL");
    Buffers b;
    b.q = call->q;
    b.o = call->o;
    b.lse = call->lse;
    b.k = call->k;
    b.v = call->v;
    int32_t *tables = s->ws_tables >= 0 ? static_cast<int32_t *>(ws[s->ws_tables]) : nullptr;
    if (s->csr.direct) {
      if (!call->d_page_indptr || !call->d_page_indices || !call->d_last_page_len)
        return fail(s->error, "launch: the call's CSR arrays are not on the device");
      b.indptr = const_cast<int32_t *>(call->d_page_indptr);
      b.indices = const_cast<int32_t *>(call->d_page_indices);
      b.last_page_len = const_cast<int32_t *>(call->d_last_page_len);
    } else {
      b.indptr = tables + s->off_indptr;
      b.indices = tables + s->off_indices;
      b.last_page_len = tables + s->off_last;
    }
    b.q_indptr = s->path == kTensorCore ? tables + s->off_q : nullptr;
    b.float_ws = s->ws_float >= 0 ? ws[s->ws_float] : nullptr;
    b.int_ws = ws[s->ws_int];
    if (!b.q || !b.o || !b.k || !b.v || !b.int_ws || (s->ws_float >= 0 && !b.float_ws) || (s->ws_tables >= 0 && !tables))
      return fail(s->error, "launch: a device pointer of the call or a workspace is NULL");
    cudaError_t e = s->inst->run(s->problem, s->plan, b, static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess)
      return fail_cuda(s->error,
                       s->path == kCudaCore ? "launch: BatchDecodeWithPagedKVCacheDispatched"
                                            : "launch: BatchPrefillWithPagedKVCacheDispatched",
                       e);
    return 0;
  } catch (const std::exception &e) {
    return fail(s->error, "launch: %s", e.what());
  } catch (...) {
    return fail(s->error, "launch: unknown exception");
  }
}

void fi_release(void *state) {
  State *s = static_cast<State *>(state);
  if (!s) return;
  try {
    if (s->pinned) (void)cudaFreeHost(s->pinned);
  } catch (...) {
  }
  delete s;
}

const char *fi_last_error(void *state) {
  return state ? static_cast<State *>(state)->error.c_str() : g_error.c_str();
}

const struct dkb_backend kBackends[] = {
    {"flashinfer_decode", kVersion, 50,
     "FlashInfer 0.7.2.post1 CUDA-core batch decode over a paged K/V cache (BatchDecodeWithPagedKVCacheDispatched, "
     "DecodePlan's split, merge kernel)",
     const_cast<Backend *>(&kCudaCoreBackend), fi_admit, fi_plan, fi_setup, fi_launch, fi_release, fi_last_error,
     "decode, q_len 1, fp16/bf16, head dims 64/128/256, groups 1/2/3/4/6/8/16; paged NHD/HND (dense or CSR), "
     "contiguous NHD/HND, ragged NHD; causal, sliding window without sinks; auto split; graph; sm_90"},
    {"flashinfer_decode_tc", kVersion, 51,
     "FlashInfer 0.7.2.post1 tensor-core decode: the FA2 batch-prefill kernel with one query row per request "
     "(BatchPrefillWithPagedKVCacheDispatched, PrefillPlan's split)",
     const_cast<Backend *>(&kTensorCoreBackend), fi_admit, fi_plan, fi_setup, fi_launch, fi_release, fi_last_error,
     "decode, q_len 1, fp16/bf16, head dims 64/128/256, groups 1 to 16; paged NHD/HND (dense or CSR), "
     "contiguous NHD/HND, ragged NHD; causal, sliding window without sinks; auto, fixed 1 or whole-page chunk "
     "splits; graph; sm_90"},
};

const struct dkb_plugin kPlugin = {
    DKB_BACKEND_ABI_VERSION, sizeof(struct dkb_plugin), "flashinfer", kVersion,
    (int32_t)(sizeof kBackends / sizeof kBackends[0]), kBackends,
    dkb_plugin_source_manifest_json, dkb_plugin_build_report_json,
};

}  // namespace
}  // namespace dkbfi

DKBFI_EXPORT const struct dkb_plugin *dkb_plugin_entry_v1(void) { return &dkbfi::kPlugin; }
