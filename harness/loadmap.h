/* loadmap.h - the process loader map with the SHA-256 of every mapped object (article 0x0BD: the
 * loaded-artifact coordinate is captured in the running process, not read from package metadata).
 * Take it late, after the GPU passes: libcuda, libnvperf and NVML are dlopen'ed lazily. The document
 * {"schema": "dkb.loader-map/v1", "objects": [...]} is content-addressed by its canonical bytes. */
#ifndef DKB_LOADMAP_H
#define DKB_LOADMAP_H

#include <stddef.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/err.h"

struct dkb_loaded_object {
  char *path;        /* canonical real path (realpath; the main program through /proc/self/exe) */
  char sha256[65];   /* of the file's bytes, as sha256sum prints it */
  long long size;    /* bytes */
  const char *role;  /* see dkb_loadmap_role */
};

struct dkb_loadmap {
  struct dkb_loaded_object *v;  /* sorted by path, each path once */
  size_t n;
  double hash_seconds;          /* wall time spent hashing (the budget check in tests and reports) */
  long long hashed_bytes;       /* sum of sizes */
};

/* Lists every object dl_iterate_phdr reports (the vDSO, which has no file, is skipped) and hashes each
 * one, in parallel over files. -1 with err (DKB_ENV, path named) when a mapped object's file is gone or
 * cannot be read: every mapped object must carry a hash. */
int dkb_loadmap_capture(struct dkb_loadmap *m, struct dkb_err *err);
void dkb_loadmap_release(struct dkb_loadmap *m);
/* Role of an object from its basename: "cudart", "cupti", "cuda" (libcuda), "nvperf", "nvml",
 * "crypto", "libc" or "other"; the main program is "dkb" (is_main). Static strings. */
const char *dkb_loadmap_role(const char *path, int is_main);
/* First object with this role, or NULL. */
const struct dkb_loaded_object *dkb_loadmap_find_role(const struct dkb_loadmap *m, const char *role);
/* The document (new reference). */
json_t *dkb_loadmap_json(const struct dkb_loadmap *m);
/* Canonical bytes of the document into out (appended) and their SHA-256: the artifact and its name. */
int dkb_loadmap_artifact(const struct dkb_loadmap *m, struct dkb_buf *out, char sha256[65], struct dkb_err *err);

#endif
