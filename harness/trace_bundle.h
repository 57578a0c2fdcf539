/* trace_bundle.h - `dkb trace`'s evidence: the record files of every traced process (harness/
 * trace_records.h) joined into one dkb.trace/v1 bundle per (process, call range name)
 * (schemas/trace.schema.json), each graded by evidence/trace_ladder.h, and a summary of the run.
 *
 * The join is by correlation id, never by time: a kernel, memcpy or memset belongs to the range its
 * launching call was made in (the launch record's innermost range; a driver call made by a runtime call
 * shares it), and an instance of a call range owns every range nested in it on its thread. The loaded
 * objects the program listed are hashed after it ended, each file's (device, inode, size, mtime) compared
 * with what the program saw, files under site-packages mapped to their installed distributions
 * (harness/trace_loaded.h). A dump whose call key digest equals a call range's is checked and its report
 * kept (harness/trace_dumps.h). */
#ifndef DKB_TRACE_BUNDLE_H
#define DKB_TRACE_BUNDLE_H

#include <stddef.h>

#include <jansson.h>

#include "harness/trace_records.h"
#include "lib/err.h"

struct trace_run {
  const char *out_dir;                     /* holds records/; the bundles name their record file relative to it */
  const char *const *patterns;             /* fnmatch patterns of the ranges to bundle; NULL: every dkb/call/ range */
  size_t npatterns;
  const char *const *dump_dirs;            /* dump folders or folders of them, searched for matching call keys */
  size_t ndump_dirs;
  json_t *argv;                            /* the traced command (array of strings, borrowed) */
  long child_pid;                          /* the direct child's pid */
  json_t *child_exit;                      /* {"kind": "exited"|"signaled", "code", "signal"} (borrowed) */
  json_t *meta;                            /* dkb's meta block (borrowed) */
};

struct trace_bundle_set {
  json_t **docs;                           /* graded bundles (findings and claims filled) */
  char **names;                            /* file names under calls/: "<k>-<pid>-<first 12 of the key digest>.json" */
  size_t n;
  json_t *summary;                         /* dkb.trace-summary/v1: processes and one row per bundle */
  int incomplete;                          /* a process with a bundle ended with records unflushed, cut or dropped */
  int dump_malformed;                      /* a dump of a matching call key could not be read */
  int dump_failed;                         /* a matching dump failed its check */
};

/* Builds every bundle. -1 with err only on an internal failure: what the records lack is a finding. */
int trace_bundles_build(const struct tr_proc *procs, size_t nprocs, const struct trace_run *run,
                        struct trace_bundle_set *out, struct dkb_err *err);
void trace_bundle_set_release(struct trace_bundle_set *s);


#endif
