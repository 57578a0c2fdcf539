/* ledger_contract.c - contract kind "launch_storage" (article 0x03): fixture input -> ledger.h calls ->
 * report. The failure table of 0x03J is enforced by ledger_check on the fixture's launch contract,
 * allocation manifest and claims; each inconsistency rejects the input with its reason. */
#include "contracts/contract.h"
#include "oracles/ledger.h"

#include <stdlib.h>
#include <string.h>

static const char *const POLICY[] = {"balanced", "fixed_chunk", NULL};
static const char *const REDUCE[] = {"capacity", "configured", NULL};
static const char *const WRITES[] = {"every_slot", "configured_slots", "nonempty_splits", NULL};
static const char *const ABI[] = {"mlu", "lse_o", NULL};
static const char *const EXTENT[] = {"logical", "capacity", NULL};

/* jr_int into an int64_t member; absent optional keys keep *out. */
static int get_i64(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, long long lo,
                   long long hi, int64_t *out) {
  long long v = *out;
  if (jr_int(r, obj, ptr, key, required, lo, hi, &v)) return -1;
  *out = v;
  return 0;
}

/* A dtype member by name; with allow_none, "none" gives LEDGER_NO_FIELD. */
static int read_dtype(struct jr *r, const json_t *obj, const char *ptr, const char *key, int allow_none, int *out) {
  const char *name = NULL;
  if (jr_str(r, obj, ptr, key, 1, &name)) return -1;
  if (allow_none && !strcmp(name, "none")) {
    *out = LEDGER_NO_FIELD;
    return 0;
  }
  int t = dkb_dtype_parse(name);
  if (t < 0) return jr_fail(r, ptr, key, "unknown dtype '%s'", name);
  *out = t;
  return 0;
}

static int read_abi(struct jr *r, const json_t *a, const char *ptr, struct ledger_ws_abi *abi) {
  int kind = 0, vec = 0, state = 0;
  if (jr_enum(r, a, ptr, "abi", 1, ABI, &kind)) return -1;
  static const char *const mreq[] = {"abi", "u", "m", "l", "valid", NULL};
  static const char *const lreq[] = {"abi", "o", "lse", "valid", NULL};
  if (jr_keys(r, a, ptr, kind ? lreq : mreq, NULL)) return -1;
  abi->kind = kind ? LEDGER_ABI_LSE_O : LEDGER_ABI_MLU;
  abi->state2 = LEDGER_NO_FIELD;
  if (read_dtype(r, a, ptr, kind ? "o" : "u", 0, &vec) || read_dtype(r, a, ptr, kind ? "lse" : "m", 0, &state) ||
      (!kind && read_dtype(r, a, ptr, "l", 0, &abi->state2)) || read_dtype(r, a, ptr, "valid", 1, &abi->valid))
    return -1;
  abi->vec = vec;
  abi->state = state;
  return 0;
}

static json_t *workspace_json(const struct ledger_call *c, const struct ledger_ws_abi *abi) {
  struct ledger_workspace w;
  struct ledger_traffic t;
  ledger_workspace(c, abi, &w);
  ledger_traffic(c, &t);
  int mlu = abi->kind == LEDGER_ABI_MLU;
  json_t *fields = json_pack("{s:I,s:I,s:I}", mlu ? "partial_u" : "partial_O", (json_int_t)w.vec_bytes,
                             mlu ? "partial_m" : "partial_LSE", (json_int_t)w.state_field_bytes, "partial_valid",
                             (json_int_t)w.valid_field_bytes);
  if (mlu) json_object_set_new(fields, "partial_l", json_integer(w.state2_field_bytes));
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:{s:I,s:I,s:I,s:I,s:I},s:I}", "state_bytes", (json_int_t)w.state_bytes,
                   "state_bytes_padded", (json_int_t)w.state_bytes_padded, "logical_bytes", (json_int_t)w.logical,
                   "capacity_bytes", (json_int_t)w.capacity, "capacity_minus_logical",
                   (json_int_t)(w.capacity - w.logical), "fields", fields, "reduction_path", "workspace_write",
                   (json_int_t)w.logical, "workspace_read", (json_int_t)w.logical, "output_write",
                   (json_int_t)w.output_write, "lse_write", (json_int_t)w.lse_write, "total",
                   (json_int_t)w.reduction_path, "full_two_launch_demand", (json_int_t)ledger_full_demand(&t, &w));
}

static json_t *report_json(const struct ledger_call *c, const struct ledger_ws_abi *abis, size_t nabi) {
  struct ledger_owners o;
  struct ledger_traffic t;
  ledger_owners(c, &o);
  ledger_traffic(c, &t);
  int64_t g = c->H_q / c->H_kv;
  json_t *kvh = json_array(), *reqs = json_array(), *ws = json_object();
  for (int64_t h = 0; h < c->H_q; h++) json_array_append_new(kvh, json_integer(h / g));
  for (int64_t b = 0; b < c->B; b++) {
    json_t *len = json_array(), *bounds = json_array(), *slots = json_array();
    for (int64_t s = 0; s < o.S_capacity; s++) {
      int64_t a, e;
      int live = ledger_split_bounds(c, b, s, &a, &e);
      json_array_append_new(slots, json_string(!live ? "inactive" : e > a ? "active" : "empty"));
      if (!live) continue;
      json_array_append_new(len, json_integer(e - a));
      json_array_append_new(bounds, json_pack("[I,I]", (json_int_t)a, (json_int_t)e));
    }
    json_array_append_new(reqs, json_pack("{s:I,s:o,s:o,s:o}", "T", (json_int_t)c->T[b], "split_lengths", len, "bounds",
                                          bounds, "slots", slots));
  }
  for (size_t i = 0; i < nabi; i++) json_object_set_new(ws, ABI[abis[i].kind], workspace_json(c, &abis[i]));
  return json_pack("{s:I,s:o,s:I,s:I,s:I,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:o,s:{s:I,s:I,s:I,s:I}}",
                   "group_size", (json_int_t)g, "kv_head_of_q_head", kvh, "S", (json_int_t)o.S, "S_capacity",
                   (json_int_t)o.S_capacity, "d_v_padded", (json_int_t)ledger_d_v_padded(c), "requests", reqs, "owners",
                   "producer", (json_int_t)o.producer, "active", (json_int_t)o.active, "empty", (json_int_t)o.empty,
                   "inactive", (json_int_t)o.inactive, "identity_bypasses", (json_int_t)o.identity, "reducer",
                   (json_int_t)o.reducer, "nonempty_merges", (json_int_t)o.nonempty_merges, "consumed_slots",
                   (json_int_t)o.consumed, "unwritten_consumed", (json_int_t)o.unwritten_consumed, "workspaces", ws,
                   "traffic", "q_unique", (json_int_t)t.q_unique, "q_demand", (json_int_t)t.q_demand, "kv_unique",
                   (json_int_t)t.kv_unique, "kv_qhead_demand", (json_int_t)t.kv_qhead_demand);
}

/* claims.split_bounds: [B][S] half-open pairs, copied into a flat [B][S][2] array. */
static int read_bounds(struct jr *r, const json_t *cl, const char *ptr, const struct ledger_call *c, int64_t **out) {
  const json_t *sb = jr_get(r, cl, ptr, "split_bounds", 0, JSON_ARRAY);
  if (!sb) return json_object_get(cl, "split_bounds") ? -1 : 0;
  char bp[DKB_PTR_MAX], rp[DKB_PTR_MAX], ep[DKB_PTR_MAX];
  jr_ptr_key(bp, ptr, "split_bounds");
  int64_t S = ledger_splits(c);
  if ((int64_t)json_array_size(sb) != c->B)
    return jr_fail(r, bp, NULL, "must have one entry per request (%lld)", (long long)c->B);
  *out = DKB_CALLOC((size_t)(c->B * S * 2), sizeof **out);
  for (int64_t b = 0; b < c->B; b++) {
    const json_t *rq = json_array_get(sb, (size_t)b);
    jr_ptr_idx(rp, bp, (size_t)b);
    if (!json_is_array(rq) || (int64_t)json_array_size(rq) != S)
      return jr_fail(r, rp, NULL, "must be an array of the %lld configured splits", (long long)S);
    for (int64_t s = 0; s < S; s++) {
      const json_t *rg = json_array_get(rq, (size_t)s);
      jr_ptr_idx(ep, rp, (size_t)s);
      if (!json_is_array(rg) || json_array_size(rg) != 2 || !json_is_integer(json_array_get(rg, 0)) ||
          !json_is_integer(json_array_get(rg, 1)))
        return jr_fail(r, ep, NULL, "must be a half-open range [start, end] of two integers");
      int64_t a = json_integer_value(json_array_get(rg, 0)), e = json_integer_value(json_array_get(rg, 1));
      if (a < 0 || e < a)
        return jr_fail(r, ep, NULL, "must satisfy 0 <= start <= end (got [%lld, %lld])", (long long)a, (long long)e);
      (*out)[(b * S + s) * 2] = a;
      (*out)[(b * S + s) * 2 + 1] = e;
    }
  }
  return 0;
}

int oracle_eval_launch_storage(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                               struct oracle_reject *rej) {
  static const char *const req[] = {"B", "H_q", "H_kv", "d_qk", "d_v", "T", "split", "dtypes", "workspace_abis", NULL};
  static const char *const opt[] = {"vector_alignment", "write_lse", "launch", "claims", NULL};
  struct ledger_call c = {.vec_align = 1, .write_lse = 1};
  struct ledger_ws_abi abis[2];
  size_t nabi = 0;
  long long *T = NULL;
  int64_t *T64 = NULL, *bounds = NULL;
  size_t nT = 0;
  int rc = -1;
  char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, opt) || get_i64(r, in, ptr, "B", 1, 1, 1 << 20, &c.B) ||
      get_i64(r, in, ptr, "H_q", 1, 1, 1 << 16, &c.H_q) || get_i64(r, in, ptr, "H_kv", 1, 1, 1 << 16, &c.H_kv) ||
      get_i64(r, in, ptr, "d_qk", 1, 1, 1 << 16, &c.d_qk) || get_i64(r, in, ptr, "d_v", 1, 1, 1 << 16, &c.d_v) ||
      jr_int_array(r, in, ptr, "T", 1, 0, (long long)1 << 40, (long)c.B, &T, &nT) ||
      get_i64(r, in, ptr, "vector_alignment", 0, 1, 1 << 16, &c.vec_align) ||
      jr_bool(r, in, ptr, "write_lse", 0, &c.write_lse))
    goto cleanup;
  T64 = DKB_CALLOC(nT, sizeof *T64);
  for (size_t b = 0; b < nT; b++) T64[b] = T[b];
  c.T = T64;

  const json_t *sp = json_object_get(in, "split");
  jr_ptr_key(p, ptr, "split");
  static const char *const sreq[] = {"policy", NULL}, *const sopt[] = {"S", "chunk", "S_capacity", NULL};
  int policy = 0;
  if (jr_keys(r, sp, p, sreq, sopt) || jr_enum(r, sp, p, "policy", 1, POLICY, &policy) ||
      get_i64(r, sp, p, "S", policy == 0, 1, 1 << 20, &c.S) ||
      get_i64(r, sp, p, "chunk", policy == 1, 1, (long long)1 << 40, &c.chunk) ||
      get_i64(r, sp, p, "S_capacity", 0, 1, 1 << 20, &c.S_capacity))
    goto cleanup;
  if (policy == 1 && json_object_get(sp, "S")) {
    jr_fail(r, p, "S", "is derived from chunk under fixed_chunk");
    goto cleanup;
  }
  if (policy == 0 && json_object_get(sp, "chunk")) {
    jr_fail(r, p, "chunk", "applies only to fixed_chunk");
    goto cleanup;
  }
  c.policy = policy ? LEDGER_SPLIT_FIXED_CHUNK : LEDGER_SPLIT_BALANCED;

  const json_t *dt = json_object_get(in, "dtypes");
  jr_ptr_key(p, ptr, "dtypes");
  static const char *const dreq[] = {"q", "k", "v", "o", "lse", NULL};
  enum dkb_dtype *dst[] = {&c.q, &c.k, &c.v, &c.o, &c.lse};
  if (jr_keys(r, dt, p, dreq, NULL)) goto cleanup;
  for (int i = 0; dreq[i]; i++) {
    int t;
    if (read_dtype(r, dt, p, dreq[i], 0, &t)) goto cleanup;
    *dst[i] = t;
  }

  char field[32], msg[256];
  if (ledger_call_check(&c, field, msg)) {
    /* Split members live under /split, the rest at the input's top level. */
    int in_split = !strcmp(field, "S") || !strcmp(field, "chunk") || !strcmp(field, "S_capacity");
    snprintf(q, sizeof q, "%s%s/%s", ptr, in_split ? "/split" : "", field);
    jr_fail(r, q, NULL, "%s", msg);
    goto cleanup;
  }

  const json_t *wa = jr_get(r, in, ptr, "workspace_abis", 1, JSON_ARRAY);
  jr_ptr_key(p, ptr, "workspace_abis");
  if (!wa) goto cleanup;
  if (json_array_size(wa) < 1 || json_array_size(wa) > 2) {
    jr_fail(r, p, NULL, "must list one or two ABIs");
    goto cleanup;
  }
  for (nabi = 0; nabi < json_array_size(wa); nabi++) {
    jr_ptr_idx(q, p, nabi);
    if (read_abi(r, json_array_get(wa, nabi), q, &abis[nabi])) goto cleanup;
    if (nabi && abis[nabi].kind == abis[0].kind) {
      jr_fail(r, q, "abi", "is listed twice");
      goto cleanup;
    }
  }

  struct ledger_claims k;
  ledger_claims_init(&k);
  const json_t *la = json_object_get(in, "launch");
  if (la) {
    jr_ptr_key(p, ptr, "launch");
    static const char *const lopt[] = {"reducer_slots", "producer_writes", "allocation", NULL};
    int red = 0, wr = 0;
    if (jr_keys(r, la, p, NULL, lopt) || jr_enum(r, la, p, "reducer_slots", 0, REDUCE, &red) ||
        jr_enum(r, la, p, "producer_writes", 0, WRITES, &wr))
      goto cleanup;
    c.reduce = red ? LEDGER_REDUCE_CONFIGURED : LEDGER_REDUCE_CAPACITY;
    c.writes = wr == 0 ? LEDGER_WRITE_EVERY_SLOT : wr == 1 ? LEDGER_WRITE_CONFIGURED : LEDGER_WRITE_NONEMPTY;
    const json_t *al = json_object_get(la, "allocation");
    if (al) {
      jr_ptr_key(q, p, "allocation");
      static const char *const areq[] = {"splits", "width", NULL};
      long long as = 0, aw = 0;
      if (jr_keys(r, al, q, areq, NULL) || jr_int(r, al, q, "splits", 1, 1, 1 << 20, &as) ||
          jr_int(r, al, q, "width", 1, 1, 1 << 20, &aw))
        goto cleanup;
      k.alloc_splits = as;
      k.alloc_width = aw;
    }
  }
  const json_t *cl = json_object_get(in, "claims");
  if (cl) {
    jr_ptr_key(p, ptr, "claims");
    static const char *const copt[] = {"abi",
                                       "split_bounds",
                                       "workspace_bytes",
                                       "workspace_extent",
                                       "kv_qhead_demand_bytes",
                                       "dram_bytes",
                                       "dram_counter",
                                       "output_width",
                                       NULL};
    int abi = -1;
    const long long big = (long long)1 << 62;
    if (jr_keys(r, cl, p, NULL, copt) || jr_enum(r, cl, p, "abi", 0, ABI, &abi) ||
        jr_enum(r, cl, p, "workspace_extent", 0, EXTENT, &k.ws_capacity) ||
        get_i64(r, cl, p, "workspace_bytes", 0, 0, big, &k.ws_bytes) ||
        get_i64(r, cl, p, "kv_qhead_demand_bytes", 0, 0, big, &k.kv_demand) ||
        get_i64(r, cl, p, "dram_bytes", 0, 0, big, &k.dram_bytes) || jr_str(r, cl, p, "dram_counter", 0, &k.dram_counter) ||
        get_i64(r, cl, p, "output_width", 0, 1, 1 << 20, &k.output_width) || read_bounds(r, cl, p, &c, &bounds))
      goto cleanup;
    if (abi >= 0) {
      for (size_t i = 0; i < nabi; i++)
        if ((int)abis[i].kind == abi) k.abi = &abis[i];
      if (!k.abi) {
        jr_fail(r, p, "abi", "names no ABI of /workspace_abis");
        goto cleanup;
      }
    }
    if (k.ws_bytes >= 0 && !k.abi) {
      jr_fail(r, p, "workspace_bytes", "needs 'abi' to say which workspace it counts");
      goto cleanup;
    }
    k.bounds = bounds;
  }

  char reason[64], detail[256];
  if (ledger_check(&c, &k, reason, detail)) {
    rc = oracle_reject(rej, reason, "%s", detail);
    goto cleanup;
  }
  *report = report_json(&c, abis, nabi);
  rc = 0;

cleanup:
  free(T);
  free(T64);
  free(bounds);
  return rc;
}
