/* outdir.c - output folders checked before work (see outdir.h). */
#include "harness/outdir.h"
#include "lib/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates the folder when missing and proves it can be written in (a temp file made and removed). */
static int writable_folder(const char *path, const char *opt, struct dkb_err *err) {
  if (!*path) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "%s: an empty path names no folder", opt);
  struct stat st;
  if (!stat(path, &st) && !S_ISDIR(st.st_mode))
    return dkb_err_set(err, DKB_ENV, path, NULL, "%s: not a folder", opt);
  if (dkb_mkdirs(path, err)) return -1;
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/.dkb-probe.XXXXXX", path);
  int fd = mkstemp(probe);
  if (fd < 0) return dkb_err_set(err, DKB_ENV, path, NULL, "%s: cannot write in this folder: %s", opt, strerror(errno));
  close(fd);
  unlink(probe);
  return 0;
}

/* Every entry of a folder but . and .. (malloc'ed names); -1 when it cannot be read. */
static int entries(const char *path, char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(path);
  if (!d) return -1;
  struct dirent *e;
  size_t cap = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (*n == cap) *out = DKB_REALLOC(*out, (cap = cap ? 2 * cap : 16) * sizeof **out);
    (*out)[(*n)++] = DKB_STRDUP(e->d_name);
  }
  closedir(d);
  return 0;
}

static void names_in(const json_t *x, const char *name, int *found) {
  size_t i;
  const char *k;
  json_t *v;
  if (*found) return;
  if (json_is_string(x)) {
    const char *s = json_string_value(x), *base = strrchr(s, '/');
    *found = !strcmp(base ? base + 1 : s, name);
  } else if (json_is_object(x)) {
    json_object_foreach((json_t *)x, k, v) names_in(v, name, found);
  } else if (json_is_array(x)) {
    json_array_foreach(x, i, v) names_in(v, name, found);
  }
}

/* 1 when the document names the file (a string equal to it, or ending in /name). */
static int names(const json_t *doc, const char *name) {
  int found = 0;
  names_in(doc, name, &found);
  return found;
}

/* "<stem>.<16 hex>.<ext>": the name bundle_add_artifact gives an artifact (evidence/bundle.h). */
static int artifact_name(const char *s) {
  const char *dot = strchr(s, '.');
  if (!dot || dot == s) return 0;
  for (const char *p = s; p < dot; p++)
    if (!((*p >= 'a' && *p <= 'z') || *p == '-' || *p == '_')) return 0;
  const char *h = dot + 1;
  for (int i = 0; i < 16; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
  return h[16] == '.' && h[17] && !strchr(h + 17, '/');
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

int outdir_prepare_bundle(struct outdir *o, const char *path, const char *opt, struct dkb_err *err) {
  memset(o, 0, sizeof *o);
  snprintf(o->path, sizeof o->path, "%s", path);
  if (writable_folder(path, opt, err)) return -1;
  char **v;
  size_t n;
  if (entries(path, &v, &n)) return dkb_err_set(err, DKB_ENV, path, NULL, "%s: cannot list this folder: %s", opt, strerror(errno));
  if (!n) return 0;
  char bpath[4200];
  snprintf(bpath, sizeof bpath, "%s/bundle.json", path);
  json_t *prev = json_load_file(bpath, JSON_REJECT_DUPLICATES, NULL);
  const char *schema = json_string_value(json_object_get(prev, "schema"));
  const int is_bundle = schema && !strcmp(schema, "dkb.bundle/v1");
  for (size_t i = 0; i < n; i++) {
    /* an earlier dkb's artifacts its bundle no longer names (runs before this one kept the folder to one run) */
    if (is_bundle && (!strcmp(v[i], "bundle.json") || names(prev, v[i]) || artifact_name(v[i]))) continue;
    dkb_err_set(err, DKB_ENV, path, NULL, "%s: the folder holds '%s', which %s: give a new or empty folder, or one an earlier dkb run wrote",
                opt, v[i], is_bundle ? "its bundle.json does not name" : "no dkb bundle there names");
    json_decref(prev);
    free_list(v, n);
    return -1;
  }
  json_decref(prev);
  o->old = v;
  o->nold = n;
  return 0;
}

int outdir_prepare_dump(struct outdir *o, const char *path, const char *opt, const struct outdir *bundle,
                        struct dkb_err *err) {
  memset(o, 0, sizeof *o);
  snprintf(o->path, sizeof o->path, "%s", path);
  char a[PATH_MAX], b[PATH_MAX];
  if (*path && (!strcmp(path, bundle->path) || (realpath(path, a) && realpath(bundle->path, b) && !strcmp(a, b))))
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "%s '%s' is the bundle folder: a dump needs a folder of its own", opt, path);
  if (writable_folder(path, opt, err)) return -1;
  char **v;
  size_t n;
  if (entries(path, &v, &n)) return dkb_err_set(err, DKB_ENV, path, NULL, "%s: cannot list this folder: %s", opt, strerror(errno));
  if (n) dkb_err_set(err, DKB_ENV, path, NULL, "%s: the folder is not empty (it holds '%s'): a dump needs a new or empty folder", opt, v[0]);
  free_list(v, n);
  return n ? -1 : 0;
}

void outdir_finish(struct outdir *o, const json_t *bundle) {
  for (size_t i = 0; i < o->nold; i++) {
    if (!strcmp(o->old[i], "bundle.json") || names(bundle, o->old[i])) continue;
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", o->path, o->old[i]);
    unlink(p);
  }
}

void outdir_release(struct outdir *o) {
  free_list(o->old, o->nold);
  memset(o, 0, sizeof *o);
}
