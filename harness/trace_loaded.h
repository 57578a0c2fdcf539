/* trace_loaded.h - the files a traced program had loaded, hashed by `dkb trace` after it ended (harness/
 * trace_bundle.h): each distinct (path, device, inode, size, mtime) of every loader map once, in parallel,
 * its identity against what the program saw, and the installed distribution a site-packages file is of
 * (harness/pydist.h). A loader map is then written as a bundle cites it. */
#ifndef DKB_TRACE_LOADED_H
#define DKB_TRACE_LOADED_H

#include <stddef.h>

#include <jansson.h>

#include "harness/trace_records.h"

struct trace_hashed;  /* one file of the maps, hashed */

struct trace_loaded {
  struct trace_hashed *objs;  /* sorted, distinct */
  size_t n;
  struct pydist *dist;
};

/* Hashes every file of every process's loader maps. What cannot be hashed is kept as its error. */
void trace_loaded_hash(struct trace_loaded *l, const struct tr_proc *procs, size_t nprocs);
/* {"complete", "objects": [{path, size, sha256, identity, main, distribution[, hash_error]}]} */
json_t *trace_loaded_map_json(const struct trace_loaded *l, const struct tr_loadmap *m);
void trace_loaded_release(struct trace_loaded *l);

#endif
