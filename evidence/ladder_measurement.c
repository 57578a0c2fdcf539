/* ladder_measurement.c - level 6, measured (article 0x0BG, 0x0BH): correctness against the float64 oracle
 * under the call key's frozen tolerances, then a timing pass without tracing whose raw samples recompute
 * its summary (oracles/stats.h) and obey its stop rule, and counters that say what they count. */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cjson.h"
#include "oracles/stats.h"

/* A comparison {n, violations, nan, inf, max_abs, max_rel, max_ratio, worst_index}. */
static void level6_cmp(struct lctx *c, const json_t *cmp, const char *p, int passed, int is_output) {
  static const char *const req[] = {"n", "violations", "nan", "inf", "max_abs", "max_rel", NULL};
  static const char *const opt[] = {"max_ratio", "worst_index", NULL};
  if (lad_keys(c, cmp, p, req, opt)) return;
  long long n = 0, viol = 0, nan = 0, inf = 0, w;
  double x;
  LAD_READ(c, jr_int, cmp, p, "n", 0, LLONG_MAX, &n);
  LAD_READ(c, jr_int, cmp, p, "violations", 0, LLONG_MAX, &viol);
  LAD_READ(c, jr_int, cmp, p, "nan", 0, LLONG_MAX, &nan);
  LAD_READ(c, jr_int, cmp, p, "inf", 0, LLONG_MAX, &inf);
  LAD_READ(c, jr_num, cmp, p, "max_abs", 0, INFINITY, &x);
  LAD_READ(c, jr_num, cmp, p, "max_rel", 0, INFINITY, &x);
  double ratio = 0;
  const int has_ratio = json_object_get(cmp, "max_ratio") != NULL;
  if (has_ratio) LAD_READ(c, jr_num, cmp, p, "max_ratio", 0, INFINITY, &ratio);
  const json_t *wi = json_object_get(cmp, "worst_index");
  if (wi && !json_is_null(wi)) LAD_READ(c, jr_int, cmp, p, "worst_index", 0, LLONG_MAX, &w);
  if (c->bad) return;
  char q[DKB_PTR_MAX];
  if (is_output && n == 0) {
    jr_ptr_key(q, p, "n");
    lad_finding(c, "correctness_output_empty", q, "the output comparison compared 0 elements");
  }
  if (passed && (viol || nan || inf)) {
    jr_ptr_key(q, p, viol ? "violations" : nan ? "nan" : "inf");
    lad_finding(c, "correctness_passed_with_violations", q, "passed is true with %lld violations, %lld NaN, %lld Inf", viol, nan, inf);
  }
  if (has_ratio && !viol && ratio > 1) {  /* an element beyond its tolerance is a violation */
    jr_ptr_key(q, p, "max_ratio");
    lad_finding(c, "correctness_ratio_beyond_tolerance", q, "max_ratio %g > 1 with 0 violations", ratio);
  }
}

static int mutates_cache(const json_t *ck) {
  const char *phase = json_string_value(json_object_get(ck, "phase"));
  return phase && (!strcmp(phase, "append") || !strcmp(phase, "prefill") || !strcmp(phase, "mixed"));
}

/* atol and rtol, and lse_atol and lse_rtol where recorded, are the call key's frozen tolerances (0x0BG: a
 * field of the call, never adjusted after the fact). */
static void correctness_tolerances(struct lctx *c, const json_t *cr) {
  static const char *const tols[] = {"atol", "rtol", "lse_atol", "lse_rtol", NULL};
  const char *p = "/measurement/correctness";
  const json_t *frozen = json_object_get(c->call_key, "tolerances");
  for (int i = 0; tols[i]; i++) {
    const int required = i < 2;
    char q[DKB_PTR_MAX];
    double tol;
    jr_ptr_key(q, p, tols[i]);
    if (!LAD_READ(c, jr_num, cr, p, tols[i], 0, INFINITY, &tol)) {
      if (required) lad_finding(c, "correctness_tolerance_missing", q, "no %s", tols[i]);
      continue;
    }
    const json_t *f = json_object_get(frozen, tols[i]);
    if (json_is_object(frozen) && (required || f) && !(json_is_number(f) && json_number_value(f) == tol))
      lad_finding(c, "correctness_tolerance_not_frozen", q, "%s %g is not the call key's frozen %s", tols[i], tol, tols[i]);
  }
}

static void level6_correctness(struct lctx *c, const json_t *m) {
  static const char *const opt[] = {"reference", "passed", "atol", "rtol", "output", "lse", "cache", "lse_atol",
                                    "lse_rtol", "cache_rule", "conversion", NULL};
  const char *p = "/measurement/correctness";
  const json_t *cr = lad_member(c, m, "/measurement", "correctness", JSON_OBJECT);
  if (!cr) { lad_finding(c, "correctness_missing", p, "no comparison against the float64 oracle"); return; }
  if (lad_keys(c, cr, p, NULL, opt)) return;
  if (!lad_str(c, cr, p, "reference", 0)) lad_finding(c, "correctness_reference_missing", "/measurement/correctness/reference", "no reference named");
  correctness_tolerances(c, cr);
  lad_level6_conversion(c, cr);
  const char *rule;
  LAD_READ(c, jr_str, cr, p, "cache_rule", &rule);
  const json_t *passed = lad_member(c, cr, p, "passed", JSON_TRUE);
  if (c->bad) return;
  if (!passed) lad_finding(c, "correctness_result_missing", "/measurement/correctness/passed", "no pass/fail result");
  else if (!json_is_true(passed))
    lad_finding(c, "correctness_failed", "/measurement/correctness/passed", "correctness failed: timing does not count as a measurement");
  int ok = json_is_true(passed);
  const json_t *out = lad_member(c, cr, p, "output", JSON_OBJECT);
  if (!out) lad_finding(c, "correctness_output_missing", "/measurement/correctness/output", "no output comparison");
  else level6_cmp(c, out, "/measurement/correctness/output", ok, 1);
  static const char *const parts[] = {"lse", "cache"};
  static const char *const missing[] = {"correctness_lse_missing", "correctness_cache_missing"};
  for (int i = 0; i < 2 && !c->bad; i++) {
    char q[DKB_PTR_MAX];
    jr_ptr_key(q, p, parts[i]);
    const json_t *v = json_object_get(cr, parts[i]);
    if (!v) lad_finding(c, missing[i], q, "no %s comparison (or \"not_applicable\")", parts[i]);
    else if (json_is_string(v) && !strcmp(json_string_value(v), "not_applicable")) {
      if (i == 1 && mutates_cache(c->call_key))
        lad_finding(c, "correctness_cache_required", q, "phase %s mutates the cache: its state after the call must be compared",
                json_string_value(json_object_get(c->call_key, "phase")));
    } else if (json_is_object(v)) level6_cmp(c, v, q, ok, 0);
    else lad_malformed(c, q, "must be a comparison object or \"not_applicable\" (got %s)", jr_type_name(v));
  }
}

/* The raw samples of the timing pass and the statistics they give. */
struct samples {
  int present;
  double *us;
  size_t n;
  struct dkb_stats st;
};

/* The repeat call's difference from the checked call, recorded only when it did not reproduce it: the
 * same comparison shape as correctness' (element by element, atol 0 and rtol 0), read for its form.
 * Returns its within_tolerance (0 when absent or malformed). */
static int repeat_difference(struct lctx *c, const json_t *rep, int bitwise_equal) {
  static const char *const req[] = {"rule", "output", "lse", "within_tolerance", NULL};
  const char *dp = "/measurement/timing/repeat_check/difference";
  const json_t *d = lad_member(c, rep, "/measurement/timing/repeat_check", "difference", JSON_OBJECT);
  if (!d || lad_keys(c, d, dp, req, NULL)) return 0;
  lad_str(c, d, dp, "rule", 1);
  const json_t *within = lad_member(c, d, dp, "within_tolerance", JSON_TRUE);
  const json_t *o = lad_member(c, d, dp, "output", JSON_OBJECT);
  if (o) level6_cmp(c, o, "/measurement/timing/repeat_check/difference/output", 0, 1);
  const json_t *l = json_object_get(d, "lse");
  if (json_is_object(l)) level6_cmp(c, l, "/measurement/timing/repeat_check/difference/lse", 0, 0);
  else if (!json_is_string(l) || strcmp(json_string_value(l), "not_applicable"))
    lad_malformed(c, "/measurement/timing/repeat_check/difference/lse", "must be a comparison object or \"not_applicable\" (got %s)",
                  jr_type_name(l));
  if (bitwise_equal)
    lad_finding(c, "repeat_difference_contradicts", dp, "a difference is recorded, but output_bitwise_equal is true");
  return json_is_true(within);
}

/* The backend record declares a nondeterministic reduction order (launch flag "nondeterministic"). */
static int declares_nondeterministic(const struct lctx *c) {
  const json_t *flags = jr_resolve(c->b, "/dispatch/backend/launch_flags");
  for (size_t i = 0; i < json_array_size(flags); i++) {
    const char *f = json_string_value(json_array_get(flags, i));
    if (f && !strcmp(f, "nondeterministic")) return 1;
  }
  return 0;
}

/* Optional: a timed kernel that keeps state between calls (or merges nondeterministically) measured
 * something other than the checked call. The contract is the backend's: bitwise, unless its record
 * declares a nondeterministic reduction order, then the repeat call's output within the oracle's
 * tolerance (article 0x02H, 0x07G). */
static void timing_repeat_check(struct lctx *c, const json_t *t) {
  static const char *const req[] = {"rule", "contract", "after_samples", "output_bitwise_equal", NULL};
  static const char *const opt[] = {"difference", NULL};
  static const char *const CONTRACTS[] = {"bitwise", "tolerance", NULL};
  const char *rp = "/measurement/timing/repeat_check";
  const json_t *rep = lad_member(c, t, "/measurement/timing", "repeat_check", JSON_OBJECT);
  if (!rep || lad_keys(c, rep, rp, req, opt)) return;
  long long after = 0;
  int contract = 0;
  lad_str(c, rep, rp, "rule", 1);
  LAD_READ(c, jr_enum, rep, rp, "contract", CONTRACTS, &contract);
  LAD_READ(c, jr_int, rep, rp, "after_samples", 0, LLONG_MAX, &after);
  const json_t *eq = lad_member(c, rep, rp, "output_bitwise_equal", JSON_TRUE);
  if (c->bad) return;
  if (contract != declares_nondeterministic(c))
    lad_finding(c, "repeat_contract_contradicts_backend", "/measurement/timing/repeat_check/contract",
                "contract %s, but the backend record %s a nondeterministic reduction order", CONTRACTS[contract],
                contract ? "does not declare" : "declares");
  const int within = json_object_get(rep, "difference") ? repeat_difference(c, rep, eq && json_is_true(eq)) : 0;
  if (eq && json_is_false(eq) && contract == 0)
    lad_finding(c, "timing_output_not_reproduced", "/measurement/timing/repeat_check/output_bitwise_equal",
                "after %lld timed samples, a call on poisoned outputs did not reproduce the checked output", after);
  if (eq && json_is_false(eq) && contract == 1 && !within)
    lad_finding(c, "timing_output_not_reproduced", "/measurement/timing/repeat_check/difference",
                "after %lld timed samples, a call on poisoned outputs wrote an output %s the oracle's tolerance", after,
                json_object_get(rep, "difference") ? "outside" : "not compared with");
}

/* At least 20 raw samples, every one positive. -1 when the bundle is malformed. */
static int timing_samples(struct lctx *c, const json_t *t, struct samples *s) {
  const char *p = "/measurement/timing/samples_us";
  memset(s, 0, sizeof *s);
  s->present = LAD_READ(c, jr_num_array, t, "/measurement/timing", "samples_us", -INFINITY, INFINITY, -1, &s->us, &s->n);
  if (c->bad) return -1;
  size_t nonpos = 0, first_nonpos = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!(s->us[i] > 0) && !nonpos++) first_nonpos = i;
  if (!s->present) lad_finding(c, "timing_samples_missing", p, "no raw samples: a summary alone is not a measurement");
  else if (s->n < 20) lad_finding(c, "timing_too_few_samples", p, "%zu raw sample%s, at least 20 required", s->n, s->n == 1 ? "" : "s");
  if (nonpos) {
    char q[DKB_PTR_MAX];
    jr_ptr_idx(q, p, first_nonpos);
    lad_finding(c, "timing_sample_not_positive", q, "%zu sample%s <= 0 (first: %g)", nonpos, nonpos == 1 ? "" : "s", s->us[first_nonpos]);
  }
  dkb_stats_compute(s->us, s->n, &s->st);
  return 0;
}

/* Each summary statistic recomputes from the raw samples. */
static void timing_summary(struct lctx *c, const json_t *t, const struct samples *s) {
  static const char *const fields[] = {"count", "min", "median", "p95", "max", "mean", "stdev", "rel_stdev", NULL};
  const char *p = "/measurement/timing/summary";
  const json_t *sum = lad_member(c, t, "/measurement/timing", "summary", JSON_OBJECT);
  if (!sum) { lad_finding(c, "timing_summary_missing", p, "no summary of the raw samples"); return; }
  if (lad_keys(c, sum, p, fields, NULL) || !s->present) return;
  const struct dkb_stats *st = &s->st;
  const double want[] = {(double)st->count, st->min, st->median, st->p95, st->max, st->mean, st->stdev, st->rel_stdev};
  for (int i = 0; fields[i] && !c->bad; i++) {
    char q[DKB_PTR_MAX];
    jr_ptr_key(q, p, fields[i]);
    double got;
    long long cnt = 0;
    if (i == 0 && LAD_READ(c, jr_int, sum, p, "count", 0, LLONG_MAX, &cnt)) got = (double)cnt;
    else if (i == 0 || !LAD_READ(c, jr_num, sum, p, fields[i], -INFINITY, INFINITY, &got)) break;
    /* the writer uses the same function and round-trip floats: only last-bit differences from other
     * summation orders are tolerated */
    if (!(fabs(got - want[i]) <= 1e-9 * fmax(fabs(got), fabs(want[i])) + 1e-12)) {
      char g[32], w[32];
      cjson_format_double(got, g);
      cjson_format_double(want[i], w);
      lad_finding(c, "timing_summary_mismatch", q, "%s is %s, the raw samples give %s", fields[i], g, w);
    }
  }
}

/* The stop rule as it was applied. */
struct stop_rule {
  long long lo, hi;          /* min_samples, max_samples */
  double target;             /* max_rel_stdev, -1 when null */
  int met;
};

/* The writer says why it stopped: that reason, checked against the raw samples and its limits. */
static void timing_stopped_by(struct lctx *c, const json_t *stop, const struct stop_rule *r, const struct samples *s) {
  const char *sp = "/measurement/timing/stop_rule";
  const char *by = lad_str(c, stop, sp, "stopped_by", 1);
  double min_t = 0, max_t = INFINITY, el = 0, sum_s = 0;
  LAD_READ(c, jr_num, stop, sp, "min_time_s", 0, INFINITY, &min_t);
  LAD_READ(c, jr_num, stop, sp, "max_time_s", 0, INFINITY, &max_t);
  LAD_READ(c, jr_num, stop, sp, "elapsed_s", 0, INFINITY, &el);
  for (size_t i = 0; i < s->n; i++) sum_s += s->us[i] * 1e-6;
  if (c->bad || !by) return;
  const char *v = "timing_stop_rule_violated";
  if (!strcmp(by, "noise_reached")) {
    if (!r->met) lad_finding(c, v, "/measurement/timing/stop_rule/met", "stopped_by noise_reached but met is false");
    else if (sum_s < min_t * (1 - 1e-9))
      lad_finding(c, v, "/measurement/timing/stop_rule/min_time_s", "stopped on noise after %.6g s of samples, before min_time_s %g", sum_s, min_t);
  } else if (!strcmp(by, "noise_stable")) {
    if (r->met) lad_finding(c, v, "/measurement/timing/stop_rule/met", "stopped_by noise_stable means the target was not met");
    else if (sum_s < min_t * (1 - 1e-9))
      lad_finding(c, v, "/measurement/timing/stop_rule/min_time_s",
                  "stopped on stable noise after %.6g s of samples, before min_time_s %g", sum_s, min_t);
  } else if (!strcmp(by, "max_time")) {
    if (r->met || !(el >= max_t))
      lad_finding(c, v, "/measurement/timing/stop_rule/elapsed_s", "stopped_by max_time after %.6g s, max_time_s is %g", el, max_t);
  } else if (!strcmp(by, "max_samples")) {
    if ((long long)s->n != r->hi)
      lad_finding(c, v, "/measurement/timing/stop_rule/max_samples", "stopped_by max_samples at %zu of %lld", s->n, r->hi);
  } else {
    lad_finding(c, v, "/measurement/timing/stop_rule/stopped_by", "unknown stop reason '%s'", by);
  }
}

/* The sample count and spread obey the stated stop rule. */
static void timing_stop_rule(struct lctx *c, const json_t *t, const struct samples *s) {
  static const char *const req[] = {"rule", "min_samples", "max_samples", "max_rel_stdev", "met", NULL};
  static const char *const opt[] = {"stopped_by", "min_time_s", "max_time_s", "elapsed_s", NULL};
  const char *sp = "/measurement/timing/stop_rule";
  const json_t *stop = lad_member(c, t, "/measurement/timing", "stop_rule", JSON_OBJECT);
  if (!stop) { lad_finding(c, "timing_stop_rule_missing", sp, "no stop rule"); return; }
  if (lad_keys(c, stop, sp, req, opt)) return;
  struct stop_rule r = {0, 0, -1, 0};
  lad_str(c, stop, sp, "rule", 1);
  LAD_READ(c, jr_int, stop, sp, "min_samples", 1, LLONG_MAX, &r.lo);
  LAD_READ(c, jr_int, stop, sp, "max_samples", 1, LLONG_MAX, &r.hi);
  if (!json_is_null(json_object_get(stop, "max_rel_stdev"))) LAD_READ(c, jr_num, stop, sp, "max_rel_stdev", 0, INFINITY, &r.target);
  r.met = json_is_true(lad_member(c, stop, sp, "met", JSON_TRUE));
  if (c->bad || !s->present) return;
  const long long n = (long long)s->n;
  if (n < r.lo || n > r.hi)
    lad_finding(c, "timing_stop_rule_violated", sp, "%zu samples outside [min_samples %lld, max_samples %lld]", s->n, r.lo, r.hi);
  else if (r.met && r.target >= 0 && s->st.rel_stdev > r.target)
    lad_finding(c, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met", "met is true but rel_stdev %g > max_rel_stdev %g",
                s->st.rel_stdev, r.target);
  else if (json_object_get(stop, "stopped_by")) timing_stopped_by(c, stop, &r, s);
  else if (!r.met && n != r.hi)
    lad_finding(c, "timing_stop_rule_violated", "/measurement/timing/stop_rule/met",
                "met is false but sampling stopped at %zu before max_samples %lld", s->n, r.hi);
}

static void level6_timing(struct lctx *c, const json_t *m) {
  static const char *const opt[] = {"tracing", "method", "warmup", "samples_us", "summary", "stop_rule", "l2_flush",
                                    "clocks_before", "clocks_after", "repeat_check", NULL};
  const char *p = "/measurement/timing";
  const json_t *t = lad_member(c, m, "/measurement", "timing", JSON_OBJECT);
  if (!t) { lad_finding(c, "timing_missing", p, "no timing pass"); return; }
  if (lad_keys(c, t, p, NULL, opt)) return;
  const json_t *tracing = lad_member(c, t, p, "tracing", JSON_TRUE);
  if (!tracing || json_is_true(tracing))
    lad_finding(c, "timing_under_tracing", "/measurement/timing/tracing",
                tracing ? "the timing pass ran with tracing enabled" : "the timing pass does not say that tracing was off");
  if (!lad_str(c, t, p, "method", 0)) lad_finding(c, "timing_method_missing", "/measurement/timing/method", "no timing method");
  long long warm = 0;
  if (!LAD_READ(c, jr_int, t, p, "warmup", 0, LLONG_MAX, &warm) || warm == 0)
    lad_finding(c, "timing_warmup_missing", "/measurement/timing/warmup", "no warm-up iterations");
  lad_member(c, t, p, "l2_flush", JSON_TRUE);
  lad_member(c, t, p, "clocks_before", JSON_OBJECT);
  lad_member(c, t, p, "clocks_after", JSON_OBJECT);
  timing_repeat_check(c, t);
  struct samples s;
  if (timing_samples(c, t, &s)) return;
  timing_summary(c, t, &s);
  /* the repeat call came after every timed sample */
  const json_t *after = json_object_get(json_object_get(t, "repeat_check"), "after_samples");
  if (s.present && json_is_integer(after) && (size_t)json_integer_value(after) != s.n)
    lad_finding(c, "timing_summary_mismatch", "/measurement/timing/repeat_check/after_samples",
                "the repeat check came after %lld samples, the pass has %zu", (long long)json_integer_value(after), s.n);
  timing_stop_rule(c, t, &s);
  free(s.us);
}

void lad_level6_measurement(struct lctx *c) {
  static const char *const opt[] = {"correctness", "timing", "counters", "counters_pass", NULL};
  static const char *const creq[] = {"name", "value", NULL};
  static const char *const copt[] = {"unit", "numerator", "denominator", "scope", "replay", NULL};
  static const char *const defs[] = {"unit", "numerator", "denominator", "scope", NULL};
  const json_t *m = lad_member(c, c->b, "", "measurement", JSON_OBJECT);
  if (!m) { lad_finding(c, "measurement_missing", "/measurement", "no correctness and timing"); return; }
  if (lad_keys(c, m, "/measurement", NULL, opt)) return;
  level6_correctness(c, m);
  level6_timing(c, m);
  const json_t *cs = lad_member(c, m, "/measurement", "counters", JSON_ARRAY);
  for (size_t i = 0; cs && i < json_array_size(cs) && !c->bad; i++) {
    char cp[DKB_PTR_MAX];
    jr_ptr_idx(cp, "/measurement/counters", i);
    const json_t *ct = json_array_get(cs, i);
    if (lad_keys(c, ct, cp, creq, copt)) return;
    const char *name = lad_str(c, ct, cp, "name", 1);
    double value;
    LAD_READ(c, jr_num, ct, cp, "value", -INFINITY, INFINITY, &value);
    lad_str(c, ct, cp, "replay", 0);
    for (int k = 0; defs[k] && !c->bad; k++)
      if (!lad_str(c, ct, cp, defs[k], 0)) {
        char q[DKB_PTR_MAX];
        jr_ptr_key(q, cp, defs[k]);
        lad_finding(c, "counter_definition_incomplete", q, "counter '%s' has no %s", name, defs[k]);
      }
  }
}

