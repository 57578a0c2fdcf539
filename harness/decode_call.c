/* decode_call.c - loading and checking a dkb.decode/v1 fixture (see decode_call.h). */
#include "harness/decode_call.h"
#include "include/dkb/backend.h"
#include "dispatch/registry.h"
#include "evidence/call_key.h"
#include "lib/cjson.h"
#include "lib/jread.h"
#include "kernels/decode.h"
#include "oracles/dtype.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"
#include "oracles/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const PHASES[] = {"decode", "append", NULL};
static const char *const DTYPES[] = {"fp16", "bf16", "fp32", NULL};
static const char *const TABLES[] = {"dense", "csr", NULL};
static const char *const POLICIES[] = {"fixed", "auto", "chunk", NULL};
static const char *const ABIS[] = {"mlu", "lse_o", NULL};
static const char *const WS_DTYPES[] = {"bf16", "fp32", NULL};
static const char *const PROGRAMS[] = {"explicit", "documents", NULL};
static const char *const PAGE_ORDER[] = {"sequential", "shuffled", NULL};

void decode_call_release(struct decode_call *c) {
  free(c->kv_len);
  free(c->cache_row);
  json_decref(c->doc);
  memset(c, 0, sizeof *c);
}

/* "requests": [{"kv_len": N, "cache_row": r}, ...] or {"count": B, "kv_len": N | {"uniform": [lo, hi]},
 * "cache_rows": "identity" | "reversed"}. */
static int read_requests(struct jr *r, const json_t *doc, struct decode_call *c) {
  const json_t *rq = json_object_get(doc, "requests");
  const int64_t KV_MAX = (int64_t)1 << 24;
  if (json_is_array(rq)) {
    size_t n = json_array_size(rq);
    if (n < 1 || n > 65536) return jr_fail(r, "", "requests", "must hold 1 to 65536 requests (got %zu)", n);
    c->B = (int)n;
    c->kv_len = DKB_CALLOC(n, sizeof *c->kv_len);
    c->cache_row = DKB_CALLOC(n, sizeof *c->cache_row);
    for (size_t b = 0; b < n; b++) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/requests", b);
      const json_t *o = json_array_get(rq, b);
      static const char *const req[] = {"kv_len", NULL}, *const opt[] = {"cache_row", NULL};
      long long kv = 0, row = (long long)b;
      if (jr_keys(r, o, p, req, opt) || jr_int(r, o, p, "kv_len", 1, 1, KV_MAX, &kv) ||
          jr_int(r, o, p, "cache_row", 0, 0, 1 << 20, &row))
        return -1;
      c->kv_len[b] = kv;
      c->cache_row[b] = (int32_t)row;
    }
    return 0;
  }
  if (!json_is_object(rq)) return jr_fail(r, "", "requests", "must be an array of requests or a request generator object");
  static const char *const req[] = {"count", "kv_len", NULL}, *const opt[] = {"cache_rows", NULL};
  static const char *const ROWS[] = {"identity", "reversed", NULL};
  long long count = 0;
  int rows = 0;
  if (jr_keys(r, rq, "/requests", req, opt) || jr_int(r, rq, "/requests", "count", 1, 1, 65536, &count) ||
      jr_enum(r, rq, "/requests", "cache_rows", 0, ROWS, &rows))
    return -1;
  c->B = (int)count;
  c->kv_len = DKB_CALLOC((size_t)count, sizeof *c->kv_len);
  c->cache_row = DKB_CALLOC((size_t)count, sizeof *c->cache_row);
  const json_t *kv = json_object_get(rq, "kv_len");
  if (json_is_integer(kv)) {
    long long n = 0;
    if (jr_int(r, rq, "/requests", "kv_len", 1, 1, KV_MAX, &n)) return -1;
    for (long long b = 0; b < count; b++) c->kv_len[b] = n;
  } else {
    long long *u = NULL;
    size_t nu = 0;
    static const char *const ureq[] = {"uniform", NULL};
    if (jr_keys(r, kv, "/requests/kv_len", ureq, NULL) ||
        jr_int_array(r, kv, "/requests/kv_len", "uniform", 1, 1, KV_MAX, 2, &u, &nu))
      return -1;
    if (u[0] > u[1]) {
      free(u);
      return jr_fail(r, "/requests/kv_len", "uniform", "must be [lo, hi] with lo <= hi");
    }
    /* Lengths come from the call's seed (a separate stream from the tensor values). */
    struct dkb_rng g;
    dkb_rng_seed(&g, c->seed ^ 0x6C656E67746873ull);
    for (long long b = 0; b < count; b++) c->kv_len[b] = u[0] + (int64_t)dkb_rng_below(&g, (uint64_t)(u[1] - u[0] + 1));
    free(u);
  }
  for (long long b = 0; b < count; b++) c->cache_row[b] = (int32_t)(rows == 1 ? count - 1 - b : b);
  return 0;
}

static int read_cache(struct jr *r, const json_t *doc, struct decode_call *c) {
  const char *P = "/cache";
  const json_t *o = jr_get(r, doc, "", "cache", 1, JSON_OBJECT);
  if (!o) return -1;
  static const char *const req[] = {"layout", NULL};
  static const char *const opt[] = {"page_size", "table", "pool_extra_pages", "page_order", "shuffle_group", "capacity",
                                    "cache_rows", NULL};
  const char *layout = NULL;
  if (jr_keys(r, o, P, req, opt) || jr_str(r, o, P, "layout", 1, &layout)) return -1;
  c->layout = kv_layout_parse(layout);
  if (c->layout < 0)
    return jr_fail(r, P, "layout", "must be one of: contiguous_nhd, contiguous_hnd, ragged_nhd, paged_nhd, paged_hnd (got '%s')", layout);
  int paged = kv_layout_paged(c->layout);
  int contiguous = kv_layout_contiguous(c->layout);
  static const char *const paged_only[] = {"page_size", "table", "pool_extra_pages", "page_order", "shuffle_group", NULL};
  static const char *const contig_only[] = {"capacity", NULL};
  for (int i = 0; paged_only[i]; i++)
    if (!paged && json_object_get(o, paged_only[i])) return jr_fail(r, P, paged_only[i], "only applies to paged layouts (layout is '%s')", layout);
  for (int i = 0; contig_only[i]; i++)
    if (!contiguous && json_object_get(o, contig_only[i])) return jr_fail(r, P, contig_only[i], "only applies to contiguous layouts (layout is '%s')", layout);
  if (json_object_get(o, "cache_rows") && c->layout == KV_RAGGED_NHD)
    return jr_fail(r, P, "cache_rows", "does not apply to the ragged layout: indptr replaces the batch stride");
  int64_t max_len = 0, max_row = 0;
  for (int b = 0; b < c->B; b++) {
    if (c->kv_len[b] > max_len) max_len = c->kv_len[b];
    if (c->cache_row[b] > max_row) max_row = c->cache_row[b];
  }
  long long v;
  if (paged) {
    v = 0;
    int table = 1, order = 1;
    if (jr_int(r, o, P, "page_size", 1, 1, 4096, &v)) return -1;
    c->page_size = v;
    if (jr_enum(r, o, P, "table", 0, TABLES, &table) || jr_enum(r, o, P, "page_order", 0, PAGE_ORDER, &order)) return -1;
    c->table = table == 0 ? KV_TABLE_DENSE : KV_TABLE_CSR;
    c->shuffle_pages = order == 1;
    /* How far a page may land from its place in the pool: an allocator's locality, which costs a kernel's
     * reads (docs/kernels.md, "The shuffle costs by how far it scatters"). */
    v = 0;
    if (json_object_get(o, "shuffle_group") && !c->shuffle_pages)
      return jr_fail(r, P, "shuffle_group", "only applies to page_order 'shuffled' (page_order is 'sequential')");
    if (jr_int(r, o, P, "shuffle_group", 0, 2, INT32_MAX, &v)) return -1;
    c->shuffle_group = v;
    v = DKB_POOL_EXTRA_PAGES;
    if (jr_int(r, o, P, "pool_extra_pages", 0, 0, 1 << 20, &v)) return -1;
    c->pool_extra_pages = v;
  } else {
    c->table = KV_TABLE_NONE;
  }
  if (contiguous) {
    v = max_len;
    if (jr_int(r, o, P, "capacity", 0, 1, (long long)1 << 24, &v)) return -1;
    if (v < max_len) return jr_fail(r, P, "capacity", "must be >= the longest request's kv_len %lld (got %lld)", (long long)max_len, v);
    c->T_cap = v;
  }
  v = max_row + 1;
  if (jr_int(r, o, P, "cache_rows", 0, 1, 1 << 20, &v)) return -1;
  if (v <= max_row)
    return jr_fail(r, P, "cache_rows", "must exceed every request's cache_row (largest %lld, got %lld)", (long long)max_row, v);
  c->cache_rows = v;
  if (c->layout == KV_RAGGED_NHD || (paged && c->table == KV_TABLE_CSR)) {
    /* identity is by active request order there: cache_row would be silently ignored */
    for (int b = 0; b < c->B; b++)
      if (c->cache_row[b] != b) {
        char p[DKB_PTR_MAX];
        jr_ptr_idx(p, "/requests", (size_t)b);
        return jr_fail(r, p, "cache_row", "only contiguous layouts and dense page tables remap cache rows (layout '%s')", layout);
      }
  }
  /* Two active requests must not share a cache row: their K/V would alias (0x08H). */
  for (int b = 0; b < c->B; b++)
    for (int a = 0; a < b; a++)
      if (c->cache_row[a] == c->cache_row[b]) {
        char p[DKB_PTR_MAX];
        jr_ptr_idx(p, "/requests", (size_t)b);
        return jr_fail(r, p, "cache_row", "duplicates the cache row %d of request %d", c->cache_row[b], a);
      }
  return 0;
}

static int read_mask(struct jr *r, const json_t *doc, struct decode_call *c) {
  const char *P = "/mask";
  const json_t *o = jr_get(r, doc, "", "mask", 1, JSON_OBJECT);
  if (!o) return -1;
  static const char *const req[] = {"kind", NULL};
  static const char *const opt[] = {"window", "sink", "program", "documents", "columns", NULL};
  const char *kind = NULL;
  if (jr_keys(r, o, P, req, opt) || jr_str(r, o, P, "kind", 1, &kind)) return -1;
  c->mask_kind = mask_kind_parse(kind);
  if (c->mask_kind < 0) return jr_fail(r, P, "kind", "must be one of: none, causal, sliding_window, flashmask (got '%s')", kind);
  static const char *const win_keys[] = {"window", "sink", NULL}, *const fm_keys[] = {"program", "documents", "columns", NULL};
  for (int i = 0; win_keys[i]; i++)
    if (c->mask_kind != MASK_SLIDING_WINDOW && json_object_get(o, win_keys[i]))
      return jr_fail(r, P, win_keys[i], "only applies to kind sliding_window (kind is '%s')", kind);
  for (int i = 0; fm_keys[i]; i++)
    if (c->mask_kind != MASK_FLASHMASK && json_object_get(o, fm_keys[i]))
      return jr_fail(r, P, fm_keys[i], "only applies to kind flashmask (kind is '%s')", kind);
  long long v = 0;
  if (c->mask_kind == MASK_SLIDING_WINDOW) {
    if (jr_int(r, o, P, "window", 1, 1, (long long)1 << 24, &v)) return -1;
    c->window = v;
    v = 0;
    if (jr_int(r, o, P, "sink", 0, 0, (long long)1 << 24, &v)) return -1;
    c->sink = v;
  }
  if (c->mask_kind == MASK_FLASHMASK) {
    int prog = 0;
    if (jr_enum(r, o, P, "program", 1, PROGRAMS, &prog)) return -1;
    c->mask_program = prog;
    if (prog == MASKGEN_DOCUMENTS) {
      if (json_object_get(o, "columns")) return jr_fail(r, P, "columns", "only applies to program explicit");
      if (jr_int(r, o, P, "documents", 1, 1, 4096, &v)) return -1;
      c->documents = (int)v;
      for (int b = 0; b < c->B; b++)
        if (c->kv_len[b] < v) {
          char p[DKB_PTR_MAX];
          jr_ptr_idx(p, "/requests", (size_t)b);
          return jr_fail(r, p, "kv_len", "must be >= the %lld documents of the mask (got %lld)", v, (long long)c->kv_len[b]);
        }
    } else {
      if (json_object_get(o, "documents")) return jr_fail(r, P, "documents", "only applies to program documents");
      const json_t *cols = jr_get(r, o, P, "columns", 1, JSON_ARRAY);
      if (!cols) return -1;
      if ((int)json_array_size(cols) != c->B)
        return jr_fail(r, P, "columns", "must hold one column list per request (%d, got %zu)", c->B, json_array_size(cols));
      for (int b = 0; b < c->B; b++) {
        char pb[DKB_PTR_MAX], pc[DKB_PTR_MAX];
        jr_ptr_idx(pb, "/mask/columns", (size_t)b);
        const json_t *list = json_array_get(cols, (size_t)b);
        if (!json_is_array(list) || (int64_t)json_array_size(list) != c->kv_len[b])
          return jr_fail(r, pb, NULL, "must hold kv_len = %lld columns [UTS, UTE, LTS, LTE]", (long long)c->kv_len[b]);
        for (size_t j = 0; j < json_array_size(list); j++) {
          jr_ptr_idx(pc, pb, j);
          const json_t *iv = json_array_get(list, j);
          if (!json_is_array(iv) || json_array_size(iv) != 4) return jr_fail(r, pc, NULL, "must be [UTS, UTE, LTS, LTE]");
          long long e[4];
          for (int k = 0; k < 4; k++) {
            const json_t *x = json_array_get(iv, (size_t)k);
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
              return jr_fail(r, pc, NULL, "endpoints must be int32 >= 0");
            e[k] = json_integer_value(x);
          }
          if (e[0] > e[1] || e[2] > e[3]) return jr_fail(r, pc, NULL, "intervals must be half-open [start, end) with start <= end");
        }
      }
      c->mask_columns = (json_t *)cols;
    }
  }
  return 0;
}

static int read_split(struct jr *r, const json_t *doc, struct decode_call *c) {
  const char *P = "/split";
  const json_t *o = jr_get(r, doc, "", "split", 1, JSON_OBJECT);
  if (!o) return -1;
  static const char *const req[] = {"policy", NULL};
  static const char *const opt[] = {"splits", "capacity", "chunk", "max_splits", NULL};
  int pol = 0;
  if (jr_keys(r, o, P, req, opt) || jr_enum(r, o, P, "policy", 1, POLICIES, &pol)) return -1;
  c->split_policy = pol;
  static const char *const fixed_keys[] = {"splits", "capacity", NULL};
  for (int i = 0; fixed_keys[i]; i++)
    if (pol != SPLIT_FIXED && json_object_get(o, fixed_keys[i])) return jr_fail(r, P, fixed_keys[i], "only applies to policy fixed");
  if (pol != SPLIT_CHUNK && json_object_get(o, "chunk")) return jr_fail(r, P, "chunk", "only applies to policy chunk");
  if (pol != SPLIT_AUTO && json_object_get(o, "max_splits")) return jr_fail(r, P, "max_splits", "only applies to policy auto");
  long long v = 0;
  if (pol == SPLIT_FIXED) {
    if (jr_int(r, o, P, "splits", 1, 1, DKB_ABI_MAX_SPLITS, &v)) return -1;
    c->splits = (int)v;
    if (jr_int(r, o, P, "capacity", 0, 1, DKB_ABI_MAX_SPLITS, &v)) return -1;
    if (v < c->splits) return jr_fail(r, P, "capacity", "must be >= splits %d (got %lld)", c->splits, v);
    c->capacity = (int)v;
  } else if (pol == SPLIT_CHUNK) {
    if (jr_int(r, o, P, "chunk", 1, 1, (long long)1 << 24, &v)) return -1;
    c->chunk = v;
  } else {
    v = DKB_ABI_MAX_SPLITS;  /* the heuristic also caps at the resident CTAs and the key tiles */
    if (jr_int(r, o, P, "max_splits", 0, 1, DKB_ABI_MAX_SPLITS, &v)) return -1;
    c->max_splits = (int)v;
  }
  return 0;
}

/* "auto" or [a-z0-9_]{1,47}: what a backend table may be named (harness/plugin.c). */
static int backend_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n >= DK_BACKEND_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
  return 1;
}

int decode_call_from_json(const char *name, json_t *doc, struct decode_call *c, struct dkb_err *err) {
  memset(c, 0, sizeof *c);
  snprintf(c->file, sizeof c->file, "%s", name);
  struct jr r = {.file = name, .err = err, .code = DKB_INPUT};
  static const char *const req[] = {"schema", "name", "phase", "requests", "q_len", "heads", "dtype", "cache", "mask",
                                    "split", "seed", "tolerance", NULL};
  static const char *const opt[] = {"description", "workspace", "return_lse", "graph", "backend", "scale", NULL};
  const char *schema = NULL, *nm = NULL, *backend = "auto";
  long long v = 0;
  int phase = 0, dt = 0;
  if (jr_keys(&r, doc, "", req, opt) || jr_str(&r, doc, "", "schema", 1, &schema)) goto fail;
  if (strcmp(schema, "dkb.decode/v1")) { jr_fail(&r, "", "schema", "must be 'dkb.decode/v1' (got '%s')", schema); goto fail; }
  if (jr_str(&r, doc, "", "name", 1, &nm) || jr_enum(&r, doc, "", "phase", 1, PHASES, &phase)) goto fail;
  snprintf(c->name, sizeof c->name, "%s", nm);
  c->phase = phase;
  if (jr_int(&r, doc, "", "seed", 1, 0, INT64_MAX, &v)) goto fail;
  c->seed = (uint64_t)v;
  if (read_requests(&r, doc, c)) goto fail;
  if (jr_int(&r, doc, "", "q_len", 1, 1, 4, &v)) goto fail;
  c->C = (int)v;
  for (int b = 0; b < c->B; b++)
    if (c->kv_len[b] < c->C) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/requests", (size_t)b);
      jr_fail(&r, p, "kv_len", "must be >= q_len %d: the query rows are the last keys (got %lld)", c->C, (long long)c->kv_len[b]);
      goto fail;
    }
  {
    const json_t *h = jr_get(&r, doc, "", "heads", 1, JSON_OBJECT);
    static const char *const hk[] = {"H_q", "H_kv", "d_qk", "d_v", NULL};
    long long hq = 0, hkv = 0, dk = 0, dv = 0;
    if (!h || jr_keys(&r, h, "/heads", hk, NULL) || jr_int(&r, h, "/heads", "H_q", 1, 1, 1024, &hq) ||
        jr_int(&r, h, "/heads", "H_kv", 1, 1, 1024, &hkv) || jr_int(&r, h, "/heads", "d_qk", 1, 1, 1024, &dk) ||
        jr_int(&r, h, "/heads", "d_v", 1, 1, 1024, &dv))
      goto fail;
    /* A non-divisible GQA ratio is a malformed call, not an unsupported one (0x07A). */
    if (hq % hkv) { jr_fail(&r, "/heads", "H_q", "must be a multiple of H_kv %lld (got %lld)", hkv, hq); goto fail; }
    c->H_q = (int)hq; c->H_kv = (int)hkv; c->dk = (int)dk; c->dv = (int)dv;
  }
  if (jr_enum(&r, doc, "", "dtype", 1, DTYPES, &dt)) goto fail;
  c->dtype = dt == 0 ? DKB_F16 : dt == 1 ? DKB_BF16 : DKB_F32;
  c->scale = 1.0 / sqrt((double)c->dk);
  if (jr_num(&r, doc, "", "scale", 0, 1e-30, 1e30, &c->scale)) goto fail;
  if (read_cache(&r, doc, c) || read_mask(&r, doc, c) || read_split(&r, doc, c)) goto fail;
  {
    c->abi = DKB_ABI_MLU;
    c->ws_o_dtype = DKB_F32;
    const json_t *w = jr_get(&r, doc, "", "workspace", 0, JSON_OBJECT);
    if (!w && json_object_get(doc, "workspace")) goto fail;
    if (w) {
      static const char *const wr[] = {"abi", NULL}, *const wo[] = {"o_dtype", NULL};
      int abi = 0, od = 1;
      if (jr_keys(&r, w, "/workspace", wr, wo) || jr_enum(&r, w, "/workspace", "abi", 1, ABIS, &abi) ||
          jr_enum(&r, w, "/workspace", "o_dtype", 0, WS_DTYPES, &od))
        goto fail;
      if (abi == 0 && json_object_get(w, "o_dtype")) { jr_fail(&r, "/workspace", "o_dtype", "only applies to abi lse_o: (m,l,u) stores u in fp32"); goto fail; }
      c->abi = abi == 0 ? DKB_ABI_MLU : DKB_ABI_LSE_O;
      c->ws_o_dtype = od == 0 ? DKB_BF16 : DKB_F32;
    }
  }
  c->return_lse = 1;
  if (jr_bool(&r, doc, "", "return_lse", 0, &c->return_lse) || jr_bool(&r, doc, "", "graph", 0, &c->graph) ||
      jr_str(&r, doc, "", "backend", 0, &backend))
    goto fail;
  if (backend && !backend_name_ok(backend)) {
    /* which backends exist is known once plugins are loaded (backends_check_request); the name's form now */
    jr_fail(&r, "", "backend", "must be \"auto\" or a backend name of [a-z0-9_], at most %d characters (got '%s')",
            DK_BACKEND_NAME_MAX - 1, backend);
    goto fail;
  }
  snprintf(c->backend, sizeof c->backend, "%s", backend);
  {
    const json_t *t = jr_get(&r, doc, "", "tolerance", 1, JSON_OBJECT);
    static const char *const tr[] = {"atol", "rtol", NULL}, *const to[] = {"lse_atol", "lse_rtol", NULL};
    if (!t || jr_keys(&r, t, "/tolerance", tr, to) || jr_num(&r, t, "/tolerance", "atol", 1, 0, 1e6, &c->atol) ||
        jr_num(&r, t, "/tolerance", "rtol", 1, 0, 1e6, &c->rtol))
      goto fail;
    c->lse_atol = c->atol;
    c->lse_rtol = c->rtol;
    if (jr_num(&r, t, "/tolerance", "lse_atol", 0, 0, 1e6, &c->lse_atol) ||
        jr_num(&r, t, "/tolerance", "lse_rtol", 0, 0, 1e6, &c->lse_rtol))
      goto fail;
  }
  if (cjson_digest(doc, c->fixture_sha256, err)) goto fail;
  c->doc = json_incref(doc);
  return 0;
fail:
  decode_call_release(c);
  return -1;
}

int decode_call_load(const char *path, struct decode_call *c, struct dkb_err *err) {
  json_t *doc = jr_load_file(path, err);
  if (!doc) return -1;
  int rc = decode_call_from_json(path, doc, c, err);
  json_decref(doc);
  return rc;
}

/* ---- the call key: one writer per row of CALL_KEY_FIELDS (evidence/call_key.h) ------------------ */

static json_t *dtype_json(const struct decode_call *c) { return json_string(dkb_dtype_name((enum dkb_dtype)c->dtype)); }
static int is_window(const struct decode_call *c) { return c->mask_kind == MASK_SLIDING_WINDOW; }
static int is_program(const struct decode_call *c, int program) {
  return c->mask_kind == MASK_FLASHMASK && c->mask_program == program;
}
static json_t *int_if(int applies, long long v) { return applies ? json_integer(v) : NULL; }

static json_t *ck_schema(const struct decode_call *c) { (void)c; return json_string("dkb.call-key/v1"); }
static json_t *ck_phase(const struct decode_call *c) { return json_string(PHASES[c->phase]); }
static json_t *ck_B(const struct decode_call *c) { return json_integer(c->B); }
static json_t *ck_S_q(const struct decode_call *c) { return json_integer(c->C); }
static json_t *ck_S_k_per_request(const struct decode_call *c) {
  json_t *a = json_array();
  for (int b = 0; b < c->B; b++) json_array_append_new(a, json_integer(c->kv_len[b]));
  return a;
}
static json_t *ck_H_q(const struct decode_call *c) { return json_integer(c->H_q); }
static json_t *ck_H_kv(const struct decode_call *c) { return json_integer(c->H_kv); }
static json_t *ck_d_qk(const struct decode_call *c) { return json_integer(c->dk); }
static json_t *ck_d_v(const struct decode_call *c) { return json_integer(c->dv); }
/* Q, K, V and O share the call's one dtype. */
static json_t *ck_q_dtype(const struct decode_call *c) { return dtype_json(c); }
static json_t *ck_kv_dtype(const struct decode_call *c) { return dtype_json(c); }
static json_t *ck_o_dtype(const struct decode_call *c) { return dtype_json(c); }
static json_t *ck_cache_layout(const struct decode_call *c) { return json_string(kv_layout_name((enum kv_layout_kind)c->layout)); }
static json_t *ck_page_size(const struct decode_call *c) { return kv_layout_paged(c->layout) ? json_integer(c->page_size) : json_null(); }
static json_t *ck_page_table(const struct decode_call *c) {
  return kv_layout_paged(c->layout) ? json_string(c->table == KV_TABLE_DENSE ? "dense" : "csr") : NULL;
}
/* Where the pool's pages lie costs a kernel's reads (docs/kernels.md, "The shuffle costs by how far it
 * scatters"), so the key says it; each field is written only where the fixture departs from the default pool
 * (pages shuffled through the whole pool, DKB_POOL_EXTRA_PAGES unused), which keeps the digests of calls on
 * the default pool what they were before the fields existed. */
static json_t *ck_page_order(const struct decode_call *c) {
  return kv_layout_paged(c->layout) && !c->shuffle_pages ? json_string("sequential") : NULL;
}
static json_t *ck_shuffle_group(const struct decode_call *c) {
  return int_if(kv_layout_paged(c->layout) && c->shuffle_pages && c->shuffle_group > 0, c->shuffle_group);
}
static json_t *ck_pool_extra_pages(const struct decode_call *c) {
  return int_if(kv_layout_paged(c->layout) && c->pool_extra_pages != DKB_POOL_EXTRA_PAGES, c->pool_extra_pages);
}
static json_t *ck_cache_capacity(const struct decode_call *c) { return int_if(kv_layout_contiguous(c->layout), c->T_cap); }
static json_t *ck_cache_batch_idx(const struct decode_call *c) {
  json_t *a = json_array();
  for (int b = 0; b < c->B; b++) json_array_append_new(a, json_integer(c->cache_row[b]));
  return a;
}
static json_t *ck_mask(const struct decode_call *c) { (void)c; return json_object(); }
static json_t *ck_mask_kind(const struct decode_call *c) { return json_string(mask_kind_name((enum mask_kind)c->mask_kind)); }
static json_t *ck_mask_window(const struct decode_call *c) { return int_if(is_window(c), c->window); }
static json_t *ck_mask_sink(const struct decode_call *c) { return int_if(is_window(c), c->sink); }
static json_t *ck_mask_program(const struct decode_call *c) {
  return c->mask_kind == MASK_FLASHMASK ? json_string(PROGRAMS[c->mask_program]) : NULL;
}
static json_t *ck_mask_documents(const struct decode_call *c) { return int_if(is_program(c, MASKGEN_DOCUMENTS), c->documents); }
static json_t *ck_mask_columns(const struct decode_call *c) {
  return is_program(c, MASKGEN_EXPLICIT) ? json_incref(c->mask_columns) : NULL;
}
static json_t *ck_split(const struct decode_call *c) { (void)c; return json_object(); }
static json_t *ck_split_policy(const struct decode_call *c) { return json_string(POLICIES[c->split_policy]); }
static json_t *ck_split_splits(const struct decode_call *c) { return int_if(c->split_policy == SPLIT_FIXED, c->splits); }
static json_t *ck_split_capacity(const struct decode_call *c) { return int_if(c->split_policy == SPLIT_FIXED, c->capacity); }
static json_t *ck_split_chunk(const struct decode_call *c) { return int_if(c->split_policy == SPLIT_CHUNK, c->chunk); }
static json_t *ck_split_max_splits(const struct decode_call *c) { return int_if(c->split_policy == SPLIT_AUTO, c->max_splits); }
static json_t *ck_workspace(const struct decode_call *c) { (void)c; return json_object(); }
static json_t *ck_workspace_abi(const struct decode_call *c) { return json_string(c->abi == DKB_ABI_MLU ? "mlu" : "lse_o"); }
/* (m,l,u) keeps u in fp32 */
static json_t *ck_workspace_o_dtype(const struct decode_call *c) {
  return json_string(c->abi == DKB_ABI_MLU ? "fp32" : dkb_dtype_name((enum dkb_dtype)c->ws_o_dtype));
}
static json_t *ck_return_lse(const struct decode_call *c) { return json_boolean(c->return_lse); }
static json_t *ck_graph_mode(const struct decode_call *c) { return json_boolean(c->graph); }
static json_t *ck_backend_request(const struct decode_call *c) { return json_string(c->backend); }
static json_t *ck_scale(const struct decode_call *c) { return json_real(c->scale); }
static json_t *ck_seed(const struct decode_call *c) { return json_integer((json_int_t)c->seed); }
static json_t *ck_tolerances(const struct decode_call *c) { (void)c; return json_object(); }
static json_t *ck_tolerances_atol(const struct decode_call *c) { return json_real(c->atol); }
static json_t *ck_tolerances_rtol(const struct decode_call *c) { return json_real(c->rtol); }
static json_t *ck_tolerances_lse_atol(const struct decode_call *c) { return json_real(c->lse_atol); }
static json_t *ck_tolerances_lse_rtol(const struct decode_call *c) { return json_real(c->lse_rtol); }

/* key[pointer] = v (new reference; NULL: the field does not apply). The table lists an object before its
 * members, so the parent exists. */
static void key_set(json_t *key, const char *pointer, json_t *v) {
  if (!v) return;
  const char *slash = strrchr(pointer, '/');
  char parent[DKB_PTR_MAX];
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - pointer), pointer);
  json_object_set_new(jr_resolve(key, parent), slash + 1, v);
}

json_t *decode_call_key(const struct decode_call *c) {
  json_t *k = json_object();
#define WRITE(id, pointer, type, need) key_set(k, pointer, ck_##id(c));
  CALL_KEY_FIELDS(WRITE)
#undef WRITE
  return k;
}

int64_t decode_call_kv_bytes(const struct decode_call *c) {
  int64_t n = 0;
  for (int b = 0; b < c->B; b++) n += c->kv_len[b];
  return call_key_kv_bytes(n, c->H_kv, c->dk, c->dv, (int64_t)dkb_dtype_bytes((enum dkb_dtype)c->dtype));
}

int64_t decode_call_qo_bytes(const struct decode_call *c) {
  const int64_t e = (int64_t)dkb_dtype_bytes((enum dkb_dtype)c->dtype);
  return call_key_qo_bytes(c->B, c->C, c->H_q, c->dk, c->dv, e, e);
}
