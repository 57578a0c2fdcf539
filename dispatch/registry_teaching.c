/* registry_teaching.c - the four deliberately generic teaching backends of article 0x07D as one
 * registry table. Their names describe no real library. Each narrow property of the article's table
 * is one capability below; everything else is deliberately broad so that the seven-case matrix shows
 * exactly the article's reasons. The predicates are shared, driven by a capability record: dkb's own
 * CUDA backends write their own predicates (e.g. I: the head dim was compiled in) in their own table. */
#include "dispatch/registry.h"

#define BIT(x) (1u << (x))

/* What one teaching backend can do. 0 / empty means "no constraint" where noted. */
struct teach_caps {
  long long min_cc;                /* H: smallest compute capability on CUDA; 0 = any */
  unsigned dtypes;                 /* D: bit per enum dkb_dtype for Q/O */
  unsigned kv_dtypes;              /* K: bit per enum dkb_dtype for K/V */
  unsigned layouts;                /* K: bit per enum dk_layout the backend has an address program for */
  long long q_len_min, q_len_max;  /* Q: q_len range; q_len_max 0 = unbounded */
  long long head_dims[4];          /* Q: supported head dims (both d_qk and d_v); all 0 = any up to max_head_dim */
  long long max_head_dim;          /* Q */
  int needs_contiguous_last_dim;   /* L */
  unsigned masks;                  /* M: bit per enum dk_mask */
  int dropout;                     /* M: dropout_p > 0 supported */
  int training;                    /* P: training forward supported */
  int deterministic;               /* N: can honour requires_deterministic */
  int graph;                       /* C: capturable into a CUDA graph */
};

#define CAPS(b) ((const struct teach_caps *)(b)->caps)

static void teach_phase(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->training && !CAPS(b)->training) admit_fail(out, "training=true unsupported");
}

static void teach_hardware(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->device_type == DK_CUDA && k->compute_capability < CAPS(b)->min_cc)
    admit_fail(out, "compute_capability=%lld unsupported", k->compute_capability);
}

static void teach_dtype(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!(CAPS(b)->dtypes & BIT(k->dtype))) admit_fail(out, "dtype=%s unsupported", dkb_dtype_name(k->dtype));
}

static void teach_kv(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!(CAPS(b)->kv_dtypes & BIT(k->kv_dtype))) admit_fail(out, "kv_dtype=%s unsupported", dkb_dtype_name(k->kv_dtype));
  if (!(CAPS(b)->layouts & BIT(k->cache_layout)))
    admit_fail(out, "cache_layout=%s unsupported", DK_LAYOUT_NAMES[k->cache_layout]);
}

static int head_dim_ok(const struct teach_caps *c, long long d) {
  if (d > c->max_head_dim) return 0;
  if (!c->head_dims[0]) return 1;
  for (int i = 0; i < 4 && c->head_dims[i]; i++)
    if (c->head_dims[i] == d) return 1;
  return 0;
}

static void teach_shape(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  const struct teach_caps *c = CAPS(b);
  if (k->q_len < c->q_len_min || (c->q_len_max && k->q_len > c->q_len_max)) admit_fail(out, "q_len=%lld unsupported", k->q_len);
  if (!head_dim_ok(c, k->head_dim_qk)) admit_fail(out, "head_dim_qk=%lld unsupported", k->head_dim_qk);
  if (!head_dim_ok(c, k->head_dim_vo)) admit_fail(out, "head_dim_vo=%lld unsupported", k->head_dim_vo);
}

static void teach_layout(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (CAPS(b)->needs_contiguous_last_dim && !k->last_dim_contiguous) admit_fail(out, "last_dim_contiguous=false unsupported");
}

static void teach_mask(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!(CAPS(b)->masks & BIT(k->mask_kind))) admit_fail(out, "mask_kind=%s unsupported", DK_MASK_NAMES[k->mask_kind]);
  if (k->dropout_p > 0 && !CAPS(b)->dropout) admit_fail(out, "dropout_p>0 unsupported");
}

static void teach_numerics(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->requires_deterministic && !CAPS(b)->deterministic) admit_fail(out, "requires_deterministic=true unsupported");
}

static void teach_lifecycle(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (k->cuda_graph && !CAPS(b)->graph) admit_fail(out, "cuda_graph=true unsupported");
}

#define HALF_TYPES (BIT(DKB_F16) | BIT(DKB_BF16))
#define ALL_TYPES (BIT(DKB_F16) | BIT(DKB_BF16) | BIT(DKB_F32))
#define PAGED (BIT(DK_PAGED_NHD) | BIT(DK_PAGED_HND))
#define CONTIGUOUS (BIT(DK_CONTIGUOUS_NHD) | BIT(DK_CONTIGUOUS_HND) | BIT(DK_RAGGED))
#define FAST_MASKS (BIT(DK_MASK_NONE) | BIT(DK_MASK_CAUSAL) | BIT(DK_MASK_SLIDING_WINDOW))
#define ALL_MASKS (FAST_MASKS | BIT(DK_MASK_DENSE_CUSTOM) | BIT(DK_MASK_FLASHMASK))

/* CUDA paged decode: 1 <= S_q <= 4, selected dimensions, causal/window masks. */
static const struct teach_caps DECODE_PAGED_FAST = {
    .min_cc = 80, .dtypes = HALF_TYPES, .kv_dtypes = HALF_TYPES, .layouts = PAGED, .q_len_min = 1, .q_len_max = 4,
    .head_dims = {64, 128, 256}, .max_head_dim = 256, .needs_contiguous_last_dim = 1, .masks = FAST_MASKS,
    .deterministic = 1, .graph = 1};
/* CUDA contiguous prefill: S_q >= 2, no paged cache. */
static const struct teach_caps PREFILL_CONTIGUOUS_FAST = {
    .min_cc = 80, .dtypes = HALF_TYPES, .kv_dtypes = HALF_TYPES, .layouts = CONTIGUOUS, .q_len_min = 2,
    .head_dims = {64, 128, 256}, .max_head_dim = 256, .needs_contiguous_last_dim = 1, .masks = FAST_MASKS,
    .deterministic = 1, .graph = 1};
/* Semantic fallback for paged K/V: wider dimensions and masks, no graph mode. */
static const struct teach_caps PAGED_REFERENCE = {
    .dtypes = ALL_TYPES, .kv_dtypes = ALL_TYPES, .layouts = PAGED, .q_len_min = 1, .max_head_dim = 512,
    .masks = ALL_MASKS, .deterministic = 1, .graph = 0};
/* Contiguous CPU/CUDA reference: broad semantics, no paged-cache address program. */
static const struct teach_caps MATH_REFERENCE = {
    .dtypes = ALL_TYPES, .kv_dtypes = ALL_TYPES, .layouts = CONTIGUOUS, .q_len_min = 1, .max_head_dim = 1024,
    .masks = ALL_MASKS, .dropout = 1, .training = 1, .deterministic = 1, .graph = 1};

/* One predicate per factor; I and E hold for every teaching backend (installed, enabled). */
#define TEACH_PREDICATES                                                                                         \
  {[ADMIT_P] = teach_phase, [ADMIT_H] = teach_hardware, [ADMIT_D] = teach_dtype, [ADMIT_K] = teach_kv,          \
   [ADMIT_Q] = teach_shape, [ADMIT_L] = teach_layout, [ADMIT_M] = teach_mask, [ADMIT_N] = teach_numerics,        \
   [ADMIT_C] = teach_lifecycle}

static const struct dispatch_backend TEACHING[] = {
    {"decode_paged_fast", 10, BIT(DK_CUDA), BIT(DK_DECODE), TEACH_PREDICATES, &DECODE_PAGED_FAST,
     "CUDA paged decode"},
    {"prefill_contiguous_fast", 20, BIT(DK_CUDA), BIT(DK_PREFILL), TEACH_PREDICATES, &PREFILL_CONTIGUOUS_FAST,
     "CUDA contiguous prefill"},
    {"paged_reference", 30, BIT(DK_CUDA), BIT(DK_DECODE) | BIT(DK_PREFILL) | BIT(DK_APPEND), TEACH_PREDICATES,
     &PAGED_REFERENCE, "semantic fallback for paged K/V"},
    {"math_reference", 40, BIT(DK_CPU) | BIT(DK_CUDA),
     BIT(DK_DECODE) | BIT(DK_PREFILL) | BIT(DK_APPEND) | BIT(DK_TRAINING_FORWARD), TEACH_PREDICATES,
     &MATH_REFERENCE, "contiguous CPU/CUDA reference"},
};

const struct dispatch_registry dispatch_teaching_registry = {"teaching", TEACHING, sizeof TEACHING / sizeof *TEACHING};
