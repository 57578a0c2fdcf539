/* fsutil.h - writing files so that a reader never sees a partial one (temp file in the same folder,
 * fsync, rename), and making output folders. */
#ifndef DKB_FSUTIL_H
#define DKB_FSUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "lib/err.h"

/* Writes n bytes to path atomically. Errors carry the path and errno's text: DKB_ENV for what the machine or
 * the user's paths refuse (no space, read-only, no permission, not a folder), DKB_INTERNAL otherwise. */
int dkb_write_atomic(const char *path, const void *data, size_t n, struct dkb_err *err);
/* One piece of a file written from several buffers (a header and a tensor, without copying either). */
struct dkb_span {
  const void *data;  /* may be NULL when n is 0 */
  size_t n;
};
/* Writes the concatenation of parts[0..nparts) to path atomically, like dkb_write_atomic. */
int dkb_write_atomic_parts(const char *path, const struct dkb_span *parts, int nparts, struct dkb_err *err);
/* mkdir -p; an empty path is DKB_USAGE, a path the machine refuses (a file, read-only, no permission)
 * DKB_ENV. */
int dkb_mkdirs(const char *dir, struct dkb_err *err);
/* dir + "/" + name into out (size n); -1 if it does not fit. */
int dkb_path_join(char *out, size_t n, const char *dir, const char *name);

/* fopen(path, "rb") of a regular file only: a FIFO, a device or a folder given as an input would block or
 * mislead every reader. NULL with *why set ("No such file or directory", "not a regular file (a FIFO)"). */
FILE *dkb_open_regular(const char *path, const char **why);

/* The journal of what this process creates: every folder dkb_mkdirs makes and every file dkb_write_atomic
 * brings into being (its temp file too, until renamed). A command that fails or is interrupted rolls it
 * back, so it leaves nothing of its own behind; files it only overwrote stay. rollback uses unlink and
 * rmdir only (async-signal-safe: a SIGINT or SIGTERM handler may call it) and removes a folder only when
 * it is empty. */
void dkb_journal_begin(void);
void dkb_journal_rollback(void);
void dkb_journal_end(void);
/* 1 when path was created since dkb_journal_begin. */
int dkb_journal_created(const char *path);

#endif
