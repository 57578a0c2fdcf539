/* ladder_execution.c - level 5, execution observed (article 0x0BF): CUPTI kernel records of the call, joined
 * by external correlation inside its NVTX range, with positive launch counts and geometry; every kernel
 * the plan requires launched, the chain's producer among them and, for a split plan, its merge. */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The function name of a demangled symbol: "void ns::f<128>(float*)" -> "ns::f". */
static void base_name(const char *demangled, char *out, size_t n) {
  /* the parameter list is the LAST balanced (...): "(anonymous namespace)" may come before it */
  size_t len = strlen(demangled);
  while (len && demangled[len - 1] == ' ') len--;
  if (len && demangled[len - 1] == ')') {
    int depth = 0;
    while (len) {
      char ch = demangled[--len];
      if (ch == ')') depth++;
      else if (ch == '(' && --depth == 0) break;
    }
  }
  while (len && demangled[len - 1] == ' ') len--;
  if (len && demangled[len - 1] == '>') { /* strip the template arguments */
    int depth = 0;
    while (len) {
      char ch = demangled[--len];
      if (ch == '>') depth++;
      else if (ch == '<' && --depth == 0) break;
    }
  }
  size_t start = len;
  while (start && demangled[start - 1] != ' ') start--;
  snprintf(out, n, "%.*s", (int)(len - start), demangled + start);
}

/* 1 when kernel record k is the function `name` (exact symbol, demangled text, or function name). */
static int kernel_is(const json_t *k, const char *name) {
  const char *sym = json_string_value(json_object_get(k, "symbol"));
  const char *dem = json_string_value(json_object_get(k, "demangled"));
  if (sym && !strcmp(sym, name)) return 1;
  if (!dem) return 0;
  if (!strcmp(dem, name)) return 1;
  char base[512];
  base_name(dem, base, sizeof base);
  return !strcmp(base, name) || !strcmp(lad_unqualified(base), lad_unqualified(name));
}

/* prefix: name is a prefix of the symbol (a closed-source library's generated kernels: a binary node). */
static int kernel_launched_as(const json_t *kernels, const char *name, int prefix) {
  for (size_t i = 0; i < json_array_size(kernels); i++) {
    const json_t *k = json_array_get(kernels, i);
    const char *sym = json_string_value(json_object_get(k, "symbol"));
    if (json_integer_value(json_object_get(k, "launches")) < 1) continue;
    if (prefix ? sym && !strncmp(sym, name, strlen(name)) : kernel_is(k, name)) return 1;
  }
  return 0;
}

static int kernel_launched(const json_t *kernels, const char *name) { return kernel_launched_as(kernels, name, 0); }

/* 1 when some chain node of `layer` has its symbol launched; -1 when the chain has no such node. */
static int layer_launched(struct lctx *c, const json_t *kernels, const char *layer) {
  const json_t *nodes = json_object_get(json_object_get(c->b, "chain"), "nodes");
  int any = 0;
  for (size_t i = 0; i < json_array_size(nodes); i++) {
    const json_t *nd = json_array_get(nodes, i);
    const char *l = json_string_value(json_object_get(nd, "layer")), *s = json_string_value(json_object_get(nd, "symbol"));
    const char *root = json_string_value(json_object_get(nd, "root"));
    if (!l || strcmp(l, layer) || !s) continue;
    any = 1;
    if (kernel_launched_as(kernels, s, root && !strcmp(root, "binary"))) return 1;
  }
  return any ? 0 : -1;
}

static int geometry_ok(const long long *g, size_t n) {
  if (!g || n != 3) return 0;
  for (size_t i = 0; i < 3; i++)
    if (g[i] < 1) return 0;
  return 1;
}

/* The trace's identity: range, correlation, dropped records, profiler. */
static void execution_profiler(struct lctx *c, const json_t *x) {
  static const char *const popt[] = {"name", "version", NULL};
  if (!lad_str(c, x, "/execution", "nvtx_range", 0))
    lad_finding(c, "nvtx_range_missing", "/execution/nvtx_range", "no NVTX range around the call");
  long long v = 0;
  if (!LAD_READ(c, jr_int, x, "/execution", "external_correlation_id", 0, LLONG_MAX, &v))
    lad_finding(c, "external_correlation_missing", "/execution/external_correlation_id", "no external correlation id");
  if (!LAD_READ(c, jr_int, x, "/execution", "dropped_records", 0, LLONG_MAX, &v))
    lad_finding(c, "trace_dropped_records", "/execution/dropped_records", "the number of dropped profiler records is not recorded");
  else if (v > 0)
    lad_finding(c, "trace_dropped_records", "/execution/dropped_records", "the profiler dropped %lld records: launch counts may be incomplete", v);
  const json_t *prof = lad_member(c, x, "/execution", "profiler", JSON_OBJECT);
  if (!prof) lad_finding(c, "profiler_missing", "/execution/profiler", "no profiler name and version");
  else if (!lad_keys(c, prof, "/execution/profiler", NULL, popt)) {
    if (!lad_str(c, prof, "/execution/profiler", "name", 0)) lad_finding(c, "profiler_missing", "/execution/profiler/name", "no profiler name");
    if (!lad_str(c, prof, "/execution/profiler", "version", 0)) lad_finding(c, "profiler_missing", "/execution/profiler/version", "no profiler version");
  }
  if (c->loaded_present && !c->has_cupti)
    lad_finding(c, "profiler_library_not_loaded", "/loaded/objects", "no object with role cupti: the profiler was not loaded");
}

/* Kernel record i: a symbol with a positive launch count and geometry. -1 when the bundle is malformed. */
static int execution_kernel(struct lctx *c, const json_t *ks, size_t i) {
  static const char *const req[] = {"symbol", NULL};
  static const char *const opt[] = {"demangled", "launches", "grid", "block", "registers", "shared_bytes", NULL};
  char kp[DKB_PTR_MAX], q[DKB_PTR_MAX];
  jr_ptr_idx(kp, "/execution/kernels", i);
  const json_t *k = json_array_get(ks, i);
  if (lad_keys(c, k, kp, req, opt)) return -1;
  const char *sym = lad_str(c, k, kp, "symbol", 1);
  lad_str(c, k, kp, "demangled", 0);
  long long launches = 0, tmp;
  int have_l = LAD_READ(c, jr_int, k, kp, "launches", 0, LLONG_MAX, &launches);
  long long *grid = NULL, *block = NULL;
  size_t ng = 0, nb = 0;
  LAD_READ(c, jr_int_array, k, kp, "grid", LLONG_MIN, LLONG_MAX, -1, &grid, &ng);
  LAD_READ(c, jr_int_array, k, kp, "block", LLONG_MIN, LLONG_MAX, -1, &block, &nb);
  LAD_READ(c, jr_int, k, kp, "registers", 0, LLONG_MAX, &tmp);
  LAD_READ(c, jr_int, k, kp, "shared_bytes", 0, LLONG_MAX, &tmp);
  const int grid_ok = geometry_ok(grid, ng), block_ok = geometry_ok(block, nb);
  free(grid);
  free(block);
  if (c->bad) return -1;
  jr_ptr_key(q, kp, "launches");
  if (!have_l) lad_finding(c, "kernel_launches_missing", q, "no launch count for '%s'", sym);
  else if (launches < 1) lad_finding(c, "kernel_launches_not_positive", q, "'%s' was launched 0 times", sym);
  if (!grid_ok || !block_ok) {
    jr_ptr_key(q, kp, !grid_ok ? "grid" : "block");
    lad_finding(c, "kernel_geometry_invalid", q, "'%s' has no positive [x, y, z] %s", sym, !grid_ok ? "grid" : "block");
  }
  return 0;
}

/* The declaration of the backend record's kernels that kernel record k is; NULL when none is. */
static const json_t *declared(const json_t *decls, const json_t *k) {
  const char *sym = json_string_value(json_object_get(k, "symbol")), *dem = json_string_value(json_object_get(k, "demangled"));
  char base[512] = "";
  if (dem) base_name(dem, base, sizeof base);
  for (size_t i = 0; i < json_array_size(decls); i++)
    if (lad_kernel_declared_match(json_array_get(decls, i), sym, dem ? base : NULL)) return json_array_get(decls, i);
  return NULL;
}

/* 1 when a launched kernel is declared with one of the roles (NULL-terminated). */
static int role_launched(const json_t *decls, const json_t *ks, const char *const *roles) {
  for (size_t i = 0; i < json_array_size(ks); i++) {
    const json_t *k = json_array_get(ks, i), *d = declared(decls, k);
    const char *r = json_string_value(json_object_get(d, "role"));
    if (!d || !r || json_integer_value(json_object_get(k, "launches")) < 1) continue;
    for (int j = 0; roles[j]; j++)
      if (!strcmp(r, roles[j])) return 1;
  }
  return 0;
}

/* With the backend's declarations (/dispatch/backend/kernels): each required one launched, matched as it
 * says (exact symbol, function name, symbol prefix); every kernel launched in the range declared; and a
 * split plan's merge launched (a combine or a fused kernel). */
static void execution_declared(struct lctx *c, const json_t *ks, const json_t *decls) {
  for (size_t i = 0; i < json_array_size(decls); i++) {
    const json_t *d = json_array_get(decls, i);
    if (!json_is_true(json_object_get(d, "required"))) continue;
    int seen = 0;
    for (size_t k = 0; k < json_array_size(ks) && !seen; k++) {
      const json_t *kr = json_array_get(ks, k);
      seen = json_integer_value(json_object_get(kr, "launches")) > 0 && declared(decls, kr) == d;
    }
    if (!seen) {
      char q[DKB_PTR_MAX];
      jr_ptr_idx(q, "/dispatch/backend/kernels", i);
      lad_finding(c, "required_kernel_not_observed", q, "'%s' (matched by %s) is required by the plan but not observed with launches > 0",
                  json_string_value(json_object_get(d, "name")), json_string_value(json_object_get(d, "match")));
    }
  }
  for (size_t k = 0; k < json_array_size(ks); k++)
    if (!declared(decls, json_array_get(ks, k))) {
      char q[DKB_PTR_MAX];
      jr_ptr_idx(q, "/execution/kernels", k);
      lad_finding(c, "kernel_not_declared", q, "'%s' ran in the call's range, and the backend's plan declares no such kernel",
                  json_string_value(json_object_get(json_array_get(ks, k), "symbol")));
    }
  static const char *const merges[] = {"combine", "fused", NULL};
  if (c->split_count > 1 && !role_launched(decls, ks, merges))
    lad_finding(c, "combine_kernel_not_observed", "/execution/kernels",
                "split_count %lld but no launched kernel is one the backend declares as its combine or fused kernel", c->split_count);
}

/* Every kernel the selected plan requires launched; the chain's producer, and for a split plan its merge. */
static void execution_required(struct lctx *c, const json_t *ks) {
  const json_t *decls = json_object_get(lad_backend(c), "kernels");
  if (json_is_array(decls) && json_array_size(decls) && c->outcome && !strcmp(c->outcome, "selected")) {
    execution_declared(c, ks, decls);
  } else {
    const json_t *rk = json_object_get(json_object_get(c->b, "dispatch"), "required_kernels");
    if (c->outcome && !strcmp(c->outcome, "selected"))
      for (size_t i = 0; json_is_array(rk) && i < json_array_size(rk); i++) {
        const char *name = json_string_value(json_array_get(rk, i));
        if (name && !kernel_launched(ks, name)) {
          char q[DKB_PTR_MAX];
          jr_ptr_idx(q, "/dispatch/required_kernels", i);
          lad_finding(c, "required_kernel_not_observed", q, "'%s' is required by the plan but not observed with launches > 0", name);
        }
      }
  }
  /* A fused kernel (layer "producer+combine": its last CTA per group merges the slots, 0x03C) proves both. */
  const int fused = layer_launched(c, ks, "producer+combine") == 1;
  if (layer_launched(c, ks, "producer") == 0 && !fused)
    lad_finding(c, "producer_kernel_not_observed", "/execution/kernels", "no launched kernel is a chain producer node");
  if (c->split_count > 1 && layer_launched(c, ks, "combine") == 0 && !fused)
    lad_finding(c, "combine_kernel_not_observed", "/execution/kernels",
                "split_count %lld but no launched kernel is a chain combine or producer+combine node", c->split_count);
}

void lad_level5_execution(struct lctx *c) {
  static const char *const opt[] = {"trace", "nvtx_range", "external_correlation_id", "kernels", "dropped_records",
                                    "profiler", NULL};
  const json_t *x = lad_member(c, c->b, "", "execution", JSON_OBJECT);
  if (c->outcome && strcmp(c->outcome, "selected"))
    lad_finding(c, "no_backend_selected", "/dispatch/outcome", "dispatch outcome %s: no backend ran", c->outcome);
  if (!x) { lad_finding(c, "execution_missing", "/execution", "no profiler observation of the call"); return; }
  if (lad_keys(c, x, "/execution", NULL, opt)) return;
  const struct art *tr = lad_ref(c, x, "/execution", "trace", "trace_missing", "profiler trace");
  execution_profiler(c, x);
  const json_t *ks = lad_member(c, x, "/execution", "kernels", JSON_ARRAY);
  size_t nk = ks ? json_array_size(ks) : 0;
  if (!nk) lad_finding(c, "kernels_missing", "/execution/kernels", "no kernel record");
  for (size_t i = 0; i < nk && !c->bad; i++)
    if (execution_kernel(c, ks, i)) return;
  if (c->bad) return;
  execution_required(c, ks);
  lad_level5_trace(c, x, tr);
}
