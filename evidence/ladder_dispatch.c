/* ladder_dispatch.c - level 4, dispatch observed (article 0x07, 0x0BE): the readable call key and its
 * recomputed digest, the candidates' admission results, a selection the policy allows (auto: first
 * eligible by priority; forced: never a fallback) and the selected plan's state and plan key. */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "evidence/call_key.h"
#include "lib/cjson.h"

static void check_digest(struct lctx *c, const json_t *d, const json_t *obj, const char *key, const char *missing,
                         const char *mismatch, const char *what) {
  char q[DKB_PTR_MAX];
  jr_ptr_key(q, "/dispatch", key);
  const char *sha = lad_str(c, d, "/dispatch", key, 0);
  if (c->bad) return;
  if (!sha) { lad_finding(c, missing, q, "no canonical digest of the %s", what); return; }
  if (!obj) return;
  char hex[65];
  struct dkb_err e;
  if (cjson_digest(obj, hex, &e)) { lad_finding(c, mismatch, q, "the %s has no canonical form: %s", what, e.msg); return; }
  if (strcmp(hex, sha)) lad_finding(c, mismatch, q, "recorded %s, the %s recomputes to %s", sha, what, hex);
}

/* o[key], a member of the call key, must have type t; its value is not needed here. */
static void read_typed(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum call_key_type t) {
  const json_t *v = json_object_get(o, key);
  long long i;
  double x;
  int b;
  const char *s;
  if (t == CK_INT_OR_NULL && json_is_null(v)) return; /* page_size: not paged */
  if (t == CK_STR_OR_OBJ && json_is_object(v)) return; /* mask: a mask program */
  switch (t) {
  case CK_INT: case CK_INT_OR_NULL: LAD_READ(c, jr_int, o, ptr, key, LLONG_MIN, LLONG_MAX, &i); break;
  case CK_NUM: LAD_READ(c, jr_num, o, ptr, key, -INFINITY, INFINITY, &x); break;
  case CK_STR: case CK_STR_OR_OBJ: LAD_READ(c, jr_str, o, ptr, key, &s); break;
  case CK_BOOL: LAD_READ(c, jr_bool, o, ptr, key, &b); break;
  case CK_ARR: lad_member(c, o, ptr, key, JSON_ARRAY); break;
  case CK_OBJ: lad_member(c, o, ptr, key, JSON_OBJECT); break;
  }
}

/* The call key's fields as evidence/call_key.h's table requires and types them (article 0x0BE). */
static void level4_call_key(struct lctx *c, const json_t *ck) {
  for (size_t i = 0; i < call_key_nfields && !c->bad; i++) {
    const struct call_key_field *f = &call_key_fields[i];
    if (f->need == CK_WRITTEN) continue;
    char parent[DKB_PTR_MAX], q[DKB_PTR_MAX];
    const char *key = strrchr(f->pointer, '/') + 1;
    snprintf(parent, sizeof parent, "/dispatch/call_key%.*s", (int)(key - 1 - f->pointer), f->pointer);
    jr_ptr_key(q, parent, key);
    const json_t *o = jr_resolve(ck, parent + strlen("/dispatch/call_key"));
    if (json_object_get(o, key)) read_typed(c, o, parent, key, f->type);
    else if (f->need == CK_REQUIRED) lad_finding(c, "call_key_field_missing", q, "the call key has no %s", f->pointer + 1);
  }
  if (c->bad) return;
  const json_t *B = json_object_get(ck, "B"), *sk = json_object_get(ck, "S_k_per_request");
  if (json_is_integer(B) && json_is_array(sk) && (json_int_t)json_array_size(sk) != json_integer_value(B))
    lad_finding(c, "call_key_inconsistent", "/dispatch/call_key/S_k_per_request", "%zu lengths for B = %lld requests",
            json_array_size(sk), (long long)json_integer_value(B));
  const json_t *hq = json_object_get(ck, "H_q"), *hkv = json_object_get(ck, "H_kv");
  if (json_is_integer(hq) && json_is_integer(hkv) &&
      (json_integer_value(hkv) < 1 || json_integer_value(hq) % json_integer_value(hkv)))
    lad_finding(c, "call_key_inconsistent", "/dispatch/call_key/H_kv", "H_q = %lld is not a multiple of H_kv = %lld",
            (long long)json_integer_value(hq), (long long)json_integer_value(hkv));
}

/* What level 4 knows of the backend request and its candidates. */
struct selection {
  const char *request;       /* "auto" or a backend name; NULL when absent */
  int forced;                /* the request names a backend */
  int oc;                    /* index into OUTCOMES, -1 when absent */
  const char *sel;           /* the selected backend, NULL when none */
  const json_t *cands;
  size_t nc;
  long best;                 /* first eligible in-domain candidate by priority, -1 if none */
  long long best_pri;
};

static const char *const OUTCOMES[] = {"selected", "rejected", "no_eligible", NULL};

static const char *backend_of(const json_t *cands, size_t i) {
  return json_string_value(json_object_get(json_array_get(cands, i), "backend"));
}

static int eligible_in_domain(const json_t *cand) {
  return cand && json_is_true(json_object_get(cand, "eligible")) && json_is_true(json_object_get(cand, "in_domain"));
}

/* request, outcome, selected and candidates; -1 when the bundle is malformed. */
static int read_selection(struct lctx *c, const json_t *d, struct selection *s) {
  memset(s, 0, sizeof *s);
  s->oc = s->best = -1;
  s->request = lad_str(c, d, "/dispatch", "request", 1);
  LAD_READ(c, jr_enum, d, "/dispatch", "outcome", OUTCOMES, &s->oc);
  const json_t *selv = json_object_get(d, "selected");
  if (lad_present(c, d, "selected") && !json_is_string(selv) && !json_is_null(selv))
    lad_malformed(c, "/dispatch/selected", "must be a string or null (got %s)", jr_type_name(selv));
  s->sel = json_string_value(selv);
  s->cands = lad_member(c, d, "/dispatch", "candidates", JSON_ARRAY);
  if (c->bad) return -1;
  if (s->sel && !*s->sel) { lad_malformed(c, "/dispatch/selected", "must not be empty"); return -1; }
  s->forced = s->request && strcmp(s->request, "auto");
  s->nc = s->cands ? json_array_size(s->cands) : 0;
  c->outcome = s->oc >= 0 ? OUTCOMES[s->oc] : NULL;
  if (!s->request) lad_finding(c, "request_missing", "/dispatch/request", "no backend request");
  if (s->oc < 0) lad_finding(c, "outcome_missing", "/dispatch/outcome", "no dispatch outcome");
  if (!s->nc) lad_finding(c, "candidates_missing", "/dispatch/candidates", "no candidate list");
  return 0;
}

/* Each candidate once, its eligibility agreeing with its reasons; finds the first eligible. */
static void check_candidates(struct lctx *c, struct selection *s) {
  static const char *const req[] = {"backend", "priority", "in_domain", "eligible", NULL};
  static const char *const opt[] = {"reasons", NULL};
  for (size_t i = 0; i < s->nc && !c->bad; i++) {
    char cp[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(cp, "/dispatch/candidates", i);
    const json_t *cd = json_array_get(s->cands, i), *reasons = NULL;
    if (lad_keys(c, cd, cp, req, opt)) return;
    const char *name = lad_str(c, cd, cp, "backend", 1);
    long long pri = 0;
    LAD_READ(c, jr_int, cd, cp, "priority", 0, LLONG_MAX, &pri);
    int in_domain = json_is_true(lad_member(c, cd, cp, "in_domain", JSON_TRUE));
    int eligible = json_is_true(lad_member(c, cd, cp, "eligible", JSON_TRUE));
    LAD_READ(c, jr_str_array, cd, cp, "reasons", 1, &reasons);
    if (c->bad) return;
    size_t nr = reasons ? json_array_size(reasons) : 0;
    for (size_t k = 0; k < i; k++)
      if (!strcmp(name, backend_of(s->cands, k))) {
        jr_ptr_key(q, cp, "backend");
        lad_finding(c, "candidate_duplicate", q, "'%s' is also /dispatch/candidates/%zu", name, k);
        break;
      }
    if (eligible && !in_domain) lad_finding(c, "candidate_reasons_inconsistent", cp, "'%s' is eligible but outside the candidate domain", name);
    else if (!eligible && !nr) lad_finding(c, "candidate_reasons_inconsistent", cp, "'%s' is ineligible without a reason", name);
    else if (eligible && nr) lad_finding(c, "candidate_reasons_inconsistent", cp, "'%s' is eligible but lists %zu rejection reason%s", name, nr, nr == 1 ? "" : "s");
    if (eligible && in_domain && (s->best < 0 || pri < s->best_pri)) { s->best = (long)i; s->best_pri = pri; }
  }
}

/* A selected outcome names an eligible candidate the policy allows: a forced request never falls back,
 * auto takes the first eligible by priority. */
static void check_selected(struct lctx *c, const struct selection *s, const json_t *scd) {
  if (!s->sel) lad_finding(c, "selected_missing", "/dispatch/selected", "outcome is selected but no backend is named");
  else if (!eligible_in_domain(scd))
    lad_finding(c, "selected_not_eligible", "/dispatch/selected", "'%s' is not an eligible in-domain candidate", s->sel);
  else if (s->forced && strcmp(s->sel, s->request))
    lad_finding(c, "forced_request_fell_back", "/dispatch/selected", "forced '%s' but selected '%s'", s->request, s->sel);
  else if (!s->forced && s->request && s->best >= 0 && json_integer_value(json_object_get(scd, "priority")) > s->best_pri)
    lad_finding(c, "auto_selection_not_first_eligible", "/dispatch/selected",
                "auto selected '%s' (priority %lld) over eligible '%s' (priority %lld)", s->sel,
                (long long)json_integer_value(json_object_get(scd, "priority")), backend_of(s->cands, (size_t)s->best),
                s->best_pri);
}

/* rejected only for a forced request whose backend is ineligible, no_eligible only for auto with no
 * eligible candidate, and neither names a selected backend. */
static void check_not_selected(struct lctx *c, const struct selection *s, int req_eligible) {
  const char *p = "/dispatch/outcome";
  if (s->sel)
    lad_finding(c, "outcome_contradicts_candidates", "/dispatch/selected", "outcome %s names selected backend '%s'", OUTCOMES[s->oc], s->sel);
  else if (s->oc == 1 && s->request && !s->forced)
    lad_finding(c, "outcome_contradicts_candidates", p, "rejected is the outcome of a forced request, the request is auto");
  else if (s->oc == 1 && req_eligible)
    lad_finding(c, "outcome_contradicts_candidates", p, "forced '%s' is eligible but the outcome is rejected", s->request);
  else if (s->oc == 2 && s->forced)
    lad_finding(c, "outcome_contradicts_candidates", p, "a forced request is selected or rejected, never no_eligible");
  else if (s->oc == 2 && s->best >= 0)
    lad_finding(c, "outcome_contradicts_candidates", p, "no_eligible but '%s' is eligible", backend_of(s->cands, (size_t)s->best));
}

static void check_outcome(struct lctx *c, const struct selection *s) {
  long req_i = -1, sel_i = -1;
  for (size_t i = 0; i < s->nc; i++) {
    const char *name = backend_of(s->cands, i);
    if (s->forced && req_i < 0 && !strcmp(name, s->request)) req_i = (long)i;
    if (s->sel && sel_i < 0 && !strcmp(name, s->sel)) sel_i = (long)i;
  }
  if (s->forced && s->nc && req_i < 0)
    lad_finding(c, "forced_request_not_candidate", "/dispatch/request", "forced backend '%s' is not among the candidates", s->request);
  if (s->oc == 0) check_selected(c, s, sel_i >= 0 ? json_array_get(s->cands, (size_t)sel_i) : NULL);
  else if (s->oc > 0) check_not_selected(c, s, eligible_in_domain(req_i >= 0 ? json_array_get(s->cands, (size_t)req_i) : NULL));
}

/* The plan key agrees with the call key and with the dispatch record (split: NULL when the record has none,
 * unreported: its split_count is null, the backend's own and not exposed). */
static void check_plan_key(struct lctx *c, const json_t *pk, const json_t *ck, const char *sel, const long long *split,
                           int unreported, const long long *ws) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)pk, k, v) {
    const json_t *w = json_object_get(ck, k);
    if (ck && w && !json_equal(v, w)) {
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, "/dispatch/plan_key", k);
      lad_finding(c, "plan_key_contradicts_call_key", q, "plan key %s differs from /dispatch/call_key/%s", k, k);
    }
  }
  const char *pb = json_string_value(json_object_get(pk, "backend"));
  const json_t *ps = json_object_get(pk, "split_count"), *pw = json_object_get(pk, "workspace_bytes");
  if (pb && sel && strcmp(pb, sel))
    lad_finding(c, "plan_key_contradicts_dispatch", "/dispatch/plan_key/backend", "plan for '%s', selected '%s'", pb, sel);
  if (ps && split && !(json_is_integer(ps) && json_integer_value(ps) == *split))
    lad_finding(c, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count", "plan key split_count differs from /dispatch/split_count %lld", *split);
  if (ps && unreported && !json_is_null(ps))
    lad_finding(c, "plan_key_contradicts_dispatch", "/dispatch/plan_key/split_count", "plan key split_count is not null, as /dispatch/split_count is (unreported)");
  if (pw && ws && !(json_is_integer(pw) && json_integer_value(pw) == *ws))
    lad_finding(c, "plan_key_contradicts_dispatch", "/dispatch/plan_key/workspace_bytes", "plan key workspace_bytes differs from /dispatch/workspace_bytes %lld", *ws);
}

/* 1 when the backend declares a fused producer+combine kernel: its splits may merge on chip (a thread
 * block cluster's distributed shared memory) and need no partial-state workspace. */
static int declares_fused(const json_t *be) {
  const json_t *ks = json_object_get(be, "kernels");
  for (size_t i = 0; i < json_array_size(ks); i++) {
    const char *role = json_string_value(json_object_get(json_array_get(ks, i), "role"));
    if (role && !strcmp(role, "fused")) return 1;
  }
  return 0;
}

/* The selected backend's plan state: split count, workspace bytes, plan key, required kernels. */
static void check_plan(struct lctx *c, const json_t *d, const json_t *ck, const struct selection *s) {
  long long split = 0, ws = 0;
  /* null: the backend does not expose its split (0x0BE records it "when exposed"); no rule below reads one */
  const int unreported = json_is_null(json_object_get(d, "split_count"));
  int have_split = !unreported && LAD_READ(c, jr_int, d, "/dispatch", "split_count", 1, LLONG_MAX, &split);
  int have_ws = LAD_READ(c, jr_int, d, "/dispatch", "workspace_bytes", 0, LLONG_MAX, &ws);
  const json_t *pk = lad_member(c, d, "/dispatch", "plan_key", JSON_OBJECT), *rk = NULL;
  LAD_READ(c, jr_str_array, d, "/dispatch", "required_kernels", 1, &rk);
  if (c->bad) return;
  c->split_count = have_split ? split : 0;
  int selected = s->oc == 0;
  if (selected && !have_split && !unreported) lad_finding(c, "split_count_missing", "/dispatch/split_count", "no split count for the selected plan");
  if (selected && !have_ws) lad_finding(c, "workspace_bytes_missing", "/dispatch/workspace_bytes", "no workspace size for the selected plan");
  if (have_split && have_ws && split > 1 && ws == 0 && !declares_fused(lad_backend(c)))
    lad_finding(c, "workspace_inconsistent", "/dispatch/workspace_bytes",
                "%lld splits need partial-state workspace or a fused producer+combine kernel: 0 bytes recorded, no fused kernel declared", split);
  if (selected && !pk) lad_finding(c, "plan_key_missing", "/dispatch/plan_key", "no readable plan key");
  if (selected || pk || json_object_get(d, "plan_key_sha256"))
    check_digest(c, d, pk, "plan_key_sha256", "plan_key_sha256_missing", "plan_key_sha256_mismatch", "plan key");
  if (pk) check_plan_key(c, pk, ck, s->sel, have_split ? &split : NULL, unreported, have_ws ? &ws : NULL);
  if (selected && (!rk || !json_array_size(rk)))
    lad_finding(c, "required_kernels_missing", "/dispatch/required_kernels", "no kernel list for the selected plan");
}

void lad_level4_dispatch(struct lctx *c) {
  static const char *const opt[] = {"call_key", "call_key_sha256", "request", "candidates", "outcome", "selected",
                                    "split_count", "workspace_bytes", "plan_key", "plan_key_sha256",
                                    "required_kernels", "diagnostic", "plan", "backend", NULL};
  const json_t *d = lad_member(c, c->b, "", "dispatch", JSON_OBJECT);
  if (!d) { lad_finding(c, "dispatch_missing", "/dispatch", "no dispatch record"); return; }
  if (lad_keys(c, d, "/dispatch", NULL, opt)) return;
  const json_t *ck = lad_member(c, d, "/dispatch", "call_key", JSON_OBJECT);
  c->call_key = ck;
  if (!ck) lad_finding(c, "call_key_missing", "/dispatch/call_key", "no readable call key");
  else level4_call_key(c, ck);
  check_digest(c, d, ck, "call_key_sha256", "call_key_sha256_missing", "call_key_sha256_mismatch", "call key");
  const struct art *diag = lad_ref(c, d, "/dispatch", "diagnostic", "diagnostic_missing", "dispatch diagnostic");
  struct selection s;
  if (read_selection(c, d, &s)) return;
  check_candidates(c, &s);
  if (c->bad) return;
  check_outcome(c, &s);
  check_plan(c, d, ck, &s);
  lad_level4_admission(c, d, diag);
  lad_level4_call(c, d);
  lad_level4_backend(c, d);
}
