/* fsutil.c - atomic file writes and folder creation (see fsutil.h). */
#include "lib/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dkb_path_join(char *out, size_t n, const char *dir, const char *name) {
  int k = snprintf(out, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", name);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

int dkb_mkdirs(const char *dir, struct dkb_err *err) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
    return dkb_err_set(err, DKB_INTERNAL, dir, NULL, "path too long");
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) && errno != EEXIST) return dkb_err_set(err, DKB_INTERNAL, p, NULL, "cannot create folder: %s", strerror(errno));
    *s = '/';
  }
  if (mkdir(p, 0777) && errno != EEXIST) return dkb_err_set(err, DKB_INTERNAL, p, NULL, "cannot create folder: %s", strerror(errno));
  struct stat st;  /* EEXIST: it may be a file, which every write below it would report less clearly */
  if (stat(p, &st)) return dkb_err_set(err, DKB_INTERNAL, p, NULL, "cannot create folder: %s", strerror(errno));
  if (!S_ISDIR(st.st_mode)) return dkb_err_set(err, DKB_INTERNAL, p, NULL, "cannot create folder: %s", strerror(ENOTDIR));
  return 0;
}

int dkb_write_atomic(const char *path, const void *data, size_t n, struct dkb_err *err) {
  struct dkb_span one = {data, n};
  return dkb_write_atomic_parts(path, &one, 1, err);
}

int dkb_write_atomic_parts(const char *path, const struct dkb_span *parts, int nparts, struct dkb_err *err) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
    return dkb_err_set(err, DKB_INTERNAL, path, NULL, "path too long");
  int fd = mkstemp(tmp);
  if (fd < 0) return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot create temp file: %s", strerror(errno));
  for (int i = 0; i < nparts; i++) {
    const char *p = parts[i].data;
    size_t left = parts[i].n;
    while (left > 0) {
      ssize_t k = write(fd, p, left);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return dkb_err_set(err, DKB_INTERNAL, path, NULL, "write failed: %s", strerror(e));
      }
      p += k;
      left -= (size_t)k;
    }
  }
  if (fchmod(fd, 0644) || fsync(fd) || close(fd)) {
    int e = errno;
    unlink(tmp);
    return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot finish temp file: %s", strerror(e));
  }
  if (rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot rename temp file into place: %s", strerror(e));
  }
  return 0;
}
