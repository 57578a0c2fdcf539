/* backends.c - dkb's CUDA backends as one registry table (see backends.h). */
#include "harness/backends.h"
#include "kernels/decode.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"

#include <string.h>

#define BIT(x) (1u << (x))

struct dkb_caps {
  int family;          /* DKB_FAMILY_* */
  int max_head_dim;    /* Q */
  int split_kv;        /* Q, G: instances come from dkb_split_kv_supported */
  int graph;           /* C */
};
#define CAPS(b) ((const struct dkb_caps *)(b)->caps)


/* H: the binary carries sm_90 SASS and compute_90 PTX. */
static void dkb_hardware(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->device_type != DK_CUDA) return;
  if (k->compute_capability == DK_ABSENT) admit_fail(out, "compute_capability unknown: no CUDA device");
  else if (k->compute_capability < 90) admit_fail(out, "compute_capability=%lld unsupported (built for sm_90)", k->compute_capability);
}

static void dkb_dtype(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->dtype != DKB_F16 && k->dtype != DKB_BF16 && k->dtype != DKB_F32) admit_fail(out, "dtype=%s unsupported", dkb_dtype_name(k->dtype));
}

static void dkb_kv(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->kv_dtype != k->dtype)
    admit_fail(out, "kv_dtype=%s unsupported with dtype=%s (one storage dtype)", dkb_dtype_name(k->kv_dtype), dkb_dtype_name(k->dtype));
}

static void dkb_shape(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  const struct dkb_caps *c = CAPS(b);
  if (k->q_len < 1 || k->q_len > 4) admit_fail(out, "q_len=%lld unsupported", k->q_len);
  int mult = k->dtype == DKB_F32 ? 4 : 8;  /* one 16-byte vector lane group */
  if (k->head_dim_qk > c->max_head_dim || k->head_dim_qk % mult) admit_fail(out, "head_dim_qk=%lld unsupported", k->head_dim_qk);
  if (k->head_dim_vo > c->max_head_dim || k->head_dim_vo % mult) admit_fail(out, "head_dim_vo=%lld unsupported", k->head_dim_vo);
}

static void dkb_gqa(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!CAPS(b)->split_kv || k->num_kv_heads < 1 || k->num_q_heads % k->num_kv_heads) return;
  long long rows = k->num_q_heads / k->num_kv_heads * k->q_len;
  if (k->head_dim_qk > 256 || k->head_dim_vo > 256) return;  /* already a Q reason */
  if (!dkb_split_kv_supported((int)k->dtype, (int)k->head_dim_qk, (int)k->head_dim_vo, (int)rows, NULL, 0))
    admit_fail(out, "query_rows_per_kv_head=%lld unsupported (gqa %lld x q_len %lld, head dims %lld/%lld)", rows,
               k->num_q_heads / k->num_kv_heads, k->q_len, k->head_dim_qk, k->head_dim_vo);
}

static void dkb_layout(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (!k->last_dim_contiguous) admit_fail(out, "last_dim_contiguous=false unsupported");
}

static void dkb_mask(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->mask_kind == DK_MASK_DENSE_CUSTOM) admit_fail(out, "mask_kind=dense_custom unsupported");
  if (k->dropout_p > 0) admit_fail(out, "dropout_p>0 unsupported");
}

static void dkb_lifecycle(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->cuda_graph && !CAPS(b)->graph) admit_fail(out, "cuda_graph=true unsupported (launcher reads lengths on the host)");
}

static const struct dkb_caps SPLIT_CAPS = {DKB_FAMILY_SPLIT_KV, 256, 1, 1};
static const struct dkb_caps NAIVE_CAPS = {DKB_FAMILY_NAIVE, 1024, 0, 0};

#define DKB_PREDICATES                                                                            \
  {[ADMIT_H] = dkb_hardware, [ADMIT_D] = dkb_dtype, [ADMIT_K] = dkb_kv, [ADMIT_Q] = dkb_shape,   \
   [ADMIT_G] = dkb_gqa, [ADMIT_L] = dkb_layout, [ADMIT_M] = dkb_mask, [ADMIT_C] = dkb_lifecycle}

static const struct dispatch_backend BACKENDS[] = {
    {"dkb_split_kv", 10, BIT(DK_CUDA), BIT(DK_DECODE) | BIT(DK_APPEND), DKB_PREDICATES, &SPLIT_CAPS,
     "split-KV producer + exact combine (kernels/decode.cu)"},
    {"dkb_naive_reference", 100, BIT(DK_CUDA), BIT(DK_DECODE) | BIT(DK_APPEND), DKB_PREDICATES, &NAIVE_CAPS,
     "naive one-row-per-CTA reference, no split"},
};

const struct dispatch_registry backends_registry = {"dkb_cuda", BACKENDS, sizeof BACKENDS / sizeof BACKENDS[0]};

void backends_key(const struct decode_call *c, long long cc, struct dispatch_key *k) {
  static const enum dk_layout LAYOUT[KV_LAYOUT_COUNT] = {DK_CONTIGUOUS_NHD, DK_CONTIGUOUS_HND, DK_RAGGED, DK_PAGED_NHD,
                                                         DK_PAGED_HND};
  static const enum dk_mask MASK[MASK_KIND_COUNT] = {DK_MASK_NONE, DK_MASK_CAUSAL, DK_MASK_SLIDING_WINDOW, DK_MASK_FLASHMASK};
  dispatch_key_init(k);
  k->device_type = DK_CUDA;
  k->device_index = 0;
  k->compute_capability = cc;
  k->phase = c->phase == PHASE_APPEND ? DK_APPEND : DK_DECODE;
  k->batch = c->B;
  k->q_len = c->C;
  long long mx = 0;
  for (int b = 0; b < c->B; b++) mx = c->kv_len[b] > mx ? c->kv_len[b] : mx;
  k->kv_len = mx;
  k->num_q_heads = c->H_q;
  k->num_kv_heads = c->H_kv;
  k->head_dim_qk = c->dk;
  k->head_dim_vo = c->dv;
  k->dtype = (enum dkb_dtype)c->dtype;
  k->kv_dtype = (enum dkb_dtype)c->dtype;
  k->last_dim_contiguous = 1;
  k->mask_kind = MASK[c->mask_kind];
  k->window = c->mask_kind == MASK_SLIDING_WINDOW ? c->window : DK_ABSENT;
  k->dropout_p = 0.0;
  k->training = 0;
  snprintf(k->backend_request, sizeof k->backend_request, "%s", c->backend);
  k->requires_deterministic = 0;
  k->cuda_graph = c->graph;
  k->cache_layout = LAYOUT[c->layout];
  k->page_size = (c->layout == KV_PAGED_NHD || c->layout == KV_PAGED_HND) ? c->page_size : DK_ABSENT;
  k->workspace_device_type = DK_CUDA;
  k->workspace_device_index = 0;
}

int backends_select(const struct decode_call *c, long long cc, struct admission *a) {
  struct dispatch_key k;
  backends_key(c, cc, &k);
  const struct dispatch_backend *sel = dispatch_admit(&backends_registry, &k, a);
  return sel ? CAPS(sel)->family : -1;
}
