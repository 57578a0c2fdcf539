/* test_gpu.c - the FlashInfer plugin on a GPU, without dkb's harness: each case plans, sets up and
 * launches one backend on a small call whose unused cache slots, outputs and scratch workspaces hold
 * NaN (as dkb poisons them), compares O and LSE with a float64 reference, launches again and wants the
 * same bits, and replays the call from a CUDA graph where the case asks for graph mode. Skipped, with
 * the reason, where no sm_90 device is. Part of test_plugin (make flashinfer-test). */
#include "dkb/backend.h"

#include <cuda_runtime.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

extern const struct dkb_backend *g_decode, *g_tc;

#define CUDA_OK(x)                                                                                      \
  do {                                                                                                  \
    cudaError_t e_ = (x);                                                                               \
    if (e_ != cudaSuccess) fail_msg("%s:%d: %s: %s", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
  } while (0)

/* ---- 16-bit values ----------------------------------------------------------------------------------- */

/* Inputs are multiples of 1/64 in [-2, 2]: exact in fp16 and bf16, so the reference sees the same numbers. */
static uint16_t to_bits(float v, int dtype) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if (dtype == DKB_ABI_BF16) return (uint16_t)(u >> 16);
  if (v == 0) return (uint16_t)((u >> 16) & 0x8000);
  int e;
  double m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
  uint16_t s = v < 0 ? 0x8000 : 0;
  return (uint16_t)(s | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024));
}

static double from_bits(uint16_t h, int dtype) {
  if (dtype == DKB_ABI_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) { /* k / 64, k in [-128, 128] */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((int)((g_rng >> 33) % 257) - 128) / 64.0f;
}

/* ---- one case ---------------------------------------------------------------------------------------- */

struct gcase {
  const char *what;
  int tc;            /* 0: flashinfer_decode, 1: flashinfer_decode_tc */
  int dtype, d, H_q, H_kv, B;
  int layout, table; /* enum dkb_abi_layout, enum dkb_abi_table */
  int P;             /* paged: page size */
  int64_t window;    /* 0: causal */
  int split, chunk;  /* enum dkb_abi_split; chunk: keys */
  int graph;
  int64_t kv[4];
};

static void *dev_copy(const void *h, size_t n) {
  void *d = NULL;
  CUDA_OK(cudaMalloc(&d, n ? n : 1));
  if (n) CUDA_OK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
  return d;
}

static void run_case(const struct gcase *g) {
  const struct dkb_backend *be = g->tc ? g_tc : g_decode;
  const int B = g->B, Hq = g->H_q, Hk = g->H_kv, d = g->d;
  int64_t kvmax = 0, total = 0;
  for (int b = 0; b < B; b++) {
    kvmax = g->kv[b] > kvmax ? g->kv[b] : kvmax;
    total += g->kv[b];
  }
  /* logical values: q [B][Hq][d], k/v [B][kvmax][Hk][d] */
  float *q = malloc(sizeof(float) * B * Hq * d), *k = malloc(sizeof(float) * B * kvmax * Hk * d),
        *v = malloc(sizeof(float) * B * kvmax * Hk * d);
  for (int64_t i = 0; i < (int64_t)B * Hq * d; i++) q[i] = rnd();
  for (int64_t i = 0; i < (int64_t)B * kvmax * Hk * d; i++) k[i] = rnd(), v[i] = rnd();

  struct dkb_call c;
  memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.abi_version = DKB_BACKEND_ABI_VERSION;
  int dev = 0, major = 0, minor = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDA_OK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  c.device = dev;
  c.compute_capability = 10 * major + minor;
  c.sm_count = sms;
  c.phase = DKB_ABI_DECODE;
  c.B = B;
  c.q_len = 1;
  c.H_q = Hq;
  c.H_kv = Hk;
  c.d_qk = c.d_v = d;
  c.dtype = c.kv_dtype = g->dtype;
  c.scale = 1.0 / sqrt((double)d);
  c.max_kv_len = kvmax;
  c.total_kv_len = total;
  c.layout = g->layout;
  c.table = g->table;
  c.mask_kind = g->window ? DKB_ABI_MASK_SLIDING_WINDOW : DKB_ABI_MASK_CAUSAL;
  c.window = g->window;
  c.split_policy = g->split;
  c.splits = 1;
  c.chunk = g->chunk;
  c.max_splits = 1024;
  c.return_lse = 1;
  c.graph = g->graph;
  c.kv_len = g->kv;

  /* the cache in the call's layout, every slot no key fills NaN (0xffff) */
  const size_t row = (size_t)Hk * d; /* elements of one key position (NHD) */
  int64_t slots = 0;
  int32_t *cbi = NULL, *bt = NULL, *pind = NULL, *pidx = NULL, *plast = NULL;
  int64_t *rind = NULL;
  if (g->layout == DKB_ABI_PAGED_NHD || g->layout == DKB_ABI_PAGED_HND) {
    int64_t pages = 0;
    for (int b = 0; b < B; b++) pages += (g->kv[b] + g->P - 1) / g->P;
    c.page_size = g->P;
    c.num_pages = pages + 3; /* a few never used */
    slots = c.num_pages * g->P;
    int32_t *perm = malloc(sizeof(int32_t) * c.num_pages);
    for (int i = 0; i < c.num_pages; i++) perm[i] = i;
    for (int i = (int)c.num_pages - 1; i > 0; i--) { /* shuffled pages */
      g_rng = g_rng * 6364136223846793005ull + 1;
      int j = (int)((g_rng >> 33) % (uint64_t)(i + 1)), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    if (g->table == DKB_ABI_TABLE_CSR) {
      pind = malloc(sizeof(int32_t) * (B + 1));
      pidx = malloc(sizeof(int32_t) * pages);
      plast = malloc(sizeof(int32_t) * B);
      pind[0] = 0;
      for (int b = 0, n = 0; b < B; b++) {
        int np = (int)((g->kv[b] + g->P - 1) / g->P);
        for (int j = 0; j < np; j++, n++) pidx[n] = perm[n];
        pind[b + 1] = n;
        plast[b] = (int32_t)(g->kv[b] - (int64_t)(np - 1) * g->P);
      }
      c.n_page_indices = pages;
      c.page_indptr = pind;
      c.page_indices = pidx;
      c.last_page_len = plast;
    } else {
      c.table_width = (kvmax + g->P - 1) / g->P + 2;
      c.cache_rows = B + 1;
      bt = malloc(sizeof(int32_t) * c.cache_rows * c.table_width);
      for (int64_t i = 0; i < c.cache_rows * c.table_width; i++) bt[i] = -1;
      cbi = malloc(sizeof(int32_t) * B);
      for (int b = 0, n = 0; b < B; b++) {
        cbi[b] = B - b; /* rows out of order, row 0 unused */
        for (int j = 0; j < (g->kv[b] + g->P - 1) / g->P; j++, n++) bt[cbi[b] * c.table_width + j] = perm[n];
      }
      c.block_table = bt;
      c.cache_batch_idx = cbi;
    }
    free(perm);
  } else if (g->layout == DKB_ABI_RAGGED_NHD) {
    rind = malloc(sizeof(int64_t) * (B + 1));
    rind[0] = 0;
    for (int b = 0; b < B; b++) rind[b + 1] = rind[b] + g->kv[b] + 5; /* 5 poisoned slots after each */
    slots = rind[B];
    c.indptr = rind;
  } else {
    c.T_cap = kvmax + 9;
    c.cache_rows = B + 1;
    slots = c.cache_rows * c.T_cap;
    cbi = malloc(sizeof(int32_t) * B);
    for (int b = 0; b < B; b++) cbi[b] = B - b;
    c.cache_batch_idx = cbi;
  }
  uint16_t *hk = malloc(2 * slots * row), *hv = malloc(2 * slots * row);
  memset(hk, 0xff, 2 * slots * row);
  memset(hv, 0xff, 2 * slots * row);
  for (int b = 0; b < B; b++)
    for (int64_t t = 0; t < g->kv[b]; t++)
      for (int h = 0; h < Hk; h++) {
        size_t at; /* element offset of (b, t, h, 0) in the layout */
        switch (g->layout) {
        case DKB_ABI_PAGED_NHD:
        case DKB_ABI_PAGED_HND: {
          int32_t page = g->table == DKB_ABI_TABLE_CSR ? pidx[pind[b] + t / g->P]
                                                       : bt[cbi[b] * c.table_width + t / g->P];
          at = g->layout == DKB_ABI_PAGED_NHD ? ((size_t)page * g->P + t % g->P) * row + (size_t)h * d
                                              : (((size_t)page * Hk + h) * g->P + t % g->P) * d;
          break;
        }
        case DKB_ABI_RAGGED_NHD: at = (size_t)(rind[b] + t) * row + (size_t)h * d; break;
        case DKB_ABI_CONTIGUOUS_NHD: at = ((size_t)cbi[b] * c.T_cap + t) * row + (size_t)h * d; break;
        default: at = (((size_t)cbi[b] * Hk + h) * c.T_cap + t) * d;
        }
        for (int x = 0; x < d; x++) {
          size_t li = (((size_t)b * kvmax + t) * Hk + h) * d + x;
          hk[at + x] = to_bits(k[li], g->dtype);
          hv[at + x] = to_bits(v[li], g->dtype);
        }
      }
  uint16_t *hq = malloc(2 * (size_t)B * Hq * d);
  for (size_t i = 0; i < (size_t)B * Hq * d; i++) hq[i] = to_bits(q[i], g->dtype);
  c.q = dev_copy(hq, 2 * (size_t)B * Hq * d);
  c.k = dev_copy(hk, 2 * slots * row);
  c.v = dev_copy(hv, 2 * slots * row);
  CUDA_OK(cudaMalloc(&c.o, 2 * (size_t)B * Hq * d));
  CUDA_OK(cudaMalloc((void **)&c.lse, sizeof(float) * B * Hq));
  c.d_kv_len = dev_copy(g->kv, sizeof(int64_t) * B);
  if (cbi) c.d_cache_batch_idx = dev_copy(cbi, sizeof(int32_t) * B);
  if (bt) c.d_block_table = dev_copy(bt, sizeof(int32_t) * c.cache_rows * c.table_width);
  if (rind) c.d_indptr = dev_copy(rind, sizeof(int64_t) * (B + 1));
  if (pind) {
    c.d_page_indptr = dev_copy(pind, sizeof(int32_t) * (B + 1));
    c.d_page_indices = dev_copy(pidx, sizeof(int32_t) * c.n_page_indices);
    c.d_last_page_len = dev_copy(plast, sizeof(int32_t) * B);
  }

  struct dkb_reason r[DKB_MAX_REASONS];
  int n = 0;
  assert_int_equal(be->admit(be, &c, r, DKB_MAX_REASONS, &n), 0);
  if (n) fail_msg("%s: %s refuses it: %c %s", g->what, be->name, r[0].factor, r[0].text);
  struct dkb_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.size = sizeof plan;
  void *st = NULL;
  if (be->plan(be, &c, &plan, &st)) fail_msg("%s: plan: %s", g->what, be->last_error(NULL));
  void *ws[DKB_MAX_WORKSPACES] = {0};
  for (int i = 0; i < plan.n_workspaces; i++) {
    CUDA_OK(cudaMalloc(&ws[i], plan.ws[i].bytes));
    if (plan.ws[i].kind == DKB_WS_ZERO_FIRST) CUDA_OK(cudaMemset(ws[i], 0, plan.ws[i].bytes));
  }
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (be->setup(st, &c, ws, s)) fail_msg("%s: setup: %s", g->what, be->last_error(st));

  /* two launches, everything poisoned before each: the same bits both times */
  const size_t on = (size_t)B * Hq * d;
  uint16_t *ho[2] = {malloc(2 * on), malloc(2 * on)};
  float *hl[2] = {malloc(sizeof(float) * B * Hq), malloc(sizeof(float) * B * Hq)};
  cudaGraphExec_t exec = NULL;
  for (int rep = 0; rep < 2; rep++) {
    CUDA_OK(cudaMemsetAsync(c.o, 0xff, 2 * on, s));
    CUDA_OK(cudaMemsetAsync(c.lse, 0xff, sizeof(float) * B * Hq, s));
    for (int i = 0; i < plan.n_workspaces; i++)
      if (plan.ws[i].kind == DKB_WS_SCRATCH) CUDA_OK(cudaMemsetAsync(ws[i], 0xff, plan.ws[i].bytes, s));
    if (g->graph) {
      if (!exec) {
        cudaGraph_t graph;
        CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        int rc = be->launch(st, &c, ws, s);
        CUDA_OK(cudaStreamEndCapture(s, &graph));
        if (rc) fail_msg("%s: launch under capture: %s", g->what, be->last_error(st));
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
        CUDA_OK(cudaGraphDestroy(graph));
      }
      CUDA_OK(cudaGraphLaunch(exec, s));
    } else if (be->launch(st, &c, ws, s)) {
      fail_msg("%s: launch: %s", g->what, be->last_error(st));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(ho[rep], c.o, 2 * on, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hl[rep], c.lse, sizeof(float) * B * Hq, cudaMemcpyDeviceToHost));
  }
  if (memcmp(ho[0], ho[1], 2 * on) || memcmp(hl[0], hl[1], sizeof(float) * B * Hq))
    fail_msg("%s: a second launch gave other bits", g->what);

  /* float64 reference: query b sits at key kv_len - 1; the window keeps keys > q - window */
  const double tol = g->dtype == DKB_ABI_BF16 ? 2e-2 : 4e-3;
  double worst = 0, worst_lse = 0;
  double *sc = malloc(sizeof(double) * kvmax);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < Hq; h++) {
      const int hk_ = h / (Hq / Hk);
      const int64_t qpos = g->kv[b] - 1, lo = g->window ? (qpos - g->window + 1 > 0 ? qpos - g->window + 1 : 0) : 0;
      double m = -INFINITY, l = 0;
      for (int64_t t = lo; t <= qpos; t++) {
        double dot = 0;
        for (int x = 0; x < d; x++)
          dot += (double)q[((size_t)b * Hq + h) * d + x] * k[(((size_t)b * kvmax + t) * Hk + hk_) * d + x];
        sc[t] = dot * c.scale;
        m = sc[t] > m ? sc[t] : m;
      }
      for (int64_t t = lo; t <= qpos; t++) l += exp(sc[t] - m);
      const double lse = m + log(l), got_lse = hl[0][b * Hq + h] * 0.6931471805599453; /* base 2 */
      if (!(fabs(got_lse - lse) <= 1e-3 + 1e-3 * fabs(lse)))
        fail_msg("%s: lse[%d][%d] = %g, the reference %g", g->what, b, h, got_lse, lse);
      worst_lse = fmax(worst_lse, fabs(got_lse - lse));
      for (int x = 0; x < d; x++) {
        double o = 0;
        for (int64_t t = lo; t <= qpos; t++)
          o += exp(sc[t] - m) / l * v[(((size_t)b * kvmax + t) * Hk + hk_) * d + x];
        double got = from_bits(ho[0][((size_t)b * Hq + h) * d + x], g->dtype);
        if (!(fabs(got - o) <= tol + tol * fabs(o)))
          fail_msg("%s: o[%d][%d][%d] = %g, the reference %g", g->what, b, h, x, got, o);
        worst = fmax(worst, fabs(got - o));
      }
    }
  printf("  %-52s %-20s splits %2d, %d workspaces, %d kernels: max |o - ref| %.2e, |lse - ref| %.2e\n", g->what,
         be->name, plan.splits, plan.n_workspaces, plan.n_kernels, worst, worst_lse);

  if (exec) CUDA_OK(cudaGraphExecDestroy(exec));
  be->release(st);
  CUDA_OK(cudaStreamDestroy(s));
  for (int i = 0; i < plan.n_workspaces; i++) cudaFree(ws[i]);
  cudaFree((void *)c.q), cudaFree(c.k), cudaFree(c.v), cudaFree(c.o), cudaFree(c.lse), cudaFree((void *)c.d_kv_len);
  cudaFree((void *)c.d_cache_batch_idx), cudaFree((void *)c.d_block_table), cudaFree((void *)c.d_indptr);
  cudaFree((void *)c.d_page_indptr), cudaFree((void *)c.d_page_indices), cudaFree((void *)c.d_last_page_len);
  free(q), free(k), free(v), free(hk), free(hv), free(hq), free(sc), free(cbi), free(bt), free(pind), free(pidx);
  free(plast), free(rind), free(ho[0]), free(ho[1]), free(hl[0]), free(hl[1]);
}

void gpu_cases_match_the_reference(void **state) {
  (void)state;
  int n = 0, major = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1) {
    printf("  skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    (void)cudaGetLastError();
    skip();
  }
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major != 9) {
    printf("  skipped: device 0 is compute capability %d.x; the plugin is built for sm_90a\n", major);
    skip();
  }
  enum { BF = DKB_ABI_BF16, FP = DKB_ABI_F16, NHD = DKB_ABI_PAGED_NHD, HND = DKB_ABI_PAGED_HND,
         CSR = DKB_ABI_TABLE_CSR, DENSE = DKB_ABI_TABLE_DENSE, AUTO = DKB_ABI_SPLIT_AUTO };
  const struct gcase cases[] = {
      {"paged NHD csr p16, bf16 d128 gqa4, auto", 0, BF, 128, 32, 8, 4, NHD, CSR, 16, 0, AUTO, 0, 0, {1, 129, 3000, 2047}},
      {"paged NHD csr p16, bf16 d128 gqa4, auto", 1, BF, 128, 32, 8, 4, NHD, CSR, 16, 0, AUTO, 0, 0, {1, 129, 3000, 2047}},
      {"paged NHD csr p16, bf16 d128 mqa8 B=1 T=9000", 0, BF, 128, 8, 1, 1, NHD, CSR, 16, 0, AUTO, 0, 0, {9000}},
      {"paged NHD csr p16, bf16 d128 mqa8 B=1 T=9000", 1, BF, 128, 8, 1, 1, NHD, CSR, 16, 0, AUTO, 0, 0, {9000}},
      {"paged HND dense p64, fp16 d256 gqa8", 0, FP, 256, 16, 2, 3, HND, DENSE, 64, 0, AUTO, 0, 0, {700, 64, 65}},
      {"paged HND dense p64, fp16 d256 gqa8", 1, FP, 256, 16, 2, 3, HND, DENSE, 64, 0, AUTO, 0, 0, {700, 64, 65}},
      {"contiguous NHD, fp16 d64 mha", 0, FP, 64, 4, 4, 3, DKB_ABI_CONTIGUOUS_NHD, 0, 0, 0, AUTO, 0, 0, {27, 2100, 1000}},
      {"contiguous HND, bf16 d64 gqa2", 1, BF, 64, 4, 2, 2, DKB_ABI_CONTIGUOUS_HND, 0, 0, 0, AUTO, 0, 0, {81, 1500}},
      {"ragged NHD, bf16 d128 gqa4", 0, BF, 128, 8, 2, 3, DKB_ABI_RAGGED_NHD, 0, 0, 0, AUTO, 0, 0, {257, 9, 1800}},
      {"paged NHD p16, bf16 d128 gqa4, window 100", 0, BF, 128, 8, 2, 2, NHD, CSR, 16, 100, AUTO, 0, 0, {3000, 50}},
      {"paged NHD p16, bf16 d128 gqa4, window 100", 1, BF, 128, 8, 2, 2, NHD, CSR, 16, 100, AUTO, 0, 0, {3000, 50}},
      {"paged NHD p16, bf16 d128 gqa6, group 6", 0, BF, 128, 12, 2, 2, NHD, CSR, 16, 0, AUTO, 0, 0, {1000, 333}},
      {"paged NHD p16, fp16 d128 group 5 (tensor cores only)", 1, FP, 128, 10, 2, 2, NHD, CSR, 16, 0, AUTO, 0, 0, {1000, 333}},
      {"paged NHD p16, bf16 d128, chunk 256", 1, BF, 128, 8, 2, 2, NHD, CSR, 16, 0, DKB_ABI_SPLIT_CHUNK, 256, 0, {3000, 257}},
      {"paged NHD p16, bf16 d128, fixed 1 (no split)", 1, BF, 128, 8, 2, 2, NHD, CSR, 16, 0, DKB_ABI_SPLIT_FIXED, 0, 0, {3000, 257}},
      {"paged NHD p16, bf16 d128 gqa4, graph", 0, BF, 128, 32, 8, 4, NHD, CSR, 16, 0, AUTO, 0, 1, {1, 129, 3000, 2047}},
      {"paged NHD p16, bf16 d128 gqa4, graph", 1, BF, 128, 32, 8, 4, NHD, CSR, 16, 0, AUTO, 0, 1, {1, 129, 3000, 2047}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}
