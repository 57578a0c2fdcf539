/* backends.c - the registry of every backend, builtin and loaded, and the admission of one call over it
 * (see backends.h). */
#include "harness/backends.h"
#include "harness/builtin.h"
#include "harness/gpucheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define BIT(x) (1u << (x))

static int add(struct backend_set *s, const struct dkb_backend *t, const struct dkb_plugin_lib *lib, struct dkb_err *err) {
  const char *file = lib ? lib->path : "";
  if (s->n >= DISPATCH_MAX_BACKENDS)
    return dkb_err_set(err, DKB_INPUT, file, "", "more than %d backends loaded", DISPATCH_MAX_BACKENDS);
  for (size_t i = 0; i < s->n; i++) {
    const struct backend_info *o = &s->v[i];
    const char *where = o->lib ? o->lib->path : "dkb itself";
    if (!strcmp(o->t->name, t->name))
      return dkb_err_set(err, DKB_INPUT, file, "", "backend %s is already registered (by %s)", t->name, where);
    if (o->t->priority == t->priority)
      return dkb_err_set(err, DKB_INPUT, file, "", "backend %s has priority %d, as %s (by %s) has: priorities are unique",
                         t->name, (int)t->priority, o->t->name, where);
  }
  s->v[s->n].t = t;
  s->v[s->n].lib = lib;
  s->n++;
  return 0;
}

/* A plugin named twice (a flag and the environment, perhaps in two spellings: relative and absolute, a link) is
 * loaded once; dkb_plugin_open keeps each library's canonical path to compare with. */
static int load(struct backend_set *s, const char *path, struct dkb_err *err) {
  char key[DKB_PLUGIN_PATH_MAX];
  dkb_plugin_canonical(path, key);
  for (size_t i = 0; i < s->nlibs; i++)
    if (!strcmp(s->libs[i].realpath, key)) return 0;
  if (s->nlibs >= BACKENDS_MAX_PLUGINS)
    return dkb_err_set(err, DKB_USAGE, path, "", "more than %d plugins", BACKENDS_MAX_PLUGINS);
  struct dkb_plugin_lib *lib = &s->libs[s->nlibs];
  if (dkb_plugin_open(path, lib, err)) return -1;
  s->nlibs++;
  for (int i = 0; i < lib->table->n_backends; i++)
    if (add(s, &lib->table->backends[i], lib, err)) return -1;
  return 0;
}

int backend_set_open(struct backend_set *s, const char *const *plugins, size_t nplugins, struct dkb_err *err) {
  memset(s, 0, sizeof *s);
  builtin_tables(s->builtin, &s->ctx);
  char why[256];
  for (int i = 0; i < 2; i++) {
    if (dkb_backend_table_check(&s->builtin[i], why, sizeof why)) DKB_BUG("%s", why);
    if (add(s, &s->builtin[i], NULL, err)) DKB_BUG("%s", err->msg);
  }
  for (size_t i = 0; i < nplugins; i++)
    if (load(s, plugins[i], err)) goto fail;
  const char *env = getenv("DKB_PLUGIN_PATH");
  if (env && *env) {
    char *list = DKB_STRDUP(env), *save = NULL;
    int rc = 0;
    for (char *p = strtok_r(list, ":", &save); p && !rc; p = strtok_r(NULL, ":", &save))
      if (*p) rc = load(s, p, err);
    free(list);
    if (rc) {
      if (!strstr(err->msg, "DKB_PLUGIN_PATH")) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (from DKB_PLUGIN_PATH)");
      }
      goto fail;
    }
  }
  return 0;
fail:
  backend_set_close(s);
  return -1;
}

void backend_set_close(struct backend_set *s) {
  for (size_t i = 0; i < s->nlibs; i++) dkb_plugin_close(&s->libs[i]);
  memset(s, 0, sizeof *s);
}

const struct backend_info *backend_set_find(const struct backend_set *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->v[i].t->name, name)) return &s->v[i];
  return NULL;
}

int backend_request_known(const struct backend_set *s, const char *request, struct dkb_buf *why) {
  if (!strcmp(request, "auto") || backend_set_find(s, request)) return 1;
  char line[128];
  snprintf(line, sizeof line, "'%s' is not a backend (known: auto", request);
  dkb_buf_adds(why, line);
  for (size_t i = 0; i < s->n; i++) {
    dkb_buf_adds(why, ", ");
    dkb_buf_adds(why, s->v[i].t->name);
  }
  dkb_buf_adds(why, ")");
  return 0;
}

int backends_check_request(const struct backend_set *s, const struct decode_call *c, struct dkb_err *err) {
  struct dkb_buf why;
  dkb_buf_init(&why);
  int rc = backend_request_known(s, c->backend, &why) ? 0 : dkb_err_set(err, DKB_INPUT, c->file, "/backend", "%s", why.p);
  dkb_buf_release(&why);
  return rc;
}

/* ---- the call as the ABI sees it ------------------------------------------------------------------ */

void backends_call(const struct decode_call *c, const struct decode_inputs *in, int cc, int sm_count,
                   struct dkb_call *call) {
  memset(call, 0, sizeof *call);
  call->size = sizeof *call;
  call->abi_version = DKB_BACKEND_ABI_VERSION;
  call->device = 0;
  call->compute_capability = cc;
  call->sm_count = sm_count;
  call->phase = c->phase == PHASE_APPEND ? DKB_ABI_APPEND : DKB_ABI_DECODE;
  call->B = c->B;
  call->q_len = c->C;
  call->H_q = c->H_q;
  call->H_kv = c->H_kv;
  call->d_qk = c->dk;
  call->d_v = c->dv;
  call->dtype = call->kv_dtype = c->dtype;
  call->scale = c->scale;
  for (int b = 0; b < c->B; b++) {
    call->max_kv_len = c->kv_len[b] > call->max_kv_len ? c->kv_len[b] : call->max_kv_len;
    call->total_kv_len += c->kv_len[b];
  }
  call->layout = c->layout;
  call->table = c->table;
  call->page_size = c->page_size;
  call->T_cap = c->T_cap;
  call->cache_rows = c->cache_rows;
  call->mask_kind = c->mask_kind;
  call->window = c->window;
  call->sink = c->sink;
  call->split_policy = c->split_policy == SPLIT_FIXED ? DKB_ABI_SPLIT_FIXED
                       : c->split_policy == SPLIT_CHUNK ? DKB_ABI_SPLIT_CHUNK : DKB_ABI_SPLIT_AUTO;
  call->splits = c->splits;
  call->chunk = c->chunk;
  call->max_splits = c->max_splits;
  call->return_lse = c->return_lse;
  call->graph = c->graph;
  if (!in) return;
  call->num_pages = in->L.num_pages;
  call->table_width = in->L.table_width;
  call->n_page_indices = in->n_page_indices;
  call->kv_len = c->kv_len;
  call->cache_batch_idx = in->cache_batch_idx;
  call->indptr = in->indptr;
  call->block_table = in->block_table;
  call->page_indptr = in->page_indptr;
  call->page_indices = in->page_indices;
  call->last_page_len = in->last_page_len;
}

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
  k->page_size = kv_layout_paged(c->layout) ? c->page_size : DK_ABSENT;
  k->workspace_device_type = DK_CUDA;
  k->workspace_device_index = 0;
}

/* ---- admission: every table's admit, split by factor for the stages of 0x07C ---------------------- */

#define CACHE(b) ((struct abi_admit_cache *)(b)->caps)

/* The factor letter's reasons of one table's answer (asked once, on the first factor). */
static void abi_factor(const struct dispatch_backend *b, struct admit_reasons *out, char letter) {
  struct abi_admit_cache *c = CACHE(b);
  if (c->rc && letter == 'I') {
    admit_fail(out, "admit failed: %s", c->error);
    return;
  }
  for (int i = 0; i < c->n; i++)
    if (c->r[i].factor == letter) admit_fail(out, "%s", c->r[i].text);
}
#define FACTOR(L) \
  static void abi_##L(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) { \
    (void)k;                                                                                                    \
    abi_factor(b, out, #L[0]);                                                                                  \
  }
FACTOR(I) FACTOR(E) FACTOR(P) FACTOR(H) FACTOR(D) FACTOR(K) FACTOR(Q) FACTOR(G) FACTOR(L) FACTOR(M) FACTOR(N) FACTOR(C)
#undef FACTOR

static const admit_predicate ABI_PREDICATES[ADMIT_NFACTORS] = {
    [ADMIT_I] = abi_I, [ADMIT_E] = abi_E, [ADMIT_P] = abi_P, [ADMIT_H] = abi_H, [ADMIT_D] = abi_D, [ADMIT_K] = abi_K,
    [ADMIT_Q] = abi_Q, [ADMIT_G] = abi_G, [ADMIT_L] = abi_L, [ADMIT_M] = abi_M, [ADMIT_N] = abi_N, [ADMIT_C] = abi_C};

static void ask(struct abi_admit_cache *c) {
  c->n = 0;
  c->rc = c->info->t->admit(c->info->t, c->call, c->r, DKB_MAX_REASONS, &c->n);
  if (c->n < 0 || c->n > DKB_MAX_REASONS) c->n = 0, c->rc = c->rc ? c->rc : DKB_BACKEND_ERROR;
  if (c->rc) {
    const char *e = c->info->t->last_error(NULL);
    snprintf(c->error, sizeof c->error, "%s", e && *e ? e : "no reason given");
  }
  for (int i = 0; i < c->n; i++) {
    c->r[i].text[sizeof c->r[i].text - 1] = '\0';
    if (!strchr(ADMIT_FACTOR_LETTERS, c->r[i].factor) || !c->r[i].factor) {
      /* a reason without one of the twelve letters is still a reason: keep it under I, say so */
      char t[DKB_REASON_TEXT_MAX];
      snprintf(t, sizeof t, "%s (factor '%c' unknown)", c->r[i].text, c->r[i].factor ? c->r[i].factor : '?');
      snprintf(c->r[i].text, sizeof c->r[i].text, "%s", t);
      c->r[i].factor = 'I';
    }
  }
}

const struct backend_info *backends_admit(const struct backend_set *s, const struct decode_call *c, long long cc,
                                          int sm_count, struct backend_admission *ba) {
  memset(ba, 0, sizeof *ba);
  backends_call(c, NULL, cc < 0 ? -1 : (int)cc, sm_count, &ba->call);
  for (size_t i = 0; i < s->n; i++) {
    struct abi_admit_cache *ca = &ba->cache[i];
    ca->info = &s->v[i];
    ca->call = &ba->call;
    ask(ca);
    struct dispatch_backend *b = &ba->table[i];
    b->name = s->v[i].t->name;
    b->priority = s->v[i].t->priority;
    b->platforms = BIT(DK_CUDA);
    b->phases = BIT(DK_DECODE) | BIT(DK_APPEND);
    memcpy(b->admit, ABI_PREDICATES, sizeof b->admit);
    b->caps = ca;
    b->role = s->v[i].t->role;
  }
  ba->reg.name = "dkb";
  ba->reg.backends = ba->table;
  ba->reg.n = s->n;
  struct dispatch_key k;
  backends_key(c, cc, &k);
  const struct dispatch_backend *sel = dispatch_admit(&ba->reg, &k, &ba->a);
  if (!sel) return NULL;
  return ((const struct abi_admit_cache *)sel->caps)->info;
}

int backends_failure(const char *backend, const char *what, int rc, const char *why, char *msg, size_t n) {
  if (!why || !*why) why = "no reason given";
  if (rc > 0) {
    snprintf(msg, n, "backend %s: %s returned %s: %s", backend, what, cudaGetErrorString((cudaError_t)rc), why);
    return dkb_gpucheck_cuda_code(rc);
  }
  snprintf(msg, n, "backend %s: %s failed: %s", backend, what, why);
  return DKB_FAIL;
}

void backend_set_priority_order(const struct backend_set *s, size_t order[DISPATCH_MAX_BACKENDS]) {
  int priority[DISPATCH_MAX_BACKENDS];
  for (size_t i = 0; i < s->n; i++) priority[i] = s->v[i].t->priority;
  dispatch_priority_order(priority, s->n, order);
}

json_t *backend_set_to_json(const struct backend_set *s) {
  json_t *arr = json_array();
  size_t order[DISPATCH_MAX_BACKENDS];
  backend_set_priority_order(s, order);
  for (size_t i = 0; i < s->n; i++) {
    const struct backend_info *b = &s->v[order[i]];
    json_t *o = json_pack("{s:s,s:s,s:i,s:s,s:s?}", "name", b->t->name, "version", b->t->version, "priority",
                          (int)b->t->priority, "role", b->t->role ? b->t->role : "", "admits", b->t->admits);
    if (!b->lib) {
      json_object_set_new(o, "source", json_string("builtin"));
    } else {
      json_object_set_new(o, "source", json_string("plugin"));
      json_t *up = json_object_get(b->lib->manifest, "upstream");
      json_object_set_new(o, "plugin", json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:i,s:O}", "path", b->lib->path, "realpath",
                                                 b->lib->realpath, "sha256", b->lib->sha256, "bytes",
                                                 (json_int_t)b->lib->bytes, "name", b->lib->table->name, "version",
                                                 b->lib->table->version, "abi_version", (int)b->lib->table->abi_version,
                                                 "upstream", up ? up : json_null()));
    }
    json_array_append_new(arr, o);
  }
  return arr;
}
