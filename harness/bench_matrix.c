/* bench_matrix.c - a bench matrix from its file or from fixtures: each entry's cases (auto and forced
 * splits), described from their fixtures up front, its targets and the backends it runs under, and the
 * call (and its key) each case times (see bench.h). */
#include "harness/bench.h"
#include "harness/decode_call.h"
#include "include/dkb/backend.h"
#include "lib/cjson.h"
#include "lib/err.h"
#include "lib/jread.h"
#include "oracles/dtype.h"
#include "oracles/kv_address.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void bench_matrix_release(struct bench_matrix *m) {
  free(m->cases);
  memset(m, 0, sizeof *m);
}

/* Fills the descriptive fields of a case from its fixture (and checks the fixture up front). */
static int describe(struct bench_case *bc, struct dkb_err *err) {
  struct decode_call c;
  if (decode_call_load(bc->fixture, &c, err)) return -1;
  snprintf(bc->layout, sizeof bc->layout, "%s", kv_layout_name((enum kv_layout_kind)c.layout));
  snprintf(bc->dtype, sizeof bc->dtype, "%s", dkb_dtype_name((enum dkb_dtype)c.dtype));
  bc->B = c.B;
  bc->C = c.C;
  bc->H_q = c.H_q;
  bc->H_kv = c.H_kv;
  bc->d = c.dk;
  bc->graph = c.graph;  /* dkb bench --graph sets it for every case */
  double sum = 0;
  for (int b = 0; b < c.B; b++) sum += (double)c.kv_len[b];
  bc->mean_len = sum / c.B;
  if (bc->forced_splits) snprintf(bc->name, sizeof bc->name, "%s/split%d", c.name, bc->forced_splits);
  else snprintf(bc->name, sizeof bc->name, "%s", c.name);
  decode_call_release(&c);
  return 0;
}

static void push(struct bench_matrix *m, const char *fixture, int splits) {
  m->cases = DKB_REALLOC(m->cases, (size_t)(m->n + 1) * sizeof *m->cases);
  struct bench_case *bc = &m->cases[m->n++];
  memset(bc, 0, sizeof *bc);
  snprintf(bc->fixture, sizeof bc->fixture, "%s", fixture);
  bc->forced_splits = splits;
  bc->within_ref = -1;
  bc->peer_of = -1;
  bc->excess_us = bc->read_fraction = NAN;  /* until a median and a roofline (a read) give one */
}

/* A fixture path of the matrix: relative to the matrix file's folder unless absolute. */
static void matrix_path(char *out, size_t n, const char *base, const char *fx) {
  if (fx[0] == '/') snprintf(out, n, "%s", fx);
  else snprintf(out, n, "%s/%s", base, fx);
}

/* The auto (own-policy) case of a fixture, or -1. */
static int auto_case(const struct bench_matrix *m, const char *fixture) {
  for (int i = 0; i < m->n; i++)
    if (!m->cases[i].forced_splits && !strcmp(m->cases[i].fixture, fixture)) return i;
  return -1;
}

/* A backend name as a table has it (harness/plugin.c): [a-z0-9_]{1,47}. */
static int backend_name_ok(const char *s) {
  size_t n = strlen(s);
  if (!n || n >= BENCH_BACKEND_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
  return 1;
}

/* Each entry's cases once per backend of m->backends, consecutive: case i's copy for backend k is
 * i * nb + k; targets (and their references) stay with the first backend's copies. */
static void expand(struct bench_matrix *m) {
  const int nb = m->nbackends;
  if (nb < 1) return;
  struct bench_case *v = DKB_CALLOC((size_t)m->n * (size_t)nb, sizeof *v);
  for (int i = 0; i < m->n; i++)
    for (int k = 0; k < nb; k++) {
      struct bench_case *c = &v[i * nb + k];
      *c = m->cases[i];
      snprintf(c->backend, sizeof c->backend, "%s", m->backends[k]);
      c->peer_of = k ? i * nb : -1;
      if (k) {
        c->want_frac = c->want_visible_frac = c->want_read_frac = 0;
        c->within_ref = -1;
      } else if (c->within_ref >= 0) {
        c->within_ref *= nb;
      }
    }
  free(m->cases);
  m->cases = v;
  m->n *= nb;
}

int bench_matrix_set_backends(struct bench_matrix *m, const char *list, struct dkb_err *err) {
  if (m->nbackends) {  /* undo an earlier expansion: keep each entry's first copy */
    const int nb = m->nbackends;
    for (int i = 0; i < m->n / nb; i++) {
      m->cases[i] = m->cases[i * nb];
      m->cases[i].backend[0] = '\0';
      m->cases[i].peer_of = -1;
      if (m->cases[i].within_ref >= 0) m->cases[i].within_ref /= nb;
    }
    m->n /= nb;
    m->nbackends = 0;
  }
  char buf[BENCH_MAX_BACKENDS * BENCH_BACKEND_MAX + 64], *save = NULL;
  if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--backend: at most %d backends", BENCH_MAX_BACKENDS);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!backend_name_ok(t)) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--backend: '%s' is not a backend name", t);
    if (m->nbackends == BENCH_MAX_BACKENDS)
      return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--backend: at most %d backends", BENCH_MAX_BACKENDS);
    for (int k = 0; k < m->nbackends; k++)
      if (!strcmp(m->backends[k], t)) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--backend: '%s' is named twice", t);
    snprintf(m->backends[m->nbackends++], BENCH_BACKEND_MAX, "%s", t);
  }
  if (!m->nbackends) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--backend: no backend named");
  expand(m);
  return 0;
}

/* "target": {"roofline_fraction": F, "visible_roofline_fraction": F, "read_fraction": F, "within_pct_of":
 * {"fixture", "pct"}} of entry p, applied to its auto case. */
static int load_target(struct jr *r, const json_t *cj, const char *p, const char *base, struct bench_matrix *m, int ai) {
  const json_t *t = json_object_get(cj, "target");
  if (!t) return 0;
  char q[DKB_PTR_MAX];
  jr_ptr_key(q, p, "target");
  static const char *const topt[] = {"roofline_fraction", "visible_roofline_fraction", "read_fraction", "within_pct_of", NULL};
  if (!json_is_object(t) || !json_object_size(t)) return jr_fail(r, q, NULL, "must be an object with at least one target");
  if (ai < 0) return jr_fail(r, q, NULL, "needs the entry's \"auto\" case: a target judges the fixture's own split policy");
  if (jr_keys(r, t, q, NULL, topt)) return -1;
  struct bench_case *bc = &m->cases[ai];
  if (jr_num(r, t, q, "roofline_fraction", 0, 1e-9, 2, &bc->want_frac) ||
      jr_num(r, t, q, "visible_roofline_fraction", 0, 1e-9, 2, &bc->want_visible_frac) ||
      jr_num(r, t, q, "read_fraction", 0, 1e-9, 2, &bc->want_read_frac))
    return -1;
  const json_t *w = json_object_get(t, "within_pct_of");
  if (w) {
    char wq[DKB_PTR_MAX];
    jr_ptr_key(wq, q, "within_pct_of");
    static const char *const wreq[] = {"fixture", "pct", NULL};
    const char *fx = NULL;
    if (jr_keys(r, w, wq, wreq, NULL) || jr_str(r, w, wq, "fixture", 1, &fx) || jr_num(r, w, wq, "pct", 1, 0, 100, &bc->within_pct))
      return -1;
    char full[4700];
    matrix_path(full, sizeof full, base, fx);
    bc->within_ref = auto_case(m, full);
    char fq[DKB_PTR_MAX];
    jr_ptr_key(fq, wq, "fixture");
    if (bc->within_ref < 0) return jr_fail(r, fq, NULL, "'%s' has no \"auto\" case earlier in the matrix", fx);
    if (bc->within_ref == ai) return jr_fail(r, fq, NULL, "a case cannot be its own reference");
  }
  return 0;
}

int bench_matrix_from_fixtures(char **paths, int n, struct bench_matrix *m, struct dkb_err *err) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "fixtures");
  m->roofline_bytes = 4LL << 30;
  for (int i = 0; i < n; i++) {
    push(m, paths[i], 0);
    if (describe(&m->cases[m->n - 1], err)) { bench_matrix_release(m); return -1; }
  }
  return 0;
}

int bench_matrix_load(const char *path, struct bench_matrix *m, struct dkb_err *err) {
  memset(m, 0, sizeof *m);
  json_t *doc = jr_load_file(path, err);
  if (!doc) return -1;
  struct jr r = {.file = path, .err = err, .code = DKB_INPUT};
  static const char *const req[] = {"schema", "name", "cases", NULL},
                           *const opt[] = {"description", "roofline_bytes", "auto_within_pct", "backends", NULL};
  const char *schema = NULL, *name = NULL;
  long long rb = 4LL << 30;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  const char *base = dirname(dir);
  if (jr_keys(&r, doc, "", req, opt) || jr_str(&r, doc, "", "schema", 1, &schema)) goto fail;
  if (strcmp(schema, "dkb.bench-matrix/v1")) { jr_fail(&r, "", "schema", "must be 'dkb.bench-matrix/v1' (got '%s')", schema); goto fail; }
  if (jr_str(&r, doc, "", "name", 1, &name) || jr_int(&r, doc, "", "roofline_bytes", 0, 4LL << 30, 1LL << 40, &rb)) goto fail;
  snprintf(m->name, sizeof m->name, "%s", name);
  m->roofline_bytes = rb;
  if (jr_num(&r, doc, "", "auto_within_pct", 0, 0, 100, &m->auto_within_pct)) goto fail;
  const json_t *cases = jr_get(&r, doc, "", "cases", 1, JSON_ARRAY);
  if (!cases) goto fail;
  if (!json_array_size(cases)) {  /* a bench of nothing would pass every gate */
    jr_fail(&r, "/cases", NULL, "must hold at least one case (got an empty array)");
    goto fail;
  }
  for (size_t i = 0; i < json_array_size(cases); i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/cases", i);
    const json_t *cj = json_array_get(cases, i);
    static const char *const creq[] = {"fixture", NULL}, *const copt[] = {"splits", "target", NULL};
    const char *fx = NULL;
    if (jr_keys(&r, cj, p, creq, copt) || jr_str(&r, cj, p, "fixture", 1, &fx)) goto fail;
    char full[4700];
    matrix_path(full, sizeof full, base, fx);
    struct stat st;  /* a fixture that is not there (or a folder) is this entry's error, not the fixture's */
    const int gone = stat(full, &st) ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (gone) { jr_fail(&r, p, "fixture", "cannot open '%s': %s", full, strerror(gone)); goto fail; }
    const json_t *sp = json_object_get(cj, "splits");
    const int first = m->n;  /* this entry's cases are [first, m->n) */
    if (!sp) push(m, full, 0);
    else {
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, p, "splits");
      if (!json_is_array(sp) || !json_array_size(sp)) { jr_fail(&r, q, NULL, "must be a non-empty array of \"auto\" and split counts"); goto fail; }
      for (size_t k = 0; k < json_array_size(sp); k++) {
        const json_t *v = json_array_get(sp, k);
        char e[DKB_PTR_MAX];
        jr_ptr_idx(e, q, k);
        if (json_is_string(v) && !strcmp(json_string_value(v), "auto")) push(m, full, 0);
        else if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= DKB_ABI_MAX_SPLITS) push(m, full, (int)json_integer_value(v));
        else { jr_fail(&r, e, NULL, "must be \"auto\" or a split count in [1, %d]", DKB_ABI_MAX_SPLITS); goto fail; }
      }
    }
    int ai = -1;
    for (int k = first; k < m->n; k++)
      if (!m->cases[k].forced_splits) ai = k;
    if (load_target(&r, cj, p, base, m, ai)) goto fail;
  }
  for (int i = 0; i < m->n; i++)
    if (describe(&m->cases[i], err)) goto fail;
  const json_t *bs = json_object_get(doc, "backends");
  if (bs) {
    if (!json_is_array(bs) || !json_array_size(bs) || json_array_size(bs) > BENCH_MAX_BACKENDS) {
      jr_fail(&r, "/backends", NULL, "must be an array of 1 to %d backend names", BENCH_MAX_BACKENDS);
      goto fail;
    }
    char list[BENCH_MAX_BACKENDS * BENCH_BACKEND_MAX + 8] = "";
    for (size_t k = 0; k < json_array_size(bs); k++) {
      const char *b = json_string_value(json_array_get(bs, k));
      char q[DKB_PTR_MAX];
      jr_ptr_idx(q, "/backends", k);
      if (!b || !backend_name_ok(b)) { jr_fail(&r, q, NULL, "must be a backend name of [a-z0-9_], at most 47 characters"); goto fail; }
      for (size_t j = 0; j < k; j++)
        if (!strcmp(b, json_string_value(json_array_get(bs, j)))) { jr_fail(&r, q, NULL, "names '%s' twice", b); goto fail; }
      if (k) strcat(list, ",");
      strcat(list, b);
    }
    if (bench_matrix_set_backends(m, list, err)) goto fail;
  }
  json_decref(doc);
  return 0;
fail:
  json_decref(doc);
  bench_matrix_release(m);
  return -1;
}

int bench_case_call(const struct bench_case *bc, int graph, struct decode_call *call, struct dkb_err *err) {
  if (decode_call_load(bc->fixture, call, err)) return -1;
  if (bc->backend[0]) snprintf(call->backend, sizeof call->backend, "%s", bc->backend);  /* side by side: forced */
  if (bc->forced_splits) {
    call->split_policy = SPLIT_FIXED;
    call->splits = call->capacity = bc->forced_splits;
  }
  if (graph) call->graph = 1;
  return 0;
}

int bench_case_key(const struct bench_case *bc, int graph, char sha[65], struct dkb_err *err) {
  struct decode_call call;
  if (bench_case_call(bc, graph, &call, err)) return -1;
  json_t *key = decode_call_key(&call);
  const int rc = cjson_digest(key, sha, err);
  json_decref(key);
  decode_call_release(&call);
  return rc;
}
