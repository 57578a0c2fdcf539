/* fsutil.h - writing files so that a reader never sees a partial one (temp file in the same folder,
 * fsync, rename), and making output folders. */
#ifndef DKB_FSUTIL_H
#define DKB_FSUTIL_H

#include <stddef.h>

#include "lib/err.h"

/* Writes n bytes to path atomically. Errors are DKB_INTERNAL with the path and errno text. */
int dkb_write_atomic(const char *path, const void *data, size_t n, struct dkb_err *err);
/* One piece of a file written from several buffers (a header and a tensor, without copying either). */
struct dkb_span {
  const void *data;  /* may be NULL when n is 0 */
  size_t n;
};
/* Writes the concatenation of parts[0..nparts) to path atomically, like dkb_write_atomic. */
int dkb_write_atomic_parts(const char *path, const struct dkb_span *parts, int nparts, struct dkb_err *err);
/* mkdir -p; DKB_INTERNAL on failure. */
int dkb_mkdirs(const char *dir, struct dkb_err *err);
/* dir + "/" + name into out (size n); -1 if it does not fit. */
int dkb_path_join(char *out, size_t n, const char *dir, const char *name);

#endif
