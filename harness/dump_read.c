/* dump_read.c - reading a decode dump into dkb's structs (see dump_read.h). */
#include "harness/dump_read.h"
#include "harness/dump.h"
#include "include/dkb/backend.h"
#include "lib/cjson.h"
#include "lib/jread.h"
#include "lib/npy_read.h"
#include "lib/sha256.h"
#include "oracles/dtype.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FILES = 64 };

struct entry {
  const char *role, *dtype;
  size_t idx;
  struct npy_array a;
};

struct reader {
  struct dump_call *d;
  struct jr r;
  struct entry e[MAX_FILES];
  size_t n;
};

static const char *const PHASES[] = {"decode", "append", NULL};
static const char *const DTYPES[] = {"fp16", "bf16", "fp32", NULL};

static struct entry *find(struct reader *rd, const char *role) {
  for (size_t i = 0; i < rd->n; i++)
    if (!strcmp(rd->e[i].role, role)) return &rd->e[i];
  return NULL;
}

static void shape_text(const int64_t *s, int n, char *out, size_t cap) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int i = 0; i < n && k < cap; i++) k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

/* The file of this role with this dtype and shape (ndim < 0: any shape). NULL with err set when it is
 * missing (and required) or disagrees; NULL without an error when it is absent and optional. */
static struct entry *need(struct reader *rd, const char *role, const char *dtype, const int64_t *shape, int ndim,
                          const char *axes, int required) {
  struct entry *e = find(rd, role);
  if (!e) {
    if (required) jr_fail(&rd->r, "/files", NULL, "no file with role '%s': the call needs it", role);
    return NULL;
  }
  char p[DKB_PTR_MAX];
  jr_ptr_idx(p, "/files", e->idx);
  if (dtype && strcmp(e->dtype, dtype)) {
    jr_fail(&rd->r, p, "dtype", "%s must be %s (got %s)", role, dtype, e->dtype);
    return NULL;
  }
  if (ndim >= 0) {
    int same = e->a.ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = e->a.shape[i] == shape[i];
    if (!same) {
      char want[128], got[128];
      shape_text(shape, ndim, want, sizeof want);
      shape_text(e->a.shape, e->a.ndim, got, sizeof got);
      jr_fail(&rd->r, p, "shape", "%s must be %s = %s (got %s)", role, axes, want, got);
      return NULL;
    }
  }
  return e;
}

static void *take(struct entry *e) {
  if (!e) return NULL;
  void *p = e->a.data;
  e->a.data = NULL;
  return p;
}

static int read_files(struct reader *rd) {
  const json_t *files = jr_get(&rd->r, rd->d->index, "", "files", 1, JSON_ARRAY);
  if (!files) return -1;
  if (json_array_size(files) > MAX_FILES) return jr_fail(&rd->r, "", "files", "at most %d files", MAX_FILES);
  for (size_t i = 0; i < json_array_size(files); i++) {
    static const char *const req[] = {"name", "role", "dtype", "npy_dtype", "shape", "layout", "sha256", "bytes", NULL};
    const json_t *f = json_array_get(files, i);
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/files", i);
    const char *name, *role, *dtype, *npy, *sha, *layout;
    long long bytes = 0;
    long long *shape = NULL;
    size_t nd = 0;
    if (jr_keys(&rd->r, f, p, req, NULL) || jr_str(&rd->r, f, p, "name", 1, &name) || jr_str(&rd->r, f, p, "role", 1, &role) ||
        jr_str(&rd->r, f, p, "dtype", 1, &dtype) || jr_str(&rd->r, f, p, "npy_dtype", 1, &npy) ||
        jr_str(&rd->r, f, p, "layout", 1, &layout) || jr_str(&rd->r, f, p, "sha256", 1, &sha) ||
        jr_int(&rd->r, f, p, "bytes", 1, 0, (long long)1 << 50, &bytes) ||
        jr_int_array(&rd->r, f, p, "shape", 1, 0, (long long)1 << 40, -1, &shape, &nd))
      return -1;
    size_t nl = strlen(name);
    int bad_name = nl < 5 || strcmp(name + nl - 4, ".npy") || name[0] == '.' || strchr(name, '/');
    const char *descr = dump_npy_descr(dtype);
    int rc = 0;
    if (bad_name) rc = jr_fail(&rd->r, p, "name", "must be a .npy file name inside the dump folder (got '%s')", name);
    else if (!*role || find(rd, role)) rc = jr_fail(&rd->r, p, "role", "must be a non-empty role used once (got '%s')", role);
    else if (!descr) rc = jr_fail(&rd->r, p, "dtype", "unknown dtype '%s'", dtype);
    else if (strcmp(descr, npy)) rc = jr_fail(&rd->r, p, "npy_dtype", "'%s' is not how %s is stored (%s)", npy, dtype, descr);
    else if (!dkb_is_sha256_hex(sha)) rc = jr_fail(&rd->r, p, "sha256", "must be 64 lower-case hex digits");
    if (rc) { free(shape); return -1; }
    struct entry *e = &rd->e[rd->n];
    memset(e, 0, sizeof *e);
    e->role = role;
    e->dtype = dtype;
    e->idx = i;
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", rd->d->dir, name);
    if (npy_read(path, &e->a, rd->r.err)) { free(shape); return -1; }
    rd->n++;
    int same = e->a.ndim == (int)nd;
    for (size_t k = 0; same && k < nd; k++) same = e->a.shape[k] == shape[k];
    free(shape);
    if ((long long)e->a.file_bytes != bytes)
      return jr_fail(&rd->r, p, "bytes", "%s holds %zu bytes, the index says %lld", name, e->a.file_bytes, bytes);
    if (strcmp(e->a.sha256, sha)) return jr_fail(&rd->r, p, "sha256", "%s has sha256 %s, the index says %s", name, e->a.sha256, sha);
    if (strcmp(e->a.descr, npy)) return jr_fail(&rd->r, p, "npy_dtype", "%s holds %s, the index says %s", name, e->a.descr, npy);
    if (!same) return jr_fail(&rd->r, p, "shape", "%s's shape differs from the index's", name);
  }
  return 0;
}

static int read_call(struct reader *rd) {
  struct decode_call *c = &rd->d->c;
  const json_t *call = jr_get(&rd->r, rd->d->index, "", "call", 1, JSON_OBJECT);
  static const char *const req[] = {"B", "C", "H_q", "H_kv", "d_qk", "d_v", "dtype", "scale", "phase", "layout",
                                    "table", "page_size", "T_cap", "mask", NULL};
  const char *P = "/call", *layout = NULL;
  long long v[6];
  const char *const dims[] = {"B", "C", "H_q", "H_kv", "d_qk", "d_v"};
  int dt = 0, phase = 0;
  if (!call || jr_keys(&rd->r, call, P, req, NULL)) return -1;
  for (int i = 0; i < 6; i++)
    if (jr_int(&rd->r, call, P, dims[i], 1, 1, i == 0 ? 65536 : i == 1 ? 64 : 1024, &v[i])) return -1;
  if (jr_enum(&rd->r, call, P, "dtype", 1, DTYPES, &dt) || jr_num(&rd->r, call, P, "scale", 1, 1e-30, 1e30, &c->scale) ||
      jr_enum(&rd->r, call, P, "phase", 1, PHASES, &phase) || jr_str(&rd->r, call, P, "layout", 1, &layout))
    return -1;
  if (v[2] % v[3]) return jr_fail(&rd->r, P, "H_kv", "must divide H_q %lld (got %lld)", v[2], v[3]);
  c->B = (int)v[0]; c->C = (int)v[1]; c->H_q = (int)v[2]; c->H_kv = (int)v[3]; c->dk = (int)v[4]; c->dv = (int)v[5];
  c->dtype = dt == 0 ? DKB_F16 : dt == 1 ? DKB_BF16 : DKB_F32;
  c->phase = phase;
  c->layout = kv_layout_parse(layout);
  if (c->layout < 0) return jr_fail(&rd->r, P, "layout", "unknown layout '%s'", layout);
  int paged = kv_layout_paged(c->layout);
  int contig = kv_layout_contiguous(c->layout);
  const json_t *table = json_object_get(call, "table"), *ps = json_object_get(call, "page_size"),
               *tc = json_object_get(call, "T_cap");
  if (paged) {
    const char *t = json_string_value(table);
    int tk = t ? kv_table_parse(t) : -1;
    if (tk != KV_TABLE_DENSE && tk != KV_TABLE_CSR) return jr_fail(&rd->r, P, "table", "must be \"dense\" or \"csr\" for a paged layout");
    c->table = tk;
    long long pg = 0;
    if (jr_int(&rd->r, call, P, "page_size", 1, 1, 1 << 20, &pg)) return -1;
    c->page_size = pg;
  } else {
    if (!json_is_null(table)) return jr_fail(&rd->r, P, "table", "must be null for layout %s", layout);
    if (!json_is_null(ps)) return jr_fail(&rd->r, P, "page_size", "must be null for layout %s", layout);
    c->table = KV_TABLE_NONE;
  }
  if (contig) {
    long long cap = 0;
    if (jr_int(&rd->r, call, P, "T_cap", 1, 1, (long long)1 << 30, &cap)) return -1;
    c->T_cap = cap;
  } else if (!json_is_null(tc)) {
    return jr_fail(&rd->r, P, "T_cap", "must be null for layout %s", layout);
  }
  const json_t *m = jr_get(&rd->r, call, P, "mask", 1, JSON_OBJECT);
  static const char *const mreq[] = {"kind", "window", "sink", NULL};
  const char *kind = NULL;
  if (!m || jr_keys(&rd->r, m, "/call/mask", mreq, NULL) || jr_str(&rd->r, m, "/call/mask", "kind", 1, &kind)) return -1;
  c->mask_kind = mask_kind_parse(kind);
  if (c->mask_kind < 0) return jr_fail(&rd->r, "/call/mask", "kind", "unknown mask kind '%s'", kind);
  if (c->mask_kind == MASK_SLIDING_WINDOW) {
    long long w = 0, s = 0;
    if (jr_int(&rd->r, m, "/call/mask", "window", 1, 1, (long long)1 << 30, &w)) return -1;
    if (!json_is_null(json_object_get(m, "sink")) && jr_int(&rd->r, m, "/call/mask", "sink", 1, 0, (long long)1 << 30, &s)) return -1;
    c->window = w;
    c->sink = s;
  }
  return 0;
}

/* The call key must describe the same call (the digest names it; the tensors are checked against
 * "call"), and freeze the tolerances the comparison uses. */
static int check_key(struct reader *rd, const json_t *key) {
  struct decode_call *c = &rd->d->c;
  const char *P = "/call_key";
  const char *schema = json_string_value(json_object_get(key, "schema"));
  if (!schema || strcmp(schema, "dkb.call-key/v1")) return jr_fail(&rd->r, P, "schema", "must be \"dkb.call-key/v1\"");
  const char *dt = dkb_dtype_name((enum dkb_dtype)c->dtype);
  const struct { const char *key; long long want; } ints[] = {{"B", c->B}, {"S_q", c->C}, {"H_q", c->H_q},
                                                             {"H_kv", c->H_kv}, {"d_qk", c->dk}, {"d_v", c->dv}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    const json_t *v = json_object_get(key, ints[i].key);
    if (!json_is_integer(v) || json_integer_value(v) != ints[i].want)
      return jr_fail(&rd->r, P, ints[i].key, "must equal the call's %lld", ints[i].want);
  }
  const char *const dkeys[] = {"q_dtype", "kv_dtype", "o_dtype"};
  for (int i = 0; i < 3; i++) {
    const char *s = json_string_value(json_object_get(key, dkeys[i]));
    if (!s || strcmp(s, dt))
      return jr_fail(&rd->r, P, dkeys[i], "must be the call's dtype %s: dkb's oracle reads Q, K, V and O in one dtype", dt);
  }
  const char *ph = json_string_value(json_object_get(key, "phase"));
  if (!ph || strcmp(ph, PHASES[c->phase])) return jr_fail(&rd->r, P, "phase", "must equal the call's '%s'", PHASES[c->phase]);
  const char *lay = json_string_value(json_object_get(key, "cache_layout"));
  if (!lay || strcmp(lay, kv_layout_name((enum kv_layout_kind)c->layout)))
    return jr_fail(&rd->r, P, "cache_layout", "must equal the call's '%s'", kv_layout_name((enum kv_layout_kind)c->layout));
  const json_t *ps = json_object_get(key, "page_size");
  int paged = kv_layout_paged(c->layout);
  if (!ps || (paged ? !json_is_integer(ps) || json_integer_value(ps) != c->page_size : !json_is_null(ps)))
    return jr_fail(&rd->r, P, "page_size", "must equal the call's page size (null unless paged)");
  if (paged) {
    const char *t = json_string_value(json_object_get(key, "page_table"));
    if (!t || kv_table_parse(t) != c->table) return jr_fail(&rd->r, P, "page_table", "must equal the call's table");
  }
  if (kv_layout_contiguous(c->layout)) {
    const json_t *cap = json_object_get(key, "cache_capacity");
    if (!json_is_integer(cap) || json_integer_value(cap) != c->T_cap) return jr_fail(&rd->r, P, "cache_capacity", "must equal the call's T_cap");
  }
  const json_t *m = json_object_get(key, "mask");
  const char *mk = json_string_value(json_is_object(m) ? json_object_get(m, "kind") : m);
  if (!mk || strcmp(mk, mask_kind_name((enum mask_kind)c->mask_kind))) return jr_fail(&rd->r, P, "mask", "must be the call's mask kind");
  if (c->mask_kind == MASK_SLIDING_WINDOW) {
    const json_t *w = json_object_get(m, "window"), *s = json_object_get(m, "sink");
    if (!json_is_integer(w) || json_integer_value(w) != c->window || (s && json_integer_value(s) != c->sink))
      return jr_fail(&rd->r, "/call_key/mask", "window", "must equal the call's window and sink");
  }
  const json_t *lens = json_object_get(key, "S_k_per_request");
  if (!json_is_array(lens) || (int)json_array_size(lens) != c->B)
    return jr_fail(&rd->r, P, "S_k_per_request", "must hold one length per request (%d)", c->B);
  const json_t *t = jr_get(&rd->r, key, P, "tolerances", 1, JSON_OBJECT);
  if (!t) return -1;
  if (jr_num(&rd->r, t, "/call_key/tolerances", "atol", 1, 0, 1e6, &c->atol) ||
      jr_num(&rd->r, t, "/call_key/tolerances", "rtol", 1, 0, 1e6, &c->rtol))
    return -1;
  c->lse_atol = c->atol;
  c->lse_rtol = c->rtol;
  return jr_num(&rd->r, t, "/call_key/tolerances", "lse_atol", 0, 0, 1e6, &c->lse_atol) ||
         jr_num(&rd->r, t, "/call_key/tolerances", "lse_rtol", 0, 0, 1e6, &c->lse_rtol);
}

/* The per-request arrays of the key against the tensors (after they are read). */
static int check_key_arrays(struct reader *rd, const json_t *key) {
  const struct decode_call *c = &rd->d->c;
  const json_t *lens = json_object_get(key, "S_k_per_request"), *rows = json_object_get(key, "cache_batch_idx");
  for (int b = 0; b < c->B; b++) {
    const json_t *v = json_array_get(lens, (size_t)b);
    if (!json_is_integer(v) || json_integer_value(v) != c->kv_len[b]) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/call_key/S_k_per_request", (size_t)b);
      return jr_fail(&rd->r, p, NULL, "must equal kv_len[%d] = %lld in kv_len.npy", b, (long long)c->kv_len[b]);
    }
    if (rows) {
      const json_t *r = json_array_get(rows, (size_t)b);
      if (!json_is_integer(r) || json_integer_value(r) != c->cache_row[b]) {
        char p[DKB_PTR_MAX];
        jr_ptr_idx(p, "/call_key/cache_batch_idx", (size_t)b);
        return jr_fail(&rd->r, p, NULL, "must equal cache_batch_idx[%d] = %d in cache_batch_idx.npy", b, c->cache_row[b]);
      }
    }
  }
  return 0;
}

static int read_tensors(struct reader *rd) {
  struct decode_call *c = &rd->d->c;
  struct decode_inputs *in = &rd->d->in;
  const char *dt = dkb_dtype_name((enum dkb_dtype)c->dtype);
  const int64_t B = c->B, C = c->C, Hq = c->H_q, Hkv = c->H_kv, dk = c->dk, dv = c->dv;
  struct entry *e;
  in->esize = (int)dkb_dtype_bytes((enum dkb_dtype)c->dtype);
  { const int64_t s[] = {B}; if (!(e = need(rd, "kv_len", "int64", s, 1, "[B]", 1))) return -1; }
  c->kv_len = take(e);
  for (int b = 0; b < c->B; b++)
    if (c->kv_len[b] < c->C || c->kv_len[b] > ((int64_t)1 << 30)) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/files", e->idx);
      return jr_fail(&rd->r, p, NULL, "kv_len[%d] = %lld: every request sees at least its C = %d query rows", b,
                     (long long)c->kv_len[b], c->C);
    }
  { const int64_t s[] = {B, C, Hq, dk}; if (!(e = need(rd, "q", dt, s, 4, "[B][C][H_q][d_qk]", 1))) return -1; }
  in->q_bytes = e->a.count * e->a.itemsize;
  in->q = take(e);
  int contig = kv_layout_contiguous(c->layout), paged = kv_layout_paged(c->layout);
  int need_rows = contig || (paged && c->table == KV_TABLE_DENSE);
  { const int64_t s[] = {B}; e = need(rd, "cache_batch_idx", "int32", s, 1, "[B]", need_rows); }
  if (!e && need_rows) return -1;
  c->cache_row = DKB_MALLOC((size_t)B * sizeof *c->cache_row);
  in->cache_batch_idx = DKB_MALLOC((size_t)B * sizeof *in->cache_batch_idx);
  for (int64_t b = 0; b < B; b++) c->cache_row[b] = e ? ((const int32_t *)e->a.data)[b] : (int32_t)b;
  memcpy(in->cache_batch_idx, c->cache_row, (size_t)B * sizeof *c->cache_row);
  struct kv_layout *L = &in->L;
  L->kind = (enum kv_layout_kind)c->layout;
  L->table = (enum kv_table_kind)c->table;
  L->B = B; L->H_q = Hq; L->H_kv = Hkv;
  L->len = c->kv_len;
  L->cache_batch_idx = in->cache_batch_idx;
  /* K and V: the layout's shape, its free extents taken from K and held to by V */
  struct entry *k = find(rd, "k_cache"), *v = find(rd, "v_cache");
  if (!k || !v) return jr_fail(&rd->r, "/files", NULL, "no file with role '%s': the call needs it", k ? "v_cache" : "k_cache");
  int64_t sk[4], sv[4];
  int nd = c->layout == KV_RAGGED_NHD ? 3 : 4;
  const char *axes;
  int64_t ext = k->a.ndim == nd ? k->a.shape[0] : -1, inner = 0;  /* inner: T_cap or P, from the call */
  switch (c->layout) {
  case KV_CONTIG_NHD: axes = "contiguous_nhd [cache_rows][T_cap][H_kv][d]"; inner = c->T_cap; break;
  case KV_CONTIG_HND: axes = "contiguous_hnd [cache_rows][H_kv][T_cap][d]"; inner = c->T_cap; break;
  case KV_RAGGED_NHD: axes = "ragged_nhd [sum kv_len][H_kv][d]"; break;
  case KV_PAGED_NHD: axes = "paged_nhd [num_pages][P][H_kv][d]"; inner = c->page_size; break;
  default: axes = "paged_hnd [num_pages][H_kv][P][d]"; inner = c->page_size; break;
  }
  if (c->layout == KV_RAGGED_NHD) {
    ext = 0;
    for (int b = 0; b < c->B; b++) ext += c->kv_len[b];
  }
  if (ext < 1) ext = 1;
  int nhd = c->layout == KV_CONTIG_NHD || c->layout == KV_PAGED_NHD;
  if (nd == 3) { sk[0] = ext; sk[1] = Hkv; sk[2] = dk; }
  else if (nhd) { sk[0] = ext; sk[1] = inner; sk[2] = Hkv; sk[3] = dk; }
  else { sk[0] = ext; sk[1] = Hkv; sk[2] = inner; sk[3] = dk; }
  memcpy(sv, sk, sizeof sk);
  sv[nd - 1] = dv;
  if (!(k = need(rd, "k_cache", dt, sk, nd, axes, 1)) || !(v = need(rd, "v_cache", dt, sv, nd, axes, 1))) return -1;
  if (contig) { L->cache_rows = ext; L->T_cap = c->T_cap; }
  if (paged) { L->num_pages = ext; L->page_size = c->page_size; }
  c->T_cap = L->T_cap;
  if (c->layout == KV_RAGGED_NHD) {
    const int64_t s[] = {B + 1};
    if (!(e = need(rd, "indptr", "int64", s, 1, "[B+1]", 1))) return -1;
    L->indptr = in->indptr = take(e);
  }
  if (paged && c->table == KV_TABLE_DENSE) {
    if (!(e = need(rd, "block_table", "int32", NULL, -1, "[cache_rows][width]", 1))) return -1;
    if (e->a.ndim != 2) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, "/files", e->idx);
      return jr_fail(&rd->r, p, "shape", "block_table must be [cache_rows][width]");
    }
    L->cache_rows = e->a.shape[0];
    L->table_width = e->a.shape[1];
    L->block_table = in->block_table = take(e);
  }
  if (paged && c->table == KV_TABLE_CSR) {
    const int64_t s1[] = {B + 1}, s2[] = {B};
    struct entry *pi, *px, *pl;
    if (!(pi = need(rd, "page_indptr", "int32", s1, 1, "[B+1]", 1)) || !(px = need(rd, "page_indices", "int32", NULL, -1, "", 1)) ||
        !(pl = need(rd, "last_page_len", "int32", s2, 1, "[B]", 1)))
      return -1;
    if (px->a.ndim != 1) return jr_fail(&rd->r, "/files", NULL, "page_indices must be one-dimensional");
    in->n_page_indices = px->a.shape[0];
    L->page_indices_len = px->a.shape[0];
    L->page_indptr = in->page_indptr = take(pi);
    L->page_indices = in->page_indices = take(px);
    L->last_page_len = in->last_page_len = take(pl);
  }
  if (!contig && !(paged && c->table == KV_TABLE_DENSE)) L->cache_rows = B;
  char reason[64], detail[256];
  if (kv_layout_check(L, reason, detail))
    return jr_fail(&rd->r, "/call", "layout", "the layout metadata fails closed: %s: %s", reason, detail);
  if (kv_tensor_elems(L, dk) != (int64_t)k->a.count || kv_tensor_elems(L, dv) != (int64_t)v->a.count)
    return jr_fail(&rd->r, "/files", NULL, "k_cache/v_cache hold %zu/%zu elements, the layout addresses %lld/%lld", k->a.count,
                   v->a.count, (long long)kv_tensor_elems(L, dk), (long long)kv_tensor_elems(L, dv));
  in->k_bytes = k->a.count * k->a.itemsize;
  in->v_bytes = v->a.count * v->a.itemsize;
  in->k = take(k);
  in->v = take(v);
  if (c->phase == PHASE_APPEND) {
    const int64_t s1[] = {B, C, Hkv, dk}, s2[] = {B, C, Hkv, dv};
    struct entry *kn, *vn;
    if (!(kn = need(rd, "k_new", dt, s1, 4, "[B][C][H_kv][d_qk]", 1)) || !(vn = need(rd, "v_new", dt, s2, 4, "[B][C][H_kv][d_v]", 1)))
      return -1;
    in->new_k_bytes = kn->a.count * kn->a.itemsize;
    in->new_v_bytes = vn->a.count * vn->a.itemsize;
    in->k_new = take(kn);
    in->v_new = take(vn);
  }
  in->mask.kind = (enum mask_kind)c->mask_kind;
  in->mask.window = c->window;
  in->mask.sink = c->sink;
  if (c->mask_kind == MASK_FLASHMASK) {
    const int64_t s[] = {B + 1};
    if (!(e = need(rd, "col_indptr", "int64", s, 1, "[B+1]", 1))) return -1;
    in->col_indptr = take(e);
    int64_t ncol = in->col_indptr[B];
    if (in->col_indptr[0] != 0 || ncol < 0 || ncol > ((int64_t)1 << 34))
      return jr_fail(&rd->r, "/files", NULL, "col_indptr must start at 0 and end at the column count");
    const int64_t sc[] = {ncol};
    const char *const names[] = {"uts", "ute", "lts", "lte"};
    int32_t **dst[] = {&in->uts, &in->ute, &in->lts, &in->lte};
    for (int i = 0; i < 4; i++) {
      if (!(e = need(rd, names[i], "int32", sc, 1, "[col_indptr[B]]", 1))) return -1;
      *dst[i] = take(e);
    }
    in->mask.col_indptr = in->col_indptr;
    in->mask.uts = in->uts; in->mask.ute = in->ute; in->mask.lts = in->lts; in->mask.lte = in->lte;
    if (mask_program_check(&in->mask, B, reason, detail))
      return jr_fail(&rd->r, "/call", "mask", "the FlashMask program fails closed: %s: %s", reason, detail);
  }
  /* the candidate */
  const int64_t so[] = {B, C, Hq, dv}, sl[] = {B, C, Hq};
  if (!(e = need(rd, "o_gpu", dt, so, 4, "[B][C][H_q][d_v]", 0)))
    return rd->r.err->msg[0] ? -1 : jr_fail(&rd->r, "/files", NULL, "no file with role 'o_gpu': the dump holds no candidate output to check");
  rd->d->o = take(e);
  e = need(rd, "lse_gpu", "fp32", sl, 3, "[B][C][H_q]", 0);
  if (!e && rd->r.err->msg[0]) return -1;
  rd->d->lse = take(e);
  c->return_lse = rd->d->lse != NULL;
  if (c->phase == PHASE_APPEND) {
    struct entry *ka, *va;
    if (!(ka = need(rd, "k_cache_after", dt, sk, nd, axes, 1)) || !(va = need(rd, "v_cache_after", dt, sv, nd, axes, 1)))
      return -1;
    rd->d->k_after = take(ka);
    rd->d->v_after = take(va);
  }
  return 0;
}

static int read_candidate(struct reader *rd) {
  static const char *const BASES[] = {"natural", "base2", NULL}, *const EMPTY[] = {"zero_neginf", "zero_posinf", "nan", NULL};
  rd->d->lse_base = DKB_LSE_NATURAL;
  rd->d->empty_row = DKB_EMPTY_ZERO_NEGINF;
  const json_t *cand = jr_get(&rd->r, rd->d->index, "", "candidate", 0, JSON_OBJECT);
  if (!cand) return json_object_get(rd->d->index, "candidate") ? -1 : 0;
  static const char *const opt[] = {"lse_base", "empty_row", NULL};
  int base = 0, empty = 0;
  if (jr_keys(&rd->r, cand, "/candidate", NULL, opt) || jr_enum(&rd->r, cand, "/candidate", "lse_base", 0, BASES, &base) ||
      jr_enum(&rd->r, cand, "/candidate", "empty_row", 0, EMPTY, &empty))
    return -1;
  rd->d->lse_base = base == 0 ? DKB_LSE_NATURAL : DKB_LSE_BASE2;
  rd->d->empty_row = empty == 0 ? DKB_EMPTY_ZERO_NEGINF : empty == 1 ? DKB_EMPTY_ZERO_POSINF : DKB_EMPTY_NAN;
  return 0;
}

int dump_read_index(const char *dir, struct dump_call *d, struct dkb_err *err) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "%s", dir);
  snprintf(d->index_path, sizeof d->index_path, "%s/index.json", dir);
  struct jr r = {.file = d->index_path, .err = err, .code = DKB_INPUT};
  if (!(d->index = jr_load_file(d->index_path, err)) || dkb_sha256_file(d->index_path, d->index_sha256, err)) goto fail;
  static const char *const req[] = {"schema", "files", "call", "call_key", NULL};
  static const char *const opt[] = {"producer", "candidate", NULL};
  const char *schema = NULL;
  if (jr_keys(&r, d->index, "", req, opt) || jr_str(&r, d->index, "", "schema", 1, &schema)) goto fail;
  if (strcmp(schema, "dkb.dump/v1")) { jr_fail(&r, "", "schema", "must be \"dkb.dump/v1\" (got \"%s\")", schema); goto fail; }
  const json_t *key = jr_get(&r, d->index, "", "call_key", 1, JSON_OBJECT);
  if (!key || cjson_digest(key, d->call_key_sha256, err)) goto fail;
  if (json_object_get(d->index, "producer") && !jr_get(&r, d->index, "", "producer", 0, JSON_OBJECT)) goto fail;
  return 0;
fail:
  dump_call_release(d);
  return -1;
}

int dump_read(const char *dir, struct dump_call *d, struct dkb_err *err) {
  if (dump_read_index(dir, d, err)) return -1;
  struct reader *rd = DKB_CALLOC(1, sizeof *rd);
  rd->d = d;
  rd->r = (struct jr){.file = d->index_path, .err = err, .code = DKB_INPUT};
  dkb_err_clear(err);
  const json_t *key = json_object_get(d->index, "call_key");
  snprintf(d->c.file, sizeof d->c.file, "%.*s", (int)sizeof d->c.file - 1, d->index_path);
  int rc = read_candidate(rd) || read_call(rd) || check_key(rd, key) || read_files(rd) || read_tensors(rd) ||
           check_key_arrays(rd, key) ? -1 : 0;
  for (size_t i = 0; i < rd->n; i++) npy_array_release(&rd->e[i].a);
  free(rd);
  if (rc) dump_call_release(d);
  return rc;
}

void dump_call_release(struct dump_call *d) {
  json_decref(d->index);
  inputs_release(&d->in);
  free(d->c.kv_len);
  free(d->c.cache_row);
  free(d->o);
  free(d->lse);
  free(d->k_after);
  free(d->v_after);
  memset(d, 0, sizeof *d);
}
