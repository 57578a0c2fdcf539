/* outdir.h - the folders a command writes, checked before any work (so a run that could not keep its
 * results is refused at once, not after it): -o (a bundle folder) and --dump (a dump folder).
 *   "" is a usage error; a path that is not a folder, cannot be created, or cannot be written in is the
 *   environment's (DKB_ENV), and every message names the path.
 *   A bundle folder may already hold an earlier run: a bundle.json and the files it names (and artifacts
 *   named as dkb names them, left by runs before it). Those are removed once the new bundle is written
 *   (outdir_finish), so the folder holds one run; a folder holding anything else is refused (it is
 *   someone else's).
 *   A dump folder must be new or empty, and not the bundle folder. */
#ifndef DKB_OUTDIR_H
#define DKB_OUTDIR_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"

struct outdir {
  char path[4096];
  char **old;          /* an earlier run's files in it (bundle.json last), removed by outdir_finish */
  size_t nold;
};

/* opt names the option in messages ("-o", "--dump"). */
int outdir_prepare_bundle(struct outdir *o, const char *path, const char *opt, struct dkb_err *err);
int outdir_prepare_dump(struct outdir *o, const char *path, const char *opt, const struct outdir *bundle,
                        struct dkb_err *err);
/* After the new bundle is in place: removes the earlier run's files it does not name. */
void outdir_finish(struct outdir *o, const json_t *bundle);
void outdir_release(struct outdir *o);

#endif
