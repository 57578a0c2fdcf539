/* dump_cases.c - the dumps tests/test_dump.c checks (see dump_cases.h). */
#include "tests/dump_cases.h"
#include "tests/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/dump.h"
#include "lib/sha256.h"
#include "oracles/dtype.h"

/* The case's metadata, derived from the struct. */
struct md {
  int64_t indptr[MAXB + 1];      /* ragged */
  int64_t blocks[MAXB];          /* paged: ceil(kv_len / P) */
  int32_t page[MAXB][16];        /* paged: physical page of (b, j) */
  int64_t width;                 /* dense: table width = max blocks + 1 */
};

static void metadata(const struct tcase *c, struct md *m) {
  memset(m, 0, sizeof *m);
  int next = (int)c->pages - 1;  /* pages handed out from the top down, page 0 .. stay unused */
  for (int b = 0; b < c->B; b++) {
    m->indptr[b + 1] = m->indptr[b] + c->kv_len[b];
    if (!c->P) continue;
    m->blocks[b] = (c->kv_len[b] + c->P - 1) / c->P;
    for (int j = 0; j < m->blocks[b]; j++) m->page[b][j] = next--;
    if (m->blocks[b] + 1 > m->width) m->width = m->blocks[b] + 1;
  }
  if (c->P) assert_true(next >= 0); /* the pool holds at least one unused (poisoned) page */
}

/* Slot of key t, head h of request b (element offset = slot * d + x), dump.h's formulas. */
static int64_t slot(const struct tcase *c, const struct md *m, int b, int64_t t, int h) {
  const int64_t H = c->H_kv, r = c->row[b];
  if (!strcmp(c->layout, "contiguous_nhd")) return (r * c->T_cap + t) * H + h;
  if (!strcmp(c->layout, "contiguous_hnd")) return (r * H + h) * c->T_cap + t;
  if (!strcmp(c->layout, "ragged_nhd")) return (m->indptr[b] + t) * H + h;
  int64_t page = m->page[b][t / c->P], rr = t % c->P;
  if (!strcmp(c->layout, "paged_nhd")) return (page * c->P + rr) * H + h;
  return (page * H + h) * c->P + rr;
}

static int64_t cache_slots(const struct tcase *c, const struct md *m) {
  if (!strncmp(c->layout, "contiguous", 10)) return c->rows * c->T_cap * c->H_kv;
  if (!strcmp(c->layout, "ragged_nhd")) return m->indptr[c->B] * c->H_kv;
  return c->pages * c->P * c->H_kv;
}

static int visible(const struct tcase *c, int b, int i, int64_t k) {
  int64_t p = c->kv_len[b] - c->C + i;
  if (!strcmp(c->mask, "none")) return 1;
  if (!strcmp(c->mask, "causal")) return k <= p;
  if (!strcmp(c->mask, "sliding_window")) return k <= p && (k > p - c->window || k < c->sink);
  /* flashmask, as the columns below encode it: request 0 masks its first query row for every key,
   * request 1 is causal (column k masked for rows [0, k)) */
  if (b == 0) return i != 0;
  return k <= p;
}

double case_value(int tensor, int b, int64_t t, int h, int x) {
  uint64_t z = ((((uint64_t)tensor * 131 + (uint64_t)b) * 1009 + (uint64_t)t) * 97 + (uint64_t)h) * 61 + (uint64_t)x;
  z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
  z ^= z >> 29;
  return (double)(z >> 11) / 9007199254740992.0 * 2 - 1;
}

struct tensors {
  enum dkb_dtype t;
  size_t e;                        /* element bytes */
  void *q, *k, *v, *k_new, *v_new, *k_after, *v_after, *o_gpu;
  double *o, *lse;
  float *lse_gpu;
};

/* Row t of K (which 0) or V (1) of request b as the call sees it: new rows from k_new/v_new. */
static double kv_at(const struct tcase *c, const struct md *m, const struct tensors *T, int which, int b, int64_t t,
                    int h, int x) {
  int d = which ? c->dv : c->dk;
  int64_t first_new = c->kv_len[b] - c->C;
  if (!strcmp(c->phase, "append") && t >= first_new)
    return dkb_load(T->t, which ? T->v_new : T->k_new, (size_t)(((b * c->C + (t - first_new)) * c->H_kv + h) * d + x));
  return dkb_load(T->t, which ? T->v : T->k, (size_t)(slot(c, m, b, t, h) * d + x));
}

static void build(const struct tcase *c, const struct md *m, struct tensors *T) {
  T->t = dkb_dtype_parse(c->dtype);
  T->e = dkb_dtype_bytes(T->t);
  int64_t S = cache_slots(c, m), nq = (int64_t)c->B * c->C * c->H_q;
  T->q = malloc(nq * c->dk * T->e);
  T->k = malloc(S * c->dk * T->e);
  T->v = malloc(S * c->dv * T->e);
  T->k_new = malloc((size_t)c->B * c->C * c->H_kv * c->dk * T->e);
  T->v_new = malloc((size_t)c->B * c->C * c->H_kv * c->dv * T->e);
  for (int64_t i = 0; i < S * c->dk; i++) dkb_store(T->t, T->k, i, NAN);
  for (int64_t i = 0; i < S * c->dv; i++) dkb_store(T->t, T->v, i, NAN);
  int append = !strcmp(c->phase, "append");
  for (int b = 0; b < c->B; b++) {
    for (int i = 0; i < c->C; i++)
      for (int h = 0; h < c->H_q; h++)
        for (int x = 0; x < c->dk; x++) dkb_store(T->t, T->q, ((b * c->C + i) * c->H_q + h) * c->dk + x, case_value(0, b, i, h, x));
    int64_t old = c->kv_len[b] - (append ? c->C : 0);
    for (int64_t t = 0; t < c->kv_len[b]; t++)
      for (int h = 0; h < c->H_kv; h++) {
        for (int x = 0; x < c->dk; x++) {
          size_t at = t < old ? (size_t)(slot(c, m, b, t, h) * c->dk + x) : (size_t)(((b * c->C + t - old) * c->H_kv + h) * c->dk + x);
          dkb_store(T->t, t < old ? T->k : T->k_new, at, case_value(1, b, t, h, x));
        }
        for (int x = 0; x < c->dv; x++) {
          size_t at = t < old ? (size_t)(slot(c, m, b, t, h) * c->dv + x) : (size_t)(((b * c->C + t - old) * c->H_kv + h) * c->dv + x);
          dkb_store(T->t, t < old ? T->v : T->v_new, at, case_value(2, b, t, h, x));
        }
      }
  }
  /* float64 reference: scores over visible keys, max, sum of exp, O = weighted V */
  T->o = calloc(nq * c->dv, sizeof *T->o);
  T->lse = malloc(nq * sizeof *T->lse);
  int g = c->H_q / c->H_kv;
  for (int b = 0; b < c->B; b++)
    for (int i = 0; i < c->C; i++)
      for (int h = 0; h < c->H_q; h++) {
        int64_t row = (b * c->C + i) * c->H_q + h, N = c->kv_len[b];
        double mx = -INFINITY, l = 0, s[64];
        for (int64_t t = 0; t < N; t++) {
          s[t] = -INFINITY;
          if (!visible(c, b, i, t)) continue;
          double dot = 0;
          for (int x = 0; x < c->dk; x++)
            dot += dkb_load(T->t, T->q, (size_t)(row * c->dk + x)) * kv_at(c, m, T, 0, b, t, h / g, x);
          s[t] = dot / sqrt((double)c->dk);
          if (s[t] > mx) mx = s[t];
        }
        if (mx == -INFINITY) {
          T->lse[row] = -INFINITY;
          continue;
        }
        for (int64_t t = 0; t < N; t++) l += exp(s[t] - mx);
        T->lse[row] = mx + log(l);
        for (int64_t t = 0; t < N; t++)
          for (int x = 0; x < c->dv; x++) T->o[row * c->dv + x] += exp(s[t] - mx) / l * kv_at(c, m, T, 1, b, t, h / g, x);
      }
  if (c->bad_o) T->o[0] += 0.5;
  /* what a GPU would have returned: the reference rounded to storage, the caches after the append */
  T->o_gpu = malloc(nq * c->dv * T->e);
  T->lse_gpu = malloc(nq * sizeof *T->lse_gpu);
  for (int64_t i = 0; i < nq * c->dv; i++) dkb_store(T->t, T->o_gpu, i, T->o[i]);
  for (int64_t i = 0; i < nq; i++) T->lse_gpu[i] = (float)T->lse[i];
  T->k_after = malloc(S * c->dk * T->e);
  T->v_after = malloc(S * c->dv * T->e);
  memcpy(T->k_after, T->k, S * c->dk * T->e);
  memcpy(T->v_after, T->v, S * c->dv * T->e);
  for (int b = 0; append && b < c->B; b++)
    for (int i = 0; i < c->C; i++)
      for (int h = 0; h < c->H_kv; h++) {
        int64_t t = c->kv_len[b] - c->C + i, tk = t + (c->misplace && b == 0);
        memcpy((char *)T->k_after + slot(c, m, b, tk, h) * c->dk * T->e,
               (char *)T->k_new + ((b * c->C + i) * c->H_kv + h) * c->dk * T->e, c->dk * T->e);
        memcpy((char *)T->v_after + slot(c, m, b, t, h) * c->dv * T->e,
               (char *)T->v_new + ((b * c->C + i) * c->H_kv + h) * c->dv * T->e, c->dv * T->e);
      }
}

static void tensors_release(struct tensors *T) {
  void *p[] = {T->q, T->k, T->v, T->k_new, T->v_new, T->k_after, T->v_after, T->o_gpu, T->o, T->lse, T->lse_gpu};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
}

static void add(struct dump *d, const char *name, const char *dtype, const char *layout, const void *data,
                int ndim, ...) {
  int64_t shape[8], n = 1;
  va_list ap;
  va_start(ap, ndim);
  for (int i = 0; i < ndim; i++) n *= shape[i] = va_arg(ap, int64_t);
  va_end(ap);
  struct dkb_err err;
  if (dump_add(d, name, name, dtype, layout, shape, ndim, data, (size_t)n * dkb_dtype_bytes(dkb_dtype_parse(dtype)), &err))
    fail_msg("dump_add %s: %s", name, err.msg);
}

/* Writes the case's dump into tmp_dir()/c->name; returns the folder (static per call slot). */
const char *write_case(const struct tcase *c, json_t **index) {
  static char dir[4][512];
  static int k;
  char *out = dir[k++ % 4];
  snprintf(out, 512, "%s/%s", tmp_dir(), c->name);
  struct md m;
  metadata(c, &m);
  struct tensors T;
  build(c, &m, &T);
  struct dkb_err err;
  struct dump *d;
  if (dump_open(out, &d, &err)) fail_msg("dump_open: %s", err.msg);
  int64_t B = c->B, C = c->C, Hq = c->H_q, H = c->H_kv, dk = c->dk, dv = c->dv, S = cache_slots(c, &m);
  int paged = !strncmp(c->layout, "paged", 5), hnd = strstr(c->layout, "hnd") != NULL;
  add(d, "q", c->dtype, "[B][C][H_q][d_qk]", T.q, 4, B, C, Hq, dk);
  char lay[128];
  for (int which = 0; which < 2; which++) {
    int64_t dd = which ? dv : dk;
    const void *data = which ? T.v : T.k;
    const char *name = which ? "v_cache" : "k_cache";
    if (!strncmp(c->layout, "contiguous", 10)) {
      snprintf(lay, sizeof lay, "%s %s", c->layout, hnd ? "[cache_rows][H_kv][T_cap][d]" : "[cache_rows][T_cap][H_kv][d]");
      if (hnd) add(d, name, c->dtype, lay, data, 4, c->rows, H, c->T_cap, dd);
      else add(d, name, c->dtype, lay, data, 4, c->rows, c->T_cap, H, dd);
    } else if (!paged) {
      add(d, name, c->dtype, "ragged_nhd [sum_b kv_len][H_kv][d]", data, 3, S / H, H, dd);
    } else {
      snprintf(lay, sizeof lay, "%s %s", c->layout, hnd ? "[num_pages][H_kv][P][d]" : "[num_pages][P][H_kv][d]");
      if (hnd) add(d, name, c->dtype, lay, data, 4, c->pages, H, c->P, dd);
      else add(d, name, c->dtype, lay, data, 4, c->pages, c->P, H, dd);
    }
  }
  add(d, "kv_len", "int64", "[B]", c->kv_len, 1, B);
  add(d, "cache_batch_idx", "int32", "[B]", c->row, 1, B);
  if (!strcmp(c->layout, "ragged_nhd")) add(d, "indptr", "int64", "[B+1]", m.indptr, 1, B + 1);
  if (c->table && !strcmp(c->table, "dense")) {
    int32_t *bt = malloc(c->rows * m.width * sizeof *bt);
    for (int64_t i = 0; i < c->rows * m.width; i++) bt[i] = -1;
    for (int b = 0; b < c->B; b++)
      for (int j = 0; j < m.blocks[b]; j++) bt[c->row[b] * m.width + j] = m.page[b][j];
    add(d, "block_table", "int32", "[cache_rows][width]", bt, 2, c->rows, m.width);
    free(bt);
  } else if (c->table) {
    int32_t ip[MAXB + 1] = {0}, ind[64], last[MAXB];
    for (int b = 0; b < c->B; b++) {
      for (int j = 0; j < m.blocks[b]; j++) ind[ip[b] + j] = m.page[b][j];
      ip[b + 1] = ip[b] + (int32_t)m.blocks[b];
      last[b] = (int32_t)(c->kv_len[b] - (m.blocks[b] - 1) * c->P);
    }
    if (c->stale_page) ind[0] = 0;
    add(d, "page_indptr", "int32", "[B+1]", ip, 1, B + 1);
    add(d, "page_indices", "int32", "[page_indptr[B]]", ind, 1, (int64_t)ip[c->B]);
    add(d, "last_page_len", "int32", "[B]", last, 1, B);
  }
  if (!strcmp(c->mask, "flashmask")) { /* request 0: query row 0 masked for every key; request 1: causal */
    int64_t ci[MAXB + 1] = {0};
    int32_t iv[4][64];
    for (int b = 0; b < c->B; b++) {
      for (int64_t j = 0; j < c->kv_len[b]; j++) {
        int64_t p0 = c->kv_len[b] - c->C;
        iv[0][ci[b] + j] = 0; /* request 1: UTS, UTE = 0, j (the upper interval) */
        iv[1][ci[b] + j] = b == 0 ? 0 : (int32_t)j;
        iv[2][ci[b] + j] = b == 0 ? (int32_t)p0 : 0; /* request 0: LTS, LTE = p0, p0 + 1 (the lower one) */
        iv[3][ci[b] + j] = b == 0 ? (int32_t)p0 + 1 : 0;
      }
      ci[b + 1] = ci[b] + c->kv_len[b];
    }
    add(d, "col_indptr", "int64", "[B+1]", ci, 1, B + 1);
    const char *names[4] = {"uts", "ute", "lts", "lte"};
    for (int i = 0; i < 4; i++) add(d, names[i], "int32", "[sum_b kv_len]", iv[i], 1, ci[c->B]);
  }
  int append = !strcmp(c->phase, "append");
  if (append) {
    add(d, "k_new", c->dtype, "[B][C][H_kv][d_qk]", T.k_new, 4, B, C, H, dk);
    add(d, "v_new", c->dtype, "[B][C][H_kv][d_v]", T.v_new, 4, B, C, H, dv);
  }
  add(d, "o_ref", "fp64", "[B][C][H_q][d_v]", T.o, 4, B, C, Hq, dv);
  add(d, "lse_ref", "fp64", "[B][C][H_q]", T.lse, 3, B, C, Hq);
  if (c->gpu) {
    add(d, "o_gpu", c->dtype, "[B][C][H_q][d_v]", T.o_gpu, 4, B, C, Hq, dv);
    add(d, "lse_gpu", "fp32", "[B][C][H_q]", T.lse_gpu, 3, B, C, Hq);
  }
  if (c->gpu && append) { /* same shape as the caches before the call */
    int64_t sh[4];
    if (!strncmp(c->layout, "contiguous", 10)) {
      sh[0] = c->rows, sh[1] = hnd ? H : c->T_cap, sh[2] = hnd ? c->T_cap : H;
    } else {
      sh[0] = c->pages, sh[1] = hnd ? H : c->P, sh[2] = hnd ? c->P : H;
    }
    sh[3] = dk;
    struct dkb_err e2;
    if (dump_add(d, "k_cache_after", "k_cache_after", c->dtype, "layout of k_cache", sh, 4, T.k_after, S * dk * T.e, &e2))
      fail_msg("%s", e2.msg);
    sh[3] = dv;
    if (dump_add(d, "v_cache_after", "v_cache_after", c->dtype, "layout of v_cache", sh, 4, T.v_after, S * dv * T.e, &e2))
      fail_msg("%s", e2.msg);
  }
  dump_set(d, "call_key", json_pack("{s:s}", "name", c->name));
  json_t *mask = json_pack("{s:s,s:o,s:o}", "kind", c->mask, "window",
                           c->window ? json_integer(c->window) : json_null(), "sink",
                           c->window ? json_integer(c->sink) : json_null());
  dump_set(d, "call",
           json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:s,s:s,s:o,s:o,s:o,s:o}", "B", c->B, "C", c->C, "H_q", c->H_q,
                     "H_kv", c->H_kv, "d_qk", c->dk, "d_v", c->dv, "dtype", c->dtype, "scale", 1 / sqrt((double)c->dk),
                     "phase", c->phase, "layout", c->layout, "table", c->table ? json_string(c->table) : json_null(),
                     "page_size", paged ? json_integer(c->P) : json_null(), "T_cap",
                     paged || !strcmp(c->layout, "ragged_nhd") ? json_null() : json_integer(c->T_cap), "mask", mask));
  char sha[65];
  if (dump_close(d, sha, index, &err)) fail_msg("dump_close: %s", err.msg);
  char path[600], file_sha[65];
  snprintf(path, sizeof path, "%s/index.json", out);
  assert_int_equal(dkb_sha256_file(path, file_sha, &err), 0);
  assert_string_equal(sha, file_sha);
  tensors_release(&T);
  return out;
}

const struct tcase CONTIG_NHD = {
    .name = "contig_nhd", .layout = "contiguous_nhd", .phase = "decode", .dtype = "bf16", .mask = "causal",
    .B = 2, .C = 2, .H_q = 4, .H_kv = 2, .dk = 8, .dv = 4, .kv_len = {3, 5}, .row = {2, 0}, .T_cap = 6, .rows = 3, .gpu = 1};
const struct tcase PAGED_CSR = {
    .name = "paged_csr", .layout = "paged_hnd", .table = "csr", .phase = "decode", .dtype = "fp16", .mask = "flashmask",
    .B = 2, .C = 2, .H_q = 4, .H_kv = 2, .dk = 4, .dv = 6, .kv_len = {3, 4}, .P = 2, .pages = 5};
const struct tcase PAGED_DENSE_APPEND = {
    .name = "paged_dense_append", .layout = "paged_nhd", .table = "dense", .phase = "append", .dtype = "fp32",
    .mask = "sliding_window", .window = 2, .sink = 1, .B = 2, .C = 2, .H_q = 4, .H_kv = 2, .dk = 4, .dv = 4,
    .kv_len = {5, 3}, .row = {1, 0}, .rows = 2, .P = 2, .pages = 6, .gpu = 1};
const struct tcase RAGGED = {
    .name = "ragged", .layout = "ragged_nhd", .phase = "decode", .dtype = "fp32", .mask = "none",
    .B = 3, .C = 1, .H_q = 6, .H_kv = 3, .dk = 5, .dv = 3, .kv_len = {1, 4, 2}, .row = {0, 1, 2}};
const struct tcase CONTIG_HND_APPEND = {
    .name = "contig_hnd_append", .layout = "contiguous_hnd", .phase = "append", .dtype = "fp16", .mask = "causal",
    .B = 2, .C = 1, .H_q = 2, .H_kv = 2, .dk = 4, .dv = 4, .kv_len = {2, 4}, .row = {1, 0}, .T_cap = 5, .rows = 2, .gpu = 1};

