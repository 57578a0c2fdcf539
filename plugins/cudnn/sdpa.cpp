/* sdpa.cpp - plan, setup, launch and release of the cudnn_sdpa backend: one cuDNN frontend graph per
 * call (SDPA forward, composite implementation, padding mask with every request's length, a bottom-right
 * diagonal band for a sliding window), its plan chosen by heuristics mode A and built at plan time, run
 * with cudnnSetStream + execute.
 *
 * dkb's tensors map onto cuDNN's [batch, heads, sequence, dim] tensors by strides (Q, O: one row per
 * request; Stats: dkb's lse [B][1][H_q]). K and V are addressed one of three ways (kv_mode):
 *   strided  contiguous caches whose request b is cache row b: batch stride = one cache row
 *   ragged   contiguous caches with remapped rows (offset = row * row size) and ragged caches (offset =
 *            indptr[b] * H_kv * d): cuDNN's ragged offset tensor gives each request's first element
 *   paged    the pool is cuDNN's container [num_pages][H_kv][P][d] (NHD pools by strides) and a dense
 *            page table [B][1][ceil(max_kv_len/P)][1] built here from dkb's dense or CSR table
 * The lengths, offsets and page table live in one persistent workspace that setup uploads. */
#include "plugins/cudnn/plugin.h"

#include <cuda_runtime_api.h>
#include <cudnn_frontend.h>

#include <cstring>
#include <exception>
#include <memory>
#include <vector>

namespace fe = cudnn_frontend;

/* The frontend's experimental sm100 RMSNorm+SiLU engine compiles with NVRTC and comes with every user
 * of the graph API; it is registered only for HeurMode_t::OPENSOURCE, which this plugin never asks for.
 * Weak references keep libnvrtc out of the plugin's load-time dependencies: cuDNN's runtime-compiled
 * engines dlopen the NVRTC they want themselves. A new NVRTC reference fails the link (-z defs). */
#pragma weak nvrtcCreateProgram
#pragma weak nvrtcCompileProgram
#pragma weak nvrtcGetProgramLogSize
#pragma weak nvrtcGetProgramLog
#pragma weak nvrtcDestroyProgram
#pragma weak nvrtcGetCUBINSize
#pragma weak nvrtcGetCUBIN

namespace cudnn_plugin {
namespace {

enum : int64_t {
  UID_Q = 1,
  UID_K,
  UID_V,
  UID_O,
  UID_STATS,
  UID_SEQ_Q,
  UID_SEQ_KV,
  UID_RAG_K,
  UID_RAG_V,
  UID_PT_K,
  UID_PT_V
};

enum class kv_mode { strided, ragged, paged };
const char *mode_name(kv_mode m) {
  return m == kv_mode::strided ? "strided" : m == kv_mode::ragged ? "ragged_offsets" : "paged";
}

constexpr size_t ALIGN = 256;

struct state {
  std::string err;
  cudnnHandle_t handle = nullptr;
  std::shared_ptr<fe::graph::Graph> graph;
  std::string plan_json;
  std::vector<unsigned char> image; /* bytes of the persistent workspace, uploaded by setup */
  size_t off_seq_q = 0, off_seq_kv = 0, off_rag_k = 0, off_rag_v = 0, off_table = 0;
  int ws_cudnn = -1, ws_arrays = -1; /* indices into the plan's workspaces; -1: none */
  std::vector<int64_t> uids;         /* the graph's variant-pack uids in execute's order (setup) */
  std::vector<void *> ptrs;
  bool deterministic = false; /* built from engines without the NONDETERMINISTIC note */
  ~state() {
    graph.reset(); /* the plans go before the handle they were built with */
    if (handle) cudnnDestroy(handle);
  }
};

/* Appends n bytes at the next ALIGN boundary of the image; returns their offset. */
size_t put(std::vector<unsigned char> &image, const void *src, size_t n) {
  size_t off = (image.size() + ALIGN - 1) / ALIGN * ALIGN;
  image.resize(off + n);
  memcpy(image.data() + off, src, n);
  return off;
}

struct bad_call : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/* The call's arrays as the graph reads them. Throws bad_call for a call the arrays contradict. */
struct arrays {
  kv_mode mode = kv_mode::strided;
  std::vector<int32_t> seq_q, seq_kv, table;
  std::vector<int64_t> rag_k, rag_v; /* elements; B + 1 entries, the last one past every request */
  bool rag64 = false;                /* the offsets need int64 */
  int64_t width = 0;                 /* page-table entries per request */
};

int32_t cache_row(const struct dkb_call *c, int b) { return c->cache_batch_idx ? c->cache_batch_idx[b] : b; }

void ragged_from_rows(const struct dkb_call *c, arrays &a) {
  int64_t row_k = c->T_cap * c->H_kv * c->d_qk, row_v = c->T_cap * c->H_kv * c->d_v;
  for (int b = 0; b < c->B; b++) {
    a.rag_k.push_back(cache_row(c, b) * row_k);
    a.rag_v.push_back(cache_row(c, b) * row_v);
  }
  a.rag_k.push_back(c->cache_rows * row_k); /* past the last row: no request reads beyond it */
  a.rag_v.push_back(c->cache_rows * row_v);
}

void ragged_from_indptr(const struct dkb_call *c, arrays &a) {
  if (!c->indptr) throw bad_call("ragged layout without indptr");
  for (int b = 0; b <= c->B; b++) {
    if (b < c->B && c->indptr[b + 1] - c->indptr[b] < c->kv_len[b])
      throw bad_call("request " + std::to_string(b) + " has kv_len " + std::to_string(c->kv_len[b]) +
                     " beyond its indptr range");
    a.rag_k.push_back(c->indptr[b] * c->H_kv * c->d_qk);
    a.rag_v.push_back(c->indptr[b] * c->H_kv * c->d_v);
  }
}

/* Request b's page j, from the dense table (its cache row) or the CSR lists. */
int32_t page_of(const struct dkb_call *c, int b, int64_t j) {
  if (c->table == DKB_ABI_TABLE_DENSE) {
    int32_t r = cache_row(c, b);
    if (r < 0 || r >= c->cache_rows) throw bad_call("cache_batch_idx outside the block table");
    if (!c->block_table || j >= c->table_width)
      throw bad_call("request " + std::to_string(b) + " needs more pages than the table has");
    return c->block_table[(int64_t)r * c->table_width + j];
  }
  if (!c->page_indptr || !c->page_indices || c->page_indptr[b] + j >= c->page_indptr[b + 1])
    throw bad_call("request " + std::to_string(b) + " has fewer pages than its kv_len needs");
  return c->page_indices[c->page_indptr[b] + j];
}

/* cuDNN reads entries [0, ceil(kv_len[b] / P)) of row b; the rest hold page 0, a page it never reads. */
void page_table(const struct dkb_call *c, arrays &a) {
  a.width = (c->max_kv_len + c->page_size - 1) / c->page_size;
  a.table.assign((size_t)(c->B * a.width), 0);
  for (int b = 0; b < c->B; b++)
    for (int64_t j = 0; j < (c->kv_len[b] + c->page_size - 1) / c->page_size; j++) {
      int32_t p = page_of(c, b, j);
      if (p < 0 || p >= c->num_pages)
        throw bad_call("request " + std::to_string(b) + " page " + std::to_string(j) + " is " + std::to_string(p) +
                       ", outside the pool of " + std::to_string(c->num_pages));
      a.table[(size_t)(b * a.width + j)] = p;
    }
}

arrays read_arrays(const struct dkb_call *c) {
  arrays a;
  if (!c->kv_len) throw bad_call("no kv_len");
  for (int b = 0; b < c->B; b++) {
    if (c->kv_len[b] < 1 || c->kv_len[b] > c->max_kv_len) /* an empty request would be an empty row */
      throw bad_call("kv_len[" + std::to_string(b) + "]=" + std::to_string(c->kv_len[b]) + " unsupported");
    a.seq_q.push_back(1);
    a.seq_kv.push_back((int32_t)c->kv_len[b]);
  }
  bool rows = c->layout == DKB_ABI_CONTIGUOUS_NHD || c->layout == DKB_ABI_CONTIGUOUS_HND;
  if (rows) {
    bool identity = c->B <= c->cache_rows;
    for (int b = 0; b < c->B; b++) {
      if (cache_row(c, b) < 0 || cache_row(c, b) >= c->cache_rows) throw bad_call("cache_batch_idx outside the cache");
      identity = identity && cache_row(c, b) == b;
    }
    a.mode = identity ? kv_mode::strided : kv_mode::ragged;
    if (!identity) ragged_from_rows(c, a);
  } else if (c->layout == DKB_ABI_RAGGED_NHD) {
    a.mode = kv_mode::ragged;
    ragged_from_indptr(c, a);
  } else {
    a.mode = kv_mode::paged;
    page_table(c, a);
  }
  for (int64_t x : a.rag_k) a.rag64 = a.rag64 || x > INT32_MAX;
  for (int64_t x : a.rag_v) a.rag64 = a.rag64 || x > INT32_MAX;
  return a;
}

std::vector<int64_t> kv_strides(const struct dkb_call *c, int64_t d, int64_t S) {
  int64_t H = c->H_kv;
  switch (c->layout) {
    case DKB_ABI_CONTIGUOUS_NHD: return {c->T_cap * H * d, d, H * d, 1};
    case DKB_ABI_CONTIGUOUS_HND: return {H * c->T_cap * d, c->T_cap * d, d, 1};
    case DKB_ABI_RAGGED_NHD: return {S * H * d, d, H * d, 1}; /* batch stride unused: the offsets place each request */
    case DKB_ABI_PAGED_NHD: return {c->page_size * H * d, d, H * d, 1};
    default: return {H * c->page_size * d, c->page_size * d, d, 1}; /* paged HND: cuDNN's own container */
  }
}

using tensor_t = std::shared_ptr<fe::graph::Tensor_attributes>;

tensor_t int_tensor(fe::graph::Graph &g, const char *name, int64_t uid, std::vector<int64_t> dim, bool wide) {
  std::vector<int64_t> stride(4, 1);
  if (dim[2] > 1) stride = {dim[2], dim[2], 1, 1};
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dim).set_stride(stride).set_data_type(
          wide ? fe::DataType_t::INT64 : fe::DataType_t::INT32));
}

tensor_t kv_tensor(fe::graph::Graph &g, const struct dkb_call *c, const arrays &a, bool is_k) {
  int64_t d = is_k ? c->d_qk : c->d_v, S = c->max_kv_len;
  std::vector<int64_t> dim = {a.mode == kv_mode::paged ? c->num_pages : c->B, c->H_kv,
                              a.mode == kv_mode::paged ? c->page_size : S, d};
  auto t = fe::graph::Tensor_attributes()
               .set_name(is_k ? "K" : "V")
               .set_uid(is_k ? UID_K : UID_V)
               .set_dim(dim)
               .set_stride(kv_strides(c, d, S));
  if (a.mode == kv_mode::ragged)
    t.set_ragged_offset(
        int_tensor(g, is_k ? "ragged_k" : "ragged_v", is_k ? UID_RAG_K : UID_RAG_V, {c->B + 1, 1, 1, 1}, a.rag64));
  return g.tensor(t);
}

/* A sliding window that hides keys of some request; one covering every key is no mask (admit_mask). */
bool banded(const struct dkb_call *c) {
  return c->mask_kind == DKB_ABI_MASK_SLIDING_WINDOW && c->window < c->max_kv_len;
}

std::shared_ptr<fe::graph::Graph> make_graph(const struct dkb_call *c, const arrays &a) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(c->dtype == DKB_ABI_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  int64_t B = c->B, Hq = c->H_q, dqk = c->d_qk, dv = c->d_v;
  auto q = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("Q")
                         .set_uid(UID_Q)
                         .set_dim({B, Hq, 1, dqk})
                         .set_stride({Hq * dqk, dqk, Hq * dqk, 1}));
  auto k = kv_tensor(*g, c, a, true), v = kv_tensor(*g, c, a, false);
  auto opts = fe::graph::SDPA_attributes()
                  .set_name("cudnn_sdpa_decode")
                  .set_implementation(fe::AttentionImplementation_t::COMPOSITE)
                  .set_generate_stats(c->return_lse != 0)
                  .set_attn_scale((float)c->scale)
                  .set_padding_mask(true)
                  .set_seq_len_q(int_tensor(*g, "seq_len_q", UID_SEQ_Q, {B, 1, 1, 1}, false))
                  .set_seq_len_kv(int_tensor(*g, "seq_len_kv", UID_SEQ_KV, {B, 1, 1, 1}, false));
  if (banded(c)) /* per request: keys j >= kv_len - window (the diagonal is the last key) */
    opts.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT)
        .set_diagonal_band_right_bound(0)
        .set_diagonal_band_left_bound((int)c->window);
  if (a.mode == kv_mode::paged) {
    opts.set_paged_attention_k_table(int_tensor(*g, "page_table_k", UID_PT_K, {B, 1, a.width, 1}, false))
        .set_paged_attention_v_table(int_tensor(*g, "page_table_v", UID_PT_V, {B, 1, a.width, 1}, false))
        .set_paged_attention_max_seq_len_kv((int)c->max_kv_len);
  }
  auto [o, stats] = g->sdpa(q, k, v, opts);
  o->set_output(true).set_uid(UID_O).set_dim({B, Hq, 1, dv}).set_stride({Hq * dv, dv, Hq * dv, 1});
  if (c->return_lse)
    stats->set_output(true)
        .set_uid(UID_STATS)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({B, Hq, 1, 1})
        .set_stride({Hq, 1, 1, 1});
  return g;
}

/* Steps of Graph::build(handle, {A}), one at a time so a failure names its step. deterministic: engines
 * whose numerical notes say NONDETERMINISTIC are deselected before check_support, since a call whose output
 * bits change from one execute to the next cannot reach level 6 (dkb's repeat check; on the H200 15 of 16
 * serving shapes ended output_not_reproduced before). Returns false when no engine is left. */
bool build(state &st, bool deterministic) {
  auto step = [&](fe::error_t e, const char *what) {
    if (e.is_bad()) throw std::runtime_error(std::string(what) + ": " + e.get_message());
  };
  step(st.graph->validate(), "validate");
  step(st.graph->build_operation_graph(st.handle), "build_operation_graph");
  step(st.graph->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
  if (deterministic) {
    st.graph->deselect_numeric_notes({fe::NumericalNote_t::NONDETERMINISTIC});
    if (st.graph->check_support().is_bad()) return false;
  } else {
    step(st.graph->check_support(), "check_support");
  }
  step(st.graph->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans");
  st.deterministic = deterministic;
  return true;
}

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\', out += (char)ch;
    else if (ch < 0x20 || ch > 0x7e) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else
      out += (char)ch;
  }
  return out + "\"";
}

std::string json_ints(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); i++) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

std::string describe(const struct dkb_call *c, const state &st, const arrays &a, int64_t ws_bytes) {
  std::string plan_name;
  if (st.graph->get_plan_name(plan_name).is_bad()) plan_name = "unknown";
  int64_t S = c->max_kv_len;
  std::vector<int64_t> kdim = {a.mode == kv_mode::paged ? c->num_pages : c->B, c->H_kv,
                               a.mode == kv_mode::paged ? c->page_size : S};
  std::string j = "{\"backend\":\"cudnn_sdpa\"";
  j += ",\"cudnn_compiled\":" + json_string(version_text(CUDNN_VERSION));
  j += ",\"cudnn_runtime\":" + json_string(version_text(cudnnGetVersion()));
  j += ",\"frontend\":" +
       json_string(std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_MINOR_VERSION) +
                   "." + std::to_string(CUDNN_FRONTEND_PATCH_VERSION));
  j += ",\"implementation\":\"composite\",\"heuristics\":\"a\",\"build_policy\":\"heuristics_choice\"";
  j += ",\"engines\":" + json_string(st.deterministic ? "deterministic (NONDETERMINISTIC deselected)"
                                                      : "any (no deterministic engine supports the call)");
  j += ",\"engine_config\":" + json_string(plan_name);
  j += ",\"io_dtype\":" + json_string(c->dtype == DKB_ABI_BF16 ? "bf16" : "fp16");
  char scale[32];
  snprintf(scale, sizeof scale, "%.9g", (double)(float)c->scale); /* the float the graph holds */
  j += ",\"attn_scale\":" + std::string(scale);
  j += ",\"padding_mask\":true,\"generate_stats\":" + std::string(c->return_lse ? "true" : "false");
  j += banded(c) ? ",\"mask\":\"bottom_right_band\",\"left_bound\":" + std::to_string(c->window) + ",\"right_bound\":0"
                 : std::string(",\"mask\":\"none\"");
  j += ",\"kv_addressing\":" + json_string(mode_name(a.mode));
  if (a.mode == kv_mode::ragged) j += ",\"ragged_offset_dtype\":" + json_string(a.rag64 ? "int64" : "int32");
  if (a.mode == kv_mode::paged)
    j += ",\"page_table\":" + json_ints({c->B, 1, a.width, 1}) + ",\"max_seq_len_kv\":" + std::to_string(S);
  j += ",\"q\":{\"dim\":" + json_ints({c->B, c->H_q, 1, c->d_qk}) + "}";
  kdim.push_back(c->d_qk);
  j += ",\"k\":{\"dim\":" + json_ints(kdim) + ",\"stride\":" + json_ints(kv_strides(c, c->d_qk, S)) + "}";
  kdim.back() = c->d_v;
  j += ",\"v\":{\"dim\":" + json_ints(kdim) + ",\"stride\":" + json_ints(kv_strides(c, c->d_v, S)) + "}";
  j += ",\"o\":{\"dim\":" + json_ints({c->B, c->H_q, 1, c->d_v}) + "}";
  j += ",\"workspace_bytes\":" + std::to_string(ws_bytes);
  /* The engine's own split shows only in the trace: the plan reports none (DKB_SPLITS_UNREPORTED). */
  j += ",\"kv_split\":\"the engine's own, chosen at plan build and not reported (lean attention: the SDPA kernel's "
       "grid x, merged by lean_reduction_kernel)\"";
  j += ",\"kernel_prefix\":" + json_string(KERNEL_PREFIX) + "}";
  return j;
}

void fill_plan(const struct dkb_call *c, state &st, const arrays &a, struct dkb_plan *plan) {
  int64_t ws_bytes = 0;
  auto e = st.graph->get_workspace_size(ws_bytes);
  if (e.is_bad()) throw std::runtime_error("get_workspace_size: " + e.get_message());
  st.image.clear();
  st.off_seq_q = put(st.image, a.seq_q.data(), a.seq_q.size() * 4);
  st.off_seq_kv = put(st.image, a.seq_kv.data(), a.seq_kv.size() * 4);
  if (a.mode == kv_mode::ragged) {
    std::vector<int32_t> k32(a.rag_k.begin(), a.rag_k.end()), v32(a.rag_v.begin(), a.rag_v.end());
    st.off_rag_k =
        a.rag64 ? put(st.image, a.rag_k.data(), a.rag_k.size() * 8) : put(st.image, k32.data(), k32.size() * 4);
    st.off_rag_v =
        a.rag64 ? put(st.image, a.rag_v.data(), a.rag_v.size() * 8) : put(st.image, v32.data(), v32.size() * 4);
  }
  if (a.mode == kv_mode::paged) st.off_table = put(st.image, a.table.data(), a.table.size() * 4);

  memset(plan->ws, 0, sizeof plan->ws);
  memset(plan->kernels, 0, sizeof plan->kernels);
  plan->n_workspaces = 0;
  if (ws_bytes > 0) { /* cuDNN's engine workspace: written before read in every execute, zeroed by nobody */
    st.ws_cudnn = plan->n_workspaces++;
    snprintf(plan->ws[st.ws_cudnn].name, sizeof plan->ws[0].name, "cudnn_workspace");
    plan->ws[st.ws_cudnn].bytes = (uint64_t)ws_bytes;
    plan->ws[st.ws_cudnn].kind = DKB_WS_SCRATCH;
  }
  st.ws_arrays = plan->n_workspaces++;
  snprintf(plan->ws[st.ws_arrays].name, sizeof plan->ws[0].name, "plan_arrays");
  plan->ws[st.ws_arrays].bytes = st.image.size();
  plan->ws[st.ws_arrays].kind = DKB_WS_PERSISTENT;
  plan->splits = DKB_SPLITS_UNREPORTED; /* the engine's own, not exposed (describe's kv_split) */
  plan->work_items = 0; /* cuDNN's grid is not known before launch */
  plan->n_kernels = 2;
  snprintf(plan->kernels[0].name, sizeof plan->kernels[0].name, "%s", KERNEL_PREFIX);
  plan->kernels[0].role = DKB_KERNEL_PRODUCER;
  plan->kernels[0].match = DKB_MATCH_PREFIX;
  plan->kernels[0].required = 1;
  snprintf(plan->kernels[1].name, sizeof plan->kernels[1].name, "%s", COMBINE_PREFIX);
  plan->kernels[1].role = DKB_KERNEL_COMBINE;
  plan->kernels[1].match = DKB_MATCH_PREFIX;
  plan->kernels[1].required = 0; /* runs only when the engine split K/V (plugin.h) */
  plan->lse_base = DKB_LSE_NATURAL;        /* Stats = max + ln(sum exp) unless stats_use_log2 is set */
  plan->empty_row = DKB_EMPTY_ZERO_NEGINF; /* never observed: plan refuses kv_len 0, admit every hiding mask */
  /* On the H200 the engine's output differed by a few ulps from call to call (README.md, "Limits"), and
   * cuDNN's numerical notes do not say so: dkb holds its repeat call to the oracle's tolerance. */
  plan->launch_flags = DKB_LAUNCH_NONDETERMINISTIC;
  st.plan_json = describe(c, st, a, ws_bytes);
  plan->plan_json = st.plan_json.c_str();
}

const char *cudnn_text(cudnnStatus_t s) { return cudnnGetErrorString(s); }

/* The device pointer execute needs for each of the graph's uids. */
void *bind(const state &st, const struct dkb_call *c, void *const *ws, int64_t uid) {
  unsigned char *arr = (unsigned char *)ws[st.ws_arrays];
  switch (uid) {
    case UID_Q: return const_cast<void *>(c->q);
    case UID_K: return c->k;
    case UID_V: return c->v;
    case UID_O: return c->o;
    case UID_STATS: return c->lse;
    case UID_SEQ_Q: return arr + st.off_seq_q;
    case UID_SEQ_KV: return arr + st.off_seq_kv;
    case UID_RAG_K: return arr + st.off_rag_k;
    case UID_RAG_V: return arr + st.off_rag_v;
    case UID_PT_K:
    case UID_PT_V: return arr + st.off_table; /* K and V share the pages */
    default: throw std::runtime_error("the graph wants uid " + std::to_string(uid) + ", which the plugin never made");
  }
}

}  // namespace

int sdpa_plan(const struct dkb_backend *self, const struct dkb_call *c, struct dkb_plan *plan, void **state_out) {
  (void)self;
  try {
    if (!c || !plan || !state_out) return fail(nullptr, "cudnn_sdpa: plan: null argument");
    *state_out = nullptr;
    if (plan->size < sizeof(struct dkb_plan))
      return fail(nullptr, "cudnn_sdpa: plan: dkb's plan is smaller than the plugin's");
    int dev = -1;
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce != cudaSuccess) {
      (void)cudaGetLastError();  /* the failure is reported here, not left for dkb's next CUDA check */
      return fail(nullptr, std::string("cudnn_sdpa: plan: cudaGetDevice: ") + cudaGetErrorString(ce));
    }
    if (dev != c->device)
      return fail(nullptr, "cudnn_sdpa: plan: the current device is " + std::to_string(dev) + ", the call's " +
                               std::to_string(c->device));
    arrays a = read_arrays(c);
    auto st = std::make_unique<state>();
    cudnnStatus_t s = cudnnCreate(&st->handle);
    if (s != CUDNN_STATUS_SUCCESS) {
      st->handle = nullptr;
      return fail(nullptr, std::string("cudnn_sdpa: plan: cudnnCreate: ") + cudnn_text(s));
    }
    st->graph = make_graph(c, a);
    if (!build(*st, true)) { /* no deterministic engine: any, and the plan says so */
      st->graph = make_graph(c, a);
      build(*st, false);
    }
    fill_plan(c, *st, a, plan);
    *state_out = st.release();
    return 0;
  } catch (const std::exception &e) { /* bad_call included: the call's arrays contradict its scalars */
    return fail(nullptr, std::string("cudnn_sdpa: plan: ") + e.what());
  } catch (...) {
    return fail(nullptr, "cudnn_sdpa: plan: unknown exception");
  }
}

int sdpa_setup(void *state_p, const struct dkb_call *c, void *const *ws, void *stream) {
  if (!state_p) return fail(nullptr, "cudnn_sdpa: setup: no state");
  state &st = *(state *)state_p;
  try {
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t ce = cudaMemcpyAsync(ws[st.ws_arrays], st.image.data(), st.image.size(), cudaMemcpyHostToDevice, s);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
    if (ce != cudaSuccess) {
      fail(&st.err, std::string("cudnn_sdpa: setup: upload of the plan arrays: ") + cudaGetErrorString(ce));
      return (int)ce;
    }
    st.uids = st.graph->get_variant_pack_uids_sorted();
    st.ptrs.assign(st.uids.size(), nullptr);
    for (size_t i = 0; i < st.uids.size(); i++) st.ptrs[i] = bind(st, c, ws, st.uids[i]);
    return 0;
  } catch (const std::exception &e) {
    return fail(&st.err, std::string("cudnn_sdpa: setup: ") + e.what());
  } catch (...) {
    return fail(&st.err, "cudnn_sdpa: setup: unknown exception");
  }
}

int sdpa_launch(void *state_p, const struct dkb_call *c, void *const *ws, void *stream) {
  if (!state_p) return fail(nullptr, "cudnn_sdpa: launch: no state");
  state &st = *(state *)state_p;
  try {
    if (st.ptrs.size() != st.uids.size() || st.uids.empty())
      return fail(&st.err, "cudnn_sdpa: launch: setup did not run");
    for (size_t i = 0; i < st.uids.size(); i++) st.ptrs[i] = bind(st, c, ws, st.uids[i]);
    cudnnStatus_t s = cudnnSetStream(st.handle, (cudaStream_t)stream);
    if (s != CUDNN_STATUS_SUCCESS)
      return fail(&st.err, std::string("cudnn_sdpa: launch: cudnnSetStream: ") + cudnn_text(s));
    auto e =
        st.graph->execute(st.handle, st.ptrs.data(), (int)st.ptrs.size(), st.ws_cudnn >= 0 ? ws[st.ws_cudnn] : nullptr);
    if (e.is_bad()) return fail(&st.err, "cudnn_sdpa: launch: execute: " + e.get_message());
    return 0;
  } catch (const std::exception &e) {
    return fail(&st.err, std::string("cudnn_sdpa: launch: ") + e.what());
  } catch (...) {
    return fail(&st.err, "cudnn_sdpa: launch: unknown exception");
  }
}

void sdpa_release(void *state_p) {
  try {
    delete (state *)state_p;
  } catch (...) { /* a destructor that throws cannot be reported: release returns nothing */
  }
}

const char *sdpa_last_error(void *state_p) { return state_p ? ((state *)state_p)->err.c_str() : thread_last_error(); }

}  // namespace cudnn_plugin
