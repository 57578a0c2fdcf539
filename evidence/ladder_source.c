/* ladder_source.c - levels 1 and 2 (article 0x0AH): the kernel and chain sources are identified by path,
 * SHA-256 and symbol span (re-hashed under --source-root), and the call chain from cmd to the kernels is
 * an acyclic graph of sourced nodes covering every required layer. */
#include "evidence/ladder_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/sha256.h"

/* <file pointer>/symbols/<j> */
static void sym_ptr(char out[DKB_PTR_MAX], const char *fp, size_t j) {
  char syms[DKB_PTR_MAX];
  jr_ptr_key(syms, fp, "symbols");
  jr_ptr_idx(out, syms, j);
}
static int repo_relative(const char *p) {
  if (!*p || *p == '/' || strchr(p, '\\')) return 0;
  const char *s = p;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
    s += n + (e ? 1 : 0);
    if (e && !*s) return 0; /* trailing slash */
  }
  return 1;
}
struct text {
  char *p;
  size_t n;
  long lines;
};

/* Checks one source file against the checkout at --source-root. */
/* 1 when the unqualified name occurs in lines a..z of the text. */
static int span_has(const struct text *t, long long a, long long z, const char *name) {
  const char *start = t->p, *end = t->p + t->n;
  for (long long l = 1; l < a && start < end; l++) {
    const char *nl = memchr(start, '\n', (size_t)(end - start));
    start = nl ? nl + 1 : end;
  }
  const char *stop = start;
  for (long long l = a; l <= z && stop < end; l++) {
    const char *nl = memchr(stop, '\n', (size_t)(end - stop));
    stop = nl ? nl + 1 : end;
  }
  size_t ul = strlen(name);
  for (const char *p = start; p + ul <= stop; p++)
    if (!memcmp(p, name, ul)) return 1;
  return 0;
}

/* Each symbol's span lies inside the file and holds the symbol's name. */
static void source_spans(struct lctx *c, const json_t *file, const char *fp, const char *path, const struct text *t) {
  const json_t *syms = json_object_get(file, "symbols");
  for (size_t j = 0; json_is_array(syms) && j < json_array_size(syms); j++) {
    const json_t *s = json_array_get(syms, j);
    const json_t *lines = json_object_get(s, "lines");
    const char *name = json_string_value(json_object_get(s, "name"));
    if (!json_is_array(lines) || !name) continue;
    long long a = json_integer_value(json_array_get(lines, 0)), z = json_integer_value(json_array_get(lines, 1));
    if (a < 1 || z < a) continue; /* already a finding */
    char sp[DKB_PTR_MAX], lp[DKB_PTR_MAX];
    sym_ptr(sp, fp, j);
    const char *u = lad_unqualified(name);
    if (z > t->lines) {
      jr_ptr_key(lp, sp, "lines");
      lad_finding(c, "source_symbol_lines_outside_file", lp, "span [%lld, %lld] ends after line %ld, the last of '%s'", a, z,
                  t->lines, path);
    } else if (!span_has(t, a, z, u)) {
      jr_ptr_key(lp, sp, "name");
      lad_finding(c, "source_symbol_not_in_span", lp, "'%s' does not occur in lines %lld-%lld of '%s'", u, a, z, path);
    }
  }
}

/* Checks one source file against the checkout at --source-root: a repository file under the root, a plugin's
 * upstream file under the folder its package was unpacked to (/source/plugin/upstream/dir, relative to the
 * root). A closed-source library (root "binary") is identified by the loader map instead (level 3). */
static void source_rehash(struct lctx *c, const json_t *file, const char *fp, const char *path, const char *sha) {
  char full[4096], q[DKB_PTR_MAX];
  const char *root = json_string_value(json_object_get(file, "root"));
  if (root && !strcmp(root, "binary")) return;
  const char *up = json_string_value(
      json_object_get(json_object_get(json_object_get(json_object_get(c->b, "source"), "plugin"), "upstream"), "dir"));
  if (root && !strcmp(root, "upstream")) snprintf(full, sizeof full, "%s/%s/%s", c->o->source_root, up ? up : "?", path);
  else snprintf(full, sizeof full, "%s/%s", c->o->source_root, path);
  FILE *f = fopen(full, "rb");
  if (!f) {
    jr_ptr_key(q, fp, "path");
    lad_finding(c, "source_file_unreadable", q, "cannot open '%s': %s", full, strerror(errno));
    return;
  }
  struct dkb_buf b;
  dkb_buf_init(&b);
  dkb_buf_add_file(&b, f);  /* a short read hashes differently and is reported as a mismatch */
  fclose(f);
  struct text t = {b.p ? b.p : "", b.n, 0};
  for (size_t i = 0; i < t.n; i++)
    if (t.p[i] == '\n') t.lines++;
  if (t.n && t.p[t.n - 1] != '\n') t.lines++;
  char hex[65];
  struct dkb_err e;
  if (sha && dkb_is_sha256_hex(sha) && !dkb_sha256_buf(t.p, t.n, hex, &e) && strcmp(hex, sha)) {
    jr_ptr_key(q, fp, "sha256");
    lad_finding(c, "source_file_sha256_mismatch", q, "'%s' hashes to %s under the source root, the bundle says %s", path,
                hex, sha);
  }
  source_spans(c, file, fp, path, &t);
  dkb_buf_release(&b);
}

/* The commit is pinned and is the build's, the dirty flag is the build's. */
static void source_commit(struct lctx *c, const json_t *s) {
  const char *commit = lad_str(c, s, "/source", "commit", 0);
  if (!commit) lad_finding(c, "source_commit_missing", "/source/commit", "no source commit");
  else if (!lad_is_hex(commit, 40))
    lad_finding(c, "source_commit_not_pinned", "/source/commit", "'%s' is not a 40-hex commit: a name or short hash floats", commit);
  else if (strspn(commit, "0") == 40)
    lad_finding(c, "source_commit_not_pinned", "/source/commit", "the null commit: the sources were not built from a checkout");
  else if (c->meta_commit && strcmp(commit, c->meta_commit))
    lad_finding(c, "source_differs_from_meta", "/source/commit", "source commit %s differs from the dkb build commit %s (/meta/commit)",
                commit, c->meta_commit);
  else c->source_commit = commit;
  const json_t *dirty = lad_member(c, s, "/source", "dirty", JSON_TRUE);
  if (!dirty) lad_finding(c, "source_dirty_missing", "/source/dirty", "no dirty flag");
  else if (json_is_true(dirty) != c->meta_dirty)
    lad_finding(c, "source_differs_from_meta", "/source/dirty", "source dirty flag %s differs from /meta/dirty",
                json_is_true(dirty) ? "true" : "false");
}

/* Symbol j of a file: named once, with a role and a valid line span. -1 when the bundle is malformed. */
static int source_symbol(struct lctx *c, const json_t *syms, size_t j, const char *fp) {
  static const char *const req[] = {"name", NULL};
  static const char *const opt[] = {"role", "lines", NULL};
  char sp[DKB_PTR_MAX], q[DKB_PTR_MAX];
  sym_ptr(sp, fp, j);
  const json_t *sym = json_array_get(syms, j);
  if (lad_keys(c, sym, sp, req, opt)) return -1;
  const char *name = lad_str(c, sym, sp, "name", 1);
  const char *role = lad_str(c, sym, sp, "role", 0);
  const json_t *lines = lad_member(c, sym, sp, "lines", JSON_ARRAY);
  if (c->bad) return -1;
  jr_ptr_key(q, sp, "lines");
  if (lines && (json_array_size(lines) != 2 || !json_is_integer(json_array_get(lines, 0)) ||
                !json_is_integer(json_array_get(lines, 1)))) {
    lad_malformed(c, q, "must be [first, last], two integers");
    return -1;
  }
  for (size_t k = 0; k < j; k++)
    if (!strcmp(name, json_string_value(json_object_get(json_array_get(syms, k), "name")))) {
      char np[DKB_PTR_MAX];
      jr_ptr_key(np, sp, "name");
      lad_finding(c, "source_symbol_duplicate", np, "'%s' is also %s/symbols/%zu", name, fp, k);
      break;
    }
  if (!role) {
    char rp[DKB_PTR_MAX];
    jr_ptr_key(rp, sp, "role");
    lad_finding(c, "source_symbol_role_missing", rp, "no role for '%s'", name);
  }
  if (!lines && !(role && !strcmp(role, "binary")))  /* a closed-source library's symbol has no source lines */
    lad_finding(c, "source_symbol_lines_missing", q, "no line span for '%s'", name);
  else if (lines) {
    long long a = json_integer_value(json_array_get(lines, 0)), z = json_integer_value(json_array_get(lines, 1));
    if (a < 1 || z < a) lad_finding(c, "source_symbol_lines_invalid", q, "[%lld, %lld] is not a span with 1 <= first <= last", a, z);
  }
  return 0;
}

/* File i: a repository-relative path listed once, its SHA-256 and its symbols (re-hashed under
 * --source-root). -1 when the bundle is malformed. */
static int source_file(struct lctx *c, const json_t *files, size_t i) {
  static const char *const req[] = {"path", NULL};
  static const char *const opt[] = {"sha256", "symbols", "root", "record_sha256", "built_sha256", "included", NULL};
  static const char *const ROOTS[] = {"upstream", "binary", NULL};
  char fp[DKB_PTR_MAX], q[DKB_PTR_MAX];
  jr_ptr_idx(fp, "/source/files", i);
  const json_t *f = json_array_get(files, i);
  if (lad_keys(c, f, fp, req, opt)) return -1;
  const char *path = lad_str(c, f, fp, "path", 1);
  const char *sha = lad_str(c, f, fp, "sha256", 0);
  const json_t *syms = lad_member(c, f, fp, "symbols", JSON_ARRAY);
  int root = -1;
  LAD_READ(c, jr_enum, f, fp, "root", ROOTS, &root);
  const char *record = lad_str(c, f, fp, "record_sha256", 0);
  const char *built = lad_str(c, f, fp, "built_sha256", 0);  /* a binary's build-time hash (informative) */
  if (built && !dkb_is_sha256_hex(built)) lad_malformed(c, fp, "built_sha256 '%s' is not 64 lower-case hex digits", built);
  /* a file the compiler read that defines no chain symbol (a header of the kernels, an upstream header) */
  const int included = json_is_true(lad_member(c, f, fp, "included", JSON_TRUE));
  if (c->bad) return -1;
  if (root == 0 && sha && (!record || strcmp(record, sha))) {  /* an upstream file is the one its package's RECORD lists */
    jr_ptr_key(q, fp, "record_sha256");
    lad_finding(c, "source_file_record_mismatch", q, "'%s' has SHA-256 %s, its package's RECORD %s", path, sha, record ? record : "none");
  }
  int path_ok = repo_relative(path);
  jr_ptr_key(q, fp, "path");
  if (!path_ok) lad_finding(c, "source_file_path_invalid", q, "'%s' is not a repository-relative path", path);
  for (size_t k = 0; k < i; k++)
    if (!strcmp(path, json_string_value(json_object_get(json_array_get(files, k), "path")))) {
      lad_finding(c, "source_file_duplicate", q, "'%s' is also /source/files/%zu", path, k);
      break;
    }
  jr_ptr_key(q, fp, "sha256");
  if (!sha) lad_finding(c, "source_file_sha256_missing", q, "no SHA-256 of '%s'", path);
  else if (!dkb_is_sha256_hex(sha)) lad_finding(c, "source_file_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
  if ((!syms || !json_array_size(syms)) && !included) {
    jr_ptr_key(q, fp, "symbols");
    lad_finding(c, "source_symbols_missing", q, "no symbol named in '%s', which is not marked as included by the chain's code", path);
  }
  for (size_t j = 0; syms && j < json_array_size(syms) && !c->bad; j++)
    if (source_symbol(c, syms, j, fp)) return -1;
  if (c->o && c->o->source_root && path_ok && !c->bad) source_rehash(c, f, fp, path, sha);
  return 0;
}

void lad_level1_source(struct lctx *c) {
  static const char *const opt[] = {"commit", "dirty", "files", "plugin", NULL};
  static const char *const popt[] = {"commit", "dirty", "upstream", NULL};
  const json_t *s = lad_member(c, c->b, "", "source", JSON_OBJECT);
  if (!s) { lad_finding(c, "source_missing", "/source", "no source section: the kernel and chain sources are not identified"); return; }
  if (lad_keys(c, s, "/source", NULL, opt)) return;
  const json_t *pl = lad_member(c, s, "/source", "plugin", JSON_OBJECT);  /* a plugin's build, beside dkb's */
  if (pl && lad_keys(c, pl, "/source/plugin", NULL, popt)) return;
  source_commit(c, s);
  const json_t *files = lad_member(c, s, "/source", "files", JSON_ARRAY);
  if (!files || !json_array_size(files)) {
    lad_finding(c, "source_files_missing", "/source/files", "no source file listed");
    return;
  }
  for (size_t i = 0; i < json_array_size(files) && !c->bad; i++)
    if (source_file(c, files, i)) return;
}

/* 1 when level-1 source lists `symbol` in file `path`. */
static int source_has(struct lctx *c, const char *path, const char *symbol) {
  const json_t *files = json_object_get(json_object_get(c->b, "source"), "files");
  for (size_t i = 0; json_is_array(files) && i < json_array_size(files); i++) {
    const json_t *f = json_array_get(files, i);
    const char *p = json_string_value(json_object_get(f, "path"));
    if (!p || strcmp(p, path)) continue;
    const json_t *syms = json_object_get(f, "symbols");
    for (size_t j = 0; json_is_array(syms) && j < json_array_size(syms); j++) {
      const char *n = json_string_value(json_object_get(json_array_get(syms, j), "name"));
      if (n && !strcmp(n, symbol)) return 1;
    }
  }
  return 0;
}

static long node_index(const json_t *nodes, const char *id) {
  for (size_t i = 0; i < json_array_size(nodes); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "id")), id)) return (long)i;
  return -1;
}

/* Depth-first search from v (color 0 new, 1 on the stack, 2 done); returns the index of the first edge
 * that reaches a node on the stack (a back edge, so on a cycle), or -1. */
static long chain_back_edge(long v, int *color, const long *from, const long *to, size_t ne) {
  color[v] = 1;
  for (size_t k = 0; k < ne; k++) {
    if (from[k] != v || to[k] < 0) continue;
    if (color[to[k]] == 1) return (long)k;
    if (color[to[k]] == 0) {
      long b = chain_back_edge(to[k], color, from, to, ne);
      if (b >= 0) return b;
    }
  }
  color[v] = 2;
  return -1;
}

/* The chain as a graph: nodes by index, edges as index pairs (-1: an unknown node). */
struct chain {
  const json_t *nodes;
  size_t nn, ne;
  long *from, *to;
};

static const char *node_field(const struct chain *g, size_t i, const char *key) {
  return json_string_value(json_object_get(json_array_get(g->nodes, i), key));
}

/* Each node once, sourced at level 1. */
static void chain_nodes(struct lctx *c, const struct chain *g) {
  static const char *const req[] = {"id", "layer", NULL};
  static const char *const opt[] = {"path", "symbol", "root", NULL};
  for (size_t i = 0; i < g->nn && !c->bad; i++) {
    char np[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(np, "/chain/nodes", i);
    const json_t *nd = json_array_get(g->nodes, i);
    if (lad_keys(c, nd, np, req, opt)) return;
    const char *id = lad_str(c, nd, np, "id", 1);
    lad_str(c, nd, np, "layer", 1);
    const char *path = lad_str(c, nd, np, "path", 0), *sym = lad_str(c, nd, np, "symbol", 0);
    if (c->bad) return;
    if (node_index(g->nodes, id) != (long)i) {
      jr_ptr_key(q, np, "id");
      lad_finding(c, "chain_node_duplicate", q, "node id '%s' is also /chain/nodes/%ld", id, node_index(g->nodes, id));
    }
    if (!path || !sym) lad_finding(c, "chain_node_unsourced", np, "node '%s' names no %s", id, !path ? "path" : "symbol");
    else if (!source_has(c, path, sym))
      lad_finding(c, "chain_node_unsourced", np, "node '%s' (%s in '%s') is not a level-1 source symbol", id, sym, path);
  }
  if (!g->nn) lad_finding(c, "chain_nodes_missing", "/chain/nodes", "the chain has no node");
}

/* Edges are [from, to] pairs of node ids; resolves them into g->from, g->to. */
static void chain_edges(struct lctx *c, struct chain *g, const json_t *edges) {
  for (size_t k = 0; k < g->ne && !c->bad; k++) {
    char ep[DKB_PTR_MAX];
    jr_ptr_idx(ep, "/chain/edges", k);
    const json_t *e = json_array_get(edges, k);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
        !json_is_string(json_array_get(e, 1))) {
      lad_malformed(c, ep, "must be [from, to], two node ids");
      break;
    }
    const char *a = json_string_value(json_array_get(e, 0)), *z = json_string_value(json_array_get(e, 1));
    g->from[k] = g->nodes ? node_index(g->nodes, a) : -1;
    g->to[k] = g->nodes ? node_index(g->nodes, z) : -1;
    if (g->from[k] < 0 || g->to[k] < 0)
      lad_finding(c, "chain_edge_unknown_node", ep, "edge names unknown node '%s'", g->from[k] < 0 ? a : z);
  }
}

/* The fixed six layers, which the bundle's own list must repeat, and every layer of either list has a
 * node. */
static void chain_layers(struct lctx *c, const struct chain *g, const json_t *layers) {
  int weakened = !layers;
  for (int l = 0; ladder_required_layers[l] && layers; l++) {
    int listed = 0;
    for (size_t k = 0; k < json_array_size(layers); k++)
      listed |= !strcmp(json_string_value(json_array_get(layers, k)), ladder_required_layers[l]);
    if (!listed) weakened = 1;
  }
  if (weakened)
    lad_finding(c, "chain_required_layers_weakened", "/chain/required_layers",
                "required_layers must list cmd, plan, admission, launch, producer, combine");
  size_t nlist = layers ? json_array_size(layers) : 0;
  for (size_t l = 0; l < 6 + nlist && !c->bad; l++) {
    const char *layer = l < 6 ? ladder_required_layers[l] : json_string_value(json_array_get(layers, l - 6));
    int seen_before = 0;
    for (size_t k = 0; k < l; k++) {
      const char *prev = k < 6 ? ladder_required_layers[k] : json_string_value(json_array_get(layers, k - 6));
      seen_before |= !strcmp(prev, layer);
    }
    if (seen_before) continue;
    int present = 0;  /* a kernel that writes O itself (producer+combine) is both layers' */
    for (size_t i = 0; i < g->nn; i++)
      present |= !strcmp(node_field(g, i, "layer"), layer) ||
                 ((!strcmp(layer, "producer") || !strcmp(layer, "combine")) && !strcmp(node_field(g, i, "layer"), "producer+combine"));
    if (!present && g->nn) lad_finding(c, "chain_layer_missing", "/chain/nodes", "no node of required layer '%s'", layer);
  }
}

/* The first back edge of a depth-first search lies on a cycle. */
static void chain_cycle(struct lctx *c, const struct chain *g) {
  int *color = DKB_CALLOC(g->nn, sizeof *color);
  long back = -1;
  for (size_t i = 0; i < g->nn && back < 0; i++)
    if (!color[i]) back = chain_back_edge((long)i, color, g->from, g->to, g->ne);
  if (back >= 0) {
    char ep[DKB_PTR_MAX];
    jr_ptr_idx(ep, "/chain/edges", (size_t)back);
    lad_finding(c, "chain_cycle", ep, "edge %s -> %s closes a cycle", node_field(g, (size_t)g->from[back], "id"),
                node_field(g, (size_t)g->to[back], "id"));
  }
  free(color);
}

/* Breadth-first from the cmd nodes: every node is reached (when there is a cmd node). */
static void chain_reachable(struct lctx *c, const struct chain *g) {
  int *seen = DKB_CALLOC(g->nn, sizeof *seen);
  size_t *queue = DKB_CALLOC(g->nn, sizeof *queue), head = 0, tail = 0;
  for (size_t i = 0; i < g->nn; i++)
    if (!strcmp(node_field(g, i, "layer"), "cmd")) { seen[i] = 1; queue[tail++] = i; }
  const int have_cmd = tail > 0;
  while (head < tail) {
    size_t v = queue[head++];
    for (size_t k = 0; k < g->ne; k++)
      if (g->from[k] == (long)v && g->to[k] >= 0 && !seen[g->to[k]]) { seen[g->to[k]] = 1; queue[tail++] = (size_t)g->to[k]; }
  }
  for (size_t i = 0; i < g->nn && have_cmd; i++)
    if (!seen[i]) {
      char np[DKB_PTR_MAX];
      jr_ptr_idx(np, "/chain/nodes", i);
      lad_finding(c, "chain_node_unreachable", np, "node '%s' is not reachable from the cmd layer", node_field(g, i, "id"));
    }
  free(seen);
  free(queue);
}

void lad_level2_chain(struct lctx *c) {
  static const char *const opt[] = {"nodes", "edges", "required_layers", NULL};
  const json_t *ch = lad_member(c, c->b, "", "chain", JSON_OBJECT);
  if (!ch) { lad_finding(c, "chain_missing", "/chain", "no call chain from cmd to the kernels"); return; }
  if (lad_keys(c, ch, "/chain", NULL, opt)) return;
  const json_t *nodes = lad_member(c, ch, "/chain", "nodes", JSON_ARRAY);
  const json_t *edges = lad_member(c, ch, "/chain", "edges", JSON_ARRAY), *layers = NULL;
  LAD_READ(c, jr_str_array, ch, "/chain", "required_layers", 1, &layers);
  if (c->bad) return;
  struct chain g = {nodes, nodes ? json_array_size(nodes) : 0, edges ? json_array_size(edges) : 0, NULL, NULL};
  chain_nodes(c, &g);
  if (c->bad) return;
  g.from = DKB_CALLOC(g.ne + 1, sizeof *g.from);
  g.to = DKB_CALLOC(g.ne + 1, sizeof *g.to);
  chain_edges(c, &g, edges);
  chain_layers(c, &g, layers);
  if (!c->bad && g.nn) {
    chain_cycle(c, &g);
    chain_reachable(c, &g);
  }
  free(g.from);
  free(g.to);
}
