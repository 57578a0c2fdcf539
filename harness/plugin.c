/* plugin.c - dlopen, the entry point, the ABI version and the table's shape (see plugin.h). */
#include "harness/plugin.h"
#include "lib/sha256.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BACKENDS_PER_PLUGIN 8

int dkb_backend_table_check(const struct dkb_backend *b, char *why, size_t n) {
  const char *name = b->name ? b->name : "";
  size_t len = strlen(name);
  int ok_name = len >= 1 && len <= 47;
  for (size_t i = 0; ok_name && i < len; i++)
    ok_name = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
  if (!ok_name) return snprintf(why, n, "backend name '%s' is not [a-z0-9_]{1,47}", name), -1;
  if (!b->version || !*b->version) return snprintf(why, n, "backend %s has no version", name), -1;
  if (!b->admit || !b->plan || !b->setup || !b->launch || !b->release || !b->last_error)
    return snprintf(why, n, "backend %s lacks one of admit, plan, setup, launch, release, last_error", name), -1;
  return 0;
}

/* A plugin's embedded document: a JSON object of the given schema id. */
static json_t *embedded(const char *text, const char *schema, const char *what, const char *path, struct dkb_err *err) {
  if (!text) return dkb_err_set(err, DKB_INPUT, path, "", "the plugin has no %s", what), NULL;
  json_error_t je;
  json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!doc) return dkb_err_set(err, DKB_INPUT, path, "", "its %s is not JSON: %s", what, je.text), NULL;
  const char *id = json_string_value(json_object_get(doc, "schema"));
  if (!json_is_object(doc) || !id || strcmp(id, schema)) {
    json_decref(doc);
    return dkb_err_set(err, DKB_INPUT, path, "", "its %s is not a %s document", what, schema), NULL;
  }
  return doc;
}

static int check_table(const struct dkb_plugin *t, const char *path, struct dkb_err *err) {
  if (t->abi_version != DKB_BACKEND_ABI_VERSION)
    return dkb_err_set(err, DKB_INPUT, path, "", "plugin ABI version %u, this dkb speaks %u", t->abi_version,
                       DKB_BACKEND_ABI_VERSION);
  if (t->size < sizeof *t)
    return dkb_err_set(err, DKB_INPUT, path, "", "plugin table of %u bytes, ABI %u has %zu", t->size,
                       DKB_BACKEND_ABI_VERSION, sizeof *t);
  if (!t->name || !*t->name || !t->version || !*t->version)
    return dkb_err_set(err, DKB_INPUT, path, "", "plugin table without a name or a version");
  if (t->n_backends < 1 || t->n_backends > MAX_BACKENDS_PER_PLUGIN || !t->backends)
    return dkb_err_set(err, DKB_INPUT, path, "", "plugin %s lists %d backends (1 to %d)", t->name, (int)t->n_backends,
                       MAX_BACKENDS_PER_PLUGIN);
  char why[256];
  for (int i = 0; i < t->n_backends; i++)
    if (dkb_backend_table_check(&t->backends[i], why, sizeof why))
      return dkb_err_set(err, DKB_INPUT, path, "", "plugin %s: %s", t->name, why);
  return 0;
}

void dkb_plugin_canonical(const char *path, char out[DKB_PLUGIN_PATH_MAX]) {
  char real[PATH_MAX];
  snprintf(out, DKB_PLUGIN_PATH_MAX, "%s", realpath(path, real) ? real : path);
}

int dkb_plugin_open(const char *path, struct dkb_plugin_lib *lib, struct dkb_err *err) {
  memset(lib, 0, sizeof *lib);
  snprintf(lib->path, sizeof lib->path, "%s", path);
  struct stat st;
  if (stat(path, &st)) return dkb_err_set(err, DKB_INPUT, path, "", "cannot load plugin: no such file");
  if (!S_ISREG(st.st_mode)) return dkb_err_set(err, DKB_INPUT, path, "", "cannot load plugin: not a regular file");
  dkb_plugin_canonical(path, lib->realpath);
  if (dkb_sha256_file(path, lib->sha256, err)) return -1;
  lib->bytes = (long long)st.st_size;
  /* A path without a slash would make dlopen search the library path: load the file named. */
  char buf[4096 + 2];
  snprintf(buf, sizeof buf, "%s%s", strchr(path, '/') ? "" : "./", path);
  dlerror();
  lib->handle = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char *e = dlerror();
    e = e ? e : "dlopen failed";
    /* a file that is no loadable object is bad input; a dependency or symbol the machine lacks is its own */
    const int env = strstr(e, "cannot open shared object file") || strstr(e, "undefined symbol") || strstr(e, "version `");
    return dkb_err_set(err, env ? DKB_ENV : DKB_INPUT, path, "", "cannot load plugin: %s", e);
  }
  dlerror();
  dkb_plugin_entry_fn entry;
  *(void **)&entry = dlsym(lib->handle, DKB_PLUGIN_ENTRY_NAME);
  if (!entry) {
    dkb_plugin_close(lib);
    return dkb_err_set(err, DKB_INPUT, path, "", "not a dkb plugin: no entry point %s", DKB_PLUGIN_ENTRY_NAME);
  }
  lib->table = entry();
  if (!lib->table) {
    dkb_plugin_close(lib);
    return dkb_err_set(err, DKB_INPUT, path, "", "its entry point %s returned no table", DKB_PLUGIN_ENTRY_NAME);
  }
  if (check_table(lib->table, path, err) ||
      !(lib->manifest = embedded(lib->table->source_manifest_json, "dkb.source-manifest/v1", "source manifest", path, err)) ||
      !(lib->build_report = embedded(lib->table->build_report_json, "dkb.build-report/v1", "build report", path, err))) {
    dkb_plugin_close(lib);
    return -1;
  }
  return 0;
}

void dkb_plugin_close(struct dkb_plugin_lib *lib) {
  json_decref(lib->manifest);
  json_decref(lib->build_report);
  if (lib->handle) dlclose(lib->handle);
  memset(lib, 0, sizeof *lib);
}
