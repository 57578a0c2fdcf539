/* contract.c - fixture envelope, expectations and the report helpers (see contract.h). */
#include "contracts/contract.h"
#include "oracles/compare.h"
#include "lib/cjson.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct oracle_kind *oracle_kind_find(const char *name) {
  for (const struct oracle_kind *k = oracle_kinds; k->name; k++)
    if (!strcmp(k->name, name)) return k;
  return NULL;
}

int oracle_reject(struct oracle_reject *rej, const char *reason, const char *fmt, ...) {
  snprintf(rej->reason, sizeof rej->reason, "%s", reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rej->detail, sizeof rej->detail, fmt, ap);
  va_end(ap);
  return 1;
}

json_t *oracle_num(double v) {
  if (isnan(v)) return json_string("nan");
  if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
  return json_real(v);
}

json_t *oracle_num_array(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, oracle_num(v[i]));
  return a;
}

json_t *oracle_int_array(const long long *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

void oracle_outcome_release(struct oracle_outcome *o) {
  json_decref(o->report);
  json_decref(o->failures);
  memset(o, 0, sizeof *o);
}

/* A number as an expectation or report holds it: JSON number or "inf"/"-inf"/"nan". */
static int as_number(const json_t *v, double *out) {
  if (json_is_number(v)) { *out = json_number_value(v); return 1; }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "inf")) { *out = INFINITY; return 1; }
    if (!strcmp(s, "-inf")) { *out = -INFINITY; return 1; }
    if (!strcmp(s, "nan")) { *out = NAN; return 1; }
  }
  return 0;
}

static void fail_at(json_t *failures, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(json_t *failures, const char *at, const char *fmt, ...) {
  char why[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  json_array_append_new(failures, json_pack("{s:s,s:s}", "at", at, "why", why));
}

static void show(const json_t *v, char *out, size_t n) {
  struct dkb_buf b;
  struct dkb_err e;
  dkb_buf_init(&b);
  if (!v) snprintf(out, n, "nothing");
  else if (cjson_write(v, 0, &b, &e)) snprintf(out, n, "?");
  else snprintf(out, n, "%s%s", b.n > 200 ? "" : b.p, b.n > 200 ? "(a long value)" : "");
  dkb_buf_release(&b);
}

/* Structural equality; numbers through the one tolerance rule. */
static void expect_equal(const json_t *got, const json_t *want, double atol, double rtol, const char *at,
                         json_t *failures) {
  double g, w;
  char gs[256], ws[256];
  if (as_number(want, &w) && got && as_number(got, &g)) {
    struct dkb_cmp c;
    dkb_compare_f64(&g, &w, 1, atol, rtol, &c);
    if (!c.pass) {
      char a[32], b[32];
      cjson_format_double(g, a);
      cjson_format_double(w, b);
      if (!isfinite(g)) snprintf(a, sizeof a, "%s", isnan(g) ? "nan" : g > 0 ? "inf" : "-inf");
      if (!isfinite(w)) snprintf(b, sizeof b, "%s", isnan(w) ? "nan" : w > 0 ? "inf" : "-inf");
      fail_at(failures, at, "expected %s, got %s (|diff| %.3g > atol %.3g + rtol %.3g * |expected|)", b, a,
              fabs(g - w), atol, rtol);
    }
    return;
  }
  if (json_is_number(want)) {
    show(got, gs, sizeof gs);
    fail_at(failures, at, "expected a number, got %s", gs);
    return;
  }
  if (json_is_array(want)) {
    if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
      show(got, gs, sizeof gs);
      fail_at(failures, at, "expected an array of %zu elements, got %s", json_array_size(want), gs);
      return;
    }
    for (size_t i = 0; i < json_array_size(want); i++) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, at, i);
      expect_equal(json_array_get(got, i), json_array_get(want, i), atol, rtol, p, failures);
    }
    return;
  }
  if (json_is_object(want)) {
    if (!json_is_object(got)) {
      show(got, gs, sizeof gs);
      fail_at(failures, at, "expected an object, got %s", gs);
      return;
    }
    const char *key;
    json_t *wv;
    json_object_foreach((json_t *)want, key, wv) {
      char p[DKB_PTR_MAX];
      jr_ptr_key(p, at, key);
      expect_equal(json_object_get(got, key), wv, atol, rtol, p, failures);
    }
    if (json_object_size(got) != json_object_size(want))
      fail_at(failures, at, "expected exactly %zu keys, got %zu", json_object_size(want), json_object_size(got));
    return;
  }
  if (!got || !json_equal(got, want)) {
    show(got, gs, sizeof gs);
    show(want, ws, sizeof ws);
    fail_at(failures, at, "expected %s, got %s", ws, gs);
  }
}

static const char *const EXPECT_OPS[] = {"equals", "le", "ge", "lt", "gt", NULL};

static int check_expectations(struct jr *r, const json_t *list, const json_t *report, struct oracle_outcome *o) {
  for (size_t i = 0; i < json_array_size(list); i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/expect", i);
    const json_t *e = json_array_get(list, i);
    static const char *const req[] = {"at", NULL};
    static const char *const opt[] = {"equals", "le", "ge", "lt", "gt", "atol", "rtol", "note", NULL};
    if (jr_keys(r, e, p, req, opt)) return -1;
    const char *at = NULL;
    double atol = 0, rtol = 0;
    if (jr_str(r, e, p, "at", 1, &at) || jr_num(r, e, p, "atol", 0, 0, INFINITY, &atol) ||
        jr_num(r, e, p, "rtol", 0, 0, INFINITY, &rtol))
      return -1;
    if (*at && *at != '/') return jr_fail(r, p, "at", "must be a JSON Pointer starting with '/' (got '%s')", at);
    int nops = 0;
    for (int k = 0; EXPECT_OPS[k]; k++) nops += json_object_get(e, EXPECT_OPS[k]) != NULL;
    if (nops != 1) return jr_fail(r, p, NULL, "must have exactly one of equals, le, ge, lt, gt");
    const json_t *got = jr_resolve(report, at);
    o->expectations++;
    const json_t *want;
    if ((want = json_object_get(e, "equals"))) {
      expect_equal(got, want, atol, rtol, at, o->failures);
      continue;
    }
    for (int k = 1; EXPECT_OPS[k]; k++) {
      if (!(want = json_object_get(e, EXPECT_OPS[k]))) continue;
      double w, g;
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, p, EXPECT_OPS[k]);
      if (!as_number(want, &w)) return jr_fail(r, q, NULL, "must be a number (got %s)", jr_type_name(want));
      if (!got || !as_number(got, &g)) {
        fail_at(o->failures, at, "expected a number, got %s", got ? jr_type_name(got) : "nothing");
        break;
      }
      int ok = k == 1 ? g <= w : k == 2 ? g >= w : k == 3 ? g < w : g > w;
      if (!ok) {
        char a[32], b[32];
        cjson_format_double(g, a);
        cjson_format_double(w, b);
        fail_at(o->failures, at, "expected %s %s, got %s", EXPECT_OPS[k][0] == 'l' ? (k == 1 ? "<=" : "<")
                : (k == 2 ? ">=" : ">"), b, a);
      }
    }
  }
  return 0;
}

int oracle_run_fixture(const char *file, const json_t *doc, struct oracle_outcome *o, struct dkb_err *err) {
  memset(o, 0, sizeof *o);
  o->failures = json_array();
  struct jr r = {.file = file, .err = err, .code = DKB_INPUT};
  static const char *const req[] = {"schema", "contract", "name", "input", NULL};
  static const char *const opt[] = {"article", "description", "expect", "expect_reject", NULL};
  const char *schema = NULL, *contract = NULL, *name = NULL, *expect_reject = NULL;
  if (jr_keys(&r, doc, "", req, opt) || jr_str(&r, doc, "", "schema", 1, &schema)) return -1;
  if (strcmp(schema, "dkb.contract/v1"))
    return jr_fail(&r, "", "schema", "must be 'dkb.contract/v1' (got '%s')", schema);
  if (jr_str(&r, doc, "", "contract", 1, &contract) || jr_str(&r, doc, "", "name", 1, &name) ||
      jr_str(&r, doc, "", "expect_reject", 0, &expect_reject))
    return -1;
  const json_t *expect = jr_get(&r, doc, "", "expect", 0, JSON_ARRAY);
  if (!expect && json_object_get(doc, "expect")) return -1;
  if (!!expect == !!expect_reject) return jr_fail(&r, "", NULL, "must have exactly one of 'expect' and 'expect_reject'");
  const struct oracle_kind *kind = oracle_kind_find(contract);
  if (!kind) return jr_fail(&r, "", "contract", "unknown contract kind '%s'", contract);
  snprintf(o->contract, sizeof o->contract, "%s", contract);
  snprintf(o->name, sizeof o->name, "%s", name);

  int rc = kind->eval(&r, json_object_get(doc, "input"), "/input", &o->report, &o->rej);
  if (rc < 0) return -1;
  o->rejected = rc == 1;
  if (expect_reject) {
    o->expectations = 1;
    if (!o->rejected)
      fail_at(o->failures, "", "expected rejection '%s', but the oracle accepted the input", expect_reject);
    else if (strcmp(o->rej.reason, expect_reject))
      fail_at(o->failures, "", "expected rejection '%s', got '%s' (%s)", expect_reject, o->rej.reason, o->rej.detail);
  } else if (o->rejected) {
    o->expectations = json_array_size(expect);
    fail_at(o->failures, "", "oracle rejected the input: %s (%s)", o->rej.reason, o->rej.detail);
  } else if (check_expectations(&r, expect, o->report, o)) {
    return -1;
  }
  o->pass = json_array_size(o->failures) == 0;
  return 0;
}
