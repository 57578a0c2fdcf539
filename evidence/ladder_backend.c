/* ladder_backend.c - what a bundle says of the backend that ran the call (include/dkb/backend.h), checked
 * level by level like the rest: at level 3 a plugin's library is in the loader map with its SHA-256, its
 * source manifest and build report (artifacts) agree with the bundle's source and with each other, and
 * every closed-source library the chain names is the one that was loaded; at level 4 /dispatch/backend
 * (source, workspaces and their kinds, declared kernels, conventions) agrees with the dispatch record;
 * at level 5 the launched kernels are the declared ones, matched as each declaration says; at level 6 a
 * backend's LSE base or empty-row value was converted as its conventions say. */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/sha256.h"

static const char *const WS_KINDS[] = {"scratch", "zero_first", "persistent", NULL};
static const char *const ROLES[] = {"producer", "combine", "fused", "append", "other", NULL};
static const char *const MATCHES[] = {"symbol", "function", "prefix", NULL};
static const char *const LSE_BASES[] = {"natural", "base2", NULL};
static const char *const EMPTY_ROWS[] = {"zero_neginf", "zero_posinf", "nan", NULL};

const json_t *lad_backend(const struct lctx *c) { return json_object_get(json_object_get(c->b, "dispatch"), "backend"); }

/* ---- level 3 ------------------------------------------------------------------------------------ */

/* The loader map's object whose file name (after the last '/') is name: its SHA-256, or NULL. */
static const char *loaded_by_name(const json_t *map, const char *name) {
  const json_t *objs = json_object_get(map, "objects");
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const char *p = json_string_value(json_object_get(json_array_get(objs, i), "path"));
    const char *base = p ? strrchr(p, '/') : NULL;
    if (base && !strcmp(base + 1, name)) return json_string_value(json_object_get(json_array_get(objs, i), "sha256"));
  }
  return NULL;
}

static int map_has(const json_t *map, const char *path, const char *sha) {
  const json_t *objs = json_object_get(map, "objects");
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const json_t *o = json_array_get(objs, i);
    const char *p = json_string_value(json_object_get(o, "path")), *s = json_string_value(json_object_get(o, "sha256"));
    if (p && s && !strcmp(p, path) && !strcmp(s, sha)) return 1;
  }
  return 0;
}

/* Every binary node's library (a /source/files entry with root "binary") was loaded, with that hash. */
static void binaries_loaded(struct lctx *c, const json_t *map) {
  const json_t *files = json_object_get(json_object_get(c->b, "source"), "files");
  for (size_t i = 0; map && i < json_array_size(files); i++) {
    const json_t *f = json_array_get(files, i);
    const char *root = json_string_value(json_object_get(f, "root"));
    if (!root || strcmp(root, "binary")) continue;
    const char *name = json_string_value(json_object_get(f, "path")), *sha = json_string_value(json_object_get(f, "sha256"));
    const char *got = name ? loaded_by_name(map, name) : NULL;
    char q[DKB_PTR_MAX];
    jr_ptr_idx(q, "/source/files", i);
    if (!got) lad_finding(c, "source_binary_not_loaded", q, "the chain names '%s', which the loader map does not hold", name);
    else if (!sha || strcmp(got, sha))
      lad_finding(c, "source_binary_not_loaded", q, "'%s' was loaded with SHA-256 %s, the source lists %s", name, got, sha ? sha : "none");
  }
}

/* The manifest's and build report's upstream package agree with /source/plugin's. */
static void same_upstream(struct lctx *c, const json_t *a, const json_t *b, const char *reason, const char *ptr, const char *what) {
  static const char *const keys[] = {"package", "version", "archive_sha256", NULL};
  if (json_is_null(a)) a = NULL;  /* a plugin without an upstream package records null */
  if (json_is_null(b)) b = NULL;
  if (!a && !b) return;
  for (int k = 0; keys[k]; k++) {
    const char *x = json_string_value(json_object_get(a, keys[k])), *y = json_string_value(json_object_get(b, keys[k]));
    if (!x || !y || strcmp(x, y)) {
      lad_finding(c, reason, ptr, "%s names upstream %s '%s', the bundle '%s'", what, keys[k], x ? x : "none", y ? y : "none");
      return;
    }
  }
}

/* Every file of the plugin's manifest is in /source/files with the same hash. */
static void manifest_files(struct lctx *c, const json_t *man) {
  const json_t *mf = json_object_get(man, "files"), *files = json_object_get(json_object_get(c->b, "source"), "files");
  for (size_t i = 0; i < json_array_size(mf); i++) {
    const json_t *f = json_array_get(mf, i);
    const char *path = json_string_value(json_object_get(f, "path")), *sha = json_string_value(json_object_get(f, "sha256"));
    const char *root = json_string_value(json_object_get(f, "root"));
    if (root && !strcmp(root, "binary")) continue;  /* its run-time identity is the loader map's (binaries_loaded) */
    int found = 0;
    for (size_t k = 0; path && sha && k < json_array_size(files) && !found; k++) {
      const json_t *g = json_array_get(files, k);
      const char *gp = json_string_value(json_object_get(g, "path")), *gs = json_string_value(json_object_get(g, "sha256"));
      found = gp && gs && !strcmp(gp, path) && !strcmp(gs, sha);
    }
    if (!found) {
      lad_finding(c, "plugin_manifest_mismatch", "/source/files", "the plugin's manifest lists '%s' (%s), the bundle's source does not",
                  path ? path : "?", sha ? sha : "no hash");
      return;
    }
  }
}

void lad_level3_backend(struct lctx *c, const json_t *ld, const json_t *map) {
  static const char *const req[] = {"path", "sha256", "bytes", "name", "version", "abi_version", "source_manifest",
                                    "build_report", NULL};
  binaries_loaded(c, map);
  const json_t *be = lad_backend(c);
  const char *src = json_string_value(json_object_get(be, "source"));
  const json_t *pl = json_object_get(ld, "plugin");
  if (!pl) {
    if (src && !strcmp(src, "plugin"))
      lad_finding(c, "plugin_missing", "/loaded/plugin", "backend %s is a plugin's, and its library is not identified",
                  json_string_value(json_object_get(be, "name")));
    return;
  }
  if (lad_keys(c, pl, "/loaded/plugin", req, NULL)) return;
  const char *path = lad_str(c, pl, "/loaded/plugin", "path", 1), *sha = lad_str(c, pl, "/loaded/plugin", "sha256", 1);
  long long v;
  LAD_READ(c, jr_int, pl, "/loaded/plugin", "bytes", 1, LLONG_MAX, &v);
  lad_str(c, pl, "/loaded/plugin", "name", 1);
  lad_str(c, pl, "/loaded/plugin", "version", 1);
  LAD_READ(c, jr_int, pl, "/loaded/plugin", "abi_version", 1, LLONG_MAX, &v);
  if (c->bad) return;
  if (!dkb_is_sha256_hex(sha)) lad_malformed(c, "/loaded/plugin/sha256", "must be 64 lower-case hex digits (got '%s')", sha);
  else if (map && !map_has(map, path, sha))
    lad_finding(c, "plugin_not_in_loader_map", "/loaded/plugin", "'%s' with SHA-256 %s is not in the loader map", path, sha);
  struct art *ma = lad_ref(c, pl, "/loaded/plugin", "source_manifest", "plugin_manifest_mismatch", "plugin source manifest");
  struct art *ba = lad_ref(c, pl, "/loaded/plugin", "build_report", "plugin_build_report_mismatch", "plugin build report");
  json_t *man = lad_art_json(c, ma), *br = lad_art_json(c, ba);
  const json_t *sp = json_object_get(json_object_get(c->b, "source"), "plugin");
  if (ma && ma->have_file) {
    if (!json_is_object(man)) lad_finding(c, "plugin_manifest_mismatch", "/loaded/plugin/source_manifest", "artifact '%s' is not JSON", ma->name);
    else {
      same_upstream(c, json_object_get(man, "upstream"), json_object_get(sp, "upstream"), "plugin_manifest_mismatch",
                    "/source/plugin/upstream", "the plugin's manifest");
      manifest_files(c, man);
    }
  }
  if (ba && ba->have_file && man)
    same_upstream(c, json_object_get(br, "upstream"), json_object_get(man, "upstream"), "plugin_build_report_mismatch",
                  "/loaded/plugin/build_report", "the plugin's build report");
  json_decref(man);
  json_decref(br);
}

/* ---- level 4 ------------------------------------------------------------------------------------ */

/* /dispatch/backend/kernels/<i>: name, role, match, required. -1 when malformed. */
static int backend_kernel(struct lctx *c, const json_t *ks, size_t i) {
  static const char *const req[] = {"name", "role", "match", "required", NULL};
  char p[DKB_PTR_MAX];
  jr_ptr_idx(p, "/dispatch/backend/kernels", i);
  const json_t *k = json_array_get(ks, i);
  int e;
  if (lad_keys(c, k, p, req, NULL)) return -1;
  lad_str(c, k, p, "name", 1);
  LAD_READ(c, jr_enum, k, p, "role", ROLES, &e);
  LAD_READ(c, jr_enum, k, p, "match", MATCHES, &e);
  lad_member(c, k, p, "required", JSON_TRUE);
  return c->bad ? -1 : 0;
}

/* The sum of the non-persistent workspaces (what launches write); -1 when malformed. */
static long long backend_workspaces(struct lctx *c, const json_t *ws) {
  static const char *const req[] = {"name", "bytes", "kind", NULL};
  long long sum = 0;
  for (size_t i = 0; i < json_array_size(ws); i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/dispatch/backend/workspaces", i);
    const json_t *w = json_array_get(ws, i);
    long long bytes = 0;
    int kind = -1;
    if (lad_keys(c, w, p, req, NULL)) return -1;
    lad_str(c, w, p, "name", 1);
    LAD_READ(c, jr_int, w, p, "bytes", 0, LLONG_MAX, &bytes);
    LAD_READ(c, jr_enum, w, p, "kind", WS_KINDS, &kind);
    if (c->bad) return -1;
    if (kind != 2) sum += bytes;
  }
  return sum;
}

void lad_level4_backend(struct lctx *c, const json_t *d) {
  static const char *const req[] = {"name", "version", "source", "work_items", "workspaces", "kernels", "conventions",
                                    "launch_flags", NULL};
  static const char *const opt[] = {"plugin", NULL};
  static const char *const creq[] = {"lse_base", "empty_row", NULL};
  static const char *const preq[] = {"name", "version", "sha256", "abi_version", NULL};
  const char *p = "/dispatch/backend";
  const json_t *be = lad_member(c, d, "/dispatch", "backend", JSON_OBJECT);
  const char *sel = json_string_value(json_object_get(d, "selected"));
  const int selected = c->outcome && !strcmp(c->outcome, "selected") && sel;
  if (!be) {  /* the record of what ran: without it levels 4-6 cannot say which conventions they grade */
    if (selected) lad_finding(c, "backend_missing", p, "%s was selected and planned, and the bundle has no record of it", sel);
    return;
  }
  if (lad_keys(c, be, p, req, opt)) return;
  const char *name = lad_str(c, be, p, "name", 1);
  lad_str(c, be, p, "version", 1);
  int source = -1, e;
  static const char *const SOURCES[] = {"builtin", "plugin", NULL};
  LAD_READ(c, jr_enum, be, p, "source", SOURCES, &source);
  long long v;
  LAD_READ(c, jr_int, be, p, "work_items", 0, LLONG_MAX, &v);
  const json_t *ws = lad_member(c, be, p, "workspaces", JSON_ARRAY), *ks = lad_member(c, be, p, "kernels", JSON_ARRAY);
  const json_t *conv = lad_member(c, be, p, "conventions", JSON_OBJECT), *flags = NULL;
  LAD_READ(c, jr_str_array, be, p, "launch_flags", 0, &flags);
  if (c->bad || lad_keys(c, conv, "/dispatch/backend/conventions", creq, NULL)) return;
  LAD_READ(c, jr_enum, conv, "/dispatch/backend/conventions", "lse_base", LSE_BASES, &e);
  LAD_READ(c, jr_enum, conv, "/dispatch/backend/conventions", "empty_row", EMPTY_ROWS, &e);
  const json_t *pl = json_object_get(be, "plugin");
  if (pl && (lad_keys(c, pl, "/dispatch/backend/plugin", preq, NULL) || !lad_str(c, pl, "/dispatch/backend/plugin", "sha256", 1)))
    return;
  for (size_t i = 0; i < json_array_size(ks); i++)
    if (backend_kernel(c, ks, i)) return;
  const long long sum = backend_workspaces(c, ws);
  if (c->bad || sum < 0) return;
  if (sel && strcmp(name, sel))
    lad_finding(c, "backend_contradicts_dispatch", "/dispatch/backend/name", "the backend record is %s's, %s was selected", name, sel);
  if ((source == 1) != (pl != NULL))
    lad_finding(c, "backend_contradicts_dispatch", "/dispatch/backend/source", "source %s %s a plugin record", SOURCES[source],
                pl ? "with" : "without");
  const json_t *lp = json_object_get(json_object_get(c->b, "loaded"), "plugin");
  const char *psha = json_string_value(json_object_get(pl, "sha256")), *lsha = json_string_value(json_object_get(lp, "sha256"));
  if (psha && lsha && strcmp(psha, lsha))
    lad_finding(c, "backend_contradicts_dispatch", "/dispatch/backend/plugin/sha256", "the plugin record's library %s is not the loaded %s",
                psha, lsha);
  const json_t *wb = json_object_get(d, "workspace_bytes");
  if (json_is_integer(wb) && json_integer_value(wb) != sum)
    lad_finding(c, "backend_contradicts_dispatch", "/dispatch/workspace_bytes",
                "workspace_bytes %lld, the backend's scratch and zero-on-first-use workspaces sum to %lld",
                (long long)json_integer_value(wb), sum);
  /* the required kernels are the declared ones marked required, in order */
  const json_t *rk = json_object_get(d, "required_kernels");
  size_t nreq = 0;
  for (size_t i = 0; i < json_array_size(ks); i++) {
    const json_t *k = json_array_get(ks, i);
    if (!json_is_true(json_object_get(k, "required"))) continue;
    const char *want = json_string_value(json_object_get(k, "name")), *got = json_string_value(json_array_get(rk, nreq));
    if (!got || strcmp(got, want)) {
      lad_finding(c, "backend_contradicts_dispatch", "/dispatch/required_kernels", "required kernel %zu is '%s', the backend declares '%s'",
                  nreq, got ? got : "none", want);
      return;
    }
    nreq++;
  }
  if (rk && json_array_size(rk) != nreq)
    lad_finding(c, "backend_contradicts_dispatch", "/dispatch/required_kernels", "%zu required kernels, the backend declares %zu",
                json_array_size(rk), nreq);
}

/* ---- level 5 ------------------------------------------------------------------------------------ */

/* A declared kernel matches a kernel record: by its exact symbol, its function name (base, the demangled
 * name without return type, template arguments or parameters, equal or ending in "::" + name), or a
 * prefix of its symbol. */
int lad_kernel_declared_match(const json_t *decl, const char *symbol, const char *base) {
  const char *name = json_string_value(json_object_get(decl, "name"));
  const char *match = json_string_value(json_object_get(decl, "match"));
  if (!name || !symbol) return 0;
  if (!match || !strcmp(match, "symbol")) return !strcmp(symbol, name);
  if (!strcmp(match, "prefix")) return !strncmp(symbol, name, strlen(name));
  if (!base) return 0;
  const size_t nb = strlen(base), nn = strlen(name);
  return !strcmp(base, name) || (nb > nn + 2 && !strcmp(base + nb - nn, name) && !strncmp(base + nb - nn - 2, "::", 2));
}

/* ---- level 6 ------------------------------------------------------------------------------------ */

void lad_level6_conversion(struct lctx *c, const json_t *cr) {
  static const char *const req[] = {"lse_base", "empty_row", "lse_rows_rescaled", "empty_rows_replaced", "rule", NULL};
  const json_t *conv = json_object_get(lad_backend(c), "conventions");
  const char *lb = json_string_value(json_object_get(conv, "lse_base")), *er = json_string_value(json_object_get(conv, "empty_row"));
  const json_t *x = json_object_get(cr, "conversion");
  const int needed = lb && er && (strcmp(lb, "natural") || strcmp(er, "zero_neginf"));
  const char *p = "/measurement/correctness/conversion";
  if (!x) {
    if (needed)
      lad_finding(c, "conversion_missing", p, "the backend writes LSE %s and empty rows as %s, and no conversion to dkb's is recorded", lb, er);
    return;
  }
  if (lad_keys(c, x, p, req, NULL)) return;
  long long v;
  int e;
  LAD_READ(c, jr_enum, x, p, "lse_base", LSE_BASES, &e);
  LAD_READ(c, jr_enum, x, p, "empty_row", EMPTY_ROWS, &e);
  LAD_READ(c, jr_int, x, p, "lse_rows_rescaled", 0, LLONG_MAX, &v);
  LAD_READ(c, jr_int, x, p, "empty_rows_replaced", 0, LLONG_MAX, &v);
  lad_str(c, x, p, "rule", 0);
  if (c->bad || !conv) return;
  const char *xl = json_string_value(json_object_get(x, "lse_base")), *xe = json_string_value(json_object_get(x, "empty_row"));
  if (!needed || strcmp(xl, lb) || strcmp(xe, er))
    lad_finding(c, "conversion_contradicts_conventions", p, "conversion from LSE %s and empty rows %s, the backend declares %s and %s%s",
                xl, xe, lb, er, needed ? "" : " (dkb's own: nothing to convert)");
}
