/* trace_loaded.c - the traced program's loaded files hashed after it ended (see trace_loaded.h). */
#include "harness/trace_loaded.h"
#include "harness/pydist.h"
#include "lib/err.h"
#include "lib/parallel.h"
#include "lib/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct trace_hashed {
  const char *path;
  uint64_t dev, ino, size, mtime;
  int missing;
  char sha256[65];
  const char *identity;   /* "unchanged", "changed", "missing" */
  char error[300];
  struct pydist_match dist;
  int has_dist;
};

static int cmp_hashed(const void *a, const void *b) {
  const struct trace_hashed *x = a, *y = b;
  int c = strcmp(x->path, y->path);
  if (c) return c;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

static void hash_one(void *ctx, int64_t i) {
  struct trace_hashed *h = &((struct trace_hashed *)ctx)[i];
  if (h->missing) { h->identity = "missing"; snprintf(h->error, sizeof h->error, "no file at the path when the program's loader map was taken"); return; }
  struct stat st;
  struct dkb_err e;
  if (stat(h->path, &st)) { h->identity = "missing"; snprintf(h->error, sizeof h->error, "cannot stat: %s", strerror(errno)); return; }
  uint64_t mt = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
  int same = (uint64_t)st.st_dev == h->dev && (uint64_t)st.st_ino == h->ino && (uint64_t)st.st_size == h->size && mt == h->mtime;
  h->identity = same ? "unchanged" : "changed";
  if (dkb_sha256_file(h->path, h->sha256, &e)) { h->sha256[0] = '\0'; snprintf(h->error, sizeof h->error, "%.*s", (int)sizeof h->error - 1, e.msg); return; }
  struct stat after; /* replaced while it was being read */
  if (stat(h->path, &after) || after.st_ino != st.st_ino || after.st_mtim.tv_nsec != st.st_mtim.tv_nsec ||
      after.st_mtim.tv_sec != st.st_mtim.tv_sec)
    h->identity = "changed";
}

void trace_loaded_hash(struct trace_loaded *l, const struct tr_proc *procs, size_t nprocs) {
  memset(l, 0, sizeof *l);
  l->dist = pydist_new();
  size_t cap = 0;
  for (size_t k = 0; k < nprocs; k++)
    for (size_t m = 0; m < procs[k].nmaps; m++)
      for (size_t i = 0; i < procs[k].maps[m].nobjects; i++) {
        const struct tr_object *o = &procs[k].maps[m].objects[i];
        if (l->n == cap) l->objs = DKB_REALLOC(l->objs, (cap = cap ? 2 * cap : 256) * sizeof *l->objs);
        l->objs[l->n++] = (struct trace_hashed){.path = o->path, .dev = o->dev, .ino = o->ino, .size = o->size,
                                                .mtime = o->mtime_ns, .missing = o->missing};
      }
  if (!l->n) return;
  qsort(l->objs, l->n, sizeof *l->objs, cmp_hashed);
  size_t w = 0;
  for (size_t i = 0; i < l->n; i++)
    if (!w || cmp_hashed(&l->objs[w - 1], &l->objs[i])) l->objs[w++] = l->objs[i];
  l->n = w;
  dkb_parallel_for((int64_t)l->n, hash_one, l->objs);
  for (size_t i = 0; i < l->n; i++)
    if (l->objs[i].sha256[0]) l->objs[i].has_dist = pydist_lookup(l->dist, l->objs[i].path, l->objs[i].sha256, &l->objs[i].dist);
}

static const struct trace_hashed *find_obj(const struct trace_loaded *l, const struct tr_object *o) {
  struct trace_hashed key = {.path = o->path, .dev = o->dev, .ino = o->ino, .size = o->size, .mtime = o->mtime_ns};
  return l->n ? bsearch(&key, l->objs, l->n, sizeof *l->objs, cmp_hashed) : NULL;
}

json_t *trace_loaded_map_json(const struct trace_loaded *l, const struct tr_loadmap *m) {
  json_t *objs = json_array();
  for (size_t i = 0; i < m->nobjects; i++) {
    const struct tr_object *o = &m->objects[i];
    const struct trace_hashed *h = find_obj(l, o);
    json_t *dist = json_null();
    if (h && h->has_dist)
      dist = json_pack("{s:s,s:s,s:s,s:s,s:o}", "name", h->dist.name, "version", h->dist.version, "dist_info",
                       h->dist.dist_info, "record_hash", h->dist.record_hash, "record_match",
                       h->dist.record_match < 0 ? json_null() : json_boolean(h->dist.record_match));
    json_t *e = json_pack("{s:s,s:I,s:o,s:s,s:b,s:o}", "path", o->path, "size", (json_int_t)o->size, "sha256",
                          h && h->sha256[0] ? json_string(h->sha256) : json_null(), "identity",
                          h ? h->identity : "missing", "main", o->main, "distribution", dist);
    if (h && h->error[0]) json_object_set_new(e, "hash_error", json_string(h->error));
    json_array_append_new(objs, e);
  }
  return json_pack("{s:b,s:o}", "complete", !m->failed, "objects", objs);
}

void trace_loaded_release(struct trace_loaded *l) {
  free(l->objs);
  pydist_free(l->dist);
  memset(l, 0, sizeof *l);
}
