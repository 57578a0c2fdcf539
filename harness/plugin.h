/* plugin.h - loading one backend plugin (include/dkb/backend.h) from a shared library file.
 * A plugin is refused before any backend of it is asked anything. A missing file, one that is no
 * loadable object, or one that loads but is not a dkb plugin of this ABI (no entry point, another
 * abi_version, a malformed table, a source manifest or build report that is not its JSON document) is
 * malformed input (DKB_INPUT); a dependency the machine lacks (a library dlopen cannot find, a symbol
 * or symbol version missing) is the environment's (DKB_ENV). Each error names the file and the reason. A plugin that crashes takes the process down: dkb runs
 * it in its own process, as it does its own kernels. */
#ifndef DKB_PLUGIN_H
#define DKB_PLUGIN_H

#include <jansson.h>

#include "include/dkb/backend.h"
#include "lib/err.h"

#define DKB_PLUGIN_PATH_MAX 4096

struct dkb_plugin_lib {
  char path[DKB_PLUGIN_PATH_MAX];      /* as given */
  char realpath[DKB_PLUGIN_PATH_MAX];  /* canonical (dkb_plugin_canonical), as the loader map shows it */
  char sha256[65];                     /* of the file's bytes, read before dlopen */
  long long bytes;
  void *handle;                        /* dlopen */
  const struct dkb_plugin *table;      /* what the entry point returned */
  json_t *manifest;                    /* table->source_manifest_json, parsed (owned) */
  json_t *build_report;                /* table->build_report_json, parsed (owned) */
};

/* The canonical path of a plugin file, what names one library however it is spelled: realpath(3), or the
 * path as given where realpath fails (the open then says why). */
void dkb_plugin_canonical(const char *path, char out[DKB_PLUGIN_PATH_MAX]);
/* Loads and checks one plugin file. On error nothing stays loaded. */
int dkb_plugin_open(const char *path, struct dkb_plugin_lib *lib, struct dkb_err *err);
void dkb_plugin_close(struct dkb_plugin_lib *lib);

/* 0 when a backend table is usable by dkb (name [a-z0-9_]{1,47}, version, every function); otherwise -1
 * with why (used for plugins and for dkb's own tables alike). */
int dkb_backend_table_check(const struct dkb_backend *b, char *why, size_t n);

#endif
