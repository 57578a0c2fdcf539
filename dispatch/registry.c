/* registry.c - dispatch key, semantic validation, admission stages, the admission record and the plan
 * key (see registry.h; a recorded admission's verification: admission_verify.c). Nothing here knows a
 * particular backend: backends are rows of a table with predicate functions (registry_teaching.c holds
 * the four teaching backends of 0x07D). */
#include "dispatch/registry.h"
#include "lib/cjson.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const DK_DEVICE_NAMES[] = {"cpu", "cuda", NULL};
const char *const DK_PHASE_NAMES[] = {"decode", "prefill", "append", "mixed", "training_forward", "training_backward",
                                      NULL};
const char *const DK_LAYOUT_NAMES[] = {"contiguous_nhd", "contiguous_hnd", "ragged", "paged_nhd", "paged_hnd", NULL};
const char *const DK_MASK_NAMES[] = {"none", "causal", "sliding_window", "dense_custom", "flashmask", NULL};
const char ADMIT_FACTOR_LETTERS[ADMIT_NFACTORS + 1] = "IEPHDKQGLMNC";

/* Storage dtypes a key may name, in the spelling of oracles/dtype.h. */
static const char *const KEY_DTYPES[] = {"fp16", "bf16", "fp32", NULL};
static const enum dkb_dtype KEY_DTYPE_VALUES[] = {DKB_F16, DKB_BF16, DKB_F32};

int dk_layout_is_paged(enum dk_layout l) { return l == DK_PAGED_NHD || l == DK_PAGED_HND; }

static int is_training_phase(enum dk_phase p) { return p == DK_TRAINING_FORWARD || p == DK_TRAINING_BACKWARD; }

void dispatch_key_init(struct dispatch_key *k) {
  memset(k, 0, sizeof *k);
  k->device_type = DK_CUDA;
  k->compute_capability = DK_ABSENT;
  k->batch = 1;
  k->dtype = k->kv_dtype = DKB_F16;
  k->last_dim_contiguous = 1;
  k->window = DK_ABSENT;
  k->page_size = DK_ABSENT;
  k->workspace_device_type = DK_CUDA;
  k->workspace_bytes = DK_ABSENT;
  snprintf(k->backend_request, sizeof k->backend_request, "auto");
}

/* ---- reasons ---------------------------------------------------------------------------------- */

void admit_reasons_clear(struct admit_reasons *r) { memset(r, 0, sizeof *r); }

void admit_fail(struct admit_reasons *r, const char *fmt, ...) {
  if (r->n == ADMIT_MAX_REASONS) { r->dropped++; return; }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->text[r->n], ADMIT_REASON_MAX, fmt, ap);
  va_end(ap);
  r->factor[r->n++] = 0;
}

static json_t *reasons_json(const struct admit_reasons *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->n; i++) json_array_append_new(a, json_string(r->text[i]));
  if (r->dropped) json_array_append_new(a, json_sprintf("%zu more reasons dropped", r->dropped));
  return a;
}

/* ---- semantic validation (0x07A) ------------------------------------------------------------- */

static const char *tf(int b) { return b ? "true" : "false"; }

size_t dispatch_key_check(const struct dispatch_key *k, struct admit_reasons *why) {
  size_t before = why->n + why->dropped;
  if (k->batch <= 0) admit_fail(why, "batch=%lld must be > 0", k->batch);
  if (k->q_len <= 0) admit_fail(why, "q_len=%lld must be > 0", k->q_len);
  if (k->kv_len <= 0) admit_fail(why, "kv_len=%lld must be > 0", k->kv_len);
  if (k->num_q_heads <= 0) admit_fail(why, "num_q_heads=%lld must be > 0", k->num_q_heads);
  if (k->num_kv_heads <= 0) admit_fail(why, "num_kv_heads=%lld must be > 0", k->num_kv_heads);
  if (k->num_q_heads > 0 && k->num_kv_heads > 0 && k->num_q_heads % k->num_kv_heads)
    admit_fail(why, "num_q_heads=%lld is not a multiple of num_kv_heads=%lld", k->num_q_heads, k->num_kv_heads);
  if (k->head_dim_qk <= 0) admit_fail(why, "head_dim_qk=%lld must be > 0", k->head_dim_qk);
  if (k->head_dim_vo <= 0) admit_fail(why, "head_dim_vo=%lld must be > 0", k->head_dim_vo);
  if (!(k->dropout_p >= 0.0 && k->dropout_p <= 1.0)) {
    char v[32];
    cjson_format_double(k->dropout_p, v);
    admit_fail(why, "dropout_p=%s outside [0, 1]", isnan(k->dropout_p) ? "nan" : v);
  }
  const char *layout = DK_LAYOUT_NAMES[k->cache_layout];
  if (dk_layout_is_paged(k->cache_layout)) {
    if (k->page_size == DK_ABSENT) admit_fail(why, "cache_layout=%s requires page_size", layout);
    else if (k->page_size <= 0) admit_fail(why, "page_size=%lld must be > 0", k->page_size);
  } else if (k->page_size != DK_ABSENT) {
    admit_fail(why, "page_size=%lld given for non-paged cache_layout=%s", k->page_size, layout);
  }
  if (k->mask_kind == DK_MASK_SLIDING_WINDOW) {
    if (k->window == DK_ABSENT || k->window <= 0) admit_fail(why, "mask_kind=sliding_window requires window > 0");
  } else if (k->window != DK_ABSENT) {
    admit_fail(why, "window=%lld given for mask_kind=%s", k->window, DK_MASK_NAMES[k->mask_kind]);
  }
  if (k->device_type == DK_CUDA) {
    /* absent = the environment could not be observed (no driver, no device): not a malformed call;
     * every backend's hardware predicate then rejects it with that reason */
    if (k->compute_capability != DK_ABSENT && k->compute_capability <= 0)
      admit_fail(why, "compute_capability=%lld must be > 0", k->compute_capability);
  } else {
    if (k->compute_capability != DK_ABSENT)
      admit_fail(why, "compute_capability=%lld given for device_type=cpu", k->compute_capability);
    if (k->cuda_graph) admit_fail(why, "cuda_graph=true requires device_type=cuda");
  }
  if (k->device_index < 0) admit_fail(why, "device_index=%lld must be >= 0", k->device_index);
  if (k->workspace_device_index < 0)
    admit_fail(why, "workspace_device index %lld must be >= 0", k->workspace_device_index);
  if (k->training != is_training_phase(k->phase))
    admit_fail(why, "training=%s contradicts phase=%s", tf(k->training), DK_PHASE_NAMES[k->phase]);
  if (!k->backend_request[0]) admit_fail(why, "backend_request must be 'auto' or a backend name");
  if (k->workspace_bytes != DK_ABSENT && k->workspace_bytes < 0)
    admit_fail(why, "workspace_bytes=%lld must be >= 0", k->workspace_bytes);
  return why->n + why->dropped - before;
}

/* ---- the key's fields: one table for its JSON, its reader and its required keys ------------------ */

enum dk_kind {
  DKF_ENUM,    /* an enum stored as int, spelled by names[] */
  DKF_DTYPE,   /* an enum dkb_dtype, one of KEY_DTYPES */
  DKF_INT,     /* a long long; read within [lo, hi] */
  DKF_OPT_INT, /* a long long, null when DK_ABSENT; read >= 0 */
  DKF_NUM,     /* a double */
  DKF_BOOL,    /* an int, 0 or 1 */
  DKF_STR,     /* a char[DK_BACKEND_NAME_MAX] */
  DKF_DEVICE,  /* "cpu" or "cuda:N": an enum dk_device at off, its index (long long) at off2 */
};

struct dk_field {
  const char *name;            /* the JSON member */
  enum dk_kind kind;
  int full;                    /* only in the DK_FULL form, so optional when read */
  size_t off, off2;            /* offsetof(struct dispatch_key, ...) */
  const char *const *names;    /* DKF_ENUM spellings */
  long long lo, hi;            /* DKF_INT range */
};

#define AT(k, off, type) ((type *)((char *)(k) + (off)))
#define AT_C(k, off, type) ((const type *)((const char *)(k) + (off)))
#define OFF(field) offsetof(struct dispatch_key, field)
#define BIG (1LL << 53)
/* The twenty fields of 0x07A (DK_TEACHING, the digest the article prints), then the DK_FULL extras.
 * The order is the reader's: the first wrong field of a document is the one reported. */
static const struct dk_field DK_FIELDS[] = {
    {"phase", DKF_ENUM, 0, OFF(phase), 0, DK_PHASE_NAMES, 0, 0},
    {"device_type", DKF_ENUM, 0, OFF(device_type), 0, DK_DEVICE_NAMES, 0, 0},
    {"compute_capability", DKF_OPT_INT, 0, OFF(compute_capability), 0, NULL, 0, 0},
    {"dtype", DKF_DTYPE, 0, OFF(dtype), 0, NULL, 0, 0},
    {"kv_dtype", DKF_DTYPE, 0, OFF(kv_dtype), 0, NULL, 0, 0},
    {"q_len", DKF_INT, 0, OFF(q_len), 0, NULL, -BIG, BIG},
    {"kv_len", DKF_INT, 0, OFF(kv_len), 0, NULL, -BIG, BIG},
    {"num_q_heads", DKF_INT, 0, OFF(num_q_heads), 0, NULL, -BIG, BIG},
    {"num_kv_heads", DKF_INT, 0, OFF(num_kv_heads), 0, NULL, -BIG, BIG},
    {"head_dim_qk", DKF_INT, 0, OFF(head_dim_qk), 0, NULL, -BIG, BIG},
    {"head_dim_vo", DKF_INT, 0, OFF(head_dim_vo), 0, NULL, -BIG, BIG},
    {"cache_layout", DKF_ENUM, 0, OFF(cache_layout), 0, DK_LAYOUT_NAMES, 0, 0},
    {"page_size", DKF_OPT_INT, 0, OFF(page_size), 0, NULL, 0, 0},
    {"mask_kind", DKF_ENUM, 0, OFF(mask_kind), 0, DK_MASK_NAMES, 0, 0},
    {"dropout_p", DKF_NUM, 0, OFF(dropout_p), 0, NULL, 0, 0},
    {"training", DKF_BOOL, 0, OFF(training), 0, NULL, 0, 0},
    {"requires_deterministic", DKF_BOOL, 0, OFF(requires_deterministic), 0, NULL, 0, 0},
    {"cuda_graph", DKF_BOOL, 0, OFF(cuda_graph), 0, NULL, 0, 0},
    {"last_dim_contiguous", DKF_BOOL, 0, OFF(last_dim_contiguous), 0, NULL, 0, 0},
    {"backend_request", DKF_STR, 0, OFF(backend_request), 0, NULL, 0, 0},
    {"batch", DKF_INT, 1, OFF(batch), 0, NULL, -BIG, BIG},
    {"device_index", DKF_INT, 1, OFF(device_index), 0, NULL, 0, 1023},
    {"window", DKF_OPT_INT, 1, OFF(window), 0, NULL, 0, 0},
    {"workspace_bytes", DKF_OPT_INT, 1, OFF(workspace_bytes), 0, NULL, 0, 0},
    {"workspace_device", DKF_DEVICE, 1, OFF(workspace_device_type), OFF(workspace_device_index), NULL, 0, 0},
};
#define DK_NFIELDS (sizeof DK_FIELDS / sizeof *DK_FIELDS)
/* Enum members are read and written as int. */
_Static_assert(sizeof(enum dk_phase) == sizeof(int) && sizeof(enum dk_device) == sizeof(int) &&
                   sizeof(enum dk_layout) == sizeof(int) && sizeof(enum dk_mask) == sizeof(int) &&
                   sizeof(enum dkb_dtype) == sizeof(int),
               "enum fields of struct dispatch_key are int-sized");
_Static_assert(sizeof ((struct dispatch_key *)0)->backend_request == DK_BACKEND_NAME_MAX, "backend_request size");

const char *dispatch_key_teaching_field(size_t i) {
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++)
    if (!f->full && !i--) return f->name;
  return NULL;
}

/* ---- key JSON and digests -------------------------------------------------------------------- */

static json_t *opt_int(long long v) { return v == DK_ABSENT ? json_null() : json_integer(v); }

static void device_string(enum dk_device t, long long idx, char out[32]) {
  if (t == DK_CPU) snprintf(out, 32, "cpu");
  else snprintf(out, 32, "cuda:%lld", idx);
}

static json_t *field_json(const struct dispatch_key *k, const struct dk_field *f) {
  char dev[32];
  switch (f->kind) {
  case DKF_ENUM: return json_string(f->names[*AT_C(k, f->off, int)]);
  case DKF_DTYPE: return json_string(dkb_dtype_name((enum dkb_dtype)*AT_C(k, f->off, int)));
  case DKF_INT: return json_integer(*AT_C(k, f->off, long long));
  case DKF_OPT_INT: return opt_int(*AT_C(k, f->off, long long));
  case DKF_NUM: return json_real(*AT_C(k, f->off, double));
  case DKF_BOOL: return json_boolean(*AT_C(k, f->off, int));
  case DKF_STR: return json_string(AT_C(k, f->off, char));
  case DKF_DEVICE:
    device_string((enum dk_device)*AT_C(k, f->off, int), *AT_C(k, f->off2, long long), dev);
    return json_string(dev);
  }
  return json_null();
}

json_t *dispatch_key_to_json(const struct dispatch_key *k, enum dk_form form) {
  json_t *j = json_object();
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++)
    if (!f->full || form == DK_FULL) json_object_set_new(j, f->name, field_json(k, f));
  return j;
}

static int digest_of(json_t *j, char hex[65], struct dkb_err *err) {
  int rc = cjson_digest(j, hex, err);
  json_decref(j);
  return rc;
}

int dispatch_key_digest(const struct dispatch_key *k, enum dk_form form, char hex[65], struct dkb_err *err) {
  return digest_of(dispatch_key_to_json(k, form), hex, err);
}

/* null -> DK_ABSENT, otherwise an integer >= 0 (a negative size is not a call, it is a bad document). */
static int read_opt_int(struct jr *r, const json_t *obj, const char *ptr, const char *key, long long *out) {
  json_t *v = json_object_get(obj, key);
  if (!v) return 0;
  if (json_is_null(v)) { *out = DK_ABSENT; return 0; }
  return jr_int(r, obj, ptr, key, 1, 0, (1LL << 53), out);
}

static int read_device(struct jr *r, const json_t *obj, const char *ptr, const char *key, enum dk_device *t,
                       long long *idx) {
  const char *s = NULL;
  if (!json_object_get(obj, key)) return 0;
  if (jr_str(r, obj, ptr, key, 1, &s)) return -1;
  if (!strcmp(s, "cpu")) { *t = DK_CPU; *idx = 0; return 0; }
  char *end = NULL;
  if (!strncmp(s, "cuda:", 5) && s[5] >= '0' && s[5] <= '9') {
    long long v = strtoll(s + 5, &end, 10);
    if (!*end && v < 1024) { *t = DK_CUDA; *idx = v; return 0; }
  }
  return jr_fail(r, ptr, key, "must be 'cpu' or 'cuda:N' (got '%s')", s);
}

/* Reads field f of obj into k: spelling and type only (values are dispatch_key_check's). A DK_FULL field
 * may be absent and keeps its default; backend_request is only type-checked here (its length is checked
 * once every field has its type). */
static int field_read(struct jr *r, const json_t *obj, const char *ptr, const struct dk_field *f, struct dispatch_key *k) {
  const int required = !f->full;
  int i = -1;
  const char *s = NULL;
  switch (f->kind) {
  case DKF_ENUM:
    if (jr_enum(r, obj, ptr, f->name, required, f->names, &i)) return -1;
    if (i >= 0) *AT(k, f->off, int) = i;
    return 0;
  case DKF_DTYPE:
    if (jr_enum(r, obj, ptr, f->name, required, KEY_DTYPES, &i)) return -1;
    if (i >= 0) *AT(k, f->off, int) = (int)KEY_DTYPE_VALUES[i];
    return 0;
  case DKF_INT: return jr_int(r, obj, ptr, f->name, required, f->lo, f->hi, AT(k, f->off, long long));
  case DKF_OPT_INT: return read_opt_int(r, obj, ptr, f->name, AT(k, f->off, long long));
  case DKF_NUM: return jr_num(r, obj, ptr, f->name, required, -INFINITY, INFINITY, AT(k, f->off, double));
  case DKF_BOOL: return jr_bool(r, obj, ptr, f->name, required, AT(k, f->off, int));
  case DKF_STR: return jr_str(r, obj, ptr, f->name, required, &s);
  case DKF_DEVICE:
    return read_device(r, obj, ptr, f->name, (enum dk_device *)AT(k, f->off, int), AT(k, f->off2, long long));
  }
  return 0;
}

int dispatch_key_read(struct jr *r, const json_t *obj, const char *ptr, struct dispatch_key *k) {
  dispatch_key_init(k);
  const char *req[DK_NFIELDS + 1], *opt[DK_NFIELDS + 1];
  size_t nr = 0, no = 0;
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++) {
    if (f->full) opt[no++] = f->name;
    else req[nr++] = f->name;
  }
  req[nr] = opt[no] = NULL;
  if (jr_keys(r, obj, ptr, req, opt)) return -1;
  /* the workspace device defaults to the call's device: it is read once that is known */
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++)
    if (f->kind != DKF_DEVICE && field_read(r, obj, ptr, f, k)) return -1;
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++) {
    if (f->kind != DKF_STR) continue;
    const char *s = json_string_value(json_object_get(obj, f->name));
    if (strlen(s) >= DK_BACKEND_NAME_MAX)
      return jr_fail(r, ptr, f->name, "must be shorter than %d characters", DK_BACKEND_NAME_MAX);
    snprintf(AT(k, f->off, char), DK_BACKEND_NAME_MAX, "%s", s);
  }
  k->workspace_device_type = k->device_type;
  k->workspace_device_index = k->device_index;
  for (const struct dk_field *f = DK_FIELDS; f < DK_FIELDS + DK_NFIELDS; f++)
    if (f->kind == DKF_DEVICE && field_read(r, obj, ptr, f, k)) return -1;
  return 0;
}

/* ---- registries ------------------------------------------------------------------------------ */

int dispatch_registry_check(const struct dispatch_registry *reg, char *why, size_t n) {
  if (!reg || !reg->name || reg->n == 0 || reg->n > DISPATCH_MAX_BACKENDS) {
    snprintf(why, n, "registry must name 1 to %d backends", DISPATCH_MAX_BACKENDS);
    return -1;
  }
  for (size_t i = 0; i < reg->n; i++) {
    const struct dispatch_backend *b = &reg->backends[i];
    if (!b->name || !b->name[0] || strlen(b->name) >= DK_BACKEND_NAME_MAX || !strcmp(b->name, "auto")) {
      snprintf(why, n, "backend %zu of registry %s has no usable name", i, reg->name);
      return -1;
    }
    if (!b->platforms || !b->phases) {
      snprintf(why, n, "backend %s has an empty candidate domain", b->name);
      return -1;
    }
    for (size_t j = 0; j < i; j++) {
      if (!strcmp(b->name, reg->backends[j].name) || b->priority == reg->backends[j].priority) {
        snprintf(why, n, "backends %s and %s share a name or a priority", reg->backends[j].name, b->name);
        return -1;
      }
    }
  }
  return 0;
}

const struct dispatch_registry *dispatch_registry_find(const char *name) {
  if (!strcmp(name, dispatch_teaching_registry.name)) return &dispatch_teaching_registry;
  return NULL;
}

int dispatch_request_known(const struct dispatch_registry *reg, const char *request, struct dkb_buf *why) {
  if (!strcmp(request, "auto")) return 1;
  for (size_t i = 0; i < reg->n; i++)
    if (!strcmp(reg->backends[i].name, request)) return 1;
  dkb_buf_addf(why, "'%s' is not a backend of registry %s (known: auto", request, reg->name);
  for (size_t i = 0; i < reg->n; i++) dkb_buf_addf(why, ", %s", reg->backends[i].name);
  dkb_buf_addc(why, ')');
  return 0;
}

/* ---- admission (0x07C) ----------------------------------------------------------------------- */

const char *admission_outcome_name(enum admission_outcome o) {
  static const char *const names[] = {"selected", "selected_after_backend_fallback", "forced_error",
                                      "no_eligible_error", "malformed_call_error"};
  return names[o];
}

/* Stage 2: platform and phase. */
static void candidate_domain(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  if (!(b->platforms & (1u << k->device_type)))
    admit_fail(out, "device_type=%s not in domain", DK_DEVICE_NAMES[k->device_type]);
  if (!(b->phases & (1u << k->phase))) admit_fail(out, "phase=%s not in domain", DK_PHASE_NAMES[k->phase]);
}

/* Stage 3: the conjunction A_b with every failed factor kept. */
static void eligibility(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  for (int f = 0; f < ADMIT_NFACTORS; f++) {
    if (!b->admit[f]) continue;
    size_t before = out->n;
    b->admit[f](b, k, out);
    for (size_t i = before; i < out->n; i++) out->factor[i] = ADMIT_FACTOR_LETTERS[f];
  }
}

static void copy_reasons(struct admit_reasons *dst, const struct admit_reasons *src) {
  for (size_t i = 0; i < src->n; i++) {
    admit_fail(dst, "%s", src->text[i]);
    dst->factor[dst->n - 1] = src->factor[i];
  }
  dst->dropped += src->dropped;
}

void dispatch_priority_order(const int *priority, size_t n, size_t *order) {
  for (size_t i = 0; i < n; i++) {  /* a stable insertion sort: the tables are tiny */
    size_t j = i;
    while (j > 0 && priority[order[j - 1]] > priority[i]) { order[j] = order[j - 1]; j--; }
    order[j] = i;
  }
}

const struct dispatch_backend *dispatch_admit(const struct dispatch_registry *reg, const struct dispatch_key *k,
                                              struct admission *a) {
  char why[256];
  if (dispatch_registry_check(reg, why, sizeof why)) DKB_BUG("%s", why);
  memset(a, 0, sizeof *a);
  a->registry = reg;
  a->key = *k;
  a->selected = -1;
  a->forced = strcmp(k->backend_request, "auto") != 0;
  /* Stage 0: a malformed call never reaches the capability matrix. */
  if (dispatch_key_check(k, &a->malformed)) {
    a->outcome = ADM_MALFORMED_CALL;
    return NULL;
  }
  /* Stage 1: every registered backend, in priority order. */
  size_t order[DISPATCH_MAX_BACKENDS];
  int priority[DISPATCH_MAX_BACKENDS];
  for (size_t i = 0; i < reg->n; i++) priority[i] = reg->backends[i].priority;
  dispatch_priority_order(priority, reg->n, order);
  a->n = reg->n;
  for (size_t i = 0; i < reg->n; i++) {
    struct admission_candidate *c = &a->cand[i];
    c->backend = &reg->backends[order[i]];
    candidate_domain(c->backend, k, &c->domain);
    c->in_domain = c->domain.n == 0;
    if (!c->in_domain) continue;
    eligibility(c->backend, k, &c->reasons);
    c->eligible = c->reasons.n == 0 && c->reasons.dropped == 0;
  }
  /* Stage 4: policy. */
  if (a->forced) {
    int found = -1;
    for (size_t i = 0; i < a->n; i++)
      if (!strcmp(a->cand[i].backend->name, k->backend_request)) found = (int)i;
    if (found < 0) {
      admit_fail(&a->error, "backend_request=%s is not registered in registry %s", k->backend_request, reg->name);
    } else if (a->cand[found].eligible) {
      a->selected = found;
      a->outcome = ADM_SELECTED;
      return a->cand[found].backend;
    } else {
      copy_reasons(&a->error, &a->cand[found].domain);
      copy_reasons(&a->error, &a->cand[found].reasons);
    }
    a->outcome = ADM_FORCED_ERROR;
    return NULL;
  }
  int rejected_above = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (!a->cand[i].in_domain) continue;
    if (a->cand[i].eligible) {
      a->selected = (int)i;
      a->outcome = rejected_above ? ADM_SELECTED_AFTER_FALLBACK : ADM_SELECTED;
      return a->cand[i].backend;
    }
    rejected_above = 1;
  }
  a->outcome = ADM_NO_ELIGIBLE;
  return NULL;
}

static void add_reasons(struct dkb_buf *out, const struct admit_reasons *r) {
  for (size_t k = 0; k < r->n; k++) dkb_buf_addf(out, "%s%s", k ? "; " : "", r->text[k]);
  if (r->dropped) dkb_buf_addf(out, "; and %zu more", r->dropped);
}

void admission_why_none(const struct admission *a, struct dkb_buf *out) {
  if (a->selected >= 0) return;
  if (a->outcome == ADM_FORCED_ERROR) {
    dkb_buf_addf(out, "the forced backend %s was refused: ", a->key.backend_request);
    add_reasons(out, &a->error);
    return;
  }
  if (a->outcome == ADM_MALFORMED_CALL) {
    dkb_buf_adds(out, "the call is malformed: ");
    add_reasons(out, &a->malformed);
    return;
  }
  dkb_buf_adds(out, "every candidate was refused:");
  int any = 0;
  for (size_t i = 0; i < a->n; i++) {
    const struct admission_candidate *c = &a->cand[i];
    if (!c->in_domain) continue;
    dkb_buf_addf(out, "%s %s (", any ? ";" : "", c->backend->name);
    add_reasons(out, &c->reasons);
    dkb_buf_addc(out, ')');
    any = 1;
  }
  if (!any) dkb_buf_adds(out, " no backend's domain (platform, phase) holds this call");
}

int admission_backend_fallback(const struct admission *a) { return a->outcome == ADM_SELECTED_AFTER_FALLBACK; }

/* ---- the admission record -------------------------------------------------------------------- */

static json_t *factor_list(const struct admit_reasons *r) {
  json_t *a = json_array();
  for (int f = 0; f < ADMIT_NFACTORS; f++)
    for (size_t i = 0; i < r->n; i++)
      if (r->factor[i] == ADMIT_FACTOR_LETTERS[f]) {
        char s[2] = {ADMIT_FACTOR_LETTERS[f], 0};
        json_array_append_new(a, json_string(s));
        break;
      }
  return a;
}

json_t *admission_to_json(const struct admission *a, struct dkb_err *err) {
  char kd[65], td[65], pd[65];
  struct plan_key pk;
  plan_key_project(&a->key, &pk);
  json_t *key = dispatch_key_to_json(&a->key, DK_FULL);
  if (cjson_digest(key, kd, err) || dispatch_key_digest(&a->key, DK_TEACHING, td, err) || plan_key_digest(&pk, pd, err)) {
    json_decref(key);
    return NULL;
  }
  json_t *j = json_object();
  json_object_set_new(j, "schema", json_string("dkb.admission/v1"));
  json_object_set_new(j, "registry", json_string(a->registry->name));
  json_object_set_new(j, "key", key);
  json_object_set_new(j, "key_digest", json_string(kd));
  json_object_set_new(j, "teaching_key_digest", json_string(td));
  json_object_set_new(j, "plan_key", plan_key_to_json(&pk));
  json_object_set_new(j, "plan_key_digest", json_string(pd));
  json_object_set_new(j, "policy", json_string(a->forced ? "forced" : "auto"));
  json_object_set_new(j, "requested_backend", json_string(a->key.backend_request));
  json_object_set_new(j, "malformed_reasons", reasons_json(&a->malformed));
  json_t *order = json_array(), *domain = json_array(), *eligible = json_array(), *cands = json_array(),
         *from = json_array();
  for (size_t i = 0; i < a->n; i++) {
    const struct admission_candidate *c = &a->cand[i];
    json_array_append_new(order, json_string(c->backend->name));
    if (c->in_domain) json_array_append_new(domain, json_string(c->backend->name));
    if (c->eligible) json_array_append_new(eligible, json_string(c->backend->name));
    if (a->outcome == ADM_SELECTED_AFTER_FALLBACK && (int)i < a->selected && c->in_domain)
      json_array_append_new(from, json_string(c->backend->name));
    json_array_append_new(cands, json_pack("{s:s,s:i,s:b,s:o,s:b,s:o,s:o}", "backend", c->backend->name, "priority",
                                           c->backend->priority, "in_domain", c->in_domain, "domain_reasons",
                                           reasons_json(&c->domain), "eligible", c->eligible, "reasons",
                                           reasons_json(&c->reasons), "failed_factors", factor_list(&c->reasons)));
  }
  json_object_set_new(j, "candidate_order", order);
  json_object_set_new(j, "candidate_domain", domain);
  json_object_set_new(j, "eligible", eligible);
  json_object_set_new(j, "candidates", cands);
  json_object_set_new(j, "outcome", json_string(admission_outcome_name(a->outcome)));
  json_object_set_new(j, "selected", a->selected >= 0 ? json_string(a->cand[a->selected].backend->name) : json_null());
  json_object_set_new(j, "backend_fallback", json_boolean(admission_backend_fallback(a)));
  json_object_set_new(j, "fallback_from", from);
  json_object_set_new(j, "error_reasons", reasons_json(&a->error));
  json_object_set_new(j, "claim_ceiling", json_string(ADMISSION_CLAIM_CEILING));
  return j;
}

/* ---- plan key (0x07F) ------------------------------------------------------------------------ */

void plan_key_project(const struct dispatch_key *k, struct plan_key *p) {
  memset(p, 0, sizeof *p);
  p->device_type = k->device_type;
  p->device_index = k->device_index;
  p->workspace_device_type = k->workspace_device_type;
  p->workspace_device_index = k->workspace_device_index;
  p->kv_layout = k->cache_layout;
  p->page_size = k->page_size;
  p->num_q_heads = k->num_q_heads;
  p->num_kv_heads = k->num_kv_heads;
  p->head_dim_qk = k->head_dim_qk;
  p->head_dim_vo = k->head_dim_vo;
  p->q_dtype = k->dtype;
  p->kv_dtype = k->kv_dtype;
  p->cuda_graph = k->cuda_graph;
}

json_t *plan_key_to_json(const struct plan_key *p) {
  char dev[32], ws[32];
  device_string(p->device_type, p->device_index, dev);
  device_string(p->workspace_device_type, p->workspace_device_index, ws);
  return json_pack("{s:b,s:s,s:I,s:I,s:s,s:s,s:I,s:I,s:o,s:s,s:s}", "cuda_graph", p->cuda_graph, "device", dev,
                   "head_dim_qk", (json_int_t)p->head_dim_qk, "head_dim_vo", (json_int_t)p->head_dim_vo, "kv_dtype",
                   dkb_dtype_name(p->kv_dtype), "kv_layout", DK_LAYOUT_NAMES[p->kv_layout], "num_kv_heads",
                   (json_int_t)p->num_kv_heads, "num_q_heads", (json_int_t)p->num_q_heads, "page_size",
                   opt_int(p->page_size), "q_dtype", dkb_dtype_name(p->q_dtype), "workspace_device", ws);
}

int plan_key_digest(const struct plan_key *p, char hex[65], struct dkb_err *err) {
  return digest_of(plan_key_to_json(p), hex, err);
}

size_t plan_key_diff(const struct plan_key *planned, const struct plan_key *run, const char **changed, size_t max) {
  static const char *const FIELDS[] = {"cuda_graph", "device", "head_dim_qk", "head_dim_vo", "kv_dtype", "kv_layout",
                                       "num_kv_heads", "num_q_heads", "page_size", "q_dtype", "workspace_device"};
  json_t *a = plan_key_to_json(planned), *b = plan_key_to_json(run);
  size_t n = 0;
  for (size_t f = 0; f < sizeof FIELDS / sizeof *FIELDS; f++) {
    if (json_equal(json_object_get(a, FIELDS[f]), json_object_get(b, FIELDS[f]))) continue;
    if (n < max) changed[n] = FIELDS[f];
    n++;
  }
  json_decref(a);
  json_decref(b);
  return n;
}
