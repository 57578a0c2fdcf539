/* test_gpu.c - the cuDNN plugin on a GPU, part of its test program (test_cudnn.c): one small call per K/V
 * addressing mode (and one with a sliding window) runs through plan, setup and launch (directly and
 * replayed from a CUDA graph) against a float64 reference, with NaN in O, LSE and the scratch workspace;
 * without a device each case skips and says why. */
#include "dkb/backend.h"
#include "plugins/cudnn/test_cudnn.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int have_gpu(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  if (e == cudaSuccess && n > 0) return 1;
  print_message("[  SKIP    ] no CUDA device (%s): the GPU run of the plugin is not exercised here\n",
                cudaGetErrorString(e));
  return 0;
}

#define CU(x)                                                                                          \
  do {                                                                                                 \
    cudaError_t e_ = (x);                                                                              \
    if (e_ != cudaSuccess) fail_msg("%s: %s (%s:%d)", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)

static uint16_t bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even (no NaN or Inf here) */
  return (uint16_t)(u >> 16);
}
static double from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* A small decode case: 3 requests of 1, 37 and 300 keys, GQA 8/2, d 64, bf16, in one of the layouts. */
enum { B_ = 3, HQ = 8, HKV = 2, D = 64, P = 16, TCAP = 320, ROWS = 4, PAGES = 40 };
static const int64_t KV[B_] = {1, 37, 300};

struct gpu_case {
  struct dkb_call c;
  int32_t rows[B_], table[ROWS * (TCAP / P)], page_indptr[B_ + 1], page_indices[PAGES], last[B_];
  int64_t indptr[B_ + 1];
  size_t kv_elems;
};

/* Element offset of key j of request b, head g, dim 0 in the cache, per dkb's layouts. */
static size_t kv_at(const struct gpu_case *g, int b, int64_t j, int h) {
  const struct dkb_call *c = &g->c;
  int64_t page;
  switch (c->layout) {
    case DKB_ABI_CONTIGUOUS_NHD: return (size_t)(((g->rows[b] * c->T_cap + j) * c->H_kv + h) * D);
    case DKB_ABI_CONTIGUOUS_HND: return (size_t)(((g->rows[b] * c->H_kv + h) * c->T_cap + j) * D);
    case DKB_ABI_RAGGED_NHD: return (size_t)(((g->indptr[b] + j) * c->H_kv + h) * D);
    default:
      page = c->table == DKB_ABI_TABLE_DENSE ? g->table[g->rows[b] * c->table_width + j / P]
                                             : g->page_indices[g->page_indptr[b] + j / P];
      if (c->layout == DKB_ABI_PAGED_NHD) return (size_t)(((page * P + j % P) * c->H_kv + h) * D);
      return (size_t)(((page * c->H_kv + h) * P + j % P) * D);
  }
}

static void gpu_case_init(struct gpu_case *g, int layout, int table) {
  memset(g, 0, sizeof *g);
  struct dkb_call *c = &g->c;
  *c = base_call();
  c->B = B_;
  c->H_q = HQ;
  c->H_kv = HKV;
  c->d_qk = c->d_v = D;
  c->scale = 0.125;
  c->max_kv_len = 300;
  c->total_kv_len = 338;
  c->layout = layout;
  c->table = table;
  c->mask_kind = DKB_ABI_MASK_NONE;
  c->kv_len = KV;
  /* cache rows remapped (request b in row ROWS-1-b) everywhere but contiguous NHD, which runs strided */
  for (int b = 0; b < B_; b++) g->rows[b] = layout == DKB_ABI_CONTIGUOUS_NHD ? b : ROWS - 1 - b;
  c->cache_batch_idx = g->rows;
  c->T_cap = TCAP;
  c->cache_rows = ROWS;
  g->kv_elems = (size_t)ROWS * TCAP * HKV * D;
  if (layout == DKB_ABI_RAGGED_NHD) {
    int64_t at = 0;
    for (int b = 0; b <= B_; b++) g->indptr[b] = at, at += b < B_ ? KV[b] + 5 : 0; /* gaps between requests */
    c->indptr = g->indptr;
    g->kv_elems = (size_t)g->indptr[B_] * HKV * D;
  }
  if (layout == DKB_ABI_PAGED_NHD || layout == DKB_ABI_PAGED_HND) {
    c->page_size = P;
    c->num_pages = PAGES;
    g->kv_elems = (size_t)PAGES * P * HKV * D;
    int next = PAGES - 1; /* pages handed out from the top of the pool down: no request's pages are in order */
    if (table == DKB_ABI_TABLE_DENSE) {
      c->table_width = TCAP / P;
      c->block_table = g->table;
      for (int i = 0; i < ROWS * (TCAP / P); i++) g->table[i] = -1;
      for (int b = 0; b < B_; b++)
        for (int64_t j = 0; j < (KV[b] + P - 1) / P; j++) g->table[g->rows[b] * c->table_width + j] = next--;
    } else {
      for (int b = 0; b < B_; b++) {
        g->page_indptr[b + 1] = g->page_indptr[b] + (int32_t)((KV[b] + P - 1) / P);
        for (int32_t j = g->page_indptr[b]; j < g->page_indptr[b + 1]; j++) g->page_indices[j] = next--;
        g->last[b] = (int32_t)((KV[b] - 1) % P + 1);
      }
      c->n_page_indices = g->page_indptr[B_];
      c->page_indptr = g->page_indptr;
      c->page_indices = g->page_indices;
      c->last_page_len = g->last;
    }
  }
}

static void reference(const struct gpu_case *g, const uint16_t *q, const uint16_t *k, const uint16_t *v, double *o,
                      double *lse) {
  static double sc[TCAP];
  for (int b = 0; b < B_; b++)
    for (int h = 0; h < HQ; h++) {
      const uint16_t *qr = q + (b * HQ + h) * D;
      int hk = h / (HQ / HKV);
      double m = -INFINITY, l = 0;
      int64_t j0 = g->c.mask_kind == DKB_ABI_MASK_SLIDING_WINDOW && KV[b] > g->c.window ? KV[b] - g->c.window : 0;
      for (int64_t j = j0; j < KV[b]; j++) {
        double x = 0;
        for (int d = 0; d < D; d++) x += from_bf16(qr[d]) * from_bf16(k[kv_at(g, b, j, hk) + d]);
        sc[j] = x * g->c.scale;
        m = sc[j] > m ? sc[j] : m;
      }
      double *orow = o + (b * HQ + h) * D;
      for (int d = 0; d < D; d++) orow[d] = 0;
      for (int64_t j = j0; j < KV[b]; j++) {
        double p = exp(sc[j] - m);
        l += p;
        for (int d = 0; d < D; d++) orow[d] += p * from_bf16(v[kv_at(g, b, j, hk) + d]);
      }
      for (int d = 0; d < D; d++) orow[d] /= l;
      lse[b * HQ + h] = m + log(l);
    }
}

static void fill(uint16_t *x, size_t n, unsigned *seed) {
  for (size_t i = 0; i < n; i++) x[i] = bf16((float)(rand_r(seed) % 2001 - 1000) / 1000.0f);
}

/* Runs the case through plan, setup and launch (direct, then replayed from a graph) and compares. */
static void run_gpu_case(struct gpu_case *g) {
  struct dkb_call *c = &g->c;
  size_t nq = B_ * HQ * D;
  uint16_t *hq = malloc(nq * 2), *hk = malloc(g->kv_elems * 2), *hv = malloc(g->kv_elems * 2), *ho = malloc(nq * 2);
  float *hl = malloc(B_ * HQ * 4);
  double *ro = malloc(nq * sizeof(double)), *rl = malloc(B_ * HQ * sizeof(double));
  unsigned seed = 7;
  fill(hq, nq, &seed);
  fill(hk, g->kv_elems, &seed);
  fill(hv, g->kv_elems, &seed);
  reference(g, hq, hk, hv, ro, rl);
  void *dq, *dk, *dv, *dout, *dl;
  CU(cudaMalloc(&dq, nq * 2));
  CU(cudaMalloc(&dk, g->kv_elems * 2));
  CU(cudaMalloc(&dv, g->kv_elems * 2));
  CU(cudaMalloc(&dout, nq * 2));
  CU(cudaMalloc(&dl, B_ * HQ * 4));
  CU(cudaMemcpy(dq, hq, nq * 2, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(dk, hk, g->kv_elems * 2, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(dv, hv, g->kv_elems * 2, cudaMemcpyHostToDevice));
  c->q = dq, c->k = dk, c->v = dv, c->o = dout, c->lse = dl;
  struct dkb_reason r[DKB_MAX_REASONS];
  assert_int_equal(admit(c, r, DKB_MAX_REASONS), 0);
  struct dkb_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.size = sizeof plan;
  void *state = NULL;
  if (be->plan(be, c, &plan, &state)) fail_msg("plan: %s", be->last_error(NULL));
  print_message("  plan %s\n", plan.plan_json);
  assert_int_equal(plan.splits, DKB_SPLITS_UNREPORTED);
  assert_int_equal(plan.n_kernels, 2);
  assert_string_equal(plan.kernels[0].name, KERNEL_PREFIX);
  assert_int_equal(plan.kernels[0].match, DKB_MATCH_PREFIX);
  assert_int_equal(plan.kernels[0].required, 1);
  assert_string_equal(plan.kernels[1].name, COMBINE_PREFIX);
  assert_int_equal(plan.kernels[1].role, DKB_KERNEL_COMBINE);
  assert_int_equal(plan.kernels[1].required, 0);
  assert_int_equal(plan.lse_base, DKB_LSE_NATURAL);
  assert_int_equal(plan.launch_flags, DKB_LAUNCH_NONDETERMINISTIC);
  void *ws[DKB_MAX_WORKSPACES] = {0};
  for (int i = 0; i < plan.n_workspaces; i++) {
    CU(cudaMalloc(&ws[i], plan.ws[i].bytes ? plan.ws[i].bytes : 1));
    if (plan.ws[i].kind != DKB_WS_PERSISTENT)
      CU(cudaMemset(ws[i], plan.ws[i].kind == DKB_WS_SCRATCH ? 0xff : 0, plan.ws[i].bytes));
  }
  cudaStream_t st;
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (be->setup(state, c, ws, st)) fail_msg("setup: %s", be->last_error(state));
  for (int pass = 0; pass < 2; pass++) { /* 0: direct launch, 1: captured into a graph and replayed */
    CU(cudaMemset(dout, 0xff, nq * 2));  /* NaN in O, LSE and the scratch workspace */
    CU(cudaMemset(dl, 0xff, B_ * HQ * 4));
    for (int i = 0; i < plan.n_workspaces; i++)
      if (plan.ws[i].kind == DKB_WS_SCRATCH) CU(cudaMemset(ws[i], 0xff, plan.ws[i].bytes));
    CU(cudaDeviceSynchronize());
    if (pass == 0) {
      if (be->launch(state, c, ws, st)) fail_msg("launch: %s", be->last_error(state));
    } else {
      cudaGraph_t gr;
      cudaGraphExec_t ex;
      CU(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));  /* as dkb's timing captures */
      int rc = be->launch(state, c, ws, st);
      CU(cudaStreamEndCapture(st, &gr));
      if (rc) fail_msg("launch under capture: %s", be->last_error(state));
      CU(cudaGraphInstantiate(&ex, gr, 0));
      CU(cudaGraphLaunch(ex, st));
      CU(cudaStreamSynchronize(st));
      CU(cudaGraphExecDestroy(ex));
      CU(cudaGraphDestroy(gr));
    }
    CU(cudaStreamSynchronize(st));
    CU(cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hl, dl, B_ * HQ * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < nq; i++)
      if (!(fabs(from_bf16(ho[i]) - ro[i]) <= 4e-3 + 1e-2 * fabs(ro[i])))
        fail_msg("pass %d: o[%zu] = %g, reference %g", pass, i, from_bf16(ho[i]), ro[i]);
    for (int i = 0; i < B_ * HQ; i++)
      if (!(fabs(hl[i] - rl[i]) <= 1e-3 + 1e-4 * fabs(rl[i])))
        fail_msg("pass %d: lse[%d] = %g, reference %g", pass, i, hl[i], rl[i]);
  }
  be->release(state);
  CU(cudaStreamDestroy(st));
  for (int i = 0; i < plan.n_workspaces; i++) CU(cudaFree(ws[i]));
  CU(cudaFree(dq));
  CU(cudaFree(dk));
  CU(cudaFree(dv));
  CU(cudaFree(dout));
  CU(cudaFree(dl));
  free(hq), free(hk), free(hv), free(ho), free(hl), free(ro), free(rl);
}

void gpu_contiguous_nhd_strided(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_CONTIGUOUS_NHD, DKB_ABI_TABLE_NONE);
  run_gpu_case(&g);
}

void gpu_contiguous_hnd_remapped_rows(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_CONTIGUOUS_HND, DKB_ABI_TABLE_NONE);
  run_gpu_case(&g);
}

void gpu_ragged_nhd(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_RAGGED_NHD, DKB_ABI_TABLE_NONE);
  run_gpu_case(&g);
}

void gpu_paged_nhd_csr(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_PAGED_NHD, DKB_ABI_TABLE_CSR);
  run_gpu_case(&g);
}

void gpu_paged_nhd_window(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_PAGED_NHD, DKB_ABI_TABLE_CSR);
  g.c.mask_kind = DKB_ABI_MASK_SLIDING_WINDOW;
  g.c.window = 20; /* request 0 sees its 1 key, 1 and 2 their last 20 */
  run_gpu_case(&g);
}

void gpu_paged_hnd_dense(void **s) {
  (void)s;
  if (!have_gpu()) skip();
  static struct gpu_case g;
  gpu_case_init(&g, DKB_ABI_PAGED_HND, DKB_ABI_TABLE_DENSE);
  run_gpu_case(&g);
}
