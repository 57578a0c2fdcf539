/* run_evidence.c - the bundle sections of one run (see run_evidence.h): plan, dispatch, execution,
 * correctness, timing and counters; levels 1-3 (source, chain, what is loaded) are run_evidence_source.c's. */
#include "harness/run_evidence.h"
#include "evidence/bundle.h"
#include "kernels/decode.h"
#include "lib/buf.h"
#include "oracles/dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan ----------------------------------------------------------------------------------- */

static const char *const WS_KINDS[] = {NULL, "scratch", "zero_first", "persistent"};
static const char *const LSE_BASES[] = {NULL, "natural", "base2"};
static const char *const EMPTY_ROWS[] = {NULL, "zero_neginf", "zero_posinf", "nan"};
static const char *const ROLES[] = {"producer", "combine", "fused", "append", "other"};
static const char *const MATCHES[] = {"symbol", "function", "prefix"};

int run_evidence_plan_check(const struct dkb_plan *p, int graph, char *why, size_t n) {
  if (p->splits < DKB_SPLITS_UNREPORTED)
    return snprintf(why, n, "plan splits=%d (must be >= 1, or DKB_SPLITS_UNREPORTED)", (int)p->splits), -1;
  if (p->n_workspaces < 0 || p->n_workspaces > DKB_MAX_WORKSPACES)
    return snprintf(why, n, "plan lists %d workspaces (0 to %d)", (int)p->n_workspaces, DKB_MAX_WORKSPACES), -1;
  for (int i = 0; i < p->n_workspaces; i++) {
    const struct dkb_workspace *w = &p->ws[i];
    if (w->kind < DKB_WS_SCRATCH || w->kind > DKB_WS_PERSISTENT)
      return snprintf(why, n, "workspace '%.32s' has kind %d, which dkb does not know", w->name, (int)w->kind), -1;
    if (w->alignment && (w->alignment & (w->alignment - 1)))
      return snprintf(why, n, "workspace '%.32s' asks for alignment %u, not a power of two", w->name, w->alignment), -1;
    if (w->alignment > 256)
      return snprintf(why, n, "workspace '%.32s' asks for alignment %u; dkb aligns to 256", w->name, w->alignment), -1;
  }
  if (p->lse_base != DKB_LSE_NATURAL && p->lse_base != DKB_LSE_BASE2)
    return snprintf(why, n, "plan lse_base %d, which dkb does not know", (int)p->lse_base), -1;
  if (p->empty_row < DKB_EMPTY_ZERO_NEGINF || p->empty_row > DKB_EMPTY_NAN)
    return snprintf(why, n, "plan empty_row %d, which dkb does not know", (int)p->empty_row), -1;
  if (p->launch_flags & ~(unsigned)(DKB_LAUNCH_READS_HOST | DKB_LAUNCH_SYNCS | DKB_LAUNCH_NONDETERMINISTIC))
    return snprintf(why, n, "plan launch_flags 0x%x has bits dkb does not know", p->launch_flags), -1;
  if (graph && (p->launch_flags & (DKB_LAUNCH_READS_HOST | DKB_LAUNCH_SYNCS)))
    return snprintf(why, n, "the call is in graph mode, but the launch %s", p->launch_flags & DKB_LAUNCH_SYNCS
                                                                                 ? "synchronizes" : "reads host memory"), -1;
  if (p->n_kernels < 0 || p->n_kernels > DKB_MAX_KERNELS)
    return snprintf(why, n, "plan declares %d kernels (0 to %d)", (int)p->n_kernels, DKB_MAX_KERNELS), -1;
  for (int i = 0; i < p->n_kernels; i++) {
    const struct dkb_kernel_decl *k = &p->kernels[i];
    if (!memchr(k->name, '\0', sizeof k->name) || !k->name[0]) return snprintf(why, n, "kernel %d has no name", i), -1;
    if (k->role < 0 || k->role > DKB_KERNEL_OTHER) return snprintf(why, n, "kernel %s has role %d", k->name, (int)k->role), -1;
    if (k->match < 0 || k->match > DKB_MATCH_PREFIX)
      return snprintf(why, n, "kernel %s has match kind %d, which dkb does not know", k->name, (int)k->match), -1;
  }
  if (!p->plan_json) return snprintf(why, n, "plan without a plan document"), -1;
  json_error_t je;
  json_t *doc = json_loads(p->plan_json, JSON_REJECT_DUPLICATES, &je);
  int ok = json_is_object(doc);
  json_decref(doc);
  if (!ok) return snprintf(why, n, "its plan document is not a JSON object%s%s", doc ? "" : ": ", doc ? "" : je.text), -1;
  return 0;
}

long long run_evidence_workspace_bytes(const struct dkb_plan *plan) {
  long long n = 0;
  for (int i = 0; i < plan->n_workspaces; i++)
    if (plan->ws[i].kind != DKB_WS_PERSISTENT) n += (long long)plan->ws[i].bytes;
  return n;
}

static json_t *backend_json(const struct backend_info *sel, const struct dkb_plan *p) {
  json_t *ws = json_array(), *ks = json_array(), *flags = json_array();
  for (int i = 0; i < p->n_workspaces; i++)
    json_array_append_new(ws, json_pack("{s:s,s:I,s:s}", "name", p->ws[i].name, "bytes", (json_int_t)p->ws[i].bytes, "kind",
                                        WS_KINDS[p->ws[i].kind]));
  for (int i = 0; i < p->n_kernels; i++)
    json_array_append_new(ks, json_pack("{s:s,s:s,s:s,s:b}", "name", p->kernels[i].name, "role", ROLES[p->kernels[i].role],
                                        "match", MATCHES[p->kernels[i].match], "required", p->kernels[i].required != 0));
  if (p->launch_flags & DKB_LAUNCH_READS_HOST) json_array_append_new(flags, json_string("reads_host"));
  if (p->launch_flags & DKB_LAUNCH_SYNCS) json_array_append_new(flags, json_string("syncs"));
  if (p->launch_flags & DKB_LAUNCH_NONDETERMINISTIC) json_array_append_new(flags, json_string("nondeterministic"));
  json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:o,s:o,s:{s:s,s:s},s:o}", "name", sel->t->name, "version", sel->t->version,
                        "source", sel->lib ? "plugin" : "builtin", "work_items", (int)p->work_items, "workspaces", ws,
                        "kernels", ks, "conventions", "lse_base", LSE_BASES[p->lse_base], "empty_row",
                        EMPTY_ROWS[p->empty_row], "launch_flags", flags);
  if (sel->lib)
    json_object_set_new(o, "plugin", json_pack("{s:s,s:s,s:s,s:i}", "name", sel->lib->table->name, "version",
                                               sel->lib->table->version, "sha256", sel->lib->sha256, "abi_version",
                                               (int)sel->lib->table->abi_version));
  return o;
}

int run_evidence_dispatch(json_t *bundle, const char *dir, const struct decode_call *c, const char call_sha[65],
                          const struct backend_admission *ba, const struct backend_info *sel, const struct dkb_plan *plan,
                          struct dkb_err *err) {
  const struct admission *adm = &ba->a;
  json_t *arec = admission_to_json(adm, err);
  if (!arec) return -1;
  json_t *diag = NULL;
  int rc = bundle_add_json_artifact(bundle, dir, "admission", arec, &diag, err);
  json_decref(arec);
  if (rc) return -1;
  json_t *cands = json_array();
  for (size_t i = 0; i < adm->n; i++) {
    const struct admission_candidate *ca = &adm->cand[i];
    json_t *rs = json_array();
    const struct admit_reasons *why = ca->in_domain ? &ca->reasons : &ca->domain;
    for (size_t k = 0; k < why->n; k++) json_array_append_new(rs, json_string(why->text[k]));
    json_array_append_new(cands, json_pack("{s:s,s:i,s:b,s:b,s:o}", "backend", ca->backend->name, "priority",
                                           ca->backend->priority, "in_domain", ca->in_domain, "eligible", ca->eligible,
                                           "reasons", rs));
  }
  const char *outcome = adm->selected >= 0 ? "selected" : adm->outcome == ADM_FORCED_ERROR ? "rejected" : "no_eligible";
  json_t *disp = json_pack("{s:o,s:s,s:s,s:o,s:s,s:o,s:o}", "call_key", decode_call_key(c), "call_key_sha256", call_sha,
                           "request", c->backend, "candidates", cands, "outcome", outcome, "selected",
                           sel ? json_string(sel->t->name) : json_null(), "diagnostic", diag);
  json_object_set_new(bundle, "dispatch", disp);
  if (!sel || !plan) return 0;
  const long long ws = run_evidence_workspace_bytes(plan);
  /* null: the backend does not expose its split (0x0BE records it "when exposed"), not a split of 1 */
  json_t *split = plan->splits == DKB_SPLITS_UNREPORTED ? json_null() : json_integer(plan->splits);
  json_object_set_new(disp, "split_count", json_incref(split));
  json_object_set_new(disp, "workspace_bytes", json_integer(ws));
  json_object_set_new(disp, "plan", json_loads(plan->plan_json, JSON_REJECT_DUPLICATES, NULL));
  json_object_set_new(disp, "backend", backend_json(sel, plan));
  json_t *key = json_object_get(disp, "call_key");
  json_t *pk = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:s,s:s,s:O,s:b,s:s,s:o,s:I}", "backend", sel->t->name,
                         "cache_layout", json_string_value(json_object_get(key, "cache_layout")), "H_q", c->H_q, "H_kv",
                         c->H_kv, "d_qk", c->dk, "d_v", c->dv, "q_dtype", dkb_dtype_name(c->dtype), "kv_dtype",
                         dkb_dtype_name(c->dtype), "page_size", json_object_get(key, "page_size"), "graph_mode", c->graph,
                         "workspace_abi", c->abi == DKB_ABI_MLU ? "mlu" : "lse_o", "split_count", split,
                         "workspace_bytes", (json_int_t)ws);
  json_object_set_new(disp, "plan_key", pk);
  if (plan->n_kernels) {
    json_t *req = json_array();
    for (int i = 0; i < plan->n_kernels; i++)
      if (plan->kernels[i].required) json_array_append_new(req, json_string(plan->kernels[i].name));
    json_object_set_new(disp, "required_kernels", req);
  }
  return bundle_set_digest(disp, "plan_key", "plan_key_sha256", err);
}

/* ---- execution ---------------------------------------------------------------------------------- */

static const char *short_name(const char *demangled, char *buf, size_t n) {
  /* "void (anonymous namespace)::decode_split_kv_producer<...>(...)" -> "decode_split_kv_producer" */
  const char *p = strstr(demangled, "::");
  p = p ? p + 2 : demangled;
  const char *q = p;
  while (*q && *q != '<' && *q != '(') q++;
  snprintf(buf, n, "%.*s", (int)(q - p), p);
  return buf;
}

int run_evidence_execution(json_t *bundle, const char *dir, struct dkb_trace *tr, const char *range, char *summary,
                           size_t summary_n, struct dkb_err *err) {
  struct dkb_buf tb;
  dkb_buf_init(&tb);
  json_t *tref = NULL;
  if (dkb_trace_jsonl(tr, &tb, err) || bundle_add_artifact(bundle, dir, "trace", "jsonl", tb.p, tb.n, &tref, err)) {
    dkb_buf_release(&tb);
    return -1;
  }
  dkb_buf_release(&tb);
  json_t *ks = json_array();
  summary[0] = '\0';
  for (size_t i = 0; i < tr->nsymbols; i++) {
    const struct dkb_trace_symbol *s = &tr->symbols[i];
    if (!s->launches_in_range) continue;
    const struct dkb_trace_kernel *k = s->first;
    json_array_append_new(ks, json_pack("{s:s,s:s,s:I,s:[i,i,i],s:[i,i,i],s:i,s:i}", "symbol", s->name, "demangled",
                                        s->demangled, "launches", (json_int_t)s->launches_in_range, "grid", k->grid[0],
                                        k->grid[1], k->grid[2], "block", k->block[0], k->block[1], k->block[2],
                                        "registers", k->registers, "shared_bytes", k->static_smem + k->dynamic_smem));
    char sn[96];
    size_t len = strlen(summary);
    snprintf(summary + len, summary_n - len, "%s%s x%zu", len ? ", " : "", short_name(s->demangled, sn, sizeof sn),
             s->launches_in_range);
  }
  char ver[32];
  snprintf(ver, sizeof ver, "%u", tr->cupti_version);
  json_object_set_new(bundle, "execution",
                      json_pack("{s:o,s:s,s:i,s:o,s:I,s:{s:s,s:s}}", "trace", tref, "nvtx_range", range,
                                "external_correlation_id", 1, "kernels", ks, "dropped_records", (json_int_t)tr->dropped,
                                "profiler", "name", "CUPTI", "version", ver));
  return 0;
}

/* ---- correctness -------------------------------------------------------------------------------- */

struct typed { enum dkb_dtype t; const void *p; };
static double get_typed(const void *base, size_t i) {
  const struct typed *x = base;
  return dkb_load(x->t, x->p, i);
}

static json_t *cmp_json(const struct dkb_cmp *c) {
  return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:o}", "n", (json_int_t)c->n, "violations", (json_int_t)c->violations,
                   "nan", (json_int_t)c->nan_got, "inf", (json_int_t)c->inf_got, "max_abs", c->max_abs, "max_rel",
                   c->max_rel, "max_ratio", c->max_ratio, "worst_index", c->n ? json_integer((json_int_t)c->worst) : json_null());
}

/* O and LSE in dkb's conventions: a base-2 LSE times ln 2, and a backend's value for an empty row (the
 * oracle's LSE is -inf there) replaced by O = 0, LSE = -inf. NULL copies when nothing needs converting;
 * conv (or NULL) records what was converted. */
static void convert(const struct run_check *k, void **o_out, float **lse_out, json_t *conv) {
  const struct decode_call *c = k->c;
  const size_t rows = (size_t)c->B * c->C * c->H_q, es = dkb_dtype_bytes((enum dkb_dtype)c->dtype);
  *o_out = NULL;
  *lse_out = NULL;
  size_t scaled = 0, emptied = 0;
  if (k->lse_gpu && k->plan->lse_base == DKB_LSE_BASE2) {
    *lse_out = DKB_MALLOC(rows * sizeof(float));
    for (size_t i = 0; i < rows; i++) (*lse_out)[i] = (float)((double)k->lse_gpu[i] * 0.69314718055994530942), scaled++;
  }
  if (k->plan->empty_row != DKB_EMPTY_ZERO_NEGINF) {
    for (size_t i = 0; i < rows; i++) {
      if (k->lse_ref[i] != -INFINITY) continue;
      if (!*o_out) {
        *o_out = DKB_MALLOC(rows * (size_t)c->dv * es);
        memcpy(*o_out, k->o_gpu, rows * (size_t)c->dv * es);
      }
      for (int x = 0; x < c->dv; x++) dkb_store((enum dkb_dtype)c->dtype, *o_out, i * (size_t)c->dv + (size_t)x, 0.0);
      if (k->lse_gpu) {
        if (!*lse_out) {
          *lse_out = DKB_MALLOC(rows * sizeof(float));
          memcpy(*lse_out, k->lse_gpu, rows * sizeof(float));
        }
        (*lse_out)[i] = -INFINITY;
      }
      emptied++;
    }
  }
  if (!conv) return;
  json_object_set_new(conv, "lse_base", json_string(LSE_BASES[k->plan->lse_base]));
  json_object_set_new(conv, "empty_row", json_string(EMPTY_ROWS[k->plan->empty_row]));
  json_object_set_new(conv, "lse_rows_rescaled", json_integer((json_int_t)scaled));
  json_object_set_new(conv, "empty_rows_replaced", json_integer((json_int_t)emptied));
  json_object_set_new(conv, "rule", json_string("a base-2 LSE is multiplied by ln 2; where the oracle's row has no visible key, the backend's empty-row value is replaced by O = 0, LSE = -inf (0x02C); the raw outputs are what the repeat check compares"));
}

/* The call's O, and LSE where it has one, converted, against the float64 oracle under the call key's
 * tolerances (cl zeroed without LSE); conv as convert's. Returns whether both hold. */
static int compare_outputs(const struct run_check *k, json_t *conv, struct dkb_cmp *co, struct dkb_cmp *cl) {
  const struct decode_call *c = k->c;
  const size_t rows = (size_t)c->B * c->C * c->H_q;
  void *o_conv;
  float *lse_conv;
  convert(k, &o_conv, &lse_conv, conv);
  struct typed got = {(enum dkb_dtype)c->dtype, o_conv ? o_conv : k->o_gpu};
  const float *lse = lse_conv ? lse_conv : k->lse_gpu;
  dkb_compare(&got, get_typed, k->o_ref, dkb_cmp_get_f64, rows * (size_t)c->dv, c->atol, c->rtol, co);
  memset(cl, 0, sizeof *cl);
  if (lse) dkb_compare(lse, dkb_cmp_get_f32, k->lse_ref, dkb_cmp_get_f64, rows, c->lse_atol, c->lse_rtol, cl);
  free(o_conv);
  free(lse_conv);
  return co->pass && (!lse || cl->pass);
}

json_t *run_evidence_correctness(const struct run_check *k, struct run_check_result *out) {
  const struct decode_call *c = k->c;
  const struct decode_inputs *in = k->in;
  memset(out, 0, sizeof *out);
  json_t *conv = json_object();
  struct dkb_cmp co, cl, cc;
  int passed = compare_outputs(k, conv, &co, &cl);
  json_t *corr = json_pack("{s:s,s:f,s:f,s:o}", "reference", "float64 oracle (harness/decode_ref.c over oracles/)", "atol",
                           c->atol, "rtol", c->rtol, "output", cmp_json(&co));
  /* dkb's own backends write dkb's conventions: only another backend's conversions are recorded */
  if (k->plan->lse_base != DKB_LSE_NATURAL || k->plan->empty_row != DKB_EMPTY_ZERO_NEGINF)
    json_object_set_new(corr, "conversion", conv);
  else
    json_decref(conv);
  if (k->lse_gpu) {
    json_object_set_new(corr, "lse", cmp_json(&cl));
    json_object_set_new(corr, "lse_atol", json_real(c->lse_atol));
    json_object_set_new(corr, "lse_rtol", json_real(c->lse_rtol));
    out->lse = cl;
    out->has_lse = 1;
  } else {
    json_object_set_new(corr, "lse", json_string("not_applicable"));
  }
  if (c->phase == PHASE_APPEND) {
    /* Exact: the cache after the call must equal the pre-call cache with the new rows written. */
    void *k_exp = inputs_expected_cache(c, in, 0), *v_exp = inputs_expected_cache(c, in, 1);
    /* poison is NaN on both sides outside the visible rows: compare bytes, count mismatching elements */
    size_t es = (size_t)in->esize, mk = 0, mv = 0;
    for (size_t i = 0; i < in->k_bytes / es; i++) mk += memcmp((const char *)k->k_after + i * es, (char *)k_exp + i * es, es) != 0;
    for (size_t i = 0; i < in->v_bytes / es; i++) mv += memcmp((const char *)k->v_after + i * es, (char *)v_exp + i * es, es) != 0;
    free(k_exp);
    free(v_exp);
    memset(&cc, 0, sizeof cc);
    cc.n = (in->k_bytes + in->v_bytes) / es;
    cc.violations = mk + mv;
    cc.pass = cc.violations == 0;
    json_object_set_new(corr, "cache", cmp_json(&cc));
    json_object_set_new(corr, "cache_rule", json_string("bitwise: every K and V element equals the pre-call cache with the new rows written through the address translator"));
    passed &= cc.pass;
    out->cache = cc;
    out->has_cache = 1;
  } else {
    json_object_set_new(corr, "cache", json_string("not_applicable"));
  }
  json_object_set_new(corr, "passed", json_boolean(passed));
  out->passed = passed;
  out->out = co;
  return corr;
}

void run_check_failure_text(const struct run_check_result *r, double atol, double rtol, double lse_atol, double lse_rtol,
                            char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
#define PART(...) (at += (size_t)snprintf(buf + at, at < n ? n - at : 0, __VA_ARGS__), at = at < n ? at : n - 1)
  if (!r->out.pass)
    PART("O: %zu of %zu elements outside atol %.3g + rtol %.3g*|ref| (max |err| %.3g, %zu NaN)", r->out.violations,
         r->out.n, atol, rtol, r->out.max_abs, r->out.nan_got);
  if (r->has_lse && !r->lse.pass)
    PART("%sLSE: %zu of %zu rows outside atol %.3g + rtol %.3g*|ref| (max |err| %.3g, %zu NaN)", at ? "; " : "",
         r->lse.violations, r->lse.n, lse_atol, lse_rtol, r->lse.max_abs, r->lse.nan_got);
  if (r->has_cache && !r->cache.pass)
    PART("%scache: %zu of %zu K/V elements differ from the expected cache", at ? "; " : "", r->cache.violations, r->cache.n);
#undef PART
}

json_t *run_evidence_repeat_difference(const struct run_check *k, const void *o_again, const float *lse_again,
                                       char *summary, size_t n) {
  const struct decode_call *c = k->c;
  const size_t rows = (size_t)c->B * c->C * c->H_q;
  struct typed again = {(enum dkb_dtype)c->dtype, o_again}, first = {(enum dkb_dtype)c->dtype, k->o_gpu};
  struct dkb_cmp co, cl;
  dkb_compare(&again, get_typed, &first, get_typed, rows * (size_t)c->dv, 0, 0, &co);
  json_t *d = json_pack("{s:s,s:o}", "rule",
                        "the repeat call's raw O and LSE against the checked call's, element by element with atol 0 and "
                        "rtol 0; within_tolerance: the repeat call's O and LSE against the float64 oracle under the call key's tolerances",
                        "output", cmp_json(&co));
  memset(&cl, 0, sizeof cl);
  if (lse_again) {
    dkb_compare(lse_again, dkb_cmp_get_f32, k->lse_gpu, dkb_cmp_get_f32, rows, 0, 0, &cl);
    json_object_set_new(d, "lse", cmp_json(&cl));
  } else {
    json_object_set_new(d, "lse", json_string("not_applicable"));
  }
  struct run_check rk = *k;
  rk.o_gpu = o_again;
  rk.lse_gpu = lse_again;
  struct dkb_cmp ro, rl;
  const int within = compare_outputs(&rk, NULL, &ro, &rl);
  json_object_set_new(d, "within_tolerance", json_boolean(within));
  char lse_part[96] = "";
  if (lse_again) snprintf(lse_part, sizeof lse_part, ", %zu of %zu LSE rows (max |diff| %.3g)", cl.violations, cl.n, cl.max_abs);
  snprintf(summary, n, "%zu of %zu O elements differ (max |diff| %.3g)%s; the repeat call's output is %s the tolerance",
           co.violations, co.n, co.max_abs, lse_part, within ? "within" : "outside");
  return d;
}

json_t *run_evidence_repeat_check(const struct run_check *k, const void *o_again, const float *lse_again, size_t o_bytes,
                                  size_t lse_bytes, size_t after, int *same, int *held, char *summary, size_t n) {
  const int tolerance = (k->plan->launch_flags & DKB_LAUNCH_NONDETERMINISTIC) != 0;
  *same = !memcmp(o_again, k->o_gpu, o_bytes) && (!lse_bytes || !memcmp(lse_again, k->lse_gpu, lse_bytes));
  json_t *rep = json_pack("{s:s,s:s,s:I,s:b}", "rule",
                          tolerance ? "outputs poisoned, the call run once more after the timed samples, its O and LSE held to "
                                      "the float64 oracle under the call key's tolerances (the backend declares a "
                                      "nondeterministic reduction order)"
                                    : "outputs poisoned, the call run once more after the timed samples, O and LSE compared "
                                      "bitwise with the checked call",
                          "contract", tolerance ? "tolerance" : "bitwise", "after_samples", (json_int_t)after,
                          "output_bitwise_equal", *same);
  *held = *same;
  summary[0] = '\0';
  if (!*same) {
    json_t *d = run_evidence_repeat_difference(k, o_again, lse_again, summary, n);
    *held = tolerance && json_is_true(json_object_get(d, "within_tolerance"));
    json_object_set_new(rep, "difference", d);
  }
  return rep;
}

/* ---- timing and counters ------------------------------------------------------------------------ */

json_t *run_evidence_timing(const struct dkb_timing *tm, const struct dkb_timing_opts *to, json_t *before, json_t *after,
                            int nvml_loaded, struct dkb_err *err) {
  json_t *tj = dkb_timing_json(tm, err);  /* refuses samples that do not summarize */
  if (!tj) {
    json_decref(before);
    json_decref(after);
    return NULL;
  }
  json_decref(tj);
  json_t *samples = json_array();
  for (size_t i = 0; i < tm->n; i++) json_array_append_new(samples, json_real(tm->samples_us[i]));
  json_t *timing = json_pack(
      "{s:b,s:s,s:i,s:o,s:o,s:{s:s,s:s,s:I,s:I,s:f,s:b,s:f,s:f,s:f},s:b}", "tracing", 0, "method",
      to->graph ? "cudaEvent pair around each CUDA graph replay, enqueued behind a stream-holding spin kernel and released together (GPU time, not host launch time), synchronized"
                : "cudaEvent pair around each call's launches, enqueued behind a stream-holding spin kernel and released together (GPU time, not host launch time), synchronized",
      "warmup", to->warmup, "samples_us", samples, "summary", dkb_stats_json(&tm->stats), "stop_rule", "rule",
      "nvbench stdrel: relative stdev target after min samples and min time", "stopped_by", dkb_timing_stop_name(tm->stop),
      "min_samples", (json_int_t)to->min_samples, "max_samples", (json_int_t)to->max_samples, "max_rel_stdev", to->max_noise,
      "met", tm->stop == DKB_STOP_NOISE_REACHED, "min_time_s", to->min_time_s, "max_time_s", to->max_time_s, "elapsed_s",
      tm->wall_s, "l2_flush", to->cold);
  const char *why = nvml_loaded ? "nvml sample failed" : "libnvidia-ml.so.1 not loaded";
  json_object_set_new(timing, "clocks_before", before ? before : json_pack("{s:s}", "not_reported", why));
  json_object_set_new(timing, "clocks_after", after ? after : json_pack("{s:s}", "not_reported", why));
  return timing;
}

void run_evidence_counters(json_t *meas, const struct dkb_counters *cn, int cold) {
  json_t *cp = dkb_counters_json(cn);
  json_object_set_new(cp, "l2_before_pass", json_string(cold ? "flushed: a read of 2x L2 through L2, as before each timed sample (--cold)"
                                                             : "as the call before it left it, as for the timed samples"));
  json_object_set_new(meas, "counters_pass", cp);
  if (!cn->available) return;
  json_t *arr = json_array();
  for (int i = 0; i < DKB_COUNTERS_N; i++)
    json_array_append_new(arr, json_pack("{s:s,s:f,s:s,s:s,s:s,s:s,s:s}", "name", cn->v[i].name, "value", cn->v[i].value,
                                         "unit", cn->v[i].unit, "numerator", cn->v[i].numerator, "denominator",
                                         cn->v[i].denominator, "scope", cn->v[i].scope, "replay", "application, one pass"));
  json_object_set_new(meas, "counters", arr);
}
