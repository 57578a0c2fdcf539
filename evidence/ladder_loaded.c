/* ladder_loaded.c - level 3, loaded binary (article 0x0BD): the loaded objects with their SHA-256 agree
 * with the content-addressed loader map, the build report names the source commit, and the GPU is a
 * usable CUDA coordinate. */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/sha256.h"

static const char *const ROLES[] = {"dkb", "cudart", "cupti", "cuda", "nvperf", "nvml", "plugin", "other", NULL};
enum { ROLE_DKB, ROLE_CUDART, ROLE_CUPTI, ROLE_CUDA };

/* 1 when the loader map lists path with sha256 and, where it records the mapped file's size, that size
 * (bytes < 1: the object states none). */
static int in_loader_map(const json_t *map, const char *path, const char *sha, long long bytes) {
  const json_t *objs = json_object_get(map, "objects");
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const json_t *o = json_array_get(objs, i), *size = json_object_get(o, "size");
    const char *p = json_string_value(json_object_get(o, "path")), *s = json_string_value(json_object_get(o, "sha256"));
    if (p && s && !strcmp(p, path) && !strcmp(s, sha)) return !json_is_integer(size) || bytes < 1 || json_integer_value(size) == bytes;
  }
  return 0;
}

static int loader_map_well_formed(const json_t *map) {
  const json_t *objs = json_object_get(map, "objects");
  if (!json_is_object(map) || !json_is_array(objs)) return 0;
  for (size_t i = 0; i < json_array_size(objs); i++) {
    const json_t *o = json_array_get(objs, i);
    if (!json_is_string(json_object_get(o, "path")) || !json_is_string(json_object_get(o, "sha256"))) return 0;
  }
  return 1;
}

static void level3_device(struct lctx *c, const json_t *ld) {
  static const char *const fields[] = {"name", "compute_capability", "sm_count", "driver_version", "runtime_version",
                                       "pci_bus_id", NULL};
  const json_t *d = lad_member(c, ld, "/loaded", "device", JSON_OBJECT);
  if (!d) { lad_finding(c, "device_missing", "/loaded/device", "no GPU device coordinate"); return; }
  if (lad_keys(c, d, "/loaded/device", NULL, fields)) return;
  const char *name = lad_str(c, d, "/loaded/device", "name", 0);
  const char *cc = lad_str(c, d, "/loaded/device", "compute_capability", 0);
  long long sm = -1;
  int have_sm = LAD_READ(c, jr_int, d, "/loaded/device", "sm_count", 0, LLONG_MAX, &sm);
  const char *drv = lad_str(c, d, "/loaded/device", "driver_version", 0);
  const char *rt = lad_str(c, d, "/loaded/device", "runtime_version", 0);
  const char *bus = lad_str(c, d, "/loaded/device", "pci_bus_id", 0);
  if (c->bad) return;
  const void *vals[] = {name, cc, have_sm ? "" : NULL, drv, rt, bus};
  for (int i = 0; fields[i]; i++)
    if (!vals[i]) {
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, "/loaded/device", fields[i]);
      lad_finding(c, "device_field_missing", q, "no %s", fields[i]);
    }
  if (cc) {
    const char *dot = strchr(cc, '.');
    if (!dot || dot == cc || !dot[1] || !lad_digits(cc, (size_t)(dot - cc)) || !lad_digits(dot + 1, strlen(dot + 1)))
      lad_finding(c, "device_field_invalid", "/loaded/device/compute_capability", "'%s' is not a compute capability like 9.0", cc);
  }
  if (have_sm && sm < 1) lad_finding(c, "device_field_invalid", "/loaded/device/sm_count", "sm_count %lld is not a GPU", sm);
  if (drv && !strcmp(drv, "0")) lad_finding(c, "device_field_invalid", "/loaded/device/driver_version", "driver version 0: no CUDA driver");
  if (rt && !strcmp(rt, "0")) lad_finding(c, "device_field_invalid", "/loaded/device/runtime_version", "runtime version 0: no CUDA runtime");
}

/* Object i: an absolute path listed once with a SHA-256 the loader map agrees with, and a size; counts its
 * role. -1 when the bundle is malformed. */
static int loaded_object(struct lctx *c, const json_t *objs, size_t i, const json_t *mapdoc, const char *map_name,
                         int *roles) {
  static const char *const req[] = {"path", "role", NULL};
  static const char *const opt[] = {"sha256", "bytes", NULL};
  char op[DKB_PTR_MAX], q[DKB_PTR_MAX];
  jr_ptr_idx(op, "/loaded/objects", i);
  const json_t *o = json_array_get(objs, i);
  if (lad_keys(c, o, op, req, opt)) return -1;
  const char *path = lad_str(c, o, op, "path", 1);
  int role = -1;
  LAD_READ(c, jr_enum, o, op, "role", ROLES, &role);
  const char *sha = lad_str(c, o, op, "sha256", 0);
  long long bytes = 0;
  LAD_READ(c, jr_int, o, op, "bytes", 0, LLONG_MAX, &bytes);
  if (c->bad) return -1;
  roles[role]++;
  jr_ptr_key(q, op, "path");
  if (path[0] != '/') lad_finding(c, "loaded_object_path_not_absolute", q, "'%s' is not an absolute path", path);
  for (size_t k = 0; k < i; k++)
    if (!strcmp(path, json_string_value(json_object_get(json_array_get(objs, k), "path")))) {
      lad_finding(c, "loaded_object_duplicate", q, "'%s' is also /loaded/objects/%zu", path, k);
      break;
    }
  jr_ptr_key(q, op, "sha256");
  if (!sha) lad_finding(c, "loaded_object_sha256_missing", q, "no SHA-256 of '%s'", path);
  else if (!dkb_is_sha256_hex(sha)) lad_finding(c, "loaded_object_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
  else if (mapdoc && !in_loader_map(mapdoc, path, sha, bytes))
    lad_finding(c, "loaded_object_not_in_loader_map", op, "'%s' with sha256 %s and %lld bytes is not in loader map '%s'", path, sha,
                bytes, map_name);
  if (bytes < 1) {
    jr_ptr_key(q, op, "bytes");
    lad_finding(c, "loaded_object_bytes_missing", q, "no positive size of '%s'", path);
  }
  return 0;
}

/* The loader map and the objects it maps: the dkb executable, the CUDA runtime and driver among them; then
 * the backend's binaries against the same map. */
static void loaded_objects(struct lctx *c, const json_t *ld) {
  struct art *map = lad_ref(c, ld, "/loaded", "loader_map", "loader_map_missing", "loader map");
  json_t *mapdoc = lad_art_json(c, map);
  if (map && map->have_file && !loader_map_well_formed(mapdoc)) {
    lad_finding(c, "loader_map_unreadable", "/loaded/loader_map", "artifact '%s' is not a JSON object with objects [{path, sha256}]", map->name);
    json_decref(mapdoc);
    mapdoc = NULL;
  }
  const json_t *objs = lad_member(c, ld, "/loaded", "objects", JSON_ARRAY);
  int roles[9] = {0};
  if (!objs || !json_array_size(objs)) lad_finding(c, "loaded_objects_missing", "/loaded/objects", "no loaded object listed");
  for (size_t i = 0; objs && i < json_array_size(objs) && !c->bad; i++)
    if (loaded_object(c, objs, i, mapdoc, map ? map->name : NULL, roles)) break;
  if (!c->bad) lad_level3_backend(c, ld, mapdoc);
  json_decref(mapdoc);
  c->has_cupti = roles[ROLE_CUPTI] > 0;
  if (objs && json_array_size(objs) && !c->bad) {
    if (!roles[ROLE_DKB]) lad_finding(c, "loaded_executable_missing", "/loaded/objects", "no object with role dkb (the executable)");
    if (!roles[ROLE_CUDART]) lad_finding(c, "loaded_cudart_missing", "/loaded/objects", "no object with role cudart (libcudart)");
    if (!roles[ROLE_CUDA]) lad_finding(c, "loaded_driver_missing", "/loaded/objects", "no object with role cuda (libcuda.so.1)");
  }
}

/* The build report names the source commit. */
static void loaded_build_report(struct lctx *c, const json_t *ld) {
  struct art *br = lad_ref(c, ld, "/loaded", "build_report", "build_report_missing", "build report");
  if (!br || !br->have_file) return;
  json_t *doc = lad_art_json(c, br);
  const char *commit = json_string_value(json_object_get(doc, "commit"));
  if (!json_is_object(doc) || !commit)
    lad_finding(c, "build_report_unreadable", "/loaded/build_report", "artifact '%s' is not a JSON object with a commit", br->name);
  else if (c->source_commit && strcmp(commit, c->source_commit))
    lad_finding(c, "build_report_commit_mismatch", "/loaded/build_report", "build report commit %s differs from source commit %s",
                commit, c->source_commit);
  json_decref(doc);
}

void lad_level3_loaded(struct lctx *c) {
  static const char *const opt[] = {"loader_map", "objects", "build_report", "device", "kernel_binaries", "plugin", NULL};
  static const char *const kreq[] = {"symbol", "binary_version", "ptx_version", NULL};
  const json_t *ld = lad_member(c, c->b, "", "loaded", JSON_OBJECT);
  if (!ld) { lad_finding(c, "loaded_missing", "/loaded", "no loaded-artifact closure"); return; }
  c->loaded_present = 1;
  if (lad_keys(c, ld, "/loaded", NULL, opt)) return;
  loaded_objects(c, ld);
  loaded_build_report(c, ld);
  level3_device(c, ld);
  const json_t *kb = lad_member(c, ld, "/loaded", "kernel_binaries", JSON_ARRAY);
  for (size_t i = 0; kb && i < json_array_size(kb) && !c->bad; i++) {
    char kp[DKB_PTR_MAX];
    long long v;
    jr_ptr_idx(kp, "/loaded/kernel_binaries", i);
    const json_t *k = json_array_get(kb, i);
    if (lad_keys(c, k, kp, kreq, NULL)) break;
    lad_str(c, k, kp, "symbol", 1);
    LAD_READ(c, jr_int, k, kp, "binary_version", 0, LLONG_MAX, &v);
    LAD_READ(c, jr_int, k, kp, "ptx_version", 0, LLONG_MAX, &v);
  }
}
