/* fsutil.c - atomic file writes and folder creation (see fsutil.h). */
#include "lib/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the journal of what this process created ---------------------------------------------------- */

#define JOURNAL_MAX 8192
/* Paths are copied into a static pool so the signal handler reads nothing the heap could be moving. */
static char g_pool[JOURNAL_MAX * 64];
static size_t g_pool_used;
static struct { const char *path; int dir; } g_journal[JOURNAL_MAX];
static volatile size_t g_njournal;
static int g_journal_on;

static void journal_add(const char *path, int dir) {
  if (!g_journal_on || g_njournal >= JOURNAL_MAX) return;
  size_t n = strlen(path) + 1;
  if (g_pool_used + n > sizeof g_pool) return;
  char *p = g_pool + g_pool_used;
  memcpy(p, path, n);
  g_pool_used += n;
  g_journal[g_njournal].path = p;
  g_journal[g_njournal].dir = dir;
  g_njournal = g_njournal + 1;  /* published last: a handler sees only whole entries */
}

/* Drops the journal entry of path (a temp file renamed into place). */
static void journal_drop(const char *path) {
  for (size_t i = g_njournal; i-- > 0;)
    if (g_journal[i].path && !strcmp(g_journal[i].path, path)) {
      g_journal[i].path = NULL;
      return;
    }
}

void dkb_journal_begin(void) {
  g_njournal = 0;
  g_pool_used = 0;
  g_journal_on = 1;
}

void dkb_journal_end(void) {
  g_journal_on = 0;
  g_njournal = 0;
  g_pool_used = 0;
}

/* Only unlink and rmdir: async-signal-safe, so a SIGINT handler may call it. */
void dkb_journal_rollback(void) {
  for (size_t i = g_njournal; i-- > 0;) {
    if (!g_journal[i].path) continue;
    if (g_journal[i].dir) rmdir(g_journal[i].path);  /* only when empty: nothing of anyone else's goes */
    else unlink(g_journal[i].path);
  }
  g_njournal = 0;
}

int dkb_journal_created(const char *path) {
  for (size_t i = 0; i < g_njournal; i++)
    if (g_journal[i].path && !strcmp(g_journal[i].path, path)) return 1;
  return 0;
}

/* The exit code of a failed write or folder creation: the environment's (a full disk, a read-only
 * file system, no permission, a path that is not a folder), else dkb's. */
static int io_code(int e) {
  return e == ENOSPC || e == EROFS || e == EACCES || e == EPERM || e == ENOTDIR || e == EISDIR || e == ENOENT ||
                 e == EDQUOT || e == ENAMETOOLONG || e == ELOOP || e == EEXIST
             ? DKB_ENV
             : DKB_INTERNAL;
}

FILE *dkb_open_regular(const char *path, const char **why) {
  /* stat first: fopen of a FIFO with no writer would wait forever */
  struct stat st;
  if (stat(path, &st)) {
    *why = strerror(errno);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)" : S_ISDIR(st.st_mode) ? "not a regular file (a folder)"
                                                                                    : "not a regular file";
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) *why = strerror(errno);
  return f;
}

int dkb_path_join(char *out, size_t n, const char *dir, const char *name) {
  int k = snprintf(out, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", name);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

int dkb_mkdirs(const char *dir, struct dkb_err *err) {
  char p[4096];
  if (!*dir) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "an empty path names no folder");
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
    return dkb_err_set(err, DKB_ENV, dir, NULL, "path too long");
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (!mkdir(p, 0777)) journal_add(p, 1);
    else if (errno != EEXIST) return dkb_err_set(err, io_code(errno), p, NULL, "cannot create folder: %s", strerror(errno));
    *s = '/';
  }
  if (!mkdir(p, 0777)) journal_add(p, 1);
  else if (errno != EEXIST) return dkb_err_set(err, io_code(errno), p, NULL, "cannot create folder: %s", strerror(errno));
  struct stat st;  /* EEXIST: it may be a file, which every write below it would report less clearly */
  if (stat(p, &st)) return dkb_err_set(err, io_code(errno), p, NULL, "cannot create folder: %s", strerror(errno));
  if (!S_ISDIR(st.st_mode)) return dkb_err_set(err, DKB_ENV, p, NULL, "cannot create folder: %s", strerror(ENOTDIR));
  return 0;
}

int dkb_write_atomic(const char *path, const void *data, size_t n, struct dkb_err *err) {
  struct dkb_span one = {data, n};
  return dkb_write_atomic_parts(path, &one, 1, err);
}

int dkb_write_atomic_parts(const char *path, const struct dkb_span *parts, int nparts, struct dkb_err *err) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
    return dkb_err_set(err, DKB_ENV, path, NULL, "path too long");
  int fd = mkstemp(tmp);
  if (fd < 0) return dkb_err_set(err, io_code(errno), path, NULL, "cannot create temp file: %s", strerror(errno));
  journal_add(tmp, 0);  /* an interrupted write leaves no temp file behind */
  for (int i = 0; i < nparts; i++) {
    const char *p = parts[i].data;
    size_t left = parts[i].n;
    while (left > 0) {
      ssize_t k = write(fd, p, left);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        int e = k < 0 ? errno : ENOSPC;
        close(fd);
        unlink(tmp);
        journal_drop(tmp);
        return dkb_err_set(err, io_code(e), path, NULL, "write failed: %s", strerror(e));
      }
      p += k;
      left -= (size_t)k;
    }
  }
  if (fchmod(fd, 0644) || fsync(fd) || close(fd)) {
    int e = errno;
    unlink(tmp);
    journal_drop(tmp);
    return dkb_err_set(err, io_code(e), path, NULL, "cannot finish temp file: %s", strerror(e));
  }
  struct stat st;
  const int existed = lstat(path, &st) == 0;
  if (!existed) journal_add(path, 0);
  if (rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    journal_drop(tmp);
    if (!existed) journal_drop(path);
    return dkb_err_set(err, io_code(e), path, NULL, "cannot rename temp file into place: %s", strerror(e));
  }
  journal_drop(tmp);
  return 0;
}
