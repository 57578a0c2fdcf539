/* ladder_artifacts.c - the bundle's content-addressed artifacts (see ladder_internal.h): each /artifacts
 * entry checked against its file beside the bundle (size, SHA-256), and the {artifact, sha256} references
 * of the levels resolved against them. A problem with an artifact is reported at the level that refers
 * to it, or at level 0 when none does. */
#include "evidence/ladder_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/sha256.h"

static int artifact_name_ok(const char *s) {
  if (!*s || *s == '.') return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
          *s == '_' || *s == '-'))
      return 0;
  return 1;
}

static void art_problem(struct art *a, const char *reason, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void art_problem(struct art *a, const char *reason, const char *ptr, const char *fmt, ...) {
  if (a->reason) return;
  a->reason = reason;
  snprintf(a->pointer, sizeof a->pointer, "%s", ptr);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->detail, sizeof a->detail, fmt, ap);
  va_end(ap);
}

/* The file of entry a (pointer p) beside the bundle: its size and SHA-256 are the entry's. */
static void art_check_file(struct lctx *c, struct art *a, const char *p) {
  char path[4096], q[DKB_PTR_MAX];
  snprintf(path, sizeof path, "%s/%s", c->o->bundle_dir, a->name);
  struct stat st;
  /* A link would let the hash vouch for bytes the folder does not hold (a file elsewhere, which can change
   * after the bundle is graded, or another bundle's artifact). */
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char to[4096];
    ssize_t n = readlink(path, to, sizeof to - 1);
    to[n > 0 ? n : 0] = '\0';
    jr_ptr_key(q, p, "name");
    art_problem(a, "artifact_not_a_file", q, "artifact '%s' is a symbolic link to '%s', not a file in the bundle's folder",
                a->name, to);
    return;
  }
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    jr_ptr_key(q, p, "name");
    art_problem(a, "artifact_file_missing", q, "artifact '%s' is not beside the bundle (%s)", a->name,
                stat(path, &st) != 0 ? strerror(errno) : "not a regular file");
    return;
  }
  if ((long long)st.st_size != a->bytes) {
    jr_ptr_key(q, p, "bytes");
    art_problem(a, "artifact_bytes_mismatch", q, "artifact '%s' has %lld bytes, the entry says %lld", a->name,
                (long long)st.st_size, a->bytes);
    return;
  }
  char hex[65];
  struct dkb_err herr;
  if (dkb_sha256_file(path, hex, &herr)) {
    jr_ptr_key(q, p, "name");
    art_problem(a, "artifact_file_missing", q, "artifact '%s' cannot be read: %s", a->name, herr.msg);
    return;
  }
  jr_ptr_key(q, p, "sha256");
  if (strcmp(hex, a->sha)) {
    art_problem(a, "artifact_sha256_mismatch", q, "artifact '%s' hashes to %s, the entry says %s", a->name, hex, a->sha);
    return;
  }
  a->have_file = 1;
}

void lad_read_artifacts(struct lctx *c) {
  static const char *const req[] = {"name", "sha256", "bytes", NULL};
  const json_t *list = lad_member(c, c->b, "", "artifacts", JSON_ARRAY);
  if (!list) return;
  size_t n = json_array_size(list);
  c->arts = DKB_CALLOC(n, sizeof *c->arts);
  for (size_t i = 0; i < n && !c->bad; i++) {
    char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(p, "/artifacts", i);
    const json_t *e = json_array_get(list, i);
    if (lad_keys(c, e, p, req, NULL)) return;
    struct art *a = &c->arts[c->narts];
    a->index = i;
    a->name = lad_str(c, e, p, "name", 1);
    a->sha = json_string_value(lad_member(c, e, p, "sha256", JSON_STRING));
    LAD_READ(c, jr_int, e, p, "bytes", 0, LLONG_MAX, &a->bytes);
    if (c->bad) return;
    jr_ptr_key(q, p, "name");
    if (!artifact_name_ok(a->name)) {
      lad_malformed(c, q, "must be a plain file name of letters, digits, '.', '_' and '-' not starting with '.' (got '%s')", a->name);
      return;
    }
    int dup = 0;
    for (size_t k = 0; k < c->narts; k++)
      if (!strcmp(c->arts[k].name, a->name)) dup = 1;
    if (dup) {
      lad_finding(c, "artifact_duplicate", q, "artifact '%s' is listed twice", a->name);
      continue; /* lookups use the first entry */
    }
    c->narts++;
    jr_ptr_key(q, p, "sha256");
    if (!dkb_is_sha256_hex(a->sha)) art_problem(a, "artifact_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", a->sha);
    else if (c->o && c->o->bundle_dir) art_check_file(c, a, p);
  }
}

static struct art *art_find(struct lctx *c, const char *name) {
  for (size_t i = 0; i < c->narts; i++)
    if (!strcmp(c->arts[i].name, name)) return &c->arts[i];
  return NULL;
}

struct art *lad_ref(struct lctx *c, const json_t *sec, const char *ptr, const char *key, const char *missing_reason,
                    const char *what) {
  static const char *const req[] = {"artifact", "sha256", NULL};
  char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, key);
  const json_t *r = lad_member(c, sec, ptr, key, JSON_OBJECT);
  if (!r) {
    lad_finding(c, missing_reason, p, "no %s", what);
    return NULL;
  }
  if (lad_keys(c, r, p, req, NULL)) return NULL;
  const char *name = lad_str(c, r, p, "artifact", 1);
  const char *sha = json_string_value(lad_member(c, r, p, "sha256", JSON_STRING));
  if (c->bad) return NULL;
  jr_ptr_key(q, p, "sha256");
  if (!dkb_is_sha256_hex(sha)) {
    lad_finding(c, "artifact_sha256_invalid", q, "'%s' is not 64 lower-case hex digits", sha);
    return NULL;
  }
  struct art *a = art_find(c, name);
  if (!a) {
    jr_ptr_key(q, p, "artifact");
    lad_finding(c, "artifact_not_listed", q, "%s artifact '%s' is not in /artifacts", what, name);
    return NULL;
  }
  a->referenced = 1;
  if (strcmp(a->sha ? a->sha : "", sha)) {
    lad_finding(c, "artifact_sha256_mismatch", q, "%s sha256 %s differs from /artifacts/%zu/sha256 %s", what, sha,
            a->index, a->sha);
    return NULL;
  }
  if (a->reason) {
    lad_finding(c, a->reason, a->pointer, "%s", a->detail);
    return NULL;
  }
  return a;
}

/* Parses an artifact that holds JSON; NULL when it is not available or not JSON. */
json_t *lad_art_json(struct lctx *c, const struct art *a) {
  if (!a || !a->have_file) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->o->bundle_dir, a->name);
  struct dkb_err e;
  return jr_load_file(path, &e);
}

json_t *lad_art_lines(struct lctx *c, const struct art *a) {
  if (!a || !a->have_file) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->o->bundle_dir, a->name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct dkb_buf b;
  dkb_buf_init(&b);
  const int bad = dkb_buf_add_file(&b, f);
  fclose(f);
  json_t *lines = bad ? NULL : json_array();
  for (size_t at = 0; lines && at < b.n;) {
    const char *nl = memchr(b.p + at, '\n', b.n - at);
    const size_t len = nl ? (size_t)(nl - (b.p + at)) : b.n - at;
    json_error_t je;
    json_t *rec = len ? json_loadb(b.p + at, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!json_is_object(rec)) {  /* an empty line, a line that is not a JSON object: not JSON lines */
      json_decref(rec);
      json_decref(lines);
      lines = NULL;
    } else json_array_append_new(lines, rec);
    at += len + 1;
  }
  dkb_buf_release(&b);
  return lines;
}

