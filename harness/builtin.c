/* builtin.c - dkb's own CUDA backends as tables of the backend ABI (include/dkb/backend.h), registered
 * by harness/backends.c beside any plugin's, with admission predicates that tell the truth about what
 * kernels/decode.cu was built for:
 *   dkb_split_kv         (priority 10)  split-KV producer + combine (kernels/decode.cu)
 *   dkb_naive_reference  (priority 100) one CTA per output row, no split; reads lengths on the host
 * Their plan is harness/plan.c's; their workspaces are the plan's items (persistent), the split states
 * (scratch: dkb poisons them), the fused combine's arrival counters (zero before the first launch, the
 * kernel resets its own) and the FlashMask arrays (persistent). */
#include "harness/builtin.h"
#include "harness/device.h"
#include "harness/plan.h"
#include "kernels/decode.h"
#include "lib/cjson.h"
#include "oracles/dtype.h"
#include "version.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

/* ---- admission: one predicate per factor over the dispatch key ------------------------------------ */

struct dkb_caps {
  int family;          /* DKB_FAMILY_* */
  int max_head_dim;    /* Q */
  int split_kv;        /* Q, G: instances come from dkb_split_kv_supported */
  int graph;           /* C */
};
typedef void (*caps_predicate)(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out);

/* H: the binary carries sm_90 SASS and compute_90 PTX. */
static void dkb_hardware(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->device_type != DK_CUDA) return;
  if (k->compute_capability == DK_ABSENT) admit_fail(out, "compute_capability unknown: no CUDA device");
  else if (k->compute_capability < 90) admit_fail(out, "compute_capability=%lld unsupported (built for sm_90)", k->compute_capability);
}

static void dkb_dtype(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->dtype != DKB_F16 && k->dtype != DKB_BF16 && k->dtype != DKB_F32) admit_fail(out, "dtype=%s unsupported", dkb_dtype_name(k->dtype));
}

static void dkb_kv(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->kv_dtype != k->dtype)
    admit_fail(out, "kv_dtype=%s unsupported with dtype=%s (one storage dtype)", dkb_dtype_name(k->kv_dtype), dkb_dtype_name(k->dtype));
}

static void dkb_shape(const struct dkb_caps *c, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->q_len < 1 || k->q_len > 4) admit_fail(out, "q_len=%lld unsupported", k->q_len);
  int mult = k->dtype == DKB_F32 ? 4 : 8;  /* one 16-byte vector lane group */
  if (k->head_dim_qk > c->max_head_dim || k->head_dim_qk % mult) admit_fail(out, "head_dim_qk=%lld unsupported", k->head_dim_qk);
  if (k->head_dim_vo > c->max_head_dim || k->head_dim_vo % mult) admit_fail(out, "head_dim_vo=%lld unsupported", k->head_dim_vo);
}

static void dkb_gqa(const struct dkb_caps *c, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!c->split_kv || k->num_kv_heads < 1 || k->num_q_heads % k->num_kv_heads) return;
  long long rows = k->num_q_heads / k->num_kv_heads * k->q_len;
  if (k->head_dim_qk > 256 || k->head_dim_vo > 256) return;  /* already a Q reason */
  if (!dkb_split_kv_supported((int)k->dtype, (int)k->head_dim_qk, (int)k->head_dim_vo, (int)rows, NULL, 0))
    admit_fail(out, "query_rows_per_kv_head=%lld unsupported (gqa %lld x q_len %lld, head dims %lld/%lld)", rows,
               k->num_q_heads / k->num_kv_heads, k->q_len, k->head_dim_qk, k->head_dim_vo);
}

static void dkb_layout(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (!k->last_dim_contiguous) admit_fail(out, "last_dim_contiguous=false unsupported");
}

static void dkb_mask(const struct dkb_caps *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->mask_kind == DK_MASK_DENSE_CUSTOM) admit_fail(out, "mask_kind=dense_custom unsupported");
  if (k->dropout_p > 0) admit_fail(out, "dropout_p>0 unsupported");
}

static void dkb_lifecycle(const struct dkb_caps *c, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->cuda_graph && !c->graph) admit_fail(out, "cuda_graph=true unsupported (launcher reads lengths on the host)");
}

static const caps_predicate PREDICATES[ADMIT_NFACTORS] = {
    [ADMIT_H] = dkb_hardware, [ADMIT_D] = dkb_dtype, [ADMIT_K] = dkb_kv,     [ADMIT_Q] = dkb_shape,
    [ADMIT_G] = dkb_gqa,      [ADMIT_L] = dkb_layout, [ADMIT_M] = dkb_mask, [ADMIT_C] = dkb_lifecycle};

static const struct dkb_caps SPLIT_CAPS = {DKB_FAMILY_SPLIT_KV, 256, 1, 1};
static const struct dkb_caps NAIVE_CAPS = {DKB_FAMILY_NAIVE, 1024, 0, 0};

static const struct dkb_caps *caps_of(const struct dkb_backend *self) {
  return !strcmp(self->name, "dkb_naive_reference") ? &NAIVE_CAPS : &SPLIT_CAPS;
}

/* The dispatch key the predicates read, from the ABI's scalars. */
static void key_of_call(const struct dkb_call *call, struct dispatch_key *k) {
  static const enum dk_layout LAYOUT[] = {DK_CONTIGUOUS_NHD, DK_CONTIGUOUS_HND, DK_RAGGED, DK_PAGED_NHD, DK_PAGED_HND};
  static const enum dk_mask MASK[] = {DK_MASK_NONE, DK_MASK_CAUSAL, DK_MASK_SLIDING_WINDOW, DK_MASK_FLASHMASK};
  dispatch_key_init(k);
  k->device_type = DK_CUDA;
  k->device_index = call->device;
  k->compute_capability = call->compute_capability < 0 ? DK_ABSENT : call->compute_capability;
  k->phase = call->phase == DKB_ABI_APPEND ? DK_APPEND : DK_DECODE;
  k->batch = call->B;
  k->q_len = call->q_len;
  k->kv_len = call->max_kv_len;
  k->num_q_heads = call->H_q;
  k->num_kv_heads = call->H_kv;
  k->head_dim_qk = call->d_qk;
  k->head_dim_vo = call->d_v;
  k->dtype = (enum dkb_dtype)call->dtype;
  k->kv_dtype = (enum dkb_dtype)call->kv_dtype;
  k->last_dim_contiguous = 1;
  k->mask_kind = MASK[call->mask_kind];
  k->window = call->mask_kind == DKB_ABI_MASK_SLIDING_WINDOW ? call->window : DK_ABSENT;
  k->cuda_graph = call->graph;
  k->cache_layout = LAYOUT[call->layout];
  k->page_size = dk_layout_is_paged(k->cache_layout) ? call->page_size : DK_ABSENT;
}

static int builtin_admit(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_reason *r, int cap,
                         int *n) {
  const struct dkb_caps *caps = caps_of(self);
  struct dispatch_key k;
  key_of_call(call, &k);
  *n = 0;
  for (int f = 0; f < ADMIT_NFACTORS; f++) {
    if (!PREDICATES[f]) continue;
    struct admit_reasons out;
    admit_reasons_clear(&out);
    PREDICATES[f](caps, &k, &out);
    for (size_t i = 0; i < out.n; i++) dkb_reason_add(r, cap, n, ADMIT_FACTOR_LETTERS[f], "%s", out.text[i]);
  }
  return 0;
}

/* ---- plan, setup, launch -------------------------------------------------------------------------- */

enum { WS_ITEMS, WS_U, WS_M, WS_L, WS_VALID, WS_COUNT, WS_MASK, WS_SCORES, WS_N };

struct builtin_state {
  const struct builtin_ctx *ctx;
  int family;
  struct decode_plan pl;
  struct dkb_decode_params p;  /* scalars at plan time, pointers after setup */
  int ws_index[WS_N];          /* index of each region in the plan's workspace list, -1 when absent */
  char *plan_text;             /* the plan document (canonical JSON) */
  char error[512];
};

static _Thread_local char g_error[512];

static const char *builtin_last_error(void *state) {
  return state ? ((struct builtin_state *)state)->error : g_error;
}

static void builtin_release(void *state) {
  struct builtin_state *s = state;
  if (!s) return;
  plan_release(&s->pl);
  free(s->plan_text);
  free(s);
}

static int fail(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, 512, fmt, ap);
  va_end(ap);
  return DKB_BACKEND_ERROR;
}

/* kernels/decode.h numbers its dtypes as enum dkb_dtype and the ABI do, so a call's dtype passes through. */
_Static_assert(DKB_KDT_F16 == DKB_F16 && DKB_KDT_BF16 == DKB_BF16 && DKB_KDT_F32 == DKB_F32, "dtype numbering");
_Static_assert((int)DKB_ABI_F16 == (int)DKB_F16 && (int)DKB_ABI_BF16 == (int)DKB_BF16 && (int)DKB_ABI_F32 == (int)DKB_F32,
               "dtype numbering");

static void params_scalars(const struct decode_call *c, const struct decode_inputs *in, const struct decode_plan *pl,
                           struct dkb_decode_params *p) {
  memset(p, 0, sizeof *p);
  p->B = c->B;
  p->C = c->C;
  p->H_q = c->H_q;
  p->H_kv = c->H_kv;
  p->dk = c->dk;
  p->dv = c->dv;
  p->dtype = c->dtype;
  p->scale = (float)c->scale;
  p->layout = c->layout;
  p->table = c->table;
  p->T_cap = c->T_cap;
  p->page_size = (int)c->page_size;
  p->table_width = (int)in->L.table_width;
  p->mask_kind = c->mask_kind;
  p->window = c->window;
  p->sink = c->sink;
  p->fm_block = (int)in->fm_block;
  p->n_items = pl->n_items;
  p->total_slots = pl->total_slots;
  p->direct = pl->direct;
  p->fused = pl->fused;
  p->cluster = pl->cluster;
  p->hp = pl->kv_heads_per_cta;
  p->three = pl->three;
  p->eight = pl->eight;
  p->max_item_pages = pl->max_item_pages;
  p->abi = c->abi;
  p->ws_o_dtype = c->ws_o_dtype;
}

static void add_ws(struct builtin_state *s, struct dkb_plan *plan, int which, const char *name, uint64_t bytes, int kind) {
  struct dkb_workspace *w = &plan->ws[plan->n_workspaces];
  snprintf(w->name, sizeof w->name, "%s", name);
  w->bytes = bytes;
  w->kind = kind;
  w->alignment = 256;
  s->ws_index[which] = plan->n_workspaces++;
}

/* Offsets of n arrays packed in one workspace, each at a 256-byte boundary: the kernels were written
 * against separate cudaMalloc'ed arrays and load some of them as int4 (tile_pipe.cuh's FlashMask
 * summaries), so every array keeps cudaMalloc's alignment. Returns the bytes. */
static size_t regions(const size_t *sz, int n, size_t *off) {
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    off[i] = at;
    at += (sz[i] + 255) & ~(size_t)255;
  }
  return at;
}

/* The plan's item arrays in one workspace. */
static size_t items_layout(const struct decode_plan *pl, int B, size_t off[7]) {
  const size_t n = (size_t)pl->n_items, sz[7] = {n * 4, n * 8, n * 8, n * 4, n * 8, n * 8, (size_t)(B + 1) * 4};
  return regions(sz, 7, off);
}

/* Bytes of the FlashMask arrays (col_indptr, the four interval vectors, the summaries and their indptr). */
static size_t mask_layout(const struct decode_call *c, const struct decode_inputs *in, size_t off[7]) {
  const size_t ncol = (size_t)in->col_indptr[c->B], nsum = (size_t)in->fm_sum_indptr[c->B] * 8;
  const size_t sz[7] = {(size_t)(c->B + 1) * 8, ncol * 4, ncol * 4, ncol * 4, ncol * 4, nsum * 4, (size_t)(c->B + 1) * 8};
  return regions(sz, 7, off);
}

struct plan_opts builtin_plan_opts(const struct decode_call *c, int sm_count, int device) {
  const int rows = (c->H_q / c->H_kv) * c->C;
  const int tile = dkb_decode_tile_tokens(c->dtype, c->dk, c->dv, rows);
  struct plan_opts po = {tile > 0 ? tile : 64, sm_count, 0, dkb_decode_wave_ctas(c->dtype, c->dk, c->dv, rows),
                         dkb_decode_hp_max(c->dtype, c->dk, c->dv, rows, c->H_kv, c->mask_kind, c->layout, (int)c->page_size),
                         dkb_decode_three_room(c->dtype, c->dk, c->dv, rows),
                         dkb_decode_eight_room(c->dtype, c->dk, c->dv, rows), 0};
  if (device < 0) return po;
  po.ctas_per_sm = dkb_decode_occupancy(c->dtype, c->dk, c->dv, rows);
  if (po.three_room && dkb_decode_three_occupancy(c->dtype, c->dk, c->dv, rows) < 3) po.three_room = 0;
  po.dram_bytes_per_s = dkb_device_dram_bytes_per_s(device);
  return po;
}

static int builtin_plan(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_plan *plan, void **state) {
  const struct builtin_ctx *ctx = self->user;
  const struct decode_call *c = ctx->c;
  const struct decode_inputs *in = ctx->in;
  *state = NULL;
  struct builtin_state *s = DKB_CALLOC(1, sizeof *s);
  s->ctx = ctx;
  s->family = caps_of(self)->family;
  for (int i = 0; i < WS_N; i++) s->ws_index[i] = -1;
  const struct plan_opts po = builtin_plan_opts(c, call->sm_count, ctx->gpu && s->family == DKB_FAMILY_SPLIT_KV ? call->device : -1);
  struct dkb_err e;
  dkb_err_clear(&e);
  if (plan_build(c, in, &po, &s->pl, &e)) {
    fail(g_error, "%s", e.msg);
    builtin_release(s);
    return DKB_BACKEND_ERROR;
  }
  const struct decode_plan *pl = &s->pl;
  params_scalars(c, in, pl, &s->p);
  const int naive = s->family == DKB_FAMILY_NAIVE;
  plan->splits = naive ? 1 : pl->max_slots;
  plan->work_items = naive ? c->B * c->C * c->H_q : pl->n_items;
  plan->lse_base = DKB_LSE_NATURAL;
  plan->empty_row = DKB_EMPTY_ZERO_NEGINF;
  plan->launch_flags = naive ? DKB_LAUNCH_READS_HOST : 0;
  size_t off[7];
  if (!naive) {
    add_ws(s, plan, WS_ITEMS, "plan_items", items_layout(pl, c->B, off), DKB_WS_PERSISTENT);
    if (!pl->direct && !pl->cluster) { /* a cluster plan's states stay in shared memory */
      size_t srows = (size_t)pl->total_slots * c->H_q * c->C;
      size_t ue = c->abi == DKB_ABI_MLU ? 4 : dkb_dtype_bytes((enum dkb_dtype)c->ws_o_dtype);
      add_ws(s, plan, WS_U, c->abi == DKB_ABI_MLU ? "state_u" : "state_o", srows * (size_t)c->dv * ue, DKB_WS_SCRATCH);
      add_ws(s, plan, WS_M, c->abi == DKB_ABI_MLU ? "state_m" : "state_lse", srows * sizeof(float), DKB_WS_SCRATCH);
      if (c->abi == DKB_ABI_MLU) add_ws(s, plan, WS_L, "state_l", srows * sizeof(float), DKB_WS_SCRATCH);
      /* validity bytes get NaN's 0xFF too: a slot the producer forgot reads as "valid" with a NaN payload */
      add_ws(s, plan, WS_VALID, "state_valid", srows, DKB_WS_SCRATCH);
      /* arrival counters start at zero; the kernel's last CTA of each group resets its own */
      if (pl->fused) add_ws(s, plan, WS_COUNT, "combine_count", (size_t)c->B * c->H_kv * sizeof(int), DKB_WS_ZERO_FIRST);
    }
  } else {
    int64_t mx = 0;
    for (int b = 0; b < c->B; b++) mx = c->kv_len[b] > mx ? c->kv_len[b] : mx;
    add_ws(s, plan, WS_SCORES, "scores", (size_t)c->B * c->C * c->H_q * (size_t)mx * sizeof(float), DKB_WS_SCRATCH);
  }
  if (in->col_indptr) add_ws(s, plan, WS_MASK, "flashmask", mask_layout(c, in, off), DKB_WS_PERSISTENT);
  /* The kernels a launch with these parameters runs (exact symbols: the scalars decide the instance). */
  struct dkb_decode_params q = s->p;
  q.k_new = c->phase == PHASE_APPEND ? (const void *)&q : NULL;
  struct dkb_kernel_info kin[DKB_MAX_KERNELS];
  int nk = ctx->gpu ? dkb_decode_kernels(&q, s->family, kin, DKB_MAX_KERNELS) : 0;
  static const int ROLE[] = {DKB_KERNEL_PRODUCER, DKB_KERNEL_COMBINE, DKB_KERNEL_PRODUCER, DKB_KERNEL_APPEND,
                             DKB_KERNEL_FUSED};
  for (int i = 0; i < nk; i++) {
    struct dkb_kernel_decl *k = &plan->kernels[plan->n_kernels++];
    snprintf(k->name, sizeof k->name, "%s", kin[i].symbol);
    k->role = ROLE[kin[i].role];
    k->match = DKB_MATCH_SYMBOL;
    k->required = 1;
  }
  json_t *pj = plan_json(c, pl);
  /* the naive backend ignores the split plan: one pass per output row, nothing to merge */
  if (naive) json_object_set_new(pj, "combine", json_string("none (naive backend, one pass)"));
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = cjson_write(pj, 0, &b, &e);
  json_decref(pj);
  if (rc) {
    dkb_buf_release(&b);
    builtin_release(s);
    return fail(g_error, "%s", e.msg);
  }
  s->plan_text = b.p;  /* the buffer's bytes, NUL terminated */
  plan->plan_json = s->plan_text;
  *state = s;
  return 0;
}

static int upload(void *dst, const void *src, size_t n, char *error) {
  if (!n) return 0;
  int rc = (int)cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
  return rc ? fail(error, "cudaMemcpy of the plan: %s", cudaGetErrorString((cudaError_t)rc)), rc : 0;
}

static int builtin_setup(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  (void)stream;
  struct builtin_state *s = state;
  const struct decode_call *c = s->ctx->c;
  const struct decode_inputs *in = s->ctx->in;
  const struct decode_plan *pl = &s->pl;
  struct dkb_decode_params *p = &s->p;
  p->q = call->q;
  p->o = call->o;
  p->lse = call->lse;
  p->k = call->k;
  p->v = call->v;
  p->kv_len = call->d_kv_len;
  p->cache_batch_idx = call->d_cache_batch_idx;
  p->indptr = call->d_indptr;
  p->block_table = call->d_block_table;
  p->page_indptr = call->d_page_indptr;
  p->page_indices = call->d_page_indices;
  p->k_new = call->k_new;
  p->v_new = call->v_new;
  size_t off[7];
  int rc;
#define AT(region, i) ((char *)ws[s->ws_index[region]] + off[i])
  if (s->ws_index[WS_ITEMS] >= 0) {
    items_layout(pl, c->B, off);
    const size_t n = (size_t)pl->n_items;
    if ((rc = upload(AT(WS_ITEMS, 0), pl->item_b, n * 4, s->error)) || (rc = upload(AT(WS_ITEMS, 1), pl->item_lo, n * 8, s->error)) ||
        (rc = upload(AT(WS_ITEMS, 2), pl->item_hi, n * 8, s->error)) || (rc = upload(AT(WS_ITEMS, 3), pl->item_slot, n * 4, s->error)) ||
        (rc = upload(AT(WS_ITEMS, 4), pl->item_n, n * 8, s->error)) || (rc = upload(AT(WS_ITEMS, 5), pl->item_base, n * 8, s->error)) ||
        (rc = upload(AT(WS_ITEMS, 6), pl->slot_indptr, (size_t)(c->B + 1) * 4, s->error)))
      return rc;
    p->item_b = (const int32_t *)AT(WS_ITEMS, 0);
    p->item_lo = (const int64_t *)AT(WS_ITEMS, 1);
    p->item_hi = (const int64_t *)AT(WS_ITEMS, 2);
    p->item_slot = (const int32_t *)AT(WS_ITEMS, 3);
    p->item_n = (const int64_t *)AT(WS_ITEMS, 4);
    p->item_base = (const int64_t *)AT(WS_ITEMS, 5);
    p->slot_indptr = (const int32_t *)AT(WS_ITEMS, 6);
  }
  if (s->ws_index[WS_MASK] >= 0) {
    mask_layout(c, in, off);
    const size_t ncol = (size_t)in->col_indptr[c->B], nsum = (size_t)in->fm_sum_indptr[c->B] * 8;
    if ((rc = upload(AT(WS_MASK, 0), in->col_indptr, (size_t)(c->B + 1) * 8, s->error)) ||
        (rc = upload(AT(WS_MASK, 1), in->uts, ncol * 4, s->error)) || (rc = upload(AT(WS_MASK, 2), in->ute, ncol * 4, s->error)) ||
        (rc = upload(AT(WS_MASK, 3), in->lts, ncol * 4, s->error)) || (rc = upload(AT(WS_MASK, 4), in->lte, ncol * 4, s->error)) ||
        (rc = upload(AT(WS_MASK, 5), in->fm_summary, nsum * 4, s->error)) ||
        (rc = upload(AT(WS_MASK, 6), in->fm_sum_indptr, (size_t)(c->B + 1) * 8, s->error)))
      return rc;
    p->col_indptr = (const int64_t *)AT(WS_MASK, 0);
    p->uts = (const int32_t *)AT(WS_MASK, 1);
    p->ute = (const int32_t *)AT(WS_MASK, 2);
    p->lts = (const int32_t *)AT(WS_MASK, 3);
    p->lte = (const int32_t *)AT(WS_MASK, 4);
    p->fm_summary = (const int32_t *)AT(WS_MASK, 5);
    p->fm_sum_indptr = (const int64_t *)AT(WS_MASK, 6);
  }
#undef AT
#define WS(region) (s->ws_index[region] >= 0 ? ws[s->ws_index[region]] : NULL)
  p->ws_u = WS(WS_U);
  p->ws_m = WS(WS_M);
  p->ws_l = WS(WS_L);
  p->ws_valid = WS(WS_VALID);
  p->combine_count = WS(WS_COUNT);
#undef WS
  return 0;
}

/* rc of a kernel launcher, with the words last_error gives the runner when it is not 0. */
static int launched(struct builtin_state *s, int rc, const char *what) {
  if (rc) fail(s->error, "%s did not launch (%s)", what, cudaGetErrorName((cudaError_t)rc));
  return rc;
}

static int builtin_launch(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  (void)call;
  struct builtin_state *s = state;
  int rc = 0;
  if (s->p.k_new && (rc = launched(s, dkb_append_launch(&s->p, stream), "the append kernel"))) return rc;
  if (s->family == DKB_FAMILY_NAIVE)
    return launched(s, dkb_naive_launch(&s->p, ws[s->ws_index[WS_SCORES]], stream), "the naive reference kernel");
  return launched(s, dkb_decode_launch(&s->p, stream), "the split-KV producer or its combine kernel");
}

static const struct dkb_backend TABLES[2] = {
    {"dkb_split_kv", DKB_VERSION, 10, "split-KV producer + exact combine (kernels/decode.cu)", NULL, builtin_admit,
     builtin_plan, builtin_setup, builtin_launch, builtin_release, builtin_last_error,
     "fp16/bf16/fp32, head dims <= 256 (multiples of 8; 4 for fp32), <= 128 query rows per K/V head, every layout, "
     "mask and split policy, append, graph mode; sm_90"},
    {"dkb_naive_reference", DKB_VERSION, 100, "naive one-row-per-CTA reference, no split", NULL, builtin_admit,
     builtin_plan, builtin_setup, builtin_launch, builtin_release, builtin_last_error,
     "fp16/bf16/fp32, head dims <= 1024 (multiples of 8; 4 for fp32), any query rows per K/V head, every layout and mask, "
     "append; no graph mode; sm_90"},
};

int builtin_kernel_binaries(const struct dkb_backend *t, void *state, struct dkb_kernel_info *out, int cap) {
  if (!state || t->plan != builtin_plan) return 0;
  const struct builtin_state *s = state;
  struct dkb_decode_params q = s->p;
  if (s->ctx->c->phase == PHASE_APPEND && !q.k_new) q.k_new = &q;
  int n = dkb_decode_kernels(&q, s->family, out, cap);
  return n > 0 ? n : 0;
}

void builtin_tables(struct dkb_backend out[2], struct builtin_ctx *ctx) {
  for (int i = 0; i < 2; i++) {
    out[i] = TABLES[i];
    out[i].user = ctx;
  }
}
