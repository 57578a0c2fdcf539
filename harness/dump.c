/* dump.c - dump folders: .npy tensors plus index.json written last (see dump.h). */
#include "harness/dump.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"
#include "lib/jread.h"
#include "lib/npy.h"
#include "oracles/dtype.h"
#include "lib/sha256.h"

#define DUMP_SCHEMA "dkb.dump/v1"
#define DUMP_INDEX "index.json"
#define DUMP_NAME_MAX 200

struct dump {
  char dir[4096];
  int created;    /* dump_open made the folder: dump_abandon removes it */
  json_t *files;  /* index entries, in dump_add order */
  json_t *extra;  /* members set by dump_set */
};

/* npy descr of each enum dkb_dtype. */
static const char *const DESCR[DKB_DTYPE_COUNT] = {
    [DKB_F16] = "<f2", [DKB_BF16] = "<u2", [DKB_F32] = "<f4", [DKB_F64] = "<f8",
    [DKB_U8] = "|u1",  [DKB_I32] = "<i4",  [DKB_I64] = "<i8"};

const char *dump_npy_descr(const char *dtype) {
  int t = dtype ? dkb_dtype_parse(dtype) : -1;
  return t < 0 ? NULL : DESCR[t];
}

/* A plain file name: [A-Za-z0-9_.-], not starting with '.', at most DUMP_NAME_MAX bytes. */
static int plain_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > DUMP_NAME_MAX || s[0] == '.') return 0;
  for (size_t i = 0; i < n; i++)
    if (!(s[i] == '_' || s[i] == '-' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= 'A' && s[i] <= 'Z')))
      return 0;
  return 1;
}

/* 1 when entry is `file` itself or a temp file dkb_write_atomic left behind for it ("file.tmp.XXXXXX"). */
static int is_file_or_its_temp(const char *entry, const char *file) {
  size_t n = strlen(file);
  return !strncmp(entry, file, n) && (entry[n] == '\0' || (!strncmp(entry + n, ".tmp.", 5) && strlen(entry + n) == 11));
}

/* The file names a previous dump's index lists, or NULL when dir/index.json is not a dkb dump. */
static json_t *previous_dump_names(const char *dir) {
  char path[4200];
  struct dkb_err ignored;
  if (dkb_path_join(path, sizeof path, dir, DUMP_INDEX)) return NULL;
  json_t *doc = jr_load_file(path, &ignored);
  const char *schema = json_string_value(json_object_get(doc, "schema"));
  json_t *files = json_object_get(doc, "files");
  json_t *names = NULL;
  if (schema && !strcmp(schema, DUMP_SCHEMA) && json_is_array(files)) {
    names = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
      const char *name = json_string_value(json_object_get(f, "name"));
      if (name && plain_name(name)) json_array_append_new(names, json_string(name));
    }
  }
  json_decref(doc);
  return names;
}

/* Empties dir when it holds exactly a previous dump; refuses anything else that is not empty. */
static int clear_previous_dump(const char *dir, struct dkb_err *err) {
  DIR *dh = opendir(dir);
  if (!dh) return dkb_err_set(err, errno == ENOTDIR ? DKB_USAGE : DKB_INTERNAL, dir, NULL, "cannot open folder: %s", strerror(errno));
  json_t *entries = json_array();
  struct dirent *e;
  while ((e = readdir(dh)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) json_array_append_new(entries, json_string(e->d_name));
  closedir(dh);
  int rc = 0;
  json_t *names = NULL;
  if (json_array_size(entries) == 0) goto cleanup;
  names = previous_dump_names(dir);
  if (!names) {
    rc = dkb_err_set(err, DKB_USAGE, dir, NULL, "folder is not empty and holds no previous dump (index.json of %s)",
                     DUMP_SCHEMA);
    goto cleanup;
  }
  json_array_append_new(names, json_string(DUMP_INDEX));
  size_t i, k;
  json_t *v, *w;
  json_array_foreach(entries, i, v) { /* every entry must belong to the previous dump */
    const char *entry = json_string_value(v);
    int ours = 0;
    json_array_foreach(names, k, w) ours |= is_file_or_its_temp(entry, json_string_value(w));
    if (!ours) {
      rc = dkb_err_set(err, DKB_USAGE, dir, NULL, "folder holds a previous dump and '%s', which is not part of it",
                       entry);
      goto cleanup;
    }
  }
  char path[4200];
  if (dkb_path_join(path, sizeof path, dir, DUMP_INDEX) || (unlink(path) && errno != ENOENT)) {
    rc = dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot remove the previous index: %s", strerror(errno));
    goto cleanup;
  }
  json_array_foreach(entries, i, v) {
    if (dkb_path_join(path, sizeof path, dir, json_string_value(v)) || (unlink(path) && errno != ENOENT)) {
      rc = dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot remove a file of the previous dump: %s", strerror(errno));
      goto cleanup;
    }
  }
cleanup:
  json_decref(names);
  json_decref(entries);
  return rc;
}

int dump_open(const char *dir, struct dump **d, struct dkb_err *err) {
  *d = NULL;
  struct stat st;
  if (!dir || !*dir) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "empty dump folder name");
  if (strlen(dir) >= sizeof((struct dump *)0)->dir - DUMP_NAME_MAX - 16)
    return dkb_err_set(err, DKB_USAGE, dir, NULL, "dump folder path too long");
  int exists = stat(dir, &st) == 0;
  if (exists && !S_ISDIR(st.st_mode)) return dkb_err_set(err, DKB_USAGE, dir, NULL, "not a folder");
  if (!exists && dkb_mkdirs(dir, err)) return -1;
  if (exists && clear_previous_dump(dir, err)) return -1;
  struct dump *n = DKB_CALLOC(1, sizeof *n);
  snprintf(n->dir, sizeof n->dir, "%s", dir);
  n->created = !exists;
  n->files = json_array();
  n->extra = json_object();
  *d = n;
  return 0;
}

int dump_add(struct dump *d, const char *name, const char *role, const char *dtype, const char *layout,
             const int64_t *shape, int ndim, const void *data, size_t nbytes, struct dkb_err *err) {
  char file[DUMP_NAME_MAX + 8], path[4400], sha[65];
  const char *descr = dump_npy_descr(dtype);
  if (!name || !plain_name(name) || !strcmp(name, "index"))
    return dkb_err_set(err, DKB_INTERNAL, d->dir, NULL, "invalid tensor name '%s'", name ? name : "(null)");
  snprintf(file, sizeof file, "%s.npy", name);
  size_t i;
  json_t *f;
  json_array_foreach(d->files, i, f) if (!strcmp(json_string_value(json_object_get(f, "name")), file))
      return dkb_err_set(err, DKB_INTERNAL, d->dir, NULL, "tensor '%s' added twice", name);
  if (!descr) return dkb_err_set(err, DKB_INTERNAL, d->dir, NULL, "%s: unknown dtype '%s'", name, dtype ? dtype : "(null)");
  if (!role || !*role || !layout || !*layout)
    return dkb_err_set(err, DKB_INTERNAL, d->dir, NULL, "%s: role and layout must be non-empty", name);
  dkb_path_join(path, sizeof path, d->dir, file);
  if (npy_write(path, descr, shape, ndim, data, nbytes, sha, err)) return -1;
  struct stat st;
  if (stat(path, &st)) return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot stat: %s", strerror(errno));
  json_t *dims = json_array();
  for (int k = 0; k < ndim; k++) json_array_append_new(dims, json_integer(shape[k]));
  json_array_append_new(d->files, json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:I}", "name", file, "role", role, "dtype",
                                            dtype, "npy_dtype", descr, "shape", dims, "layout", layout, "sha256", sha,
                                            "bytes", (json_int_t)st.st_size));
  return 0;
}

int dump_set(struct dump *d, const char *key, json_t *value) {
  if (!key || !strcmp(key, "schema") || !strcmp(key, "files")) DKB_BUG("dump_set: reserved key '%s'", key ? key : "(null)");
  if (!value) DKB_BUG("dump_set: NULL value for '%s'", key);
  json_object_set_new(d->extra, key, value);
  return 0;
}

int dump_close(struct dump *d, char index_sha256[65], json_t **index_out, struct dkb_err *err) {
  if (index_out) *index_out = NULL;
  json_t *doc = json_deep_copy(d->extra);
  json_object_set_new(doc, "schema", json_string(DUMP_SCHEMA));
  json_object_set(doc, "files", d->files);
  struct dkb_buf b;
  dkb_buf_init(&b);
  char path[4200], sha[65];
  int rc = -1;
  dkb_path_join(path, sizeof path, d->dir, DUMP_INDEX);
  if (cjson_write(doc, 2, &b, err)) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "%s", why);
    goto cleanup;
  }
  dkb_buf_addc(&b, '\n');
  if (dkb_write_atomic(path, b.p, b.n, err) || dkb_sha256_buf(b.p, b.n, sha, err)) goto cleanup;
  if (index_sha256) memcpy(index_sha256, sha, 65);
  rc = 0;
cleanup:
  dkb_buf_release(&b);
  if (rc == 0 && index_out) *index_out = json_incref(doc);
  json_decref(doc);
  if (rc) {
    dump_abandon(d);
    return rc;
  }
  json_decref(d->files);
  json_decref(d->extra);
  free(d);
  return 0;
}

void dump_abandon(struct dump *d) {
  if (!d) return;
  char path[4400];
  size_t i;
  json_t *f;
  json_array_foreach(d->files, i, f) {
    if (!dkb_path_join(path, sizeof path, d->dir, json_string_value(json_object_get(f, "name")))) unlink(path);
  }
  if (d->created) rmdir(d->dir); /* only when empty: never removes what someone else put there */
  json_decref(d->files);
  json_decref(d->extra);
  free(d);
}
