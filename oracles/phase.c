/* phase.c - phase integration of article 0x08 (see phase.h). */
#include "oracles/phase.h"
#include "oracles/reason.h"

#include <stdio.h>
#include <string.h>

static const char *const KIND[] = {"prefill", "append", "decode", "invalid"};
static const char *const VIS[] = {"bottom_right_causal", "upper_left_causal", "all_staged"};

const char *phase_kind_name(enum phase_kind k) { return (unsigned)k <= PHASE_INVALID ? KIND[k] : "?"; }
const char *phase_visibility_name(enum phase_visibility v) {
  return (unsigned)v <= PHASE_VIS_ALL_STAGED ? VIS[v] : "?";
}

/* How messages name a manifest entry: its name, else its numeric id. */
struct who {
  char s[80];
};
static struct who who(const struct phase_request *e) {
  struct who w;
  if (e->name)
    snprintf(w.s, sizeof w.s, "%s", e->name);
  else
    snprintf(w.s, sizeof w.s, "%lld", (long long)e->request_id);
  return w;
}

/* The holder of a cache row: a manifest entry's name when it is one of them. */
static struct who owner_who(const struct phase_request *r, int64_t n, int64_t id) {
  for (int64_t b = 0; b < n; b++)
    if (r[b].request_id == id) return who(&r[b]);
  struct who w;
  if (id == PHASE_NO_OWNER)
    snprintf(w.s, sizeof w.s, "no request");
  else
    snprintf(w.s, sizeof w.s, "request %lld", (long long)id);
  return w;
}

static int parse(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}
int phase_kind_parse(const char *name) { return parse(KIND, 4, name); }
int phase_visibility_parse(const char *name) { return parse(VIS, 3, name); }

enum phase_kind phase_classify(int64_t T, int64_t C) {
  if (T == 0 && C > 0) return PHASE_PREFILL;
  if (T > 0 && C == 1) return PHASE_DECODE;
  if (T > 0 && C > 1) return PHASE_APPEND;
  return PHASE_INVALID;
}

void phase_cells(int64_t T, int64_t C, struct phase_cells *out) {
  out->rect = C * (T + C);
  out->visible = C * T + C * (C + 1) / 2;
  out->masked = out->rect - out->visible;
  out->post_length = T + C;
}

int64_t phase_row_end(enum phase_visibility v, int64_t T, int64_t C, int64_t i) {
  switch (v) {
  case PHASE_VIS_BOTTOM_RIGHT: return T + i + 1;
  case PHASE_VIS_UPPER_LEFT: return i + 1;
  case PHASE_VIS_ALL_STAGED: return T + C;
  }
  return 0;
}

int phase_visibility_check(enum phase_visibility v, int64_t T, int64_t C, char reason[64], char detail[256]) {
  for (int64_t i = 0; i < C; i++) {
    int64_t end = phase_row_end(v, T, C, i), want = T + i + 1;
    if (end < want)
      return oracle_reason(reason, detail, "upper_left_causal_alignment",
                           "row %lld at absolute position %lld sees [0, %lld) under %s: keys [%lld, %lld) of its "
                           "visible prefix are hidden; derive positions from T + i",
                           (long long)i, (long long)(T + i), (long long)end, VIS[v], (long long)end, (long long)want);
    if (end > want)
      return oracle_reason(reason, detail, "future_row_leakage",
                           "row %lld at absolute position %lld sees [0, %lld) under %s: staged rows [%lld, %lld) come "
                           "after it; enforce the prefix [0, T + i + 1)",
                           (long long)i, (long long)(T + i), (long long)end, VIS[v], (long long)want, (long long)end);
  }
  return 0;
}

int phase_manifest_check(const struct phase_request *r, int64_t n, char reason[64], char detail[256]) {
  for (int64_t b = 0; b < n; b++) {
    if (phase_classify(r[b].T, r[b].C) == PHASE_INVALID)
      return oracle_reason(reason, detail, "invalid_active_request",
                           "entry %lld (request %s): (T, C) = (%lld, %lld) is neither prefill, append nor decode",
                           (long long)b, who(&r[b]).s, (long long)r[b].T, (long long)r[b].C);
    if (r[b].dropout_p != 0)
      return oracle_reason(reason, detail, "inference_dropout_nonzero",
                           "entry %lld (request %s) applies dropout_p = %g to a serving call: pass 0.0 explicitly",
                           (long long)b, who(&r[b]).s, r[b].dropout_p);
    for (int64_t a = 0; a < b; a++) {
      if (r[a].request_id == r[b].request_id)
        return oracle_reason(reason, detail, "duplicate_request_id", "entries %lld and %lld are both request %s",
                             (long long)a, (long long)b, who(&r[b]).s);
      if (r[a].cache_row_id == r[b].cache_row_id)
        return oracle_reason(reason, detail, "duplicate_cache_row_id",
                             "requests %s and %s both commit to cache row %lld: K/V rows would interleave",
                             who(&r[a]).s, who(&r[b]).s, (long long)r[b].cache_row_id);
    }
  }
  return 0;
}

int phase_label_check(const struct phase_request *r, int64_t n, enum phase_kind label, char reason[64],
                      char detail[256]) {
  for (int64_t b = 0; b < n; b++) {
    enum phase_kind k = phase_classify(r[b].T, r[b].C);
    if (k != label)
      return oracle_reason(reason, detail, "global_phase_label",
                           "the batch is labelled %s but request %s with (T, C) = (%lld, %lld) is %s: keep a phase "
                           "per request",
                           KIND[label], who(&r[b]).s, (long long)r[b].T, (long long)r[b].C, KIND[k]);
  }
  return 0;
}

void phase_qo_indptr(const struct phase_request *r, int64_t n, int64_t *qo) {
  qo[0] = 0;
  for (int64_t b = 0; b < n; b++) qo[b + 1] = qo[b] + r[b].C;
}

void phase_batch_ledger(const struct phase_request *r, int64_t n, struct phase_batch *out) {
  memset(out, 0, sizeof *out);
  for (int64_t b = 0; b < n; b++) {
    struct phase_cells c;
    phase_cells(r[b].T, r[b].C, &c);
    out->rect += c.rect;
    out->visible += c.visible;
    out->masked += c.masked;
    out->appended += r[b].C;
    if (r[b].C > out->max_C) out->max_C = r[b].C;
    if (c.post_length > out->max_post) out->max_post = c.post_length;
  }
  out->padded_envelope = n * out->max_C * out->max_post;
  out->outside_envelope = out->padded_envelope - out->rect;
}

int phase_measured_cells_check(const struct phase_batch *b, int64_t cells, const char *counter, char reason[64],
                               char detail[256]) {
  if (counter && *counter) return 0;
  if (cells == b->padded_envelope)
    return oracle_reason(reason, detail, "padded_envelope_as_measured_work",
                         "claimed %lld executed score cells are the padded envelope (%lld request rectangle cells, "
                         "%lld visible) and name no profiler counter",
                         (long long)cells, (long long)b->rect, (long long)b->visible);
  return oracle_reason(reason, detail, "measured_work_without_counter",
                       "claimed %lld executed score cells name no profiler counter", (long long)cells);
}

/* Physical page of position p of cache row `row`, or -1 when unmapped or outside the pool. */
static int64_t page_of(const struct phase_cache *c, int64_t row, int64_t p) {
  int64_t w = c->capacity / c->page_size;
  int64_t page = c->block_table[row * w + p / c->page_size];
  return page >= 0 && page < c->num_pages ? page : -1;
}

/* The per-entry checks of the mutation contract, on the cache as it is now. */
static int check_entry(const struct phase_cache *c, const struct phase_request *r, int64_t n, int64_t b,
                       char reason[64], char detail[256]) {
  const struct phase_request *e = &r[b];
  struct who w = who(e);
  const char *id = w.s;
  int64_t row = e->cache_row_id;
  if (row < 0 || row >= c->rows)
    return oracle_reason(reason, detail, "cache_row_out_of_range", "request %s names cache row %lld of %lld", id,
                         (long long)row, (long long)c->rows);
  if (c->owner && c->owner[row] != e->request_id)
    return oracle_reason(reason, detail, "cache_row_identity_mismatch",
                         "request %s names cache row %lld, which holds %s: freeze cache_row_id, not the active index",
                         id, (long long)row, owner_who(r, n, c->owner[row]).s);
  if (c->len[row] != e->T)
    return oracle_reason(reason, detail, "stale_committed_length",
                         "request %s: the manifest says T = %lld but cache row %lld holds %lld committed rows", id,
                         (long long)e->T, (long long)row, (long long)c->len[row]);
  if (e->T + e->C > c->capacity)
    return oracle_reason(reason, detail, "cache_capacity_exceeded",
                         "request %s: T + C = %lld rows do not fit cache row %lld of capacity %lld", id,
                         (long long)(e->T + e->C), (long long)row, (long long)c->capacity);
  if (c->page_size > 0)
    for (int64_t p = e->T; p < e->T + e->C; p++) {
      int64_t page = page_of(c, row, p);
      if (page < 0)
        return oracle_reason(reason, detail, "unmapped_cache_page",
                             "request %s: position %lld of cache row %lld has no page of the pool of %lld", id,
                             (long long)p, (long long)row, (long long)c->num_pages);
      int64_t w = c->capacity / c->page_size;
      for (int64_t r2 = 0; r2 < c->rows; r2++)
        for (int64_t j = 0; r2 != row && j < w; j++)
          if (c->block_table[r2 * w + j] == page)
            return oracle_reason(reason, detail, "shared_cache_page",
                                 "request %s appends position %lld into page %lld, which cache row %lld also maps", id,
                                 (long long)p, (long long)page, (long long)r2);
    }
  return 0;
}

int phase_append_check(const struct phase_cache *c, const struct phase_request *r, int64_t n, char reason[64],
                       char detail[256]) {
  if (phase_manifest_check(r, n, reason, detail)) return -1;
  for (int64_t b = 0; b < n; b++)
    if (check_entry(c, r, n, b, reason, detail)) return -1;
  return 0;
}

static unsigned char *slot(const struct phase_cache *c, int64_t row, int64_t p) {
  return c->data + ((size_t)(row * c->capacity + p)) * c->row_bytes;
}

int phase_cache_append(struct phase_cache *c, const struct phase_request *r, int64_t n, const void *new_rows,
                       char reason[64], char detail[256]) {
  if (phase_append_check(c, r, n, reason, detail)) return -1;
  const unsigned char *src = new_rows;
  for (int64_t b = 0; b < n; b++) {
    int64_t row = r[b].cache_row_id;
    memcpy(slot(c, row, r[b].T), src, (size_t)r[b].C * c->row_bytes);
    src += (size_t)r[b].C * c->row_bytes;
    c->len[row] = r[b].T + r[b].C;
  }
  return 0;
}

int phase_cache_append_unvalidated(struct phase_cache *c, const struct phase_request *r, int64_t n,
                                   const void *new_rows, int64_t *written, int64_t *outside, char reason[64],
                                   char detail[256]) {
  const unsigned char *src = new_rows;
  *written = *outside = 0;
  for (int64_t b = 0; b < n; b++) {
    int failed = check_entry(c, r, n, b, reason, detail); /* judged on the state before this entry's write */
    int64_t row = r[b].cache_row_id;
    for (int64_t i = 0; i < r[b].C; i++, src += c->row_bytes) {
      int64_t p = r[b].T + i;
      int fits = row >= 0 && row < c->rows && p < c->capacity && (c->page_size <= 0 || page_of(c, row, p) >= 0);
      if (!fits) {
        ++*outside;
        continue;
      }
      memcpy(slot(c, row, p), src, c->row_bytes);
      ++*written;
    }
    if (row >= 0 && row < c->rows) {
      int64_t end = r[b].T + r[b].C;
      c->len[row] = end < c->capacity ? end : c->capacity;
    }
    if (failed) return -1;
  }
  return phase_manifest_check(r, n, reason, detail);
}

const void *phase_key_row(const struct phase_cache *c, const struct phase_request *r, const void *staged, int64_t k) {
  if (k < r->T) return slot(c, r->cache_row_id, k);
  return (const unsigned char *)staged + (size_t)(k - r->T) * c->row_bytes;
}

int phase_training_check(const struct phase_training *t, char reason[64], char detail[256]) {
  if (!t->backward)
    return oracle_reason(reason, detail, "training_without_backward",
                         "a training call of S = %lld owns a backward pass producing dQ, dK, dV", (long long)t->S);
  if (!t->saves_lse)
    return oracle_reason(reason, detail, "training_missing_lse",
                         "backward needs the forward's LSE or recompute state, and the call saves neither");
  if (t->dropout_p > 0 && !t->saves_rng_state)
    return oracle_reason(reason, detail, "training_missing_rng_state",
                         "dropout_p = %g but the dropout RNG state is not saved: backward cannot reproduce the mask",
                         t->dropout_p);
  if (t->writes_serving_cache)
    return oracle_reason(
        reason, detail, "training_mutates_cache",
        "a training call owns no persistent serving cache: its K/V are current tensors, not cache rows");
  return 0;
}
