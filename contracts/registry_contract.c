/* registry_contract.c - contract kinds "dispatch_admission", "dispatch_matrix" and "dispatch_plan"
 * (article 0x07): fixture input -> registry.h calls -> report. A fixture may carry a recorded
 * ("claimed") admission or plan-reuse decision; it is checked against the recomputation and an
 * inconsistent one is rejected with the 0x07J failure it commits (admission_verify). */
#include "contracts/contract.h"
#include "dispatch/registry.h"

#include <stdio.h>
#include <string.h>

static int read_registry(struct jr *r, const json_t *in, const char *ptr, const struct dispatch_registry **reg) {
  const char *name = "teaching";
  if (jr_str(r, in, ptr, "registry", 0, &name)) return -1;
  if (!(*reg = dispatch_registry_find(name))) return jr_fail(r, ptr, "registry", "unknown registry '%s'", name);
  return 0;
}

/* base with the members of `change` replaced, read as a key; errors (an unknown member included)
 * point into change, since the base was read on its own first. */
static int read_changed_key(struct jr *r, const json_t *base, const json_t *change, const char *ptr,
                            struct dispatch_key *k) {
  if (!json_is_object(change)) return jr_fail(r, ptr, NULL, "must be an object (got %s)", jr_type_name(change));
  json_t *merged = json_deep_copy(base);
  json_object_update(merged, (json_t *)change);
  int rc = dispatch_key_read(r, merged, ptr, k);
  json_decref(merged);
  return rc;
}

static json_t *record(const struct admission *a, struct jr *r) {
  json_t *j = admission_to_json(a, r->err);
  if (!j) r->err->code = DKB_INTERNAL;
  return j;
}

int oracle_eval_dispatch_admission(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                   struct oracle_reject *rej) {
  static const char *const req[] = {"key", NULL}, *const opt[] = {"registry", "claimed", NULL};
  const struct dispatch_registry *reg;
  struct dispatch_key k;
  char p[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, opt) || read_registry(r, in, ptr, &reg)) return -1;
  jr_ptr_key(p, ptr, "key");
  if (dispatch_key_read(r, json_object_get(in, "key"), p, &k)) return -1;
  struct admission a;
  dispatch_admit(reg, &k, &a);
  const json_t *claimed = json_object_get(in, "claimed");
  if (claimed) {
    jr_ptr_key(p, ptr, "claimed");
    int rc = admission_verify(r, claimed, p, &a, rej->reason, rej->detail, sizeof rej->detail);
    if (rc) return rc;
  }
  return (*report = record(&a, r)) ? 0 : -1;
}

int oracle_eval_dispatch_matrix(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                                struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"base", "cases", NULL}, *const opt[] = {"registry", NULL};
  const struct dispatch_registry *reg;
  struct dispatch_key base;
  char p[DKB_PTR_MAX], cp[DKB_PTR_MAX], q[DKB_PTR_MAX];
  if (jr_keys(r, in, ptr, req, opt) || read_registry(r, in, ptr, &reg)) return -1;
  jr_ptr_key(p, ptr, "base");
  const json_t *bj = json_object_get(in, "base");
  if (dispatch_key_read(r, bj, p, &base)) return -1;
  const json_t *cases = jr_get(r, in, ptr, "cases", 1, JSON_ARRAY);
  if (!cases) return -1;
  if (json_array_size(cases) == 0) return jr_fail(r, ptr, "cases", "must not be empty");
  char td[65];
  if (dispatch_key_digest(&base, DK_TEACHING, td, r->err)) return -1;
  json_t *out = json_array();
  long long sel = 0, err = 0, fb = 0, bad = 0;
  jr_ptr_key(cp, ptr, "cases");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    static const char *const creq[] = {"name", "change", NULL};
    const char *name;
    struct dispatch_key k;
    jr_ptr_idx(p, cp, i);
    jr_ptr_key(q, p, "change");
    const json_t *change = json_object_get(c, "change");
    if (jr_keys(r, c, p, creq, NULL) || jr_str(r, c, p, "name", 1, &name) ||
        read_changed_key(r, bj, change, q, &k)) {
      json_decref(out);
      return -1;
    }
    struct admission a;
    const struct dispatch_backend *b = dispatch_admit(reg, &k, &a);
    json_t *rec = record(&a, r);
    if (!rec) { json_decref(out); return -1; }
    sel += b != NULL;
    err += b == NULL;
    fb += admission_backend_fallback(&a);
    bad += a.outcome == ADM_MALFORMED_CALL;
    json_t *changed = json_array();
    const char *f;
    json_t *v;
    json_object_foreach((json_t *)change, f, v) json_array_append_new(changed, json_string(f));
    json_array_append_new(out, json_pack("{s:s,s:o,s:s,s:O,s:b,s:o}", "name", name, "changed", changed, "outcome",
                                         admission_outcome_name(a.outcome), "selected", json_object_get(rec, "selected"),
                                         "backend_fallback", admission_backend_fallback(&a), "record", rec));
  }
  *report = json_pack("{s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I}}", "base_teaching_key_digest", td, "cases", out, "summary",
                      "cases", (json_int_t)json_array_size(cases), "selections", (json_int_t)sel, "errors",
                      (json_int_t)err, "backend_fallbacks", (json_int_t)fb, "malformed_calls", (json_int_t)bad);
  return 0;
}

int oracle_eval_dispatch_plan(struct jr *r, const json_t *in, const char *ptr, json_t **report,
                              struct oracle_reject *rej) {
  static const char *const req[] = {"plan", "runs", NULL};
  struct dispatch_key pk_call;
  char p[DKB_PTR_MAX], rp[DKB_PTR_MAX], q[DKB_PTR_MAX], hex[65];
  if (jr_keys(r, in, ptr, req, NULL)) return -1;
  jr_ptr_key(p, ptr, "plan");
  const json_t *pj = json_object_get(in, "plan");
  if (dispatch_key_read(r, pj, p, &pk_call)) return -1;
  struct plan_key planned;
  plan_key_project(&pk_call, &planned);
  if (plan_key_digest(&planned, hex, r->err)) return -1;
  const json_t *runs = jr_get(r, in, ptr, "runs", 1, JSON_ARRAY);
  if (!runs) return -1;
  json_t *out = json_array();
  jr_ptr_key(rp, ptr, "runs");
  for (size_t i = 0; i < json_array_size(runs); i++) {
    const json_t *run = json_array_get(runs, i);
    static const char *const rreq[] = {"name", "change", NULL}, *const ropt[] = {"claimed_reuse", NULL};
    const char *name;
    int claimed = -1;
    struct dispatch_key k;
    jr_ptr_idx(p, rp, i);
    jr_ptr_key(q, p, "change");
    if (jr_keys(r, run, p, rreq, ropt) || jr_str(r, run, p, "name", 1, &name) ||
        jr_bool(r, run, p, "claimed_reuse", 0, &claimed) || read_changed_key(r, pj, json_object_get(run, "change"), q, &k)) {
      json_decref(out);
      return -1;
    }
    struct plan_key now;
    const char *changed[16];
    char rh[65];
    plan_key_project(&k, &now);
    size_t n = plan_key_diff(&planned, &now, changed, 16);
    if (plan_key_digest(&now, rh, r->err)) { json_decref(out); return -1; }
    if (claimed == 1 && n) {
      json_decref(out);
      return oracle_reject(rej, "stale_plan_reuse",
                           "run '%s' reuses the plan although its static projection changed (%s%s): the plan's "
                           "workspace, launch metadata or captured graph belong to another key", name, changed[0],
                           n > 1 ? ", ..." : "");
    }
    json_t *ch = json_array();
    for (size_t c = 0; c < n && c < 16; c++) json_array_append_new(ch, json_string(changed[c]));
    json_array_append_new(out, json_pack("{s:s,s:b,s:o,s:s}", "name", name, "reuse", n == 0, "changed", ch,
                                         "plan_key_digest", rh));
  }
  *report = json_pack("{s:o,s:s,s:o}", "plan_key", plan_key_to_json(&planned), "plan_key_digest", hex, "runs", out);
  return 0;
}
