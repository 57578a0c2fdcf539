/* loadmap.c - loader map and object hashes (see loadmap.h). Paths are collected inside the
 * dl_iterate_phdr callback (which holds the loader lock) and hashed afterwards, several files at once:
 * libcuda alone is about 100 MB. */
#include "harness/loadmap.h"
#include "lib/cjson.h"
#include "lib/sha256.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct collect {
  struct dkb_loaded_object *v;
  size_t n, cap;
  char unresolved[4096]; /* first mapped file whose path no longer resolves, "" if none */
  int unresolved_errno;
};

static void collect_add(struct collect *c, const char *path, int is_main) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->v[i].path, path)) return;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    c->v = DKB_REALLOC(c->v, cap * sizeof *c->v);
    c->cap = cap;
  }
  struct dkb_loaded_object *o = &c->v[c->n];
  memset(o, 0, sizeof *o);
  o->path = DKB_STRDUP(path);
  o->role = dkb_loadmap_role(path, is_main);
  c->n++;
}

static int on_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  char real[PATH_MAX];
  const char *name = info->dlpi_name;
  int is_main = !name || !name[0];
  struct collect *c = data;
  /* The main program has an empty name. A name without a slash is the kernel's vDSO, which has no
   * file; any other name that no longer resolves (a library deleted or replaced after mapping)
   * cannot be hashed, and the map must say so rather than leave it out. */
  if (realpath(is_main ? "/proc/self/exe" : name, real)) collect_add(c, real, is_main);
  else if (strchr(name, '/') && !c->unresolved[0]) {
    c->unresolved_errno = errno;
    snprintf(c->unresolved, sizeof c->unresolved, "%s", name);
  }
  return 0;
}

const char *dkb_loadmap_role(const char *path, int is_main) {
  if (is_main) return "dkb";
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  static const struct { const char *prefix, *role; } ROLES[] = {
      {"libcudart.so", "cudart"},      {"libcupti.so", "cupti"},         {"libcuda.so", "cuda"},
      {"libnvperf_host.so", "nvperf"}, {"libnvperf_target.so", "nvperf"}, {"libnvidia-ml.so", "nvml"},
      {"libcrypto.so", "crypto"},      {"libc.so", "libc"},
  };
  for (size_t i = 0; i < sizeof ROLES / sizeof ROLES[0]; i++)
    if (!strncmp(b, ROLES[i].prefix, strlen(ROLES[i].prefix))) return ROLES[i].role;
  return "other";
}

struct hash_job {
  struct dkb_loaded_object *v;
  size_t n;
  atomic_size_t next;
  struct dkb_err *errs; /* one per object */
  int *failed;
};

static void *hash_worker(void *arg) {
  struct hash_job *j = arg;
  for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    struct dkb_loaded_object *o = &j->v[i];
    struct stat st;
    if (stat(o->path, &st)) {
      dkb_err_set(&j->errs[i], DKB_ENV, o->path, NULL, "cannot stat mapped object: %s", strerror(errno));
      j->failed[i] = 1;
      continue;
    }
    o->size = (long long)st.st_size;
    j->failed[i] = dkb_sha256_file(o->path, o->sha256, &j->errs[i]) != 0;
  }
  return NULL;
}

static int cmp_path(const void *a, const void *b) {
  return strcmp(((const struct dkb_loaded_object *)a)->path, ((const struct dkb_loaded_object *)b)->path);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int dkb_loadmap_capture(struct dkb_loadmap *m, struct dkb_err *err) {
  int rc = -1;
  struct collect c = {0};
  struct hash_job job = {0};
  pthread_t th[8];
  size_t nth = 0;
  memset(m, 0, sizeof *m);
  dl_iterate_phdr(on_object, &c);
  m->v = c.v;
  m->n = c.n;
  if (c.unresolved[0]) {
    dkb_err_set(err, DKB_ENV, c.unresolved, NULL, "mapped object has no file to hash: %s", strerror(c.unresolved_errno));
    goto cleanup;
  }
  qsort(m->v, m->n, sizeof *m->v, cmp_path);

  double t0 = now_s();
  job.v = m->v;
  job.n = m->n;
  job.errs = DKB_CALLOC(m->n, sizeof *job.errs);
  job.failed = DKB_CALLOC(m->n, sizeof *job.failed);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = cpus > 1 ? (size_t)cpus : 1;
  if (want > sizeof th / sizeof th[0]) want = sizeof th / sizeof th[0];
  if (want > m->n) want = m->n;
  for (; nth < want; nth++)
    if (pthread_create(&th[nth], NULL, hash_worker, &job)) break;
  hash_worker(&job); /* the calling thread helps; with no thread started it does everything */
  for (size_t i = 0; i < nth; i++) pthread_join(th[i], NULL);
  m->hash_seconds = now_s() - t0;
  for (size_t i = 0; i < m->n; i++) {
    if (job.failed[i]) {
      *err = job.errs[i];
      if (err->code != DKB_INTERNAL) err->code = DKB_ENV;
      goto cleanup;
    }
    m->hashed_bytes += m->v[i].size;
  }
  rc = 0;
cleanup:
  free(job.errs);
  free(job.failed);
  if (rc) dkb_loadmap_release(m);
  return rc;
}

void dkb_loadmap_release(struct dkb_loadmap *m) {
  for (size_t i = 0; i < m->n; i++) free(m->v[i].path);
  free(m->v);
  memset(m, 0, sizeof *m);
}

const struct dkb_loaded_object *dkb_loadmap_find_role(const struct dkb_loadmap *m, const char *role) {
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->v[i].role, role)) return &m->v[i];
  return NULL;
}

json_t *dkb_loadmap_json(const struct dkb_loadmap *m) {
  json_t *objs = json_array();
  for (size_t i = 0; i < m->n; i++)
    json_array_append_new(objs, json_pack("{s:s, s:s, s:I, s:s}", "path", m->v[i].path, "sha256", m->v[i].sha256,
                                          "size", (json_int_t)m->v[i].size, "role", m->v[i].role));
  return json_pack("{s:s, s:o}", "schema", "dkb.loader-map/v1", "objects", objs);
}

int dkb_loadmap_artifact(const struct dkb_loadmap *m, struct dkb_buf *out, char sha256[65], struct dkb_err *err) {
  json_t *doc = dkb_loadmap_json(m);
  size_t start = out->n;
  int rc = cjson_write(doc, 0, out, err);
  if (!rc) rc = dkb_sha256_buf(out->p + start, out->n - start, sha256, err);
  json_decref(doc);
  return rc;
}
