/* run_evidence_source.c - the bundle sections of levels 1-3 (see run_evidence.h): the source manifest and
 * call chain (dkb's, or a plugin's joined below the runner) and what this process has loaded. The other
 * sections are run_evidence.c's. */
#include "harness/run_evidence.h"
#include "harness/builtin.h"
#include "harness/loadmap.h"
#include "harness/provenance.h"
#include "evidence/bundle.h"
#include "kernels/decode.h"
#include "lib/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- levels 1-2: source and chain ----------------------------------------------------------------- */

/* 1 when symbol of path is a node scoped "builtin" of the manifest's chain. */
static int builtin_symbol(const json_t *m, const char *path, const char *symbol) {
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(json_object_get(m, "chain"), "nodes"), i, n) {
    const char *scope = json_string_value(json_object_get(n, "scope"));
    if (scope && !strcmp(scope, "builtin") && !strcmp(json_string_value(json_object_get(n, "symbol")), symbol) &&
        !strcmp(json_string_value(json_object_get(n, "path")), path))
      return 1;
  }
  return 0;
}

/* Appends a manifest's files (with their symbols) and chain to the bundle's arrays; drop_builtin leaves
 * out the nodes scoped "builtin" (dkb's own backends), the edges that touch them and the files that hold
 * only them. A file that defines no chain symbol is one the chain's code includes ("included"). */
static void merge_manifest(const json_t *m, json_t *files, json_t *nodes, json_t *edges, int drop_builtin) {
  size_t i, k;
  json_t *f, *s;
  json_array_foreach(json_object_get(m, "files"), i, f) {
    json_t *syms = json_array();
    int dropped = 0;
    json_array_foreach(json_object_get(m, "symbols"), k, s) {
      if (strcmp(json_string_value(json_object_get(s, "path")), json_string_value(json_object_get(f, "path")))) continue;
      if (drop_builtin && builtin_symbol(m, json_string_value(json_object_get(s, "path")), json_string_value(json_object_get(s, "symbol")))) {
        dropped++;
        continue;
      }
      json_t *sym = json_pack("{s:O,s:O}", "name", json_object_get(s, "symbol"), "role", json_object_get(s, "kind"));
      if (json_object_get(s, "span")) json_object_set(sym, "lines", json_object_get(s, "span"));
      json_array_append_new(syms, sym);
    }
    if (dropped && !json_array_size(syms)) {  /* a file of dkb's own backends only: not this call's source */
      json_decref(syms);
      continue;
    }
    json_t *fo = json_pack("{s:O,s:O,s:o}", "path", json_object_get(f, "path"), "sha256", json_object_get(f, "sha256"),
                           "symbols", syms);
    if (!json_array_size(syms)) json_object_set_new(fo, "included", json_true());
    const char *root = json_string_value(json_object_get(f, "root"));
    if (root && strcmp(root, "repo")) json_object_set_new(fo, "root", json_string(root));
    if (json_object_get(f, "record_sha256")) json_object_set(fo, "record_sha256", json_object_get(f, "record_sha256"));
    json_array_append_new(files, fo);
  }
  json_t *chain = json_object_get(m, "chain");
  json_array_foreach(json_object_get(chain, "nodes"), i, s) {
    const char *scope = json_string_value(json_object_get(s, "scope"));
    if (drop_builtin && scope && !strcmp(scope, "builtin")) continue;
    json_t *no = json_pack("{s:O,s:O,s:O,s:O}", "id", json_object_get(s, "symbol"), "layer", json_object_get(s, "layer"),
                           "path", json_object_get(s, "path"), "symbol", json_object_get(s, "symbol"));
    const char *root = json_string_value(json_object_get(s, "root"));
    if (root && strcmp(root, "repo")) json_object_set_new(no, "root", json_string(root));
    json_array_append_new(nodes, no);
  }
  json_array_foreach(json_object_get(chain, "edges"), i, s) {
    int keep = 1;
    for (int end = 0; end < 2 && keep; end++) {
      const char *id = json_string_value(json_object_get(s, end ? "to" : "from"));
      keep = 0;
      json_array_foreach(nodes, k, f)
        if (!strcmp(json_string_value(json_object_get(f, "id")), id)) keep = 1;
    }
    if (keep) json_array_append_new(edges, json_pack("[O,O]", json_object_get(s, "from"), json_object_get(s, "to")));
  }
}

/* Where dkb hands a call to a backend: the plugin's chain roots of these layers hang under these nodes. */
static const struct { const char *layer, *from; } BRIDGES[] = {
    {"admission", "backends_admit"}, {"plan", "stage_dispatch"}, {"setup", "stage_capture"}, {"launch", "launch_selected"}};

static void bridge(const json_t *m, json_t *edges) {
  const json_t *chain = json_object_get(m, "chain");
  size_t i, k;
  json_t *n, *e;
  json_array_foreach(json_object_get(chain, "nodes"), i, n) {
    const char *sym = json_string_value(json_object_get(n, "symbol")), *layer = json_string_value(json_object_get(n, "layer"));
    int root = 1;
    json_array_foreach(json_object_get(chain, "edges"), k, e)
      if (!strcmp(json_string_value(json_object_get(e, "to")), sym)) root = 0;
    if (!root) continue;
    for (size_t b = 0; b < sizeof BRIDGES / sizeof BRIDGES[0]; b++)
      if (!strcmp(layer, BRIDGES[b].layer)) json_array_append_new(edges, json_pack("[s,s]", BRIDGES[b].from, sym));
  }
}

int run_evidence_source(json_t *bundle, const struct backend_info *sel, struct dkb_err *err) {
  char hex[65];
  json_t *m = dkb_provenance_load(dkb_source_manifest_json, "source manifest", hex, err);
  if (!m) return -1;
  json_t *files = json_array(), *nodes = json_array(), *edges = json_array();
  const json_t *pm = sel && sel->lib ? sel->lib->manifest : NULL;
  merge_manifest(m, files, nodes, edges, pm != NULL);
  if (pm) {
    merge_manifest(pm, files, nodes, edges, 0);
    bridge(pm, edges);
  }
  json_t *src = json_pack("{s:O,s:O,s:o}", "commit", json_object_get(m, "commit"), "dirty", json_object_get(m, "dirty"),
                          "files", files);
  if (pm) {
    json_t *up = json_object_get(pm, "upstream");
    json_object_set_new(src, "plugin", json_pack("{s:O,s:O,s:O}", "commit", json_object_get(pm, "commit"), "dirty",
                                                 json_object_get(pm, "dirty"), "upstream", up ? up : json_null()));
  }
  json_object_set_new(bundle, "source", src);
  json_object_set_new(bundle, "chain", json_pack("{s:o,s:o,s:[s,s,s,s,s,s]}", "nodes", nodes, "edges", edges,
                                                 "required_layers", "cmd", "plan", "admission", "launch", "producer",
                                                 "combine"));
  json_decref(m);
  return 0;
}

/* ---- level 3: what is loaded in this process ---------------------------------------------------- */

/* A binary node's library is identified by what this process loaded, not by the copy the plugin was
 * built against: cuDNN's engines on the GPU machine are often another build of the same release (a pip
 * wheel's, a distribution's). Each /source/files entry of root "binary" takes the loaded object's hash;
 * the build-time hash stays as built_sha256 when the two differ. A library not loaded keeps the build
 * hash, and level 3 names it (source_binary_not_loaded). */
static void binaries_as_loaded(json_t *bundle, const struct dkb_loadmap *lm) {
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(json_object_get(bundle, "source"), "files"), i, f) {
    const char *root = json_string_value(json_object_get(f, "root"));
    const char *name = json_string_value(json_object_get(f, "path"));
    if (!root || strcmp(root, "binary") || !name) continue;
    for (size_t k = 0; k < lm->n; k++) {
      const char *base = strrchr(lm->v[k].path, '/');
      if (!base || strcmp(base + 1, name)) continue;
      const char *built = json_string_value(json_object_get(f, "sha256"));
      if (built && strcmp(built, lm->v[k].sha256)) json_object_set_new(f, "built_sha256", json_string(built));
      json_object_set_new(f, "sha256", json_string(lm->v[k].sha256));
      break;
    }
  }
}

int run_evidence_loaded(json_t *bundle, const char *dir, const struct dkb_device_info *dev,
                        const struct backend_info *sel, void *state, struct dkb_err *err) {
  struct dkb_loadmap lm;
  memset(&lm, 0, sizeof lm);
  struct dkb_buf b;
  dkb_buf_init(&b);
  json_t *loaded = json_object(), *ref = NULL;
  char hex[65];
  int rc = -1;
  if (dkb_loadmap_capture(&lm, err) || dkb_loadmap_artifact(&lm, &b, hex, err)) goto cleanup;
  if (bundle_add_artifact(bundle, dir, "loader-map", "json", b.p, b.n, &ref, err)) goto cleanup;
  binaries_as_loaded(bundle, &lm);
  json_object_set_new(loaded, "loader_map", ref);
  json_t *objs = json_array();
  static const char *const ROLE[] = {"dkb", "cudart", "cupti", "cuda", "nvperf", "nvml", NULL};
  for (size_t i = 0; i < lm.n; i++) {
    const char *role = "other";
    for (int k = 0; ROLE[k]; k++)
      if (!strcmp(lm.v[i].role, ROLE[k])) role = ROLE[k];
    if (sel && sel->lib && !strcmp(lm.v[i].path, sel->lib->realpath)) role = "plugin";
    if (!strcmp(role, "other")) continue;  /* the full list is in the loader map artifact */
    json_array_append_new(objs, json_pack("{s:s,s:s,s:s,s:I}", "path", lm.v[i].path, "role", role, "sha256",
                                          lm.v[i].sha256, "bytes", (json_int_t)lm.v[i].size));
  }
  json_object_set_new(loaded, "objects", objs);
  json_t *br = dkb_provenance_load(dkb_build_report_json, "build report", hex, err);
  if (!br) goto cleanup;
  rc = bundle_add_json_artifact(bundle, dir, "build-report", br, &ref, err);
  json_decref(br);
  if (rc) goto cleanup;
  rc = -1;
  json_object_set_new(loaded, "build_report", ref);
  if (dev->available) {
    char drv[16], rt[16], cc[16];
    dkb_device_version_text(dev->driver_version, drv);
    dkb_device_version_text(dev->runtime_version, rt);
    snprintf(cc, sizeof cc, "%d.%d", dev->dev.cc_major, dev->dev.cc_minor);
    json_object_set_new(loaded, "device", json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}", "name", dev->dev.name,
                                                    "compute_capability", cc, "sm_count", dev->dev.sm_count,
                                                    "driver_version", drv, "runtime_version", rt, "pci_bus_id",
                                                    dev->dev.pci_bus_id));
  }
  struct dkb_kernel_info kin[DKB_MAX_KERNELS];
  int nk = sel && dev->available ? builtin_kernel_binaries(sel->t, state, kin, DKB_MAX_KERNELS) : 0;
  if (nk > 0) {
    json_t *kb = json_array();
    for (int i = 0; i < nk; i++)
      json_array_append_new(kb, json_pack("{s:s,s:i,s:i}", "symbol", kin[i].symbol, "binary_version",
                                          kin[i].binary_version, "ptx_version", kin[i].ptx_version));
    json_object_set_new(loaded, "kernel_binaries", kb);
  }
  if (sel && sel->lib) {
    json_t *mref = NULL, *bref = NULL;
    if (bundle_add_json_artifact(bundle, dir, "plugin-manifest", sel->lib->manifest, &mref, err)) goto cleanup;
    if (bundle_add_json_artifact(bundle, dir, "plugin-build-report", sel->lib->build_report, &bref, err)) {
      json_decref(mref);
      goto cleanup;
    }
    json_object_set_new(loaded, "plugin", json_pack("{s:s,s:s,s:I,s:s,s:s,s:i,s:o,s:o}", "path", sel->lib->realpath,
                                                    "sha256", sel->lib->sha256, "bytes", (json_int_t)sel->lib->bytes,
                                                    "name", sel->lib->table->name, "version", sel->lib->table->version,
                                                    "abi_version", (int)sel->lib->table->abi_version, "source_manifest",
                                                    mref, "build_report", bref));
  }
  json_object_set(bundle, "loaded", loaded);
  rc = 0;
cleanup:
  json_decref(loaded);
  dkb_buf_release(&b);
  dkb_loadmap_release(&lm);
  return rc;
}
