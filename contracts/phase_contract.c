/* phase_contract.c - contract kind "phase_integration" (article 0x08): a token-id cache and a sequence
 * of frozen manifests (or a training call) -> phase.h calls -> report. Tokens and request ids are
 * fixture strings, interned to int64 ids; the cache stores one id per position (row_bytes = 8). Each
 * call is checked (manifest, labels, visibility rule, claims, then the append transaction in its
 * declared order) before it is committed, so a later call sees the cache the earlier ones left. */
#include "contracts/contract.h"
#include "oracles/phase.h"

#include <stdlib.h>
#include <string.h>

static const char *const ORDER[] = {"validate_then_commit", "commit_then_validate", NULL};

/* Strings to dense ids and back. */
struct names {
  const char **v;
  size_t n, cap;
};
static int64_t intern(struct names *t, const char *s) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->v[i], s)) return (int64_t)i;
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->v = DKB_REALLOC(t->v, t->cap * sizeof *t->v);
  }
  t->v[t->n] = s;
  return (int64_t)t->n++;
}

struct state {
  struct names tokens, ids;
  struct phase_cache cache;
  int64_t *owner, *len;
  int32_t *table;
};

static void state_release(struct state *s) {
  free(s->tokens.v);
  free(s->ids.v);
  free(s->owner);
  free(s->len);
  free(s->table);
  free(s->cache.data);
  memset(s, 0, sizeof *s);
}

/* A JSON array of strings interned into ids[]; *out malloc'ed. */
static int read_tokens(struct jr *r, const json_t *obj, const char *ptr, const char *key, struct names *t,
                       int64_t **out, size_t *n) {
  const json_t *a = jr_get(r, obj, ptr, key, 1, JSON_ARRAY);
  if (!a) return -1;
  char p[DKB_PTR_MAX], e[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, key);
  *n = json_array_size(a);
  *out = DKB_CALLOC(*n, sizeof **out);
  for (size_t i = 0; i < *n; i++) {
    const json_t *v = json_array_get(a, i);
    jr_ptr_idx(e, p, i);
    if (!json_is_string(v)) return jr_fail(r, e, NULL, "must be a token name (got %s)", jr_type_name(v));
    (*out)[i] = intern(t, json_string_value(v));
  }
  return 0;
}

static json_t *token_names(const struct names *t, const int64_t *ids, int64_t n) {
  json_t *a = json_array();
  for (int64_t i = 0; i < n; i++) json_array_append_new(a, json_string(t->v[ids[i]]));
  return a;
}

static int read_cache(struct jr *r, const json_t *cj, const char *ptr, struct state *s) {
  static const char *const req[] = {"capacity", "rows", NULL}, *const opt[] = {"page_size", "num_pages", "block_table",
                                                                               NULL};
  long long cap = 0, P = 0, pages = 0;
  if (jr_keys(r, cj, ptr, req, opt) || jr_int(r, cj, ptr, "capacity", 1, 1, 1 << 20, &cap) ||
      jr_int(r, cj, ptr, "page_size", 0, 1, 1 << 20, &P) || jr_int(r, cj, ptr, "num_pages", P > 0, 1, 1 << 20, &pages))
    return -1;
  const json_t *rows = jr_get(r, cj, ptr, "rows", 1, JSON_ARRAY);
  if (!rows) return -1;
  size_t nr = json_array_size(rows);
  if (nr == 0) return jr_fail(r, ptr, "rows", "must not be empty");
  if (P > 0 && cap % P) return jr_fail(r, ptr, "capacity", "must be a multiple of page_size %lld", P);
  struct phase_cache *c = &s->cache;
  c->rows = (int64_t)nr;
  c->capacity = cap;
  c->row_bytes = sizeof(int64_t);
  c->data = DKB_CALLOC(nr * (size_t)cap, sizeof(int64_t));
  s->owner = DKB_CALLOC(nr, sizeof *s->owner);
  s->len = DKB_CALLOC(nr, sizeof *s->len);
  c->owner = s->owner;
  c->len = s->len;
  char rp[DKB_PTR_MAX], ep[DKB_PTR_MAX];
  jr_ptr_key(rp, ptr, "rows");
  for (size_t i = 0; i < nr; i++) {
    const json_t *row = json_array_get(rows, i);
    jr_ptr_idx(ep, rp, i);
    static const char *const rreq[] = {"owner", "tokens", NULL};
    if (jr_keys(r, row, ep, rreq, NULL)) return -1;
    const json_t *ow = json_object_get(row, "owner");
    if (!json_is_null(ow) && !json_is_string(ow)) return jr_fail(r, ep, "owner", "must be a request id or null");
    s->owner[i] = json_is_null(ow) ? PHASE_NO_OWNER : intern(&s->ids, json_string_value(ow));
    int64_t *tok = NULL;
    size_t nt = 0;
    if (read_tokens(r, row, ep, "tokens", &s->tokens, &tok, &nt)) {
      free(tok);
      return -1;
    }
    if ((long long)nt > cap) {
      free(tok);
      return jr_fail(r, ep, "tokens", "holds %zu rows, more than the capacity %lld", nt, cap);
    }
    memcpy(c->data + i * (size_t)cap * sizeof(int64_t), tok, nt * sizeof *tok);
    s->len[i] = (int64_t)nt;
    free(tok);
  }
  if (P > 0) {
    const json_t *bt = jr_get(r, cj, ptr, "block_table", 1, JSON_ARRAY);
    if (!bt) return -1;
    int64_t w = cap / P;
    char bp[DKB_PTR_MAX];
    jr_ptr_key(bp, ptr, "block_table");
    if (json_array_size(bt) != nr) return jr_fail(r, bp, NULL, "must have one entry per cache row (%zu)", nr);
    s->table = DKB_CALLOC(nr * (size_t)w, sizeof *s->table);
    for (size_t i = 0; i < nr; i++) {
      const json_t *pr = json_array_get(bt, i);
      jr_ptr_idx(ep, bp, i);
      if (!json_is_array(pr) || (int64_t)json_array_size(pr) != w)
        return jr_fail(r, ep, NULL, "must list the %lld page slots of the row", (long long)w);
      for (int64_t j = 0; j < w; j++) {
        const json_t *v = json_array_get(pr, (size_t)j);
        if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) >= pages) {
          char jp[DKB_PTR_MAX];
          jr_ptr_idx(jp, ep, (size_t)j);
          return jr_fail(r, jp, NULL, "must be a page id in [0, %lld) or -1 for unmapped", pages);
        }
        s->table[i * (size_t)w + (size_t)j] = (int32_t)json_integer_value(v);
      }
    }
    c->page_size = P;
    c->num_pages = pages;
    c->block_table = s->table;
  } else if (json_object_get(cj, "block_table")) {
    return jr_fail(r, ptr, "block_table", "needs page_size");
  }
  return 0;
}

static json_t *cache_json(const struct state *s) {
  json_t *a = json_array();
  for (int64_t i = 0; i < s->cache.rows; i++)
    json_array_append_new(a,
                          token_names(&s->tokens, (const int64_t *)s->cache.data + i * s->cache.capacity, s->len[i]));
  return a;
}

/* One request: its (T, C) cells, packed query slice and row trace, read before the commit. */
static json_t *request_json(const struct state *s, const struct phase_request *q, const int64_t *staged, int64_t q0) {
  struct phase_cells cells;
  phase_cells(q->T, q->C, &cells);
  json_t *rows = json_array();
  for (int64_t i = 0; i < q->C; i++) {
    int64_t end = phase_row_end(PHASE_VIS_BOTTOM_RIGHT, q->T, q->C, i);
    json_t *vis = json_array();
    for (int64_t k = 0; k < end; k++) {
      const int64_t *id = phase_key_row(&s->cache, q, staged, k);
      json_array_append_new(vis, json_string(s->tokens.v[*id]));
    }
    json_array_append_new(rows, json_pack("{s:s,s:I,s:o}", "query", s->tokens.v[staged[i]], "position",
                                          (json_int_t)(q->T + i), "visible", vis));
  }
  return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:[I,I],s:o}", "id", s->ids.v[q->request_id], "phase",
                   phase_kind_name(phase_classify(q->T, q->C)), "cache_row_id", (json_int_t)q->cache_row_id, "T",
                   (json_int_t)q->T, "C", (json_int_t)q->C, "rect", (json_int_t)cells.rect, "visible",
                   (json_int_t)cells.visible, "masked", (json_int_t)cells.masked, "post_length",
                   (json_int_t)cells.post_length, "q_range", (json_int_t)q0, (json_int_t)(q0 + q->C), "rows", rows);
}

/* Reads, checks and commits call number ci. Returns 0 with *out set, 1 rejected, -1 malformed. */
static int run_call(struct jr *r, const json_t *cj, const char *ptr, size_t ci, struct state *s, json_t **out,
                    struct oracle_reject *rej) {
  static const char *const req[] = {"requests", NULL};
  static const char *const opt[] = {"visibility", "commit_order", "phase_label", "claims", NULL};
  int order = 0, rc = -1;
  const char *vis_name = "bottom_right_causal", *label = NULL;
  if (jr_keys(r, cj, ptr, req, opt) || jr_enum(r, cj, ptr, "commit_order", 0, ORDER, &order) ||
      jr_str(r, cj, ptr, "visibility", 0, &vis_name) || jr_str(r, cj, ptr, "phase_label", 0, &label))
    return -1;
  int vis = phase_visibility_parse(vis_name);
  if (vis < 0)
    return jr_fail(r, ptr, "visibility",
                   "must be one of: bottom_right_causal, upper_left_causal, all_staged (got '%s')", vis_name);
  if (label && phase_kind_parse(label) < 0)
    return jr_fail(r, ptr, "phase_label", "must be one of: prefill, append, decode (got '%s')", label);
  const json_t *rq = jr_get(r, cj, ptr, "requests", 1, JSON_ARRAY);
  if (!rq) return -1;
  size_t n = json_array_size(rq);
  if (n == 0) return jr_fail(r, ptr, "requests", "must not be empty");
  struct phase_request *q = DKB_CALLOC(n, sizeof *q);
  int64_t *qo = DKB_CALLOC(n + 1, sizeof *qo), *staged = NULL, **per = DKB_CALLOC(n, sizeof *per);
  int *declared = DKB_CALLOC(n, sizeof *declared);
  char rp[DKB_PTR_MAX], ep[DKB_PTR_MAX], reason[64], detail[256];
  jr_ptr_key(rp, ptr, "requests");
  for (size_t b = 0; b < n; b++) {
    const json_t *e = json_array_get(rq, b);
    jr_ptr_idx(ep, rp, b);
    static const char *const qreq[] = {"id", "cache_row_id", "T", "new_tokens", NULL};
    static const char *const qopt[] = {"phase", "dropout_p", NULL};
    const char *id = NULL, *ph = NULL;
    long long row = 0, T = 0;
    size_t C = 0;
    if (jr_keys(r, e, ep, qreq, qopt) || jr_str(r, e, ep, "id", 1, &id) ||
        jr_int(r, e, ep, "cache_row_id", 1, 0, 1 << 30, &row) || jr_int(r, e, ep, "T", 1, 0, 1 << 30, &T) ||
        jr_str(r, e, ep, "phase", 0, &ph) || jr_num(r, e, ep, "dropout_p", 0, 0, 1, &q[b].dropout_p) ||
        read_tokens(r, e, ep, "new_tokens", &s->tokens, &per[b], &C))
      goto cleanup;
    declared[b] = -1;
    if (ph && (declared[b] = phase_kind_parse(ph)) < 0) {
      jr_fail(r, ep, "phase", "must be one of: prefill, append, decode, invalid (got '%s')", ph);
      goto cleanup;
    }
    q[b].request_id = intern(&s->ids, id);
    q[b].name = id;
    q[b].cache_row_id = row;
    q[b].T = T;
    q[b].C = (int64_t)C;
  }
  phase_qo_indptr(q, (int64_t)n, qo);
  staged = DKB_CALLOC((size_t)qo[n] + 1, sizeof *staged);
  for (size_t b = 0; b < n; b++) memcpy(staged + qo[b], per[b], (size_t)q[b].C * sizeof *staged);

  /* The checks, in the order a frozen manifest meets them. */
  if (phase_manifest_check(q, (int64_t)n, reason, detail)) goto rejected;
  for (size_t b = 0; b < n; b++) {
    enum phase_kind k = phase_classify(q[b].T, q[b].C);
    if (declared[b] >= 0 && declared[b] != (int)k) {
      snprintf(reason, sizeof reason, "phase_label_mismatch");
      snprintf(detail, sizeof detail, "request %s is labelled %s but (T, C) = (%lld, %lld) is %s",
               s->ids.v[q[b].request_id], phase_kind_name(declared[b]), (long long)q[b].T, (long long)q[b].C,
               phase_kind_name(k));
      goto rejected;
    }
  }
  if (label && phase_label_check(q, (int64_t)n, phase_kind_parse(label), reason, detail)) goto rejected;
  for (size_t b = 0; b < n; b++)
    if (phase_visibility_check(vis, q[b].T, q[b].C, reason, detail)) {
      rc = oracle_reject(rej, reason, "call %zu: request %s: %s", ci, q[b].name, detail);
      goto cleanup;
    }
  struct phase_batch led;
  phase_batch_ledger(q, (int64_t)n, &led);
  const json_t *cl = json_object_get(cj, "claims");
  if (cl) {
    char cp[DKB_PTR_MAX];
    jr_ptr_key(cp, ptr, "claims");
    static const char *const creq[] = {"measured_score_cells", NULL}, *const copt[] = {"profiler_counter", NULL};
    long long cells = 0;
    const char *counter = NULL;
    if (jr_keys(r, cl, cp, creq, copt) || jr_int(r, cl, cp, "measured_score_cells", 1, 0, (long long)1 << 62, &cells) ||
        jr_str(r, cl, cp, "profiler_counter", 0, &counter))
      goto cleanup;
    if (phase_measured_cells_check(&led, cells, counter, reason, detail)) goto rejected;
  }

  json_t *reqs = json_array(), *trans = json_array();
  for (size_t b = 0; b < n; b++) {
    int64_t row = q[b].cache_row_id;
    int in_range = row >= 0 && row < s->cache.rows;
    /* The trace reads committed rows through the cache row, so it needs a row that exists and holds T rows. */
    json_array_append_new(
        reqs, in_range && s->len[row] >= q[b].T ? request_json(s, &q[b], staged + qo[b], qo[b]) : json_null());
    json_array_append_new(trans, json_pack("[I,I]", (json_int_t)q[b].T, (json_int_t)(q[b].T + q[b].C)));
  }
  if (order == 0) {
    if (phase_cache_append(&s->cache, q, (int64_t)n, staged, reason, detail)) {
      json_decref(reqs);
      json_decref(trans);
      goto rejected;
    }
  } else {
    int64_t written = 0, outside = 0;
    if (phase_cache_append_unvalidated(&s->cache, q, (int64_t)n, staged, &written, &outside, reason, detail)) {
      json_decref(reqs);
      json_decref(trans);
      if (written + outside > 0) {
        rc = oracle_reject(rej, "mutation_before_validation",
                           "call %zu: %lld cache positions written and %lld past the allocation before the check "
                           "failed (%s: %s)",
                           ci, (long long)written, (long long)outside, reason, detail);
        goto cleanup;
      }
      goto rejected;
    }
  }
  json_t *qo_json = json_array();
  for (size_t b = 0; b <= n; b++) json_array_append_new(qo_json, json_integer(qo[b]));
  *out = json_pack("{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "requests", reqs, "qo_indptr", qo_json, "rect",
                   (json_int_t)led.rect, "visible", (json_int_t)led.visible, "masked", (json_int_t)led.masked,
                   "appended", (json_int_t)led.appended, "padded_envelope", (json_int_t)led.padded_envelope,
                   "outside_envelope", (json_int_t)led.outside_envelope, "max_post", (json_int_t)led.max_post,
                   "cache_transitions", trans, "cache_after", cache_json(s));
  rc = 0;
  goto cleanup;
rejected:
  rc = oracle_reject(rej, reason, "call %zu: %s", ci, detail);
cleanup:
  for (size_t b = 0; b < n; b++) free(per[b]);
  free(per);
  free(q);
  free(qo);
  free(staged);
  free(declared);
  return rc;
}

static int run_training(struct jr *r, const json_t *tj, const char *ptr, json_t **out, struct oracle_reject *rej) {
  static const char *const req[] = {"S", "backward", "saved_state", NULL};
  static const char *const opt[] = {"dropout_p", "persistent_writes", NULL};
  static const char *const SAVED[] = {"lse", "recompute", "rng_state", NULL};
  static const char *const WRITES[] = {"serving_cache", NULL};
  struct phase_training t = {0};
  long long S = 0;
  if (jr_keys(r, tj, ptr, req, opt) || jr_int(r, tj, ptr, "S", 1, 1, 1 << 30, &S) ||
      jr_bool(r, tj, ptr, "backward", 1, &t.backward) || jr_num(r, tj, ptr, "dropout_p", 0, 0, 1, &t.dropout_p))
    return -1;
  t.S = S;
  const char *keys[2] = {"saved_state", "persistent_writes"};
  for (int l = 0; l < 2; l++) {
    const json_t *a = jr_get(r, tj, ptr, keys[l], l == 0, JSON_ARRAY);
    if (!a && (l == 0 || json_object_get(tj, keys[l]))) return -1;
    char p[DKB_PTR_MAX], e[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, keys[l]);
    for (size_t i = 0; a && i < json_array_size(a); i++) {
      const json_t *v = json_array_get(a, i);
      jr_ptr_idx(e, p, i);
      const char *const *names = l == 0 ? SAVED : WRITES;
      int found = -1;
      for (int k = 0; json_is_string(v) && names[k]; k++)
        if (!strcmp(names[k], json_string_value(v))) found = k;
      if (found < 0)
        return jr_fail(r, e, NULL, "must be one of: %s", l == 0 ? "lse, recompute, rng_state" : "serving_cache");
      if (l == 1)
        t.writes_serving_cache = 1;
      else if (found == 2)
        t.saves_rng_state = 1;
      else
        t.saves_lse = 1;
    }
  }
  char reason[64], detail[256];
  if (phase_training_check(&t, reason, detail)) return oracle_reject(rej, reason, "training: %s", detail);
  struct phase_cells c;
  phase_cells(0, t.S, &c);
  *out = json_pack("{s:I,s:I,s:I,s:I,s:{s:b,s:b,s:b},s:b}", "S", (json_int_t)t.S, "rect", (json_int_t)c.rect, "visible",
                   (json_int_t)c.visible, "masked", (json_int_t)c.masked, "requires", "backward", 1, "lse", 1,
                   "rng_state", t.dropout_p > 0, "serving_cache_mutation", 0);
  return 0;
}

int oracle_eval_phase_integration(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                  struct oracle_reject *rej) {
  static const char *const opt[] = {"cache", "calls", "training", NULL};
  if (jr_keys(r, in, ptr, NULL, opt)) return -1;
  const json_t *calls = json_object_get(in, "calls"), *cj = json_object_get(in, "cache"),
               *tj = json_object_get(in, "training");
  if (!calls && !tj) return jr_fail(r, ptr, NULL, "must have 'calls' or 'training'");
  if (calls && !cj) return jr_fail(r, ptr, NULL, "missing required key 'cache' (calls append to it)");
  if (cj && !calls) return jr_fail(r, ptr, "cache", "is used only by 'calls'");
  struct state s = {0};
  json_t *out = json_object(), *cr = NULL;
  int rc = -1;
  char p[DKB_PTR_MAX], cp[DKB_PTR_MAX];
  if (calls) {
    jr_ptr_key(p, ptr, "cache");
    if (read_cache(r, cj, p, &s)) goto cleanup;
    json_object_set_new(out, "cache_before", cache_json(&s));
    if (!jr_get(r, in, ptr, "calls", 1, JSON_ARRAY)) goto cleanup;
    if (json_array_size(calls) == 0) {
      jr_fail(r, ptr, "calls", "must not be empty");
      goto cleanup;
    }
    jr_ptr_key(p, ptr, "calls");
    json_t *list = json_array();
    json_object_set_new(out, "calls", list);
    for (size_t i = 0; i < json_array_size(calls); i++) {
      jr_ptr_idx(cp, p, i);
      if ((rc = run_call(r, json_array_get(calls, i), cp, i, &s, &cr, rej))) goto cleanup;
      json_array_append_new(list, cr);
    }
  }
  if (tj) {
    jr_ptr_key(p, ptr, "training");
    json_t *tr = NULL;
    if ((rc = run_training(r, tj, p, &tr, rej))) goto cleanup;
    json_object_set_new(out, "training", tr);
  }
  *report = out;
  out = NULL;
  rc = 0;
cleanup:
  json_decref(out);
  state_release(&s);
  return rc;
}
