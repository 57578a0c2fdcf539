/* ledger.c - launch and storage ledgers of article 0x03 (see ledger.h). */
#include "oracles/ledger.h"
#include "oracles/reason.h"
#include "oracles/split_state.h"
#include "lib/err.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char field[32], char msg[256], const char *f, const char *m) {
  snprintf(field, 32, "%s", f);
  snprintf(msg, 256, "%s", m);
  return -1;
}

int ledger_call_check(const struct ledger_call *c, char field[32], char msg[256]) {
  static const struct {
    const char *name;
    size_t off;
  } pos[] = {
      {"B", offsetof(struct ledger_call, B)},       {"H_q", offsetof(struct ledger_call, H_q)},
      {"H_kv", offsetof(struct ledger_call, H_kv)}, {"d_qk", offsetof(struct ledger_call, d_qk)},
      {"d_v", offsetof(struct ledger_call, d_v)},
  };
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    if (*(const int64_t *)((const char *)c + pos[i].off) < 1) return fail(field, msg, pos[i].name, "must be >= 1");
  if (c->H_q % c->H_kv) return fail(field, msg, "H_kv", "must divide H_q (a query head maps to one K/V head)");
  for (int64_t b = 0; b < c->B; b++)
    if (c->T[b] < 0) {
      snprintf(field, 32, "T/%lld", (long long)b);
      snprintf(msg, 256, "must be >= 0 (got %lld)", (long long)c->T[b]);
      return -1;
    }
  if (c->policy == LEDGER_SPLIT_BALANCED && c->S < 1) return fail(field, msg, "S", "must be >= 1");
  if (c->policy == LEDGER_SPLIT_FIXED_CHUNK && c->chunk < 1) return fail(field, msg, "chunk", "must be >= 1");
  if (c->S_capacity && c->S_capacity < ledger_splits(c)) {
    snprintf(field, 32, "S_capacity");
    snprintf(msg, 256, "must be >= the configured split count %lld (got %lld)", (long long)ledger_splits(c),
             (long long)c->S_capacity);
    return -1;
  }
  if (c->vec_align < 0) return fail(field, msg, "vector_alignment", "must be >= 0");
  return 0;
}

int64_t ledger_splits(const struct ledger_call *c) {
  if (c->policy == LEDGER_SPLIT_BALANCED) return c->S;
  int64_t s = 1;
  for (int64_t b = 0; b < c->B; b++) {
    int64_t n = (c->T[b] + c->chunk - 1) / c->chunk;
    if (n > s) s = n;
  }
  return s;
}

int64_t ledger_capacity(const struct ledger_call *c) { return c->S_capacity ? c->S_capacity : ledger_splits(c); }

int64_t ledger_d_v_padded(const struct ledger_call *c) {
  int64_t a = c->vec_align > 1 ? c->vec_align : 1;
  return (c->d_v + a - 1) / a * a;
}

int ledger_split_bounds(const struct ledger_call *c, int64_t b, int64_t s, int64_t *start, int64_t *end) {
  int64_t T = c->T[b], S = ledger_splits(c);
  if (s >= S) {
    *start = *end = T;
    return 0;
  }
  if (c->policy == LEDGER_SPLIT_BALANCED) {
    long long a, e;
    ss_balanced_bounds(T, S, s, &a, &e);
    *start = a;
    *end = e;
  } else {
    *start = s * c->chunk < T ? s * c->chunk : T;
    *end = (s + 1) * c->chunk < T ? (s + 1) * c->chunk : T;
  }
  return 1;
}

/* Does a producer owner of slot s with a range of n keys write its slot under the declared policy? */
static int slot_written(const struct ledger_call *c, int64_t S, int64_t s, int64_t n) {
  switch (c->writes) {
  case LEDGER_WRITE_EVERY_SLOT: return 1;
  case LEDGER_WRITE_CONFIGURED: return s < S;
  case LEDGER_WRITE_NONEMPTY: return s < S && n > 0;
  }
  return 0;
}

static int64_t reduce_span(const struct ledger_call *c) {
  return c->reduce == LEDGER_REDUCE_CONFIGURED ? ledger_splits(c) : ledger_capacity(c);
}

void ledger_owners(const struct ledger_call *c, struct ledger_owners *o) {
  memset(o, 0, sizeof *o);
  o->S = ledger_splits(c);
  o->S_capacity = ledger_capacity(c);
  o->producer = c->B * c->H_q * o->S_capacity;
  o->reducer = c->B * c->H_q;
  int64_t R = reduce_span(c);
  o->consumed = o->reducer * R;
  for (int64_t b = 0; b < c->B; b++) {
    int64_t nonempty = 0;
    for (int64_t s = 0; s < o->S_capacity; s++) {
      int64_t a, e;
      int live = ledger_split_bounds(c, b, s, &a, &e);
      if (!live)
        o->inactive += c->H_q;
      else if (e > a)
        nonempty++;
      else
        o->empty += c->H_q;
      if (s < R && !slot_written(c, o->S, s, e - a)) o->unwritten_consumed += c->H_q;
    }
    o->active += nonempty * c->H_q;
    o->nonempty_merges += (nonempty > 0 ? nonempty - 1 : 0) * c->H_q;
  }
  o->identity = o->empty + o->inactive;
}

static int64_t field_bytes(int dtype) { return dtype == LEDGER_NO_FIELD ? 0 : (int64_t)dkb_dtype_bytes(dtype); }

void ledger_workspace(const struct ledger_call *c, const struct ledger_ws_abi *abi, struct ledger_workspace *w) {
  memset(w, 0, sizeof *w);
  int64_t b_vec = (int64_t)dkb_dtype_bytes(abi->vec), b_state = (int64_t)dkb_dtype_bytes(abi->state);
  int64_t b_state2 = abi->kind == LEDGER_ABI_MLU ? field_bytes(abi->state2) : 0, b_valid = field_bytes(abi->valid);
  int64_t scalars = b_state + b_state2 + b_valid;
  int64_t n_cfg = c->B * c->H_q * ledger_splits(c), n_cap = c->B * c->H_q * ledger_capacity(c);
  w->state_bytes = c->d_v * b_vec + scalars;
  w->state_bytes_padded = ledger_d_v_padded(c) * b_vec + scalars;
  w->logical = n_cfg * w->state_bytes;
  w->capacity = n_cap * w->state_bytes_padded;
  w->vec_bytes = n_cfg * c->d_v * b_vec;
  w->state_field_bytes = n_cfg * b_state;
  w->state2_field_bytes = n_cfg * b_state2;
  w->valid_field_bytes = n_cfg * b_valid;
  w->output_write = c->B * c->H_q * c->d_v * (int64_t)dkb_dtype_bytes(c->o);
  w->lse_write = c->write_lse ? c->B * c->H_q * (int64_t)dkb_dtype_bytes(c->lse) : 0;
  w->reduction_path = 2 * w->logical + w->output_write + w->lse_write;
}

void ledger_traffic(const struct ledger_call *c, struct ledger_traffic *t) {
  struct ledger_owners o;
  ledger_owners(c, &o);
  int64_t q_row = c->d_qk * (int64_t)dkb_dtype_bytes(c->q);
  int64_t kv_row = c->d_qk * (int64_t)dkb_dtype_bytes(c->k) + c->d_v * (int64_t)dkb_dtype_bytes(c->v);
  int64_t tokens = 0;
  for (int64_t b = 0; b < c->B; b++) tokens += c->T[b];
  t->q_unique = c->B * c->H_q * q_row;
  t->q_demand = o.active * q_row;
  t->kv_unique = tokens * c->H_kv * kv_row;
  t->kv_qhead_demand = tokens * c->H_q * kv_row;
}

int64_t ledger_full_demand(const struct ledger_traffic *t, const struct ledger_workspace *w) {
  return t->q_demand + t->kv_qhead_demand + w->reduction_path;
}

void ledger_claims_init(struct ledger_claims *k) {
  memset(k, 0, sizeof *k);
  k->ws_bytes = k->kv_demand = k->dram_bytes = k->output_width = -1;
}

static int by_start(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Declared bounds of every request: within [0, T_b), a disjoint exact cover, and the policy's own. */
static int check_bounds(const struct ledger_call *c, const int64_t *bd, char reason[64], char detail[256]) {
  int64_t S = ledger_splits(c), tmax = 0;
  for (int64_t b = 0; b < c->B; b++) tmax = c->T[b] > tmax ? c->T[b] : tmax;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t s = 0; s < S; s++) {
      int64_t a = bd[(b * S + s) * 2], e = bd[(b * S + s) * 2 + 1];
      if (e > c->T[b] || a > c->T[b])
        return oracle_reason(
            reason, detail, "split_bounds_not_per_request",
            "request %lld split %lld reads [%lld, %lld) but T_%lld = %lld (batch maximum %lld): rows past "
            "T_b are another request's or unwritten; derive bounds from each T_b",
            (long long)b, (long long)s, (long long)a, (long long)e, (long long)b, (long long)c->T[b], (long long)tmax);
    }
  /* Sweep each request's ranges in order of start: they must chain from 0 to T_b. */
  int64_t(*rg)[2] = DKB_MALLOC((size_t)S * sizeof *rg);
  int rc = 0;
  for (int64_t b = 0; b < c->B && !rc; b++) {
    memcpy(rg, bd + b * S * 2, (size_t)S * sizeof *rg);
    qsort(rg, (size_t)S, sizeof *rg, by_start);
    int64_t covered = 0;
    for (int64_t s = 0; s < S && !rc; s++) {
      if (rg[s][1] <= rg[s][0]) continue;
      if (rg[s][0] != covered)
        rc = oracle_reason(reason, detail, "split_bounds_not_partition",
                           "request %lld: a split starts at %lld but [0, %lld) is covered so far: %s", (long long)b,
                           (long long)rg[s][0], (long long)covered,
                           rg[s][0] < covered ? "keys counted twice" : "keys lost");
      covered = rg[s][1];
    }
    if (!rc && covered != c->T[b])
      rc = oracle_reason(reason, detail, "split_bounds_not_partition",
                         "request %lld: splits cover [0, %lld) of T_%lld = %lld: keys lost", (long long)b,
                         (long long)covered, (long long)b, (long long)c->T[b]);
  }
  free(rg);
  if (rc) return rc;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t s = 0; s < S; s++) {
      int64_t a, e;
      ledger_split_bounds(c, b, s, &a, &e);
      if (a != bd[(b * S + s) * 2] || e != bd[(b * S + s) * 2 + 1])
        return oracle_reason(
            reason, detail, "split_bounds_policy_mismatch",
            "request %lld split %lld: the plan says [%lld, %lld), its declared policy derives [%lld, %lld)",
            (long long)b, (long long)s, (long long)bd[(b * S + s) * 2], (long long)bd[(b * S + s) * 2 + 1],
            (long long)a, (long long)e);
    }
  return 0;
}

static int check_workspace(const struct ledger_call *c, const struct ledger_claims *k, char reason[64],
                           char detail[256]) {
  struct ledger_workspace w;
  ledger_workspace(c, k->abi, &w);
  int64_t want = k->ws_capacity ? w.capacity : w.logical;
  if (k->ws_bytes == want) return 0;
  /* Which scalar fields would a ledger have to leave out to report the claim? */
  int64_t per_slot = k->ws_capacity ? c->B * c->H_q * ledger_capacity(c) : c->B * c->H_q * ledger_splits(c);
  int mlu = k->abi->kind == LEDGER_ABI_MLU;
  const char *names[3] = {mlu ? "partial_m" : "partial_LSE", "partial_l", "partial_valid"};
  int64_t bytes[3] = {per_slot * (int64_t)dkb_dtype_bytes(k->abi->state),
                      mlu ? per_slot * field_bytes(k->abi->state2) : 0, per_slot * field_bytes(k->abi->valid)};
  for (int mask = 1; mask < 8; mask++) {
    int64_t left = want;
    int ok = 1;
    for (int f = 0; f < 3; f++)
      if (mask >> f & 1) {
        ok &= bytes[f] > 0;
        left -= bytes[f];
      }
    if (!ok || left != k->ws_bytes) continue;
    char list[64] = "";
    for (int f = 0; f < 3; f++)
      if (mask >> f & 1) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "", names[f]);
    return oracle_reason(reason, detail, "ledger_omits_state_fields",
                         "claimed %lld B is the %s workspace without %s (%lld B): ledger every ABI field and dtype",
                         (long long)k->ws_bytes, k->ws_capacity ? "capacity" : "logical", list, (long long)want);
  }
  return oracle_reason(reason, detail, "workspace_bytes_mismatch", "claimed %lld B, the %s workspace ledger is %lld B",
                       (long long)k->ws_bytes, k->ws_capacity ? "capacity" : "logical", (long long)want);
}

static int check_dram(const struct ledger_call *c, const struct ledger_claims *k, char reason[64], char detail[256]) {
  if (k->dram_counter && *k->dram_counter) return 0;
  struct ledger_traffic t;
  ledger_traffic(c, &t);
  struct {
    const char *name;
    int64_t v;
  } led[8] = {{"unique Q payload", t.q_unique},
              {"Q load demand", t.q_demand},
              {"unique K/V payload", t.kv_unique},
              {"per-query-head K/V demand", t.kv_qhead_demand}};
  int n = 4;
  if (k->abi) {
    struct ledger_workspace w;
    ledger_workspace(c, k->abi, &w);
    led[n].name = "logical workspace";
    led[n++].v = w.logical;
    led[n].name = "capacity workspace";
    led[n++].v = w.capacity;
    led[n].name = "reduction path";
    led[n++].v = w.reduction_path;
    led[n].name = "full two-launch demand";
    led[n++].v = ledger_full_demand(&t, &w);
  }
  for (int i = 0; i < n; i++)
    if (led[i].v == k->dram_bytes)
      return oracle_reason(
          reason, detail, "logical_bytes_as_dram_bytes",
          "claimed DRAM bytes %lld are the logical %s ledger and name no profiler counter: cache reuse and "
          "transaction granularity are not in it",
          (long long)k->dram_bytes, led[i].name);
  return oracle_reason(reason, detail, "dram_bytes_without_counter",
                       "claimed DRAM bytes %lld name no profiler counter: measured traffic needs its counter",
                       (long long)k->dram_bytes);
}

int ledger_check(const struct ledger_call *c, const struct ledger_claims *k, char reason[64], char detail[256]) {
  if (k->bounds && check_bounds(c, k->bounds, reason, detail)) return -1;
  int64_t cap = ledger_capacity(c), pad = ledger_d_v_padded(c);
  if (k->alloc_splits && k->alloc_splits != cap)
    return oracle_reason(reason, detail, "launch_allocation_mismatch",
                         "the launch writes split ids [0, %lld) but the workspace allocation holds %lld splits",
                         (long long)cap, (long long)k->alloc_splits);
  if (k->alloc_width && k->alloc_width != pad)
    return oracle_reason(reason, detail, "launch_allocation_mismatch",
                         "the launch writes %lld vector lanes per state but the workspace allocation holds %lld",
                         (long long)pad, (long long)k->alloc_width);
  struct ledger_owners o;
  ledger_owners(c, &o);
  if (o.unwritten_consumed) {
    int64_t R = reduce_span(c), fb = 0, fs = 0;
    for (int64_t b = 0, found = 0; b < c->B && !found; b++)
      for (int64_t s = 0; s < R && !found; s++) {
        int64_t a, e;
        ledger_split_bounds(c, b, s, &a, &e);
        if (!slot_written(c, o.S, s, e - a)) {
          fb = b;
          fs = s;
          found = 1;
        }
      }
    return oracle_reason(reason, detail, "reducer_reads_unwritten_slot",
                         "%lld of %lld consumed slots are never written (first: request %lld split %lld); the reducer "
                         "reads [0, %lld): write the identity to every consumed slot",
                         (long long)o.unwritten_consumed, (long long)o.consumed, (long long)fb, (long long)fs,
                         (long long)R);
  }
  if (k->abi && k->ws_bytes >= 0 && check_workspace(c, k, reason, detail)) return -1;
  if (k->kv_demand >= 0) {
    struct ledger_traffic t;
    ledger_traffic(c, &t);
    if (k->kv_demand != t.kv_qhead_demand && k->kv_demand == t.kv_unique && c->H_q != c->H_kv)
      return oracle_reason(
          reason, detail, "unique_kv_as_qhead_demand",
          "claimed K/V demand %lld B is the unique payload by K/V head; each K/V head serves %lld query "
          "heads, so the per-query-head demand is %lld B (report both ledgers)",
          (long long)k->kv_demand, (long long)(c->H_q / c->H_kv), (long long)t.kv_qhead_demand);
    if (k->kv_demand != t.kv_qhead_demand)
      return oracle_reason(reason, detail, "kv_demand_mismatch", "claimed K/V demand %lld B, the ledger is %lld B",
                           (long long)k->kv_demand, (long long)t.kv_qhead_demand);
  }
  if (k->dram_bytes >= 0 && check_dram(c, k, reason, detail)) return -1;
  if (k->output_width >= 0 && k->output_width != c->d_v) {
    if (k->output_width == pad)
      return oracle_reason(reason, detail, "padded_width_as_output_width",
                           "the output exposes %lld lanes, the padded envelope; d_v = %lld: crop the final output",
                           (long long)k->output_width, (long long)c->d_v);
    return oracle_reason(reason, detail, "output_width_mismatch", "the output exposes %lld lanes, d_v = %lld",
                         (long long)k->output_width, (long long)c->d_v);
  }
  return 0;
}
